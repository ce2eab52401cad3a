package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var node = Node{
	Name:   "edge-1",
	Labels: map[string]string{"kubernetes.io/hostname": "edge-1", "kubernetes.io/os": "linux", "disktype": "ssd", "zone": "3"},
	Allocatable: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("3"), corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
		"hugepages-2Mi": resource.MustParse("8Mi"),
	},
}

func podWith(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func requesting(name string, requests corev1.ResourceList) *corev1.Pod {
	return podWith(name, func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = requests })
}

func affinity(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

const affinityFailed = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"

// TestNodeSelectorAndAffinity: nodeSelector and every operator of required
// node affinity (and matchFields on metadata.name) against the node's labels.
func TestNodeSelectorAndAffinity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pod   func(*corev1.Pod)
		admit bool
	}{
		{"no constraint", nil, true},
		{"nodeSelector matches", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disktype": "ssd"} }, true},
		{"nodeSelector on the os label", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} }, true},
		{"nodeSelector differs", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disktype": "hdd"} }, false},
		{"nodeSelector label missing", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "yes"} }, false},
		{"In", affinity(expr("disktype", corev1.NodeSelectorOpIn, "hdd", "ssd")), true},
		{"In, no value", affinity(expr("disktype", corev1.NodeSelectorOpIn, "hdd")), false},
		{"NotIn", affinity(expr("disktype", corev1.NodeSelectorOpNotIn, "hdd")), true},
		{"NotIn, the value", affinity(expr("disktype", corev1.NodeSelectorOpNotIn, "ssd")), false},
		{"Exists", affinity(expr("disktype", corev1.NodeSelectorOpExists)), true},
		{"Exists, missing", affinity(expr("gpu", corev1.NodeSelectorOpExists)), false},
		{"DoesNotExist", affinity(expr("gpu", corev1.NodeSelectorOpDoesNotExist)), true},
		{"DoesNotExist, there", affinity(expr("disktype", corev1.NodeSelectorOpDoesNotExist)), false},
		{"Gt", affinity(expr("zone", corev1.NodeSelectorOpGt, "2")), true},
		{"Gt, not greater", affinity(expr("zone", corev1.NodeSelectorOpGt, "3")), false},
		{"Lt", affinity(expr("zone", corev1.NodeSelectorOpLt, "4")), true},
		{"Lt, not less", affinity(expr("zone", corev1.NodeSelectorOpLt, "3")), false},
		{"terms are ORed", affinity(expr("gpu", corev1.NodeSelectorOpExists), expr("disktype", corev1.NodeSelectorOpExists)), true},
		{"matchFields metadata.name", affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"edge-1"}}}}), true},
		{"matchFields another name", affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"edge-2"}}}}), false},
		{"selector and affinity both must match", func(p *corev1.Pod) {
			affinity(expr("disktype", corev1.NodeSelectorOpExists))(p)
			p.Spec.NodeSelector = map[string]string{"disktype": "hdd"}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(podWith("p", tc.pod), node, nil)
			switch {
			case tc.admit && r != nil:
				t.Errorf("refused: %v", r)
			case !tc.admit && (r == nil || r.Reason != "NodeAffinity" || r.Message != affinityFailed):
				t.Errorf("Check = %v, want NodeAffinity: %s", r, affinityFailed)
			}
		})
	}
}

