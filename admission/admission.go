// Package admission decides whether this node admits a pod, as the
// kubelet's predicate admit handler does (pkg/kubelet/lifecycle/predicate.go,
// the scheduler's AdmissionCheck): the node's resources left by the pods
// already admitted (pods, cpu, memory, ephemeral-storage, hugepages), the
// pod's node selector and required node affinity against the node's labels,
// its nodeName, and its host ports. It is pure; the first failure is the
// refusal, worded as the kubelet words it.
package admission

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/podrun/podrun/resources"
)

// DefaultMaxPods is the kubelet's default --max-pods.
const DefaultMaxPods = 110

// Node is the node pods are admitted to.
type Node struct {
	Name   string
	Labels map[string]string
	// Allocatable has cpu, memory, ephemeral-storage, hugepages-<size> and
	// pods; a resource it lacks has none to give.
	Allocatable corev1.ResourceList
}

// WellKnownLabels are the labels the kubelet gives its node
// (kubernetes.io/hostname, os and arch, and their beta twins).
func WellKnownLabels(name string) map[string]string {
	return map[string]string{
		corev1.LabelHostname:      name,
		corev1.LabelOSStable:      runtime.GOOS,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
}

// Refusal is why the node refuses a pod: the kubelet's reason (NodeAffinity,
// NodeName, NodePorts, OutOfcpu, OutOfmemory, OutOfpods, ...) and message;
// Detail names what clashed, for podrun's own error.
type Refusal struct {
	Reason, Message, Detail string
}

func (r *Refusal) Error() string {
	s := r.Reason + ": " + r.Message
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	return s
}

// The scheduler plugins' failure reasons the kubelet reports.
const (
	reasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	reasonNodeName     = "node(s) didn't match the requested node name"
	reasonNodePorts    = "node(s) didn't have free ports for the requested pod ports"
)

func predicate(name, desc string) *Refusal {
	return &Refusal{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// Check admits pod on node next to admitted, the pods the node runs (not
// finished); nil when it fits. The checks and their order are the
// kubelet's: resources, node affinity, node name, host ports.
func Check(pod *corev1.Pod, node Node, admitted []*corev1.Pod) *Refusal {
	if r := fits(pod, node, admitted); r != nil {
		return r
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels}}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !ok || err != nil {
		return predicate("NodeAffinity", reasonNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicate("NodeName", reasonNodeName)
	}
	if clash := portClash(pod, admitted); clash != "" {
		r := predicate("NodePorts", reasonNodePorts)
		r.Detail = clash
		return r
	}
	return nil
}

// fits is the scheduler's noderesources.Fits: one more pod, and each
// resource the pod requests, against what the node has left.
func fits(pod *corev1.Pod, node Node, admitted []*corev1.Pod) *Refusal {
	maxPods := node.Allocatable[corev1.ResourcePods]
	if int64(len(admitted))+1 > maxPods.Value() {
		return insufficient(corev1.ResourcePods, 1, int64(len(admitted)), maxPods.Value())
	}
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, p := range admitted {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	names := make([]corev1.ResourceName, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int { return order(a) - order(b) })
	for _, name := range names {
		q := want[name]
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		alloc, u := node.Allocatable[name], used[name]
		if value(name, q) > value(name, alloc)-value(name, u) {
			return insufficient(name, value(name, q), value(name, u), value(name, alloc))
		}
	}
	return nil
}

// order is the scheduler's: cpu, memory, ephemeral-storage, then the rest by name.
func order(n corev1.ResourceName) int {
	switch n {
	case corev1.ResourceCPU:
		return -3
	case corev1.ResourceMemory:
		return -2
	case corev1.ResourceEphemeralStorage:
		return -1
	}
	return 0
}

// value is a quantity as the scheduler counts it: millicores for cpu, else
// units; a sum past an int64 counts as the largest int64, never as a
// wrapped negative that would fit.
func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return resources.Milli(q)
	}
	return resources.Bytes(q)
}

func insufficient(name corev1.ResourceName, requested, used, capacity int64) *Refusal {
	return &Refusal{Reason: "OutOf" + string(name), Message: fmt.Sprintf(
		"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)}
}

// hostPort is one claim on a host port.
type hostPort struct {
	protocol corev1.Protocol
	ip       string // "" and 0.0.0.0: every address
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" }
	return a.protocol == b.protocol && a.port == b.port && (a.ip == b.ip || wild(a.ip) || wild(b.ip))
}

func (a hostPort) String() string {
	ip := a.ip
	if ip == "" {
		ip = "0.0.0.0"
	}
	return fmt.Sprintf("%s:%d/%s", ip, a.port, a.protocol)
}

// hostPorts lists the host ports a pod claims (a hostNetwork pod's ports
// are host ports: defaulting set hostPort to containerPort).
func hostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	for _, c := range resources.Containers(p) {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				out = append(out, hostPort{protocol: port.Protocol, ip: port.HostIP, port: port.HostPort})
			}
		}
	}
	return out
}

// portClash names the host ports of pod that admitted pods hold ("" if none).
func portClash(pod *corev1.Pod, admitted []*corev1.Pod) string {
	var clashes []string
	for _, a := range hostPorts(pod) {
		for _, other := range admitted {
			for _, b := range hostPorts(other) {
				if a.conflicts(b) {
					clashes = append(clashes, fmt.Sprintf("%s held by pod %s/%s", a, other.Namespace, other.Name))
				}
			}
		}
	}
	return strings.Join(clashes, ", ")
}
