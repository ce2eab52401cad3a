// Waiting for pods already started, as kubectl wait.

package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
func (h *Host) Await(ctx context.Context, t Target, cond Condition) (string, error) {
	for {
		p, err := h.Pod(ctx, t)
		if msg, done, err := h.met(p, err, t, cond); done {
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

// met tells whether pod t, p as found (or the error finding it), meets
// cond, and how; done with an error when it never will.
func (h *Host) met(p *PodInfo, err error, t Target, cond Condition) (msg string, done bool, _ error) {
	switch {
	case errors.Is(err, ErrNoPod) && cond == ForDelete:
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
