package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

// TestComputeEvicted: a pod the node ended is Failed with its reason and
// message whatever its containers say, and ps shows the reason.
func TestComputeEvicted(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "app"})
	killed := engine.Task{State: engine.TaskStopped, ExitCode: 137, ExitedAt: t0}
	msg := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	st := Compute(p, Observed{
		Containers: map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, killed, nil)}},
		Ended:      &Ended{Reason: "Evicted", Message: msg},
	})
	if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != msg {
		t.Errorf("phase %s reason %q message %q, want Failed/Evicted/%q", st.Phase, st.Reason, st.Message, msg)
	}
	if got := Reason(p, st); got != "Evicted" {
		t.Errorf("Reason = %q, want Evicted", got)
	}
	if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("container state %+v, want terminated 137", st.ContainerStatuses[0].State)
	}
}

// TestComputeImageWait: the containers on an image that could not be made
// present wait with its reason; the pod is Pending; others are unchanged.
func TestComputeImageWait(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil,
		corev1.Container{Name: "app", Image: "reg/app:1"}, corev1.Container{Name: "side", Image: "reg/side:1"})
	w := &ImageWait{Image: "reg/app:1", Reason: "ImagePullBackOff", Message: `Back-off pulling image "reg/app:1": 503`}
	st := Compute(p, Observed{Containers: map[string][]engine.Container{}, ImageWait: w})
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	if got := st.ContainerStatuses[0].State.Waiting; got == nil || got.Reason != w.Reason || got.Message != w.Message {
		t.Errorf("app waiting %+v, want %+v", got, w)
	}
	if got := st.ContainerStatuses[1].State.Waiting; got == nil || got.Reason != "ContainerCreating" {
		t.Errorf("side waiting %+v, want ContainerCreating", got)
	}
	if got := Reason(p, st); got != "ImagePullBackOff" {
		t.Errorf("Reason = %q, want ImagePullBackOff", got)
	}

	// On an init container's image: Init:ErrImagePull, as kubectl shows it.
	p = pod(corev1.RestartPolicyAlways, []corev1.Container{{Name: "setup", Image: "reg/app:1"}}, corev1.Container{Name: "app", Image: "reg/main:1"})
	w.Reason = "ErrImagePull"
	st = Compute(p, Observed{Containers: map[string][]engine.Container{}, ImageWait: w})
	if got := Reason(p, st); got != "Init:ErrImagePull" {
		t.Errorf("Reason = %q, want Init:ErrImagePull", got)
	}
}
