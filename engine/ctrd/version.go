package ctrd

import (
	"context"
	"fmt"
)

// RuntimeVersion is containerd's version as a node reports it in
// status.nodeInfo.containerRuntimeVersion ("containerd://1.7.35"); an
// error means containerd does not answer.
func (e *Engine) RuntimeVersion(ctx context.Context) (string, error) {
	v, err := e.client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("containerd's version: %w", err)
	}
	return "containerd://" + v.Version, nil
}
