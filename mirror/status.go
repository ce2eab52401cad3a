package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// statusWriter writes a static pod's status to its mirror pod, as the
// kubelet's status manager does (status_manager.go syncPod: mergePodStatus,
// then pkg/util/pod PatchPodStatus): a strategic merge patch of the status
// subresource, carrying the mirror pod's UID as a precondition, sent only
// when the status differs from the one last sent to that mirror pod and
// from the API's. It stands in for the node's one status writer (the API
// pods' status manager) until the static pods' statuses go through that.
type statusWriter struct {
	api  API
	sent map[types.UID]*corev1.PodStatus // the status last sent, by mirror pod UID
}

// write sends status to mirror unless it was sent already; it reports
// whether it patched.
func (w *statusWriter) write(ctx context.Context, mirror *corev1.Pod, status *corev1.PodStatus) (bool, error) {
	if last, ok := w.sent[mirror.UID]; ok && apiequality.Semantic.DeepEqual(last, status) {
		return false, nil
	}
	patch, unchanged, err := statusPatch(mirror.UID, mirror.Status, mergeStatus(mirror.Status, *status))
	if err != nil {
		return false, fmt.Errorf("the status of mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
	}
	if !unchanged {
		if _, err := w.api.CoreV1().Pods(mirror.Namespace).Patch(ctx, mirror.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return false, fmt.Errorf("writing the status of mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
		}
	}
	w.sent[mirror.UID] = status.DeepCopy()
	return !unchanged, nil
}

// keep forgets what was sent to the mirror pods not in uids.
func (w *statusWriter) keep(uids map[types.UID]bool) {
	for uid := range w.sent {
		if !uids[uid] {
			delete(w.sent, uid)
		}
	}
}

// byKubelet are the pod conditions the kubelet owns
// (pkg/kubelet/types PodConditionsByKubelet, and PodReadyToStartContainers).
var byKubelet = map[corev1.PodConditionType]bool{
	corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true,
	corev1.ContainersReady: true, corev1.PodReadyToStartContainers: true,
}

// mergeStatus is the status to write over old (the API's): new's, with
// the conditions others own kept from old, and the resource claims' status
// (never the kubelet's) too: the kubelet's mergePodStatus.
func mergeStatus(old, new corev1.PodStatus) corev1.PodStatus {
	var conds []corev1.PodCondition
	for _, c := range old.Conditions {
		if !byKubelet[c.Type] {
			conds = append(conds, c)
		}
	}
	for _, c := range new.Conditions {
		if byKubelet[c.Type] {
			conds = append(conds, c)
		}
	}
	out := *new.DeepCopy()
	out.Conditions = conds
	out.ResourceClaimStatuses = old.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses
	return out
}

// statusPatch is the strategic merge patch from old to new with uid as its
// precondition, and whether it changes nothing else (the kubelet's
// preparePatchBytesForPodStatus).
func statusPatch(uid types.UID, old, new corev1.PodStatus) ([]byte, bool, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, false, err
	}
	// Only the new object has the UID: it appears in the patch, a precondition.
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: new})
	if err != nil {
		return nil, false, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, false, err
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}
