package run

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
)

// The kubelet's active deadline (pkg/kubelet/active_deadline.go): a pod
// active on the node for spec.activeDeadlineSeconds since its
// status.startTime is Failed with this reason and message, and killed as a
// terminal pod is: every container with the pod's termination grace period,
// none restarted.
const (
	// ReasonDeadlineExceeded is the pod's status reason past its deadline.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	deadlineMessage        = "Pod was active on the node longer than the specified deadline"
)

// startTime is the pod's status.startTime: its sandbox's creation (status.go).
func (r *podRun) startTime(ctx context.Context) (time.Time, error) {
	ctrs, err := r.h.engine.List(ctx, map[string]string{labels.PodUID: r.pod.UID, labels.Container: labels.SandboxName})
	if err != nil {
		return time.Time{}, err
	}
	for _, c := range ctrs {
		if c.ID == r.sandboxID {
			return c.CreatedAt, nil
		}
	}
	return time.Time{}, fmt.Errorf("pod %s has no sandbox", r.pod.UID)
}

// deadlineTimer fires when the pod's active deadline passes (at once if it
// has already); it is nil when the pod has no deadline, or no start time to
// count from, as the kubelet does not count a pod that has none.
func (r *podRun) deadlineTimer(ctx context.Context) <-chan time.Time {
	ads := r.pod.Spec.ActiveDeadlineSeconds
	if ads == nil {
		return nil
	}
	start, err := r.startTime(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("activeDeadlineSeconds not enforced: %v", err)})
		}
		return nil
	}
	at := start.Add(time.Duration(*ads) * time.Second)
	return r.w.Clock().After(at.Sub(r.w.Clock().Now()))
}

// active reports whether the pod still runs: its sandbox is up and an app
// container runs or will be restarted. A pod whose app containers are all
// done for good is terminal, and a terminal pod never changes its phase.
func (r *podRun) active(ctx context.Context) bool {
	if !r.SandboxAlive(ctx) {
		return false
	}
	for _, l := range r.w.Loops() {
		if l.Role() == supervisor.RoleApp && !l.State().Done {
			return true
		}
	}
	return false
}

// exceedDeadline ends the pod at its active deadline.
func (r *podRun) exceedDeadline(ctx context.Context) error {
	r.h.report(Event{Pod: r.key, Msg: ReasonDeadlineExceeded + ": " + deadlineMessage})
	return r.end(ctx, status.Ended{Reason: ReasonDeadlineExceeded, Message: deadlineMessage}, podGrace(r.pod.Pod))
}

// untilDeadline returns ctx, ended also at the pod's active deadline, for
// the waits of `up --wait=ready` (which no supervisor times yet); passed
// reports whether the deadline is what ended it.
func (r *podRun) untilDeadline(ctx context.Context) (dctx context.Context, passed func() bool, cancel context.CancelFunc) {
	dctx, cancel = context.WithCancel(ctx)
	due := r.deadlineTimer(ctx)
	var fired atomic.Bool
	if due != nil {
		go func() {
			select {
			case <-due:
				fired.Store(true)
				cancel()
			case <-dctx.Done():
			}
		}()
	}
	return dctx, fired.Load, cancel
}

// failDeadline ends a pod whose deadline passed while up waited for it:
// it is Failed with DeadlineExceeded, and up reports it as a failed pod.
func (r *podRun) failDeadline(ctx context.Context) error {
	if err := r.exceedDeadline(ctx); err != nil {
		return err
	}
	r.state.Complete = true
	return r.h.saveState(r.state)
}
