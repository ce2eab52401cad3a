package eviction

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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
