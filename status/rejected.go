package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/resources"
)

// Rejected is the status the kubelet's rejectPod gives a pod it
// refused at admission: Failed, the reason, "Pod was rejected: " and the
// message, the QoS class, and the start time its status manager sets; no
// conditions and no container statuses, nothing having been made.
func Rejected(pod *corev1.Pod, r *admission.Refusal, now time.Time) *corev1.PodStatus {
	start := metav1.NewTime(now.UTC().Truncate(time.Second))
	return &corev1.PodStatus{Phase: corev1.PodFailed, Reason: r.Reason, Message: "Pod was rejected: " + r.Message,
		QOSClass: resources.QOSClass(pod), StartTime: &start}
}
