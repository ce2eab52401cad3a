// The shim pool: which containers share a containerd shim.
//
// containerd's CRI gives each pod a shim of its own; podrun's pods share a
// pool of runc shims instead, because a shim (about 3 MiB of the node's
// memory) costs more than the rest of what a small pod does
// (docs/benchmarks.md). The pool has lanes, two per core: a lane is one
// shim, named by the runc shim's group annotation (labels.ShimGroup) that
// spec.Pause and spec.Container set from shimGroup.
//
// Who shares a lane:
//   - a pod's sandbox, its init containers and its native sidecars share
//     the pod's lane, chosen by its uid: they start one at a time, so they
//     never wait for each other there;
//   - its app containers take the lanes from the pod's lane on, one each
//     while there are lanes (the i-th in spec order the pod's lane + i),
//     as they are created together (prepareApps) and restart apart: a shim
//     creates one task at a time, and a create waits on runc's processes
//     as much as it computes;
//   - pods with a container limited to less than a core (cpuLimited) have
//     a pool of their own, as many lanes again (podrun-shim-limited-N),
//     so that their slow creates hold up only each other.
//
// The price of sharing: a shim that dies takes every container of its lane
// with it (they are restarted by their policy, as after any crash).

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

// shimGroup is the lane (shim) of the container name, of kind, of pod on a
// node of cores: the pod's lane for its sandbox, init containers and
// sidecars, the lanes from there on for its app containers, in the
// limited pool when the pod is cpuLimited.
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
