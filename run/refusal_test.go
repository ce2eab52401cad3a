package run

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/admission"
)

// TestRefusedPodStatusIsTheKubelets: a pod refused at admission shows the
// status the kubelet's rejectPod gives it — Failed, the reason, "Pod was
// rejected: " and the message, its QoS class and a start time — with no
// conditions, container statuses or host IP, nothing having been made.
func TestRefusedPodStatusIsTheKubelets(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app", Image: testImage,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1000Gi")}}}))
	r := &admission.Refusal{Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}
	if err := hs.h.recordRefusal(hs.r.pod, r); err != nil {
		t.Fatal(err)
	}
	p, err := hs.h.Pod(hs.ctx, Target{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Pod.Status
	want := "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	if st.Phase != corev1.PodFailed || st.Reason != "NodeAffinity" || st.Message != want || st.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("status %s %s %q %s, want Failed NodeAffinity %q Burstable", st.Phase, st.Reason, st.Message, st.QOSClass, want)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(hs.clk.Now().UTC().Truncate(time.Second)) {
		t.Errorf("startTime %v, want the refusal's time %v", st.StartTime, hs.clk.Now())
	}
	if len(st.Conditions) != 0 || len(st.ContainerStatuses) != 0 || st.HostIP != "" || len(st.PodIPs) != 0 {
		t.Errorf("conditions %v, container statuses %v, hostIP %q, podIPs %v: want none", st.Conditions, st.ContainerStatuses, st.HostIP, st.PodIPs)
	}
}
