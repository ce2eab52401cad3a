// Package downward computes what the Kubernetes downward API exposes of a
// pod: the values of fieldRef and resourceFieldRef selectors, for env vars
// and downwardAPI volumes, as the kubelet computes them (pkg/fieldpath,
// podFieldSelectorRuntimeValue in pkg/kubelet/kubelet_pods.go and
// pkg/api/v1/resource).
//
// The package is pure except for node.go, which reads the host.
package downward

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Info is what the downward API exposes of a pod.
type Info struct {
	Pod      *corev1.Pod
	PodIPs   []string            // status.podIPs, primary first; the host's IPs for a hostNetwork pod
	HostIP   string              // status.hostIP: the node's IP
	NodeName string              // spec.nodeName: the machine's node name
	Node     corev1.ResourceList // the node's allocatable cpu, memory, ephemeral-storage: what unset limits resolve to
}

// FieldValue returns the value of a fieldRef selector of the pod.
//
// Unlike the kubelet, which reports every host IP of the node's Node object
// for status.hostIPs, status.hostIPs is Info.HostIP alone: podrun has no Node
// object and reports one host IP. spec.nodeName is Info.NodeName whatever the
// manifest says, as the kubelet sets it on static pods.
func FieldValue(info Info, sel *corev1.ObjectFieldSelector) (string, error) {
	if sel.APIVersion != "" && sel.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", sel.APIVersion)
	}
	pod := info.Pod
	if path, key, ok := SplitSubscript(sel.FieldPath); ok {
		var m map[string]string
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", sel.FieldPath, strings.Join(errs, ";"))
			}
			m = pod.Annotations
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", sel.FieldPath, strings.Join(errs, ";"))
			}
			m = pod.Labels
		default:
			return "", fmt.Errorf("field label does not support subscript: %s", sel.FieldPath)
		}
		return m[key], nil
	}
	switch sel.FieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName", "spec.host": // spec.host: what old v1 clients call spec.nodeName
		return info.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return info.HostIP, nil
	case "status.podIP":
		if len(info.PodIPs) == 0 {
			return "", nil
		}
		return info.PodIPs[0], nil
	case "status.podIPs":
		return strings.Join(info.PodIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", sel.FieldPath)
}

// SplitSubscript splits "metadata.labels['key']" into "metadata.labels" and
// "key"; ok is false for a path without a subscript (fieldpath.SplitMaybeSubscriptedPath).
func SplitSubscript(fieldPath string) (path, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return fieldPath, "", false
	}
	path, key, found = strings.Cut(s, "['")
	if !found || path == "" {
		return fieldPath, "", false
	}
	return path, key, true
}

// FormatMap renders labels or annotations as the kubelet does for
// metadata.labels and metadata.annotations: one key="value" line per entry,
// keys sorted, values quoted as Go quotes them, no final newline.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// ResourceValue returns the value of a resourceFieldRef selector: the limit
// or request of sel.ContainerName, or of containerName (the container whose
// env is resolved) when the selector names none, divided by the divisor (1
// when unset) and rounded up. cpu is counted in cores (so "1m" gives
// millicores), memory, ephemeral-storage and hugepages in bytes.
//
// An unset or zero cpu, memory or ephemeral-storage limit is the pod-level
// limit when spec.resources sets one (cpu and memory), else the node's
// allocatable, as the kubelet defaults limits for the downward API
// (defaultPodLimitsForDownwardAPI, MergeContainerResourceLimits), for app
// and init containers alike (the kubelet's env code leaves the limits of an
// init container named by containerName unset, so they read as 0; its
// downwardAPI volume code defaults them). Requests are not defaulted here:
// the manifest's defaulting copies limits to unset requests, as the API
// server does.
func ResourceValue(info Info, containerName string, sel *corev1.ResourceFieldSelector) (string, error) {
	name := sel.ContainerName
	if name == "" {
		name = containerName
	}
	c := findContainer(info.Pod, name)
	if c == nil {
		return "", fmt.Errorf("container %s not found", name)
	}
	limits := mergeLimits(c.Resources.Limits, defaultLimits(info))

	divisor := sel.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, res, ok := strings.Cut(sel.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource: %s", sel.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = limits
	}
	q := list[corev1.ResourceName(res)]
	switch {
	case res == string(corev1.ResourceCPU):
		return ceilDiv(float64(q.MilliValue()), float64(divisor.MilliValue())), nil
	case res == string(corev1.ResourceMemory), res == string(corev1.ResourceEphemeralStorage),
		strings.HasPrefix(res, corev1.ResourceHugePagesPrefix):
		return ceilDiv(float64(q.Value()), float64(divisor.Value())), nil
	}
	return "", fmt.Errorf("unsupported container resource: %s", sel.Resource)
}

func ceilDiv(n, d float64) string {
	return strconv.FormatInt(int64(math.Ceil(n/d)), 10)
}

// findContainer returns the app or init container named name, or nil.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// limitDefaulted are the resources whose unset limit the downward API reports
// as the pod's or node's (hugepages are never overcommitted, so a container
// using them always has a limit).
var limitDefaulted = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// defaultLimits is what an unset container limit resolves to: the pod-level
// limit where spec.resources sets one of a resource the node has, else the
// node's allocatable.
func defaultLimits(info Info) corev1.ResourceList {
	out := info.Node.DeepCopy()
	if info.Pod.Spec.Resources == nil {
		return out
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} { // the pod-level resources
		if q, ok := info.Pod.Spec.Resources.Limits[r]; ok && !q.IsZero() {
			if _, onNode := out[r]; onNode {
				out[r] = q.DeepCopy()
			}
		}
	}
	return out
}

// mergeLimits returns limits with each unset or zero entry of limitDefaulted
// taken from defaults.
func mergeLimits(limits, defaults corev1.ResourceList) corev1.ResourceList {
	out := limits.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for _, r := range limitDefaulted {
		if q, ok := out[r]; ok && !q.IsZero() {
			continue
		}
		if d, ok := defaults[r]; ok {
			out[r] = d.DeepCopy()
		}
	}
	return out
}
