// Package claims is `podrun volume`: the claims' volumes of the node
// (volumes/claims.go) listed with the pods that use them, removed when none
// does. It asks the lifecycle (run.Host) for the pods through Lifecycle.
package claims

import (
	"context"
	"fmt"
	"strings"

	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/volumes"
)

// Lifecycle is what the claims ask of the pods on this node; run.Host is
// it.
type Lifecycle interface {
	// Pods lists the pods on the node.
	Pods(ctx context.Context) ([]*run.PodInfo, error)
}

// Node is the claims' volumes of the node whose state directory is
// Root, and the pods of its Lifecycle.
type Node struct {
	Lifecycle
	Root string
}

// ClaimInfo is a claim's volume and the pods on the node that use it.
type ClaimInfo struct {
	volumes.Claim
	UsedBy []string // namespace/name
}

// Claims lists the claims' volumes of the node (volumes/claims.go).
func (h Node) Claims(ctx context.Context) ([]ClaimInfo, error) {
	claims, err := volumes.Claims(h.layout())
	if err != nil {
		return nil, err
	}
	pods, err := h.Pods(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ClaimInfo, len(claims))
	for i, c := range claims {
		out[i] = ClaimInfo{Claim: c, UsedBy: usersOf(pods, c.Namespace, c.Name)}
	}
	return out, nil
}

// RemoveClaim removes a claim's volume and its data, unless a pod on the
// node uses it; found says whether it was there.
func (h Node) RemoveClaim(ctx context.Context, namespace, name string) (found bool, err error) {
	l := h.layout()
	claims, err := volumes.Claims(l)
	if err != nil {
		return false, err
	}
	for _, c := range claims {
		found = found || c.Namespace == namespace && c.Name == name
	}
	if !found {
		return false, nil
	}
	pods, err := h.Pods(ctx)
	if err != nil {
		return true, err
	}
	if users := usersOf(pods, namespace, name); len(users) > 0 {
		return true, fmt.Errorf("volume %s/%s is used by pod %s: take it down first", namespace, name, strings.Join(users, ", "))
	}
	return true, volumes.RemoveClaim(l, namespace, name)
}

func usersOf(pods []*run.PodInfo, namespace, claim string) []string {
	var users []string
	for _, p := range pods {
		if p.Pod != nil && p.Namespace == namespace && volumes.UsesClaim(p.Pod, claim) {
			users = append(users, p.Key())
		}
	}
	return users
}

func (h Node) layout() volumes.Layout { return volumes.Layout{Root: h.Root} }
