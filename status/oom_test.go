package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

// TestOOMKilledReason: a recorded OOM kill is the terminated reason, in the
// state and, after a restart, in lastState; the exit code stays.
func TestOOMKilledReason(t *testing.T) {
	c := &corev1.Container{Name: "app"}
	killed := engine.Container{ID: "x-app-0", Labels: map[string]string{
		labels.RestartCount: "0", labels.ExitCode: "137", labels.FinishedAt: "2026-01-02T03:04:05Z",
		labels.Reason: ReasonOOMKilled,
	}}
	st := ContainerStatus(c, []engine.Container{killed}, "ContainerCreating", nil)
	if term := st.State.Terminated; term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("state = %+v, want terminated OOMKilled 137", st.State)
	}
	running := engine.Container{ID: "x-app-1", Labels: map[string]string{labels.RestartCount: "1"},
		Task: engine.Task{State: engine.TaskRunning}}
	st = ContainerStatus(c, []engine.Container{killed, running}, "ContainerCreating", nil)
	if last := st.LastTerminationState.Terminated; last == nil || last.Reason != "OOMKilled" {
		t.Errorf("lastState = %+v, want terminated OOMKilled", st.LastTerminationState)
	}
	plain := engine.Container{ID: "x-app-0", Labels: map[string]string{labels.RestartCount: "0", labels.ExitCode: "137"}}
	if st := ContainerStatus(c, []engine.Container{plain}, "", nil); st.State.Terminated.Reason != "Error" {
		t.Errorf("killed without an OOM event: reason %q, want Error", st.State.Terminated.Reason)
	}
}

func TestQOSClassInStatus(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Mi")},
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Mi")}}}}}}
	if got := Compute(pod, Observed{}).QOSClass; got != corev1.PodQOSBurstable {
		t.Errorf("qosClass = %q, want Burstable", got)
	}
}
