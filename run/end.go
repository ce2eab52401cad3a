package run

// Ending a pod that fails on the node, as the eviction package decides
// (an emptyDir over its limit, the active deadline): podRun is its
// eviction.Pod.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

var _ eviction.Pod = (*podRun)(nil)

// Spec is the pod.
func (r *podRun) Spec() *corev1.Pod { return r.pod.Pod }

// StartTime is the pod's status.startTime: its sandbox's creation (status.go).
func (r *podRun) StartTime(ctx context.Context) (time.Time, error) {
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

// VolumeUsage is how much of the disk the pod's emptyDir volume uses.
func (r *podRun) VolumeUsage(volume string) (int64, error) {
	return volumes.DiskUsage(r.layout.EmptyDir(volume))
}

// End ends the pod as v says under its lock, if v.While still holds once
// the lock is had.
func (r *podRun) End(ctx context.Context, v eviction.Verdict) (ended bool, err error) {
	may := r.SandboxAlive
	if v.While == eviction.Active {
		may = r.active
	}
	return r.endLocked(ctx, may, func() error { return r.endFor(ctx, v) })
}

// endFor ends the pod as v says; the caller holds its lock.
func (r *podRun) endFor(ctx context.Context, v eviction.Verdict) error {
	r.Report(v.Note)
	grace := podGrace(r.pod.Pod)
	if v.Grace != nil {
		grace = *v.Grace
	}
	return r.end(ctx, v.Why, grace)
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

// untilDeadline returns ctx, ended also at the pod's active deadline, for
// the waits of `up --wait=ready` (which no supervisor times yet); passed
// reports whether the deadline is what ended it.
func (r *podRun) untilDeadline(ctx context.Context) (dctx context.Context, passed func() bool, cancel context.CancelFunc) {
	dctx, cancel = context.WithCancel(ctx)
	due := r.h.evictions.DeadlineTimer(ctx, r)
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
	if err := r.endFor(ctx, eviction.DeadlineExceeded()); err != nil {
		return err
	}
	r.state.Complete = true
	return r.h.saveState(r.state)
}

// endLocked ends the pod with end under its lock, as every teardown is
// done, if it still may be once the lock is had (may: another podrun may
// have taken it down or replaced it meanwhile, or it may have finished);
// ended reports whether it was.
func (r *podRun) endLocked(ctx context.Context, may func(context.Context) bool, end func() error) (ended bool, err error) {
	unlock, err := r.h.lockPod(ctx, r.key, 0)
	if err != nil {
		return false, err
	}
	defer unlock(false)
	if !may(ctx) {
		return false, nil
	}
	return true, end()
}

// end ends the pod as the kubelet ends a pod that fails on the node (the
// eviction manager, the active deadline): its containers are stopped with
// grace and not restarted, its sandbox and network go, and the pod is
// Failed with why's reason and message from then on. The containers and the
// pod directory stay for status and logs until `down`.
func (r *podRun) end(ctx context.Context, why status.Ended, grace time.Duration) error {
	err := r.h.killPod(ctx, r.teardown(teardown{grace: grace, sandbox: true}))
	// Failed once nothing runs, as the kubelet reports a terminated pod.
	r.state.Ended = &why
	return errors.Join(err, r.h.saveState(r.state))
}
