// Package await waits for pods already started to meet a condition, as
// kubectl wait: `podrun wait`. It asks the lifecycle (run.Host) for the
// pods and their failures through Lifecycle.
package await

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/run"
)

// Lifecycle is what Await asks of the pods on this node; run.Host is it.
type Lifecycle interface {
	// Pod finds the pod t names (run.ErrNoPod when there is none).
	Pod(ctx context.Context, t run.Target) (*run.PodInfo, error)
	// Failure is the error a Failed pod p is, as up reports it.
	Failure(p *run.PodInfo) error
}

// Condition is what Await waits for, as kubectl wait --for.
type Condition string

// The conditions of `podrun wait --for`.
const (
	ForReady      Condition = "ready"      // the Ready condition, or finished first
	ForCompletion Condition = "completion" // Succeeded (or Failed: an error)
	ForDelete     Condition = "delete"     // gone from the node
)

// awaitPoll is how often Await looks at the pods.
const awaitPoll = 250 * time.Millisecond

// Await waits until pod t meets cond, or ctx ends, and says how; a pod that
// Failed (for ready or completion) is its failure, as up reports it.
func Await(ctx context.Context, h Lifecycle, t run.Target, cond Condition) (string, error) {
	for {
		p, err := h.Pod(ctx, t)
		if msg, done, err := met(h, p, err, t, cond); done {
			return msg, err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("timed out waiting for the condition on pod %s (--for %s)", t, cond)
			}
			return "", ctx.Err()
		case <-time.After(awaitPoll):
		}
	}
}

// met tells, from h, whether pod t, p as found (or the error finding it), meets
// cond, and how; done with an error when it never will.
func met(h Lifecycle, p *run.PodInfo, err error, t run.Target, cond Condition) (msg string, done bool, _ error) {
	switch {
	case errors.Is(err, run.ErrNoPod) && cond == ForDelete:
		return "deleted", true, nil
	case err != nil:
		return "", true, fmt.Errorf("pod %s: %w", t, err)
	case cond == ForDelete:
	case p.Pod.Status.Phase == corev1.PodFailed:
		return "", true, h.Failure(p)
	case p.Pod.Status.Phase == corev1.PodSucceeded:
		return "condition met (Succeeded)", true, nil
	case cond == ForReady && podReady(p.Pod):
		return "condition met", true, nil
	}
	return "", false, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
