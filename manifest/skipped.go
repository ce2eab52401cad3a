package manifest

import (
	"fmt"
	"slices"
	"strings"
)

// clusterKinds are the kinds of Kubernetes' own API groups that a cluster
// uses and one node cannot: a manifest bundle that has them runs as is,
// each one skipped with a note. A kind of those groups not listed here (a
// typo, or a kind podrun should run) stays a problem.
var clusterKinds = map[string][]string{
	"v1": {"Service", "ServiceAccount", "Namespace", "Endpoints", "PersistentVolume", "PersistentVolumeClaim",
		"LimitRange", "ResourceQuota", "Event", "Node", "PodTemplate", "ComponentStatus"},
	"apps/v1":                         {"ControllerRevision"},
	"networking.k8s.io/v1":            {"Ingress", "IngressClass", "NetworkPolicy"},
	"rbac.authorization.k8s.io/v1":    {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"},
	"policy/v1":                       {"PodDisruptionBudget"},
	"autoscaling/v1":                  {"HorizontalPodAutoscaler"},
	"autoscaling/v2":                  {"HorizontalPodAutoscaler"},
	"storage.k8s.io/v1":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment"},
	"scheduling.k8s.io/v1":            {"PriorityClass"},
	"coordination.k8s.io/v1":          {"Lease"},
	"discovery.k8s.io/v1":             {"EndpointSlice"},
	"node.k8s.io/v1":                  {"RuntimeClass"},
	"certificates.k8s.io/v1":          {"CertificateSigningRequest"},
	"apiextensions.k8s.io/v1":         {"CustomResourceDefinition"},
	"apiregistration.k8s.io/v1":       {"APIService"},
	"admissionregistration.k8s.io/v1": {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"},
}

// skippedKind says whether an object of apiVersion and kind is skipped: a
// cluster kind, or a custom resource (a group of its own, with a dot, not
// one of Kubernetes' *.k8s.io groups).
func skippedKind(apiVersion, kind string) bool {
	if slices.Contains(clusterKinds[apiVersion], kind) {
		return true
	}
	group, _, ok := strings.Cut(apiVersion, "/")
	return ok && strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io") && kind != ""
}

// skip notes an object the node does not run.
func (r *reader) skip(src Source, prefix string, obj map[string]any, kind string) {
	name := ""
	if meta, ok := obj["metadata"].(map[string]any); ok {
		name, _ = meta["name"].(string)
	}
	what := "a cluster's object: one node has nothing to do with it"
	switch {
	case kind == "PersistentVolumeClaim":
		what = "its pods' volume of that name is a local directory, made when a pod first uses it: podrun volume ls"
	case clusterKinds[fmt.Sprint(obj["apiVersion"])] == nil:
		what = "a custom resource: podrun has no API server"
	}
	at := src.String()
	if prefix != "" {
		at += " " + strings.TrimSuffix(prefix, ".")
	}
	r.set.Notes = append(r.set.Notes, fmt.Sprintf("%s: %s %q skipped (%s)", at, kind, name, what))
	r.skipped = append(r.skipped, kind)
}
