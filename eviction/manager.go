package eviction

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod is a supervised pod's lifecycle as the Manager uses it (the run
// package's pod runs are one).
type Pod interface {
	// Spec is the pod.
	Spec() *corev1.Pod
	// StartTime is its status.startTime: its sandbox's creation.
	StartTime(ctx context.Context) (time.Time, error)
	// SandboxAlive reports whether its sandbox is the one supervised.
	SandboxAlive(ctx context.Context) bool
	// VolumeUsage is how much of the disk its emptyDir volume uses.
	VolumeUsage(volume string) (int64, error)
	// End carries out v under the pod's lock, as every teardown is done,
	// if v.While still holds then: its containers are stopped and not
	// restarted, its sandbox goes, and it is Failed with v.Why from then
	// on. ended reports whether it was.
	End(ctx context.Context, v Verdict) (ended bool, err error)
	// Report says something about the pod on the progress stream.
	Report(msg string)
}

// Clock is the Manager's clock (k8s.io/utils/clock.Clock is one).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Manager ends the pods it watches as Decide says.
type Manager struct{ clock Clock }

// NewManager is a Manager on clock.
func NewManager(clock Clock) *Manager { return &Manager{clock: clock} }

// Watched reports whether Watch has anything to do for pod: it has a
// size-limited emptyDir or an active deadline.
func Watched(pod *corev1.Pod) bool {
	return len(SizeLimited(pod)) > 0 || pod.Spec.ActiveDeadlineSeconds != nil
}

// Watch measures p's size-limited emptyDirs every housekeeping interval,
// and times its active deadline, until p is ended (Decide) or ctx ends. It
// runs only while a process supervises the pod: nothing measures or times
// a pod nobody supervises.
func (m *Manager) Watch(ctx context.Context, p Pod) {
	pod := p.Spec()
	vols := SizeLimited(pod)
	usage := p.VolumeUsage
	start, due := m.deadlineTimer(ctx, p)
	var tick <-chan time.Time
	for len(vols) > 0 || due != nil {
		if tick == nil && len(vols) > 0 {
			tick = m.clock.After(HousekeepingInterval)
		}
		var f Facts
		select {
		case <-tick:
			tick = nil
			// Not started yet, or finished: only active pods are evicted.
			if f.Alive = p.SandboxAlive(ctx); f.Alive {
				f.Over = OverLimit(vols, usage)
			}
		case <-due:
			due = nil
			f.Now, f.Start = m.clock.Now(), start
		case <-ctx.Done():
			return
		}
		v := Decide(pod, f)
		if !v.End {
			if at, ok := Deadline(pod, f.Start); ok { // early, by a clock set back: wait the rest
				due = m.clock.After(at.Sub(m.clock.Now()))
			}
			continue
		}
		ended, err := p.End(ctx, v)
		if err != nil && ctx.Err() == nil {
			p.Report(fmt.Sprintf("ending the pod: %v", err))
		}
		if ended || err != nil {
			return
		}
	}
}

// DeadlineTimer fires when p's active deadline passes (at once if it has
// already); it is nil when p has no deadline, or no start time to count
// from, as the kubelet does not count a pod that has none.
func (m *Manager) DeadlineTimer(ctx context.Context, p Pod) <-chan time.Time {
	_, due := m.deadlineTimer(ctx, p)
	return due
}

// deadlineTimer is DeadlineTimer with the start time it counts from.
func (m *Manager) deadlineTimer(ctx context.Context, p Pod) (time.Time, <-chan time.Time) {
	pod := p.Spec()
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return time.Time{}, nil
	}
	start, err := p.StartTime(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.Report(fmt.Sprintf("activeDeadlineSeconds not enforced: %v", err))
		}
		return time.Time{}, nil
	}
	at, ok := Deadline(pod, start)
	if !ok {
		return time.Time{}, nil
	}
	return start, m.clock.After(at.Sub(m.clock.Now()))
}
