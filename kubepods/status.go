package kubepods

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/status"
)

// Write is what the node writes of one pod bound to it: its status (a
// patch of pods/status), or the deletion of its object.
type Write struct {
	Pod    *corev1.Pod       // as the API server last said
	Status *corev1.PodStatus // the status to write; nil with Delete
	// Computed is the node's status Status was merged from (Want merges
	// it again with the pod read just before the write).
	Computed *corev1.PodStatus
	Delete   bool
}

// Want is the status the node writes of pod, from the status it computes
// (Merge, stamped with the generation observed).
func Want(pod *corev1.Pod, computed corev1.PodStatus) corev1.PodStatus {
	want := Merge(pod.Status, computed)
	observed(&want, pod.Generation)
	return want
}

// Decide is the kubelet's status manager for the pods bound to the node
// (api, as the API server last said): each pod on the node (node: its
// status as the node computes it, by UID; nil when the node cannot compute
// it) gets its status written when it differs from the API's and from
// what was last sent (sent, by UID: the watch may not have brought it
// back yet); a pod the node refused as it is written (rejected, by UID)
// is written Failed with the refusal, as the kubelet's rejectPod, once; a
// pod being deleted with nothing left of it on the node is deleted (the
// kubelet's canBeDeleted). A terminal phase is never left (the kubelet
// refuses that transition). It is pure.
func Decide(api []*corev1.Pod, node map[types.UID]*corev1.PodStatus, rejected map[types.UID]*admission.Refusal, sent map[types.UID]*corev1.PodStatus, now time.Time) []Write {
	var out []Write
	for _, pod := range api {
		if isMirror(pod) {
			continue
		}
		computed, on := node[pod.UID]
		switch {
		case !on && pod.DeletionTimestamp != nil:
			out = append(out, Write{Pod: pod, Delete: true})
			continue
		case !on && rejected[pod.UID] != nil && !terminal(pod.Status.Phase) && sent[pod.UID] == nil:
			computed, on = status.Rejected(pod, rejected[pod.UID], now), true
		case !on || computed == nil:
			continue
		case terminal(pod.Status.Phase) && !terminal(computed.Phase):
			continue
		}
		want := Want(pod, *computed)
		if apiequality.Semantic.DeepEqual(want, pod.Status) {
			continue
		}
		if last := sent[pod.UID]; last != nil && apiequality.Semantic.DeepEqual(want, *last) {
			continue
		}
		out = append(out, Write{Pod: pod, Status: &want, Computed: computed})
	}
	return out
}

// observed stamps s with the generation of the pod's spec the node saw,
// on the status and on the conditions the node owns, as the kubelet does
// (PodObservedGenerationTracking, on by default since v1.34).
func observed(s *corev1.PodStatus, generation int64) {
	s.ObservedGeneration = generation
	for i := range s.Conditions {
		if kubeletConditions[s.Conditions[i].Type] {
			s.Conditions[i].ObservedGeneration = generation
		}
	}
}

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

// kubeletConditions are the pod conditions the kubelet owns
// (podutil.PodConditionsByKubelet, with PodReadyToStartContainers): the
// others (DisruptionTarget, readiness gates' types) are kept as the API has
// them.
var kubeletConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true, corev1.ContainersReady: true,
	corev1.PodReadyToStartContainers: true,
}

// Merge is the status the node writes: computed, with what the kubelet's
// status manager keeps of the API's (old): a condition whose status is
// unchanged keeps its lastTransitionTime, the conditions the kubelet does
// not own stay, the startTime first written stays, and the QoS class and
// nominated node the API server and scheduler set stay when the node has
// none. It is as the API server stores it (times in seconds).
func Merge(old, computed corev1.PodStatus) corev1.PodStatus {
	s := *computed.DeepCopy()
	if s.QOSClass == "" {
		s.QOSClass = old.QOSClass
	}
	if old.StartTime != nil {
		s.StartTime = old.StartTime.DeepCopy()
	}
	if s.NominatedNodeName == "" {
		s.NominatedNodeName = old.NominatedNodeName
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if o := condition(old.Conditions, c.Type); o != nil && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
	}
	for _, o := range old.Conditions {
		if !kubeletConditions[o.Type] && condition(s.Conditions, o.Type) == nil {
			s.Conditions = append(s.Conditions, o)
		}
	}
	return asStored(s)
}

func condition(cs []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// asStored is s as it comes back from the API server: through JSON, which
// keeps times to the second, so that an unchanged status compares equal.
func asStored(s corev1.PodStatus) corev1.PodStatus {
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("kubepods: encoding a pod status: %v", err)) // corev1 types always encode
	}
	var out corev1.PodStatus
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("kubepods: decoding a pod status: %v", err))
	}
	return out
}

// StatusPatch is the strategic merge patch from old to new of a pod's
// status, with the pod's UID in it as a precondition (the API server
// refuses it for another pod of the name): the kubelet's
// statusutil.PatchPodStatus.
func StatusPatch(uid types.UID, old, new corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("encoding the old status: %w", err)
	}
	// The uid only in the new object: it appears in the patch.
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: new})
	if err != nil {
		return nil, fmt.Errorf("encoding the new status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("making the status patch: %w", err)
	}
	return patch, nil
}
