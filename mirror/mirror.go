// Package mirror keeps the mirror pods of a node's static pods in the
// cluster's API: the API server's copy of each pod the node runs from its
// own manifest directory or URL, as the kubelet's mirror client and pod
// manager keep them (pkg/kubelet/pod/mirror_client.go, pod_manager.go and
// kubelet.go's tryReconcileMirrorPods). The static pods never depend on it:
// mirroring is best-effort and retried.
package mirror

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/manifest"
)

// Annotation marks a mirror pod; its value is the config hash of the static
// pod it mirrors (the kubelet's ConfigMirrorAnnotationKey).
const Annotation = corev1.MirrorPodAnnotationKey

// Node is the node whose static pods are mirrored: the name and UID its
// mirror pods' owner reference names.
type Node struct {
	Name string
	UID  types.UID
}

// Static is a static pod the node runs.
type Static struct {
	// Pod is the static pod as the node runs it: its metadata and spec,
	// named <name>-<node>, annotated with its config source, hash and the
	// time it was seen (manifest's makeStatic).
	Pod *corev1.Pod
	// Status is the status of this pod (this UID) on the node; nil while it
	// is not there yet.
	Status *corev1.PodStatus
}

// Snapshot is what the node runs of its own: its static pods, and those no
// longer wanted that it is still stopping.
type Snapshot struct {
	Static []Static
	// Stopping are the namespace/name of the static pods no longer wanted
	// that are still on the node: their mirror pods stay until they are
	// gone, as the kubelet keeps the mirror pod of a static pod terminating.
	Stopping []string
}

// IsMirror reports whether pod is a mirror pod (the kubelet's IsMirrorPod).
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[Annotation]
	return ok
}

// hash is a static pod's config hash (the kubelet's getPodHash).
func hash(static *corev1.Pod) string { return static.Annotations[manifest.ConfigHashAnnotation] }

// isMirrorOf reports whether mirror is the mirror pod of static: same
// namespace and name, and the static pod's hash in its annotation (the
// kubelet's IsMirrorPodOf).
func isMirrorOf(mirror, static *corev1.Pod) bool {
	h, ok := mirror.Annotations[Annotation]
	return ok && mirror.Namespace == static.Namespace && mirror.Name == static.Name && h == hash(static)
}

// Of is the mirror pod of static on node n, as the kubelet's
// CreateMirrorPod makes it: the static pod's metadata and spec, its
// annotations plus the mirror annotation (its config hash), and a
// controller owner reference to the Node without blockOwnerDeletion (what
// the NodeRestriction admission requires of a node's pod). What the API
// server sets (uid, resourceVersion, status) is left to it.
func Of(static *corev1.Pod, n Node) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *static.ObjectMeta.DeepCopy(), Spec: *static.Spec.DeepCopy()}
	p.UID, p.ResourceVersion, p.CreationTimestamp, p.Generation = "", "", metav1.Time{}, 0
	p.Annotations = map[string]string{}
	for k, v := range static.Annotations {
		p.Annotations[k] = v
	}
	p.Annotations[Annotation] = hash(static)
	controller := true
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Node", Name: n.Name, UID: n.UID, Controller: &controller,
	}}
	return p
}

// Kind is what an Action does.
type Kind string

const (
	// Create creates the static pod's mirror pod (Static).
	Create Kind = "create"
	// Replace deletes a mirror pod (Existing, with its UID as the
	// precondition) that is not the static pod's current one, or that is
	// being deleted, and creates the static pod's once it is deleted.
	Replace Kind = "replace"
	// Delete deletes a mirror pod (Existing, with its UID as the
	// precondition) whose static pod is gone.
	Delete Kind = "delete"
	// Foreign is a pod of the static pod's name that is not a mirror pod:
	// left alone (Existing); the static pod has no mirror pod meanwhile.
	Foreign Kind = "foreign"
	// Status writes the static pod's status to its mirror pod (Existing).
	Status Kind = "status"
)

// Action is one change to the node's pods in the API.
type Action struct {
	Kind     Kind
	Static   *Static     // the static pod (Create, Replace, Foreign, Status)
	Existing *corev1.Pod // the pod of the API (Replace, Delete, Foreign, Status)
	Reason   string      // why, for the log
}

// Decide compares the node's static pods with the pods the API binds to
// the node (api; pods of other nodes are ignored) and returns what makes
// the API's mirror pods match, in the kubelet's terms: a static pod without
// a mirror pod gets one; a mirror pod of another hash, or being deleted, is
// replaced; a mirror pod of no static pod, running or stopping, is deleted
// (the kubelet's orphaned mirror pods); a pod of a static pod's name that
// is not a mirror pod is left alone. The mirror pod of a static pod whose
// status is known gets that status (Status; whether it changed is the
// status writer's to tell). Actions come sorted by namespace/name.
func Decide(node string, snap Snapshot, api []*corev1.Pod) []Action {
	existing := map[string]*corev1.Pod{}
	for _, p := range api {
		if p.Spec.NodeName == node {
			existing[p.Namespace+"/"+p.Name] = p
		}
	}
	var out []Action
	kept := map[string]bool{}
	for _, k := range snap.Stopping {
		kept[k] = true
	}
	for i := range snap.Static {
		s := &snap.Static[i]
		key := s.Pod.Namespace + "/" + s.Pod.Name
		kept[key] = true
		m := existing[key]
		switch {
		case m == nil:
			out = append(out, Action{Kind: Create, Static: s, Reason: "the static pod has no mirror pod"})
		case !IsMirror(m):
			out = append(out, Action{Kind: Foreign, Static: s, Existing: m, Reason: "a pod of the static pod's name is not a mirror pod"})
		case m.DeletionTimestamp != nil:
			out = append(out, Action{Kind: Replace, Static: s, Existing: m, Reason: "the mirror pod is being deleted"})
		case !isMirrorOf(m, s.Pod):
			out = append(out, Action{Kind: Replace, Static: s, Existing: m, Reason: "the mirror pod is of another version of the static pod"})
		case s.Status != nil:
			out = append(out, Action{Kind: Status, Static: s, Existing: m})
		}
	}
	for key, m := range existing {
		if IsMirror(m) && !kept[key] {
			out = append(out, Action{Kind: Delete, Existing: m, Reason: "its static pod is gone"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// key is the namespace/name the action is about.
func (a Action) key() string {
	p := a.Existing
	if p == nil {
		p = a.Static.Pod
	}
	return p.Namespace + "/" + p.Name
}
