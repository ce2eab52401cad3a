package images

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/backoff"
	"github.com/podrun/podrun/engine"
)

// Retrying is how EnsureRetrying waits between pulls, and whom it tells.
type Retrying struct {
	// After is the clock's wait.
	After func(d time.Duration) <-chan time.Time
	// BackingOff is told of each wait before it: the pull that failed and
	// the delay until the next; an error it returns ends the retries.
	BackingOff func(failed *PullError, delay time.Duration) error
}

// EnsureRetrying is Ensure, retrying a pull that failed for a reason that
// may pass (Retryable) with the back-off until ctx ends, as `up` does
// without the pod workers' back-off; any other failure is returned at once.
func (m *Manager) EnsureRetrying(ctx context.Context, ref string, policy corev1.PullPolicy, secrets []*corev1.Secret, r Retrying) (engine.Image, error) {
	var b backoff.Backoff
	for {
		img, err := m.Ensure(ctx, ref, policy, secrets)
		perr := (*PullError)(nil)
		if err == nil || !errors.As(err, &perr) || !Retryable(err) || ctx.Err() != nil {
			return img, err
		}
		delay := b.Delay(0)
		if err := r.BackingOff(perr, delay); err != nil {
			return engine.Image{}, err
		}
		select {
		case <-r.After(delay):
		case <-ctx.Done():
			return engine.Image{}, fmt.Errorf("%w; gave up retrying: %w", err, ctx.Err())
		}
	}
}
