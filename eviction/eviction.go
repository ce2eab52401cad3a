package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/volumes"
)

// The kubelet's eviction manager for local storage (pkg/kubelet/eviction,
// localStorageEviction): it measures every housekeeping interval, and an
// emptyDir over its sizeLimit evicts the pod with a grace period of 1 s
// (immediateEvictionGracePeriodSeconds; stop raises it to minGrace, as the
// kubelet's killContainer does).
const (
	housekeepingInterval = 10 * time.Second
	evictionGrace        = 1 * time.Second
	// ReasonEvicted is the pod's status reason after an eviction.
	ReasonEvicted = "Evicted"
)

// sizeLimited lists the pod's disk-backed emptyDirs that have a sizeLimit
// (a memory-backed one is a tmpfs of that size already).
func sizeLimited(pod *corev1.Pod) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if e := v.EmptyDir; e != nil && e.Medium != corev1.StorageMediumMemory && e.SizeLimit != nil && e.SizeLimit.Sign() == 1 {
			out = append(out, v)
		}
	}
	return out
}

// overLimit returns the kubelet's eviction message for the first emptyDir
// of vols whose usage (usage(name)) exceeds its sizeLimit, or "". A volume
// that cannot be measured counts as over its limit, with a message that
// says why: the kubelet skips missing stats, but here what cannot be
// measured is what a container made unreadable or too deep to walk, and
// that would hide any amount of data.
func overLimit(vols []corev1.Volume, usage func(name string) (int64, error)) string {
	for _, v := range vols {
		used, err := usage(v.Name)
		if err != nil {
			return fmt.Sprintf("Usage of EmptyDir volume %q cannot be measured (%v): it counts as over the limit %q. ", v.Name, err, v.EmptyDir.SizeLimit.String())
		}
		if used > v.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	return ""
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
			tick = r.w.Clock().After(housekeepingInterval)
		}
		var ended bool
		var err error
		select {
		case <-tick:
			tick = nil
			if !r.SandboxAlive(ctx) {
				continue // not started yet, or finished: only active pods are evicted
			}
			msg := overLimit(vols, usage)
			if msg == "" {
				continue
			}
			ended, err = r.endLocked(ctx, r.SandboxAlive, func() error {
				r.h.report(Event{Pod: r.key, Msg: "evicted: " + msg})
				return r.end(ctx, status.Ended{Reason: ReasonEvicted, Message: msg}, evictionGrace)
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
