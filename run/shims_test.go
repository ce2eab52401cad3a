package run

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/labels"
)

// TestShimGroup: a node's pods share a pool of shims, two per core: a
// pod's lane comes from its uid, its init containers and pause run there,
// its app containers each in the next lane, around.
func TestShimGroup(t *testing.T) {
	pod := basePod().Pod
	pod.Spec.Containers = []corev1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}
	lane := func(name, kind string, cores int) int {
		g := shimGroup(pod, name, kind, cores)
		n, err := strconv.Atoi(strings.TrimPrefix(g, "podrun-shim-"))
		if err != nil || n < 0 || n >= 2*cores {
			t.Fatalf("shimGroup(%s, %s, %d cores) = %q: not a lane of %d", name, kind, cores, g, 2*cores)
		}
		return n
	}
	base := lane("", labels.KindInit, 2)
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		if got := lane(name, labels.KindApp, 2); got != (base+i)%4 {
			t.Errorf("app %s: lane %d, want %d", name, got, (base+i)%4)
		}
	}
	if lane("setup", labels.KindInit, 2) != base {
		t.Error("init containers (sidecars among them) run in the pod's lane")
	}
	other := basePod().Pod
	seen := map[string]bool{}
	for i := range 64 {
		other.UID = types.UID(fmt.Sprintf("uid-%d", i))
		seen[shimGroup(other, "x", labels.KindInit, 2)] = true
	}
	if len(seen) != 4 {
		t.Errorf("64 pods in %d lanes of 4", len(seen))
	}
}

// TestShimGroupLimitedLanes: a pod with a container limited to less than
// a core (runc create runs in its cgroup: under 10m it takes seconds,
// holding its shim) runs in lanes of the limited pods, never in a lane of
// the others, its app containers spread over them as in the pool; a pod
// limited to a core or more stays in the pool, one limited by its
// pod-level limit does not.
func TestShimGroupLimitedLanes(t *testing.T) {
	lanes, limitedLanes := map[string]bool{}, map[string]bool{}
	for i := range 4 {
		lanes["podrun-shim-"+strconv.Itoa(i)] = true
		limitedLanes["podrun-shim-limited-"+strconv.Itoa(i)] = true
	}
	limited := func(cpu string) *corev1.Pod {
		pod := basePod().Pod.DeepCopy()
		pod.Spec.Containers = []corev1.Container{{Name: "a"}, {Name: "b", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
		return pod
	}
	pod := limited("10m")
	seen := map[string]bool{}
	for _, g := range []string{shimGroup(pod, "", labels.KindInit, 2), shimGroup(pod, "a", labels.KindApp, 2), shimGroup(pod, "b", labels.KindApp, 2)} {
		if !limitedLanes[g] {
			t.Errorf("a pod limited to 10m runs in %q, want a lane of the limited pods", g)
		}
		seen[g] = true
	}
	if len(seen) != 2 {
		t.Errorf("its pause and two app containers run in %v, want two lanes (the apps one each)", seen)
	}
	if g := shimGroup(limited("1"), "b", labels.KindApp, 2); !lanes[g] {
		t.Errorf("a pod limited to a core runs in %q, want a lane of the pool", g)
	}
	pl := basePod().Pod.DeepCopy()
	pl.Spec.Containers = []corev1.Container{{Name: "a"}}
	pl.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	if g := shimGroup(pl, "a", labels.KindApp, 2); !limitedLanes[g] {
		t.Errorf("a pod limited to 100m at pod level runs in %q, want a lane of the limited pods", g)
	}
}

// TestCPULimited: a pod is in the limited pool when one of its containers
// (init containers and sidecars too), or the pod by its pod-level limit, is
// limited to less than a core.
func TestCPULimited(t *testing.T) {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	for _, tc := range []struct {
		name     string
		app      corev1.ResourceRequirements
		init     *corev1.ResourceRequirements
		podLevel *corev1.ResourceRequirements
		want     bool
	}{
		{name: "no limit", want: false},
		{name: "10m", app: cpu("10m"), want: true},
		{name: "999m", app: cpu("999m"), want: true},
		{name: "a core", app: cpu("1"), want: false},
		{name: "two cores", app: cpu("2"), want: false},
		{name: "an init container at 500m", init: &corev1.ResourceRequirements{Limits: cpu("500m").Limits}, want: true},
		{name: "pod-level 100m", podLevel: &corev1.ResourceRequirements{Limits: cpu("100m").Limits}, want: true},
		{name: "pod-level 4", podLevel: &corev1.ResourceRequirements{Limits: cpu("4").Limits}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod().Pod.DeepCopy()
			pod.Spec.Containers = []corev1.Container{{Name: "a", Resources: tc.app}}
			if tc.init != nil {
				pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Resources: *tc.init}}
			}
			pod.Spec.Resources = tc.podLevel
			if got := cpuLimited(pod); got != tc.want {
				t.Errorf("cpuLimited = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestShimGroupLanes: where each container of a pod runs, relative to the
// pod's lane (its sandbox's): its init containers and sidecars there, its
// app containers from there on in spec order, around the 2×cores lanes;
// one lane when the core count is unknown (0); a name that is no app
// container of the pod's in the pod's lane.
func TestShimGroupLanes(t *testing.T) {
	pod := basePod().Pod.DeepCopy()
	pod.Spec.Containers = []corev1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	laneOf := func(g string) int {
		n, err := strconv.Atoi(strings.TrimPrefix(g, "podrun-shim-"))
		if err != nil {
			t.Fatalf("%q is not a lane of the pool", g)
		}
		return n
	}
	for _, tc := range []struct {
		name, container, kind string
		cores                 int
		offset                int // from the pod's lane, before wrapping around
	}{
		{"sidecar or init container", "setup", labels.KindInit, 2, 0},
		{"first app container", "a", labels.KindApp, 2, 0},
		{"second app container", "b", labels.KindApp, 2, 1},
		{"third app container", "c", labels.KindApp, 2, 2},
		{"third of three on one core (two lanes)", "c", labels.KindApp, 1, 2},
		{"no core count: one lane", "c", labels.KindApp, 0, 2},
		{"not an app container of the pod", "zz", labels.KindApp, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lanes := max(2*tc.cores, 1)
			base := laneOf(shimGroup(pod, "", labels.KindInit, tc.cores))
			got := laneOf(shimGroup(pod, tc.container, tc.kind, tc.cores))
			if want := (base + tc.offset) % lanes; got != want || got >= lanes {
				t.Errorf("lane %d, want %d (the pod's lane %d + %d of %d lanes)", got, want, base, tc.offset, lanes)
			}
		})
	}
	if g := shimGroup(pod, "a", labels.KindApp, 0); g != "podrun-shim-0" {
		t.Errorf("with no core count the pool is one shim, podrun-shim-0; got %q", g)
	}
	again := basePod().Pod.DeepCopy()
	again.Spec.Containers = []corev1.Container{{Name: "x"}}
	if a, b := shimGroup(pod, "", labels.KindInit, 8), shimGroup(again, "", labels.KindInit, 8); a != b {
		t.Errorf("two pods of one uid are in lanes %q and %q: a pod's lane comes from its uid alone", a, b)
	}
}