// TestResources: each resource against what the admitted pods left, with
// the kubelet's reason and message.
func TestResources(t *testing.T) {
	q := resource.MustParse
	admitted := []*corev1.Pod{
		requesting("a", corev1.ResourceList{corev1.ResourceCPU: q("1500m"), corev1.ResourceMemory: q("512Mi")}),
		requesting("b", corev1.ResourceList{corev1.ResourceEphemeralStorage: q("8Gi"), "hugepages-2Mi": q("4Mi")}),
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		admitted    []*corev1.Pod
		reason, msg string
	}{
		{"fits", requesting("p", corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("512Mi")}), admitted, "", ""},
		{"cpu", requesting("p", corev1.ResourceList{corev1.ResourceCPU: q("501m")}), admitted,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 501, used: 1500, capacity: 2000"},
		{"memory", requesting("p", corev1.ResourceList{corev1.ResourceMemory: q("1000Gi")}), nil,
			"OutOfmemory", "Node didn't have enough resource: memory, requested: 1073741824000, used: 0, capacity: 1073741824"},
		{"ephemeral-storage", requesting("p", corev1.ResourceList{corev1.ResourceEphemeralStorage: q("3Gi")}), admitted,
			"OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 3221225472, used: 8589934592, capacity: 10737418240"},
		{"hugepages", requesting("p", corev1.ResourceList{"hugepages-2Mi": q("6Mi")}), admitted,
			"OutOfhugepages-2Mi", "Node didn't have enough resource: hugepages-2Mi, requested: 6291456, used: 4194304, capacity: 8388608"},
		{"hugepages the node lacks", requesting("p", corev1.ResourceList{"hugepages-1Gi": q("1Gi")}), nil,
			"OutOfhugepages-1Gi", "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		{"pods", podWith("p", nil), append(admitted, podWith("c", nil)),
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{"cpu first, then memory", requesting("p", corev1.ResourceList{corev1.ResourceMemory: q("2Gi"), corev1.ResourceCPU: q("3")}), nil,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{"a sum past an int64 does not wrap", podWith("p", func(p *corev1.Pod) {
			big := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("7Ei")}}
			p.Spec.Containers = []corev1.Container{{Name: "a", Resources: big}, {Name: "b", Resources: big}}
		}), nil, "OutOfmemory", "Node didn't have enough resource: memory, requested: 9223372036854775807, used: 0, capacity: 1073741824"},
		{"init containers: the largest of them or the apps' sum", podWith("p", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}}}
		}), nil, "OutOfmemory", "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.pod, node, tc.admitted)
			if tc.reason == "" {
				if r != nil {
					t.Errorf("refused: %v", r)
				}
				return
			}
			if r == nil || r.Reason != tc.reason || r.Message != tc.msg {
				t.Errorf("Check = %v\nwant %s: %s", r, tc.reason, tc.msg)
			}
		})
	}
}

// TestNodeNameAndPorts: a pod for another node, and host ports held by an
// admitted pod (same port and protocol, overlapping addresses).
func TestNodeNameAndPorts(t *testing.T) {
	if r := Check(podWith("p", func(p *corev1.Pod) { p.Spec.NodeName = "edge-2" }), node, nil); r == nil || r.Reason != "NodeName" ||
		r.Message != "Predicate NodeName failed: node(s) didn't match the requested node name" {
		t.Errorf("nodeName edge-2: %v", r)
	}
	if r := Check(podWith("p", func(p *corev1.Pod) { p.Spec.NodeName = "edge-1" }), node, nil); r != nil {
		t.Errorf("nodeName edge-1: %v", r)
	}
	port := func(n int32, ip string, proto corev1.Protocol) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: n, HostIP: ip, Protocol: proto}}
		}
	}
	held := []*corev1.Pod{podWith("web", port(8080, "127.0.0.1", corev1.ProtocolTCP))}
	for _, tc := range []struct {
		name  string
		pod   func(*corev1.Pod)
		clash string
	}{
		{"same address", port(8080, "127.0.0.1", corev1.ProtocolTCP), "127.0.0.1:8080/TCP held by pod default/web"},
		{"every address", port(8080, "", corev1.ProtocolTCP), "0.0.0.0:8080/TCP held by pod default/web"},
		{"another address", port(8080, "127.0.0.2", corev1.ProtocolTCP), ""},
		{"another protocol", port(8080, "127.0.0.1", corev1.ProtocolUDP), ""},
		{"another port", port(8081, "", corev1.ProtocolTCP), ""},
	} {
		r := Check(podWith("p", tc.pod), node, held)
		switch {
		case tc.clash == "" && r != nil:
			t.Errorf("%s: refused: %v", tc.name, r)
		case tc.clash != "" && (r == nil || r.Reason != "NodePorts" || r.Detail != tc.clash ||
			r.Message != "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"):
			t.Errorf("%s: Check = %v, want NodePorts (%s)", tc.name, r, tc.clash)
		}
	}
}

func TestWellKnownLabels(t *testing.T) {
	l := WellKnownLabels("edge-1")
	if l["kubernetes.io/hostname"] != "edge-1" || l["kubernetes.io/os"] != "linux" || l["kubernetes.io/arch"] == "" {
		t.Errorf("labels %v", l)
	}
}
