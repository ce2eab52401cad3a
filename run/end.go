package run

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
	r.h.report(Event{Pod: r.key, Msg: eviction.ReasonDeadlineExceeded + ": " + eviction.DeadlineMessage})
	return r.end(ctx, status.Ended{Reason: eviction.ReasonDeadlineExceeded, Message: eviction.DeadlineMessage}, podGrace(r.pod.Pod))
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

// housekeep measures the pod's size-limited emptyDirs every housekeeping
// interval while the pod is supervised, and evicts the pod when one is
// over its limit; it also ends the pod at its active deadline
// (deadline.go). It runs only while a process supervises the pod
// (UpOptions.Foreground): nothing measures or times a pod nobody supervises.
func (r *podRun) housekeep(ctx context.Context, vols []corev1.Volume) {
	usage := func(name string) (int64, error) { return volumes.DiskUsage(r.layout.EmptyDir(name)) }
	due := r.deadlineTimer(ctx)
	var tick <-chan time.Time
	for len(vols) > 0 || due != nil {
		if tick == nil && len(vols) > 0 {
			tick = r.w.Clock().After(eviction.HousekeepingInterval)
		}
		var ended bool
		var err error
		select {
		case <-tick:
			tick = nil
			if !r.SandboxAlive(ctx) {
				continue // not started yet, or finished: only active pods are evicted
			}
			msg := eviction.OverLimit(vols, usage)
			if msg == "" {
				continue
			}
			ended, err = r.endLocked(ctx, r.SandboxAlive, func() error {
				r.h.report(Event{Pod: r.key, Msg: "evicted: " + msg})
				return r.end(ctx, status.Ended{Reason: eviction.ReasonEvicted, Message: msg}, eviction.Grace)
			})
		case <-due:
			due = nil
			// A pod finished before its deadline is terminal, and stays as it ended.
			ended, err = r.endLocked(ctx, r.active, func() error { return r.exceedDeadline(ctx) })
		case <-ctx.Done():
			return
		}
		if err != nil && ctx.Err() == nil {
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("ending the pod: %v", err)})
		}
		if ended || err != nil {
			return
		}
	}
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
