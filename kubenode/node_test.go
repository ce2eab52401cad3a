package kubenode

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(10 * time.Second)
)

func testFacts() Facts {
	return Facts{
		Name:        "dev1",
		Labels:      map[string]string{corev1.LabelHostname: "dev1", corev1.LabelOSStable: "linux"},
		Taints:      []corev1.Taint{NotRunningPodsTaint},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
		InternalIPs: []string{"10.0.0.5", "fd00::5"},
		Hostname:    "dev1",
		Port:        DefaultPort,
		Info:        corev1.NodeSystemInfo{ContainerRuntimeVersion: "containerd://1.7.35", OperatingSystem: "linux", Architecture: "amd64"},
	}
}

func cond(s *corev1.NodeStatus, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestNode(t *testing.T) {
	f := testFacts()
	n := Node(f, Health{}, t0)
	if n.Name != "dev1" || n.Labels[corev1.LabelHostname] != "dev1" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != NotRunningPodsTaint {
		t.Errorf("meta/spec: %+v %+v", n.ObjectMeta, n.Spec)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeInternalIP, Address: "fd00::5"}, {Type: corev1.NodeHostName, Address: "dev1"}}
	if len(n.Status.Addresses) != 3 || n.Status.Addresses[0] != want[0] || n.Status.Addresses[1] != want[1] || n.Status.Addresses[2] != want[2] {
		t.Errorf("addresses %v, want %v", n.Status.Addresses, want)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || n.Status.NodeInfo.ContainerRuntimeVersion != "containerd://1.7.35" {
		t.Errorf("endpoints/info: %+v %+v", n.Status.DaemonEndpoints, n.Status.NodeInfo)
	}
	if q := n.Status.Allocatable[corev1.ResourcePods]; q.Value() != 110 {
		t.Errorf("allocatable pods %v", q.String())
	}
	// The node's object does not share maps with the facts.
	n.Labels["x"] = "y"
	if _, ok := f.Labels["x"]; ok {
		t.Error("Node shares the facts' labels")
	}
}

func TestConditions(t *testing.T) {
	old := Status(testFacts(), Health{}, nil, t0).Conditions
	for _, tc := range []struct {
		name string
		h    Health
		old  []corev1.NodeCondition
		// want: per type, status, reason and whether the transition is
		// still t0 (kept) or t1 (new).
		want map[corev1.NodeConditionType][3]string
	}{
		{"first healthy", Health{}, nil, map[corev1.NodeConditionType][3]string{
			corev1.NodeReady:          {"True", "KubeletReady", "t1"},
			corev1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory", "t1"},
			corev1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure", "t1"},
			corev1.NodePIDPressure:    {"False", "KubeletHasSufficientPID", "t1"},
		}},
		{"still healthy keeps transitions", Health{}, old, map[corev1.NodeConditionType][3]string{
			corev1.NodeReady:          {"True", "KubeletReady", "t0"},
			corev1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory", "t0"},
			corev1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure", "t0"},
			corev1.NodePIDPressure:    {"False", "KubeletHasSufficientPID", "t0"},
		}},
		{"not ready and pressure move their transitions only", Health{NotReady: "container runtime is down", DiskPressure: true}, old, map[corev1.NodeConditionType][3]string{
			corev1.NodeReady:          {"False", "KubeletNotReady", "t1"},
			corev1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory", "t0"},
			corev1.NodeDiskPressure:   {"True", "KubeletHasDiskPressure", "t1"},
			corev1.NodePIDPressure:    {"False", "KubeletHasSufficientPID", "t0"},
		}},
		{"memory and pid pressure", Health{MemoryPressure: true, PIDPressure: true}, old, map[corev1.NodeConditionType][3]string{
			corev1.NodeReady:          {"True", "KubeletReady", "t0"},
			corev1.NodeMemoryPressure: {"True", "KubeletHasInsufficientMemory", "t1"},
			corev1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure", "t0"},
			corev1.NodePIDPressure:    {"True", "KubeletHasInsufficientPID", "t1"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Status(testFacts(), tc.h, tc.old, t1)
			if len(s.Conditions) != 4 {
				t.Fatalf("%d conditions", len(s.Conditions))
			}
			for typ, w := range tc.want {
				c := cond(&s, typ)
				at := map[string]time.Time{"t0": t0, "t1": t1}[w[2]]
				if string(c.Status) != w[0] || c.Reason != w[1] || !c.LastTransitionTime.Time.Equal(at) || !c.LastHeartbeatTime.Time.Equal(t1) || c.Message == "" {
					t.Errorf("%s: %+v, want %v", typ, c, w)
				}
			}
			if tc.h.NotReady != "" && cond(&s, corev1.NodeReady).Message != tc.h.NotReady {
				t.Errorf("ready message %q", cond(&s, corev1.NodeReady).Message)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	base := Status(testFacts(), Health{}, nil, t0)
	for _, tc := range []struct {
		name   string
		change func(s *corev1.NodeStatus)
		want   bool
	}{
		{"same", func(*corev1.NodeStatus) {}, false},
		{"heartbeat only", func(s *corev1.NodeStatus) {
			for i := range s.Conditions {
				s.Conditions[i].LastHeartbeatTime = metav1.NewTime(t1)
			}
		}, false},
		{"conditions reordered", func(s *corev1.NodeStatus) {
			s.Conditions[0], s.Conditions[3] = s.Conditions[3], s.Conditions[0]
		}, false},
		{"ready flips", func(s *corev1.NodeStatus) { s.Conditions[3].Status = corev1.ConditionFalse }, true},
		{"a condition less", func(s *corev1.NodeStatus) { s.Conditions = s.Conditions[:3] }, true},
		{"a condition of another type", func(s *corev1.NodeStatus) { s.Conditions[0].Type = "NetworkUnavailable" }, true},
		{"an address", func(s *corev1.NodeStatus) { s.Addresses = s.Addresses[1:] }, true},
		{"runtime version", func(s *corev1.NodeStatus) { s.NodeInfo.ContainerRuntimeVersion = "containerd://2.1.0" }, true},
		{"allocatable", func(s *corev1.NodeStatus) { s.Allocatable[corev1.ResourcePods] = resource.MustParse("5") }, true},
		{"same quantity spelt otherwise", func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceCPU] = resource.MustParse("2000m") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := *base.DeepCopy()
			tc.change(&n)
			if got := Changed(base, n); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShouldSend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		changed  bool
		lastSent time.Time
		now      time.Time
		want     bool
	}{
		{"changed", true, t0, t1, true},
		{"never sent by this process", false, time.Time{}, t1, true},
		{"unchanged within the report frequency", false, t0, t0.Add(StatusReportFrequency - time.Second), false},
		{"unchanged at the report frequency", false, t0, t0.Add(StatusReportFrequency), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldSend(tc.changed, tc.lastSent, tc.now); got != tc.want {
				t.Errorf("ShouldSend = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	f := testFacts()
	for _, tc := range []struct {
		name   string
		node   func() *corev1.Node
		want   bool
		taints int
	}{
		{"as registered", func() *corev1.Node { return Node(f, Health{}, t0) }, false, 1},
		{"a label changed by hand comes back", func() *corev1.Node {
			n := Node(f, Health{}, t0)
			n.Labels[corev1.LabelHostname] = "other"
			return n
		}, true, 1},
		{"no labels at all", func() *corev1.Node {
			n := Node(f, Health{}, t0)
			n.Labels = nil
			return n
		}, true, 1},
		{"other labels are kept, taints untouched", func() *corev1.Node {
			n := Node(f, Health{}, t0)
			n.Labels["team"] = "a"
			n.Spec.Taints = nil
			return n
		}, false, 0},
		{"capacity of another machine", func() *corev1.Node {
			n := Node(f, Health{}, t0)
			n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4")
			n.Status.Allocatable = nil
			return n
		}, true, 1},
		{"a cloud provider's provided-node-ip goes, other annotations stay", func() *corev1.Node {
			n := Node(f, Health{}, t0)
			n.Annotations = map[string]string{ProvidedNodeIPAnnotation: "10.0.0.1", "team": "a"}
			return n
		}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node()
			extra, note := n.Labels["team"], n.Annotations["team"]
			if got := Reconcile(n, f); got != tc.want {
				t.Errorf("Reconcile = %v, want %v", got, tc.want)
			}
			for k, v := range f.Labels {
				if n.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, n.Labels[k], v)
				}
			}
			if _, ok := n.Annotations[ProvidedNodeIPAnnotation]; ok || n.Annotations["team"] != note {
				t.Errorf("annotations %v: want %s gone, others kept", n.Annotations, ProvidedNodeIPAnnotation)
			}
			if n.Labels["team"] != extra || len(n.Spec.Taints) != tc.taints {
				t.Errorf("others' label or taints changed: %v %v", n.Labels, n.Spec.Taints)
			}
			if Changed(n.Status, Status(f, Health{}, n.Status.Conditions, t0)) {
				t.Errorf("capacity not reconciled: %v %v", n.Status.Capacity, n.Status.Allocatable)
			}
		})
	}
}
