package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

// TestPostStartRunning: an attempt whose postStart hook has not returned
// is not running as far as the pod's status goes: the container shows as
// it did before (ContainerCreating, or the attempt before waiting to
// restart), the pod Pending or not Ready, the readiness transition not
// moved; once its hook returned (label cleared) it runs.
func TestPostStartRunning(t *testing.T) {
	app := corev1.Container{Name: "app"}
	p := pod(corev1.RestartPolicyAlways, nil, app)
	hooked := map[string]string{labels.PostStart: labels.PostStartRunning}
	late := map[string]string{labels.PostStart: labels.PostStartRunning, labels.StartedAt: t0.Add(time.Hour).Format(time.RFC3339Nano)}

	first := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, running, hooked)}}})
	cs := first.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" || cs.ContainerID != "" || cs.Ready || *cs.Started {
		t.Errorf("first attempt, hook running: %+v, want waiting ContainerCreating, no container yet", cs)
	}
	if first.Phase != corev1.PodPending || Reason(p, first) != "ContainerCreating" {
		t.Errorf("phase %s reason %s, want Pending ContainerCreating", first.Phase, Reason(p, first))
	}

	backoff := attempt("app", labels.KindApp, 0, exit3, map[string]string{labels.Waiting: "CrashLoopBackOff", labels.Backoff: "10s"})
	second := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {backoff, attempt("app", labels.KindApp, 1, running, late)}}})
	cs = second.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 0 || cs.Ready ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("second attempt, hook running: %+v, want the first waiting in CrashLoopBackOff, restartCount 0", cs)
	}
	for _, c := range second.Conditions {
		if c.Type == corev1.ContainersReady && (c.Status != corev1.ConditionFalse || c.LastTransitionTime.After(t0.Add(time.Minute))) {
			t.Errorf("ContainersReady %+v while the hook runs: want False, not moved by the attempt the hook holds", c)
		}
	}

	done := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {backoff, attempt("app", labels.KindApp, 1, running, map[string]string{labels.PostStart: ""})}}})
	if cs := done.ContainerStatuses[0]; cs.State.Running == nil || !cs.Ready || cs.RestartCount != 1 {
		t.Errorf("hook returned: %+v, want running, ready, restartCount 1", cs)
	}
	// A task that exited with its hook cut off shows as exited.
	cut := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit3, hooked)}}})
	if cs := cut.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 {
		t.Errorf("exited during its hook: %+v, want terminated with 3", cs.State)
	}
}
