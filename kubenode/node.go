// Package kubenode makes this machine a Node of a Kubernetes cluster, as
// the kubelet does: it registers the Node object (labels, capacity,
// addresses, nodeInfo, conditions, daemon endpoint), keeps the node's
// status on the kubelet's cadence and renews its coordination.k8s.io Lease,
// with a node's credentials only (system:node:NAME). Running the pods bound
// to the node is not its job.
//
// node.go decides (the Node and its status from the machine's facts, and
// whether a status is worth sending); agent.go does (the API calls, through
// client-go).
package kubenode

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's cadence (KubeletConfiguration defaults).
const (
	// StatusUpdateFrequency is how often the node's status is computed and
	// sent when it changed (nodeStatusUpdateFrequency).
	StatusUpdateFrequency = 10 * time.Second
	// StatusReportFrequency is how often it is sent although nothing
	// changed (nodeStatusReportFrequency).
	StatusReportFrequency = 5 * time.Minute
	// LeaseDurationSeconds is the node Lease's duration
	// (nodeLeaseDurationSeconds); it is renewed every quarter of it
	// (nodeLeaseRenewIntervalFraction 0.25), 10 s.
	LeaseDurationSeconds = 40
	// DefaultPort is the kubelet's API port (daemonEndpoints.kubeletEndpoint).
	DefaultPort = 10250
)

// NotRunningPodsTaint marked a podrun node registered before podrun ran
// the pods bound to it (package kubepods): the scheduler sent it no pod.
// podrun no longer sets it, and a node cannot remove its own taints: an
// admin removes it from a node registered before (`kubectl taint node
// NAME podrun.io/no-api-pods-`).
var NotRunningPodsTaint = corev1.Taint{Key: "podrun.io/no-api-pods", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// Facts are what this machine is, gathered before anything is decided.
type Facts struct {
	Name string
	// Labels are the node's labels (admission.WellKnownLabels and
	// --node-labels).
	Labels map[string]string
	// Taints are set at registration only: NodeRestriction forbids a node
	// to change its taints afterwards.
	Taints []corev1.Taint
	// Capacity and Allocatable, as the kubelet's machine capacity and what
	// it gives pods (cpu, memory, ephemeral-storage, hugepages-*, pods).
	Capacity, Allocatable corev1.ResourceList
	// InternalIPs are the node's addresses (InternalIP); Hostname is its
	// Hostname address.
	InternalIPs []string
	Hostname    string
	// Port is daemonEndpoints.kubeletEndpoint.Port.
	Port int32
	// Info is status.nodeInfo (containerRuntimeVersion "containerd://X").
	Info corev1.NodeSystemInfo
}

// Health is what the node's conditions report: NotReady is why the node is
// not ready ("" when it is); the pressures are the eviction signals.
type Health struct {
	NotReady                                  string
	MemoryPressure, DiskPressure, PIDPressure bool
}

// Node is the Node the kubelet registers (its initialNode): name, labels,
// taints and the status at now.
func Node(f Facts, h Health, now time.Time) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: f.Name, Labels: maps.Clone(f.Labels)},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(f.Taints)},
	}
	n.Status = Status(f, h, nil, now)
	return n
}

// Status is the node's status at now, as the kubelet's setters make it:
// the conditions' lastTransitionTime is kept from old while their status
// stays the same, their lastHeartbeatTime is now.
func Status(f Facts, h Health, old []corev1.NodeCondition, now time.Time) corev1.NodeStatus {
	var addrs []corev1.NodeAddress
	for _, ip := range f.InternalIPs {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	if f.Hostname != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: f.Hostname})
	}
	return corev1.NodeStatus{
		Capacity:        f.Capacity.DeepCopy(),
		Allocatable:     f.Allocatable.DeepCopy(),
		Addresses:       addrs,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: f.Port}},
		NodeInfo:        f.Info,
		Conditions:      conditions(h, old, now),
	}
}

// conditions are the kubelet's four (nodestatus.MemoryPressureCondition,
// DiskPressureCondition, PIDPressureCondition, ReadyCondition), with its
// reasons and messages, in its order.
func conditions(h Health, old []corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	pressure := func(t corev1.NodeConditionType, on bool, yes, no [2]string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: no[0], Message: no[1]}
		if on {
			c = corev1.NodeCondition{Type: t, Status: corev1.ConditionTrue, Reason: yes[0], Message: yes[1]}
		}
		return c
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if h.NotReady != "" {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: h.NotReady}
	}
	cs := []corev1.NodeCondition{
		pressure(corev1.NodeMemoryPressure, h.MemoryPressure,
			[2]string{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
			[2]string{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"}),
		pressure(corev1.NodeDiskPressure, h.DiskPressure,
			[2]string{"KubeletHasDiskPressure", "kubelet has disk pressure"},
			[2]string{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"}),
		pressure(corev1.NodePIDPressure, h.PIDPressure,
			[2]string{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
			[2]string{"KubeletHasSufficientPID", "kubelet has sufficient PID available"}),
		ready,
	}
	t := metav1.NewTime(now)
	for i := range cs {
		cs[i].LastHeartbeatTime = t
		cs[i].LastTransitionTime = t
		for _, o := range old {
			if o.Type == cs[i].Type && o.Status == cs[i].Status && !o.LastTransitionTime.IsZero() {
				cs[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return cs
}

// Changed tells whether the status new differs from old in anything but
// the conditions' heartbeat times (the kubelet's nodeStatusHasChanged).
func Changed(old, new corev1.NodeStatus) bool {
	if len(old.Conditions) != len(new.Conditions) {
		return true
	}
	for _, n := range new.Conditions {
		i := slices.IndexFunc(old.Conditions, func(o corev1.NodeCondition) bool { return o.Type == n.Type })
		if i < 0 {
			return true
		}
		o := old.Conditions[i]
		o.LastHeartbeatTime, n.LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !equality.Semantic.DeepEqual(o, n) {
			return true
		}
	}
	old.Conditions, new.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(old, new)
}

// ShouldSend tells whether a status is sent: when it changed, or when the
// report frequency has passed since the last one sent (at lastSent; zero
// when none was sent by this process).
func ShouldSend(changed bool, lastSent, now time.Time) bool {
	return changed || lastSent.IsZero() || now.Sub(lastSent) >= StatusReportFrequency
}

// Reconcile brings an existing Node's labels to the kubelet's on a
// re-registration (its updateDefaultLabels for the well-known labels, here
// every label of the facts) and its capacity and allocatable to the
// machine's; it reports whether existing changed. Taints are left as they
// are (a node may not change them). A ProvidedNodeIPAnnotation left by a
// kubelet with an external cloud provider goes, as the kubelet without
// one removes it.
func Reconcile(existing *corev1.Node, f Facts) bool {
	changed := false
	if _, ok := existing.Annotations[ProvidedNodeIPAnnotation]; ok {
		delete(existing.Annotations, ProvidedNodeIPAnnotation)
		changed = true
	}
	for k, v := range f.Labels {
		if existing.Labels[k] != v {
			if existing.Labels == nil {
				existing.Labels = map[string]string{}
			}
			existing.Labels[k] = v
			changed = true
		}
	}
	if !equality.Semantic.DeepEqual(existing.Status.Capacity, f.Capacity) {
		existing.Status.Capacity = f.Capacity.DeepCopy()
		changed = true
	}
	if !equality.Semantic.DeepEqual(existing.Status.Allocatable, f.Allocatable) {
		existing.Status.Allocatable = f.Allocatable.DeepCopy()
		changed = true
	}
	return changed
}
