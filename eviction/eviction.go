// Package eviction ends the pods that fail on the node while a process
// supervises them, as the kubelet's eviction manager (local storage: an
// emptyDir over its sizeLimit) and its active deadline handler
// (spec.activeDeadlineSeconds) do beside its pod workers. Decide says
// whether a pod is to be ended now and why (pure); a Manager watches a pod
// and has it ended through the pod's lifecycle (Pod).
package eviction

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/status"
)

// The kubelet's eviction manager for local storage (pkg/kubelet/eviction,
// localStorageEviction): it measures every housekeeping interval, and an
// emptyDir over its sizeLimit evicts the pod with a grace period of 1 s
// (immediateEvictionGracePeriodSeconds; stop raises it to minGrace, as the
// kubelet's killContainer does).
const (
	HousekeepingInterval = 10 * time.Second
	Grace                = 1 * time.Second
	// ReasonEvicted is the pod's status reason after an eviction.
	ReasonEvicted = "Evicted"
)

// SizeLimited lists the pod's disk-backed emptyDirs that have a sizeLimit
// (a memory-backed one is a tmpfs of that size already).
func SizeLimited(pod *corev1.Pod) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if e := v.EmptyDir; e != nil && e.Medium != corev1.StorageMediumMemory && e.SizeLimit != nil && e.SizeLimit.Sign() == 1 {
			out = append(out, v)
		}
	}
	return out
}

// OverLimit returns the kubelet's eviction message for the first emptyDir
// of vols whose usage (usage(name)) exceeds its sizeLimit, or "". A volume
// that cannot be measured counts as over its limit, with a message that
// says why: the kubelet skips missing stats, but here what cannot be
// measured is what a container made unreadable or too deep to walk, and
// that would hide any amount of data.
func OverLimit(vols []corev1.Volume, usage func(name string) (int64, error)) string {
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

// The kubelet's active deadline (pkg/kubelet/active_deadline.go): a pod
// active on the node for spec.activeDeadlineSeconds since its
// status.startTime is Failed with this reason and message, and killed as a
// terminal pod is: every container with the pod's termination grace period,
// none restarted.
const (
	// ReasonDeadlineExceeded is the pod's status reason past its deadline.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	DeadlineMessage        = "Pod was active on the node longer than the specified deadline"
)

// Deadline is when pod's active deadline passes, counted from its start
// time; ok is false when it has no deadline, or no start time to count
// from (zero), as the kubelet does not count a pod that has none.
func Deadline(pod *corev1.Pod, start time.Time) (at time.Time, ok bool) {
	ads := pod.Spec.ActiveDeadlineSeconds
	if ads == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*ads) * time.Second), true
}

// Condition is what must still hold of a pod, once its lock is had, for
// a verdict to be carried out: another podrun may have taken it down or
// replaced it meanwhile, or it may have finished.
type Condition int

const (
	// Alive: the pod's sandbox is the one supervised (started, not ended):
	// only such a pod is evicted.
	Alive Condition = iota
	// Active: the pod is alive and an app container runs or will be
	// restarted. A terminal pod never changes its phase: one finished
	// before its deadline stays as it ended.
	Active
)

// Verdict says whether a pod is ended now, and how.
type Verdict struct {
	End bool
	// Why is the pod's Failed reason and message from then on.
	Why status.Ended
	// Note is what is reported about the pod as it is ended.
	Note string
	// Grace overrides the pod's termination grace period when not nil (an
	// eviction's), as the kubelet's killPodFunc's gracePeriodOverride.
	Grace *time.Duration
	// While must still hold of the pod under its lock.
	While Condition
}

// Facts are what a check found of a pod.
type Facts struct {
	// Alive: its sandbox is up (Alive); only then are its volumes measured.
	Alive bool
	// Over is OverLimit's message for its size-limited emptyDirs, "" when
	// none is over its limit (or none was measured).
	Over string
	// Now and Start (its status.startTime; zero when not known or not
	// checked) count its active deadline.
	Now, Start time.Time
}

// Decide says whether pod is to be ended now, given what a check found:
// evicted when its sandbox is up and an emptyDir is over its limit (first:
// the eviction manager acts on what it measures), else Failed with
// DeadlineExceeded once its active deadline has passed.
func Decide(pod *corev1.Pod, f Facts) Verdict {
	if f.Alive && f.Over != "" {
		return Evicted(f.Over)
	}
	if at, ok := Deadline(pod, f.Start); ok && !f.Now.Before(at) {
		return DeadlineExceeded()
	}
	return Verdict{}
}

// Evicted is the verdict on a pod whose emptyDir is over its limit, as
// OverLimit's message says: Failed/Evicted, its containers stopped with
// the eviction's grace period, if its sandbox is still up.
func Evicted(msg string) Verdict {
	grace := Grace
	return Verdict{End: true, Why: status.Ended{Reason: ReasonEvicted, Message: msg}, Note: "evicted: " + msg, Grace: &grace, While: Alive}
}

// DeadlineExceeded is the verdict on a pod past its active deadline:
// Failed/DeadlineExceeded, its containers stopped with its termination
// grace period, if it is still active.
func DeadlineExceeded() Verdict {
	return Verdict{End: true, Why: status.Ended{Reason: ReasonDeadlineExceeded, Message: DeadlineMessage},
		Note: ReasonDeadlineExceeded + ": " + DeadlineMessage, While: Active}
}
