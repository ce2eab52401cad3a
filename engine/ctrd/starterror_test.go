package ctrd

import (
	"context"
	"errors"
	"testing"

	"github.com/podrun/podrun/engine"
)

// TestStartErrorOnlyWhenNotCutOff: a task that could not be created or
// started is the container's StartError; a start whose context ended is
// not (the caller gave up: nothing is wrong with the container).
func TestStartErrorOnlyWhenNotCutOff(t *testing.T) {
	boom := errors.New("failed to create containerd task: exec: not found")
	var serr *engine.StartError
	if err := startError(context.Background(), boom); !errors.As(err, &serr) || err.Error() != boom.Error() {
		t.Errorf("live context: %v, want a StartError saying %q", err, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := startError(ctx, boom); errors.As(err, &serr) || !errors.Is(err, boom) {
		t.Errorf("ended context: %v, want the error itself", err)
	}
}
