package run

import (
	"hash/fnv"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/resources"
)

// limitedBelow is the CPU limit (millicores) below which a pod's
// containers run in the pool's limited lanes. runc create runs runc init
// in the container's cgroup, so under a tight limit (10m: 1 % of a core) a
// create takes seconds, and a runc shim creates one task at a time,
// holding its lock: the State, Kill, Start, Delete and exec (probes) of
// every container in its lane wait for it (e2e BenchmarkLaneStall).
const limitedBelow = 1000

// cpuLimited reports whether one of pod's containers is limited to less
// than a core.
func cpuLimited(pod *corev1.Pod) bool {
	for _, c := range resources.Containers(pod) {
		if m := resources.CPULimitMilli(pod, c); m > 0 && m < limitedBelow {
			return true
		}
	}
	return false
}

// shimGroup is the shim container name (of kind) of pod runs in. A node's
// pods share a pool of shims, two per core: containerd's CRI gives each pod
// a shim of its own, and a shim (about 3 MiB of the node's memory) costs
// more than the rest of what a small pod does (docs/benchmarks.md). A
// pod's lane comes from its uid; its pause, init containers and sidecars,
// which start one at a time, run in it; its app containers in the lanes
// from there on, one each while there are lanes, so that their restarts and
// the tasks of other pods do not queue behind each other (a shim creates one
// task at a time; a create waits on runc's processes as much as it computes).
//
// The pods limited to less than a core (cpuLimited) have lanes of their
// own, as many again: their slow creates hold up only each other, never
// the other pods' containers.
func shimGroup(pod *corev1.Pod, name, kind string, cores int) string {
	prefix := "podrun-shim-"
	if cpuLimited(pod) {
		prefix = "podrun-shim-limited-"
	}
	lanes := uint32(max(2*cores, 1))
	h := fnv.New32a()
	h.Write([]byte(pod.UID))
	lane := h.Sum32() % lanes
	if kind == labels.KindApp {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		lane = (lane + uint32(max(i, 0))) % lanes
	}
	return prefix + strconv.Itoa(int(lane))
}
