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
