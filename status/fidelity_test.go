package status

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

// TestStatusResources: a created container reports the spec's resources
// (`{}` when it has none) and its requests as allocatedResources, as the
// kubelet's convertContainerStatusResources; one not created reports
// neither.
func TestStatusResources(t *testing.T) {
	mem := resource.MustParse("64Mi")
	sized := corev1.Container{Name: "sized", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: mem}, Requests: corev1.ResourceList{corev1.ResourceMemory: mem}}}
	bare := corev1.Container{Name: "bare"}
	for _, tc := range []struct {
		c         corev1.Container
		task      engine.Task
		resources string
		allocated string
	}{
		{bare, running, `{}`, `null`},
		{bare, exit3, `{}`, `null`},
		{sized, running, `{"limits":{"memory":"64Mi"},"requests":{"memory":"64Mi"}}`, `{"memory":"64Mi"}`},
		{sized, exit0, `{"limits":{"memory":"64Mi"},"requests":{"memory":"64Mi"}}`, `{"memory":"64Mi"}`},
	} {
		st := ContainerStatus(&tc.c, []engine.Container{attempt(tc.c.Name, labels.KindApp, 0, tc.task, nil)}, "", nil)
		if got := jsonOf(t, st.Resources); got != tc.resources {
			t.Errorf("%s, task %v: resources %s, want %s", tc.c.Name, tc.task.State, got, tc.resources)
		}
		if got := jsonOf(t, st.AllocatedResources); got != tc.allocated {
			t.Errorf("%s, task %v: allocatedResources %s, want %s", tc.c.Name, tc.task.State, got, tc.allocated)
		}
		if st := ContainerStatus(&tc.c, nil, "ContainerCreating", nil); st.Resources != nil || st.AllocatedResources != nil {
			t.Errorf("%s not created: resources %v, allocated %v; want neither", tc.c.Name, st.Resources, st.AllocatedResources)
		}
	}
}

// TestStatusVolumeMounts: every container, created or not, init or app,
// reports its mounts; a read-only one with recursiveReadOnly Disabled.
func TestStatusVolumeMounts(t *testing.T) {
	c := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "conf", MountPath: "/etc/app", ReadOnly: true, SubPath: "app"},
	}}
	want := `[{"name":"data","mountPath":"/data"},{"name":"conf","mountPath":"/etc/app","readOnly":true,"recursiveReadOnly":"Disabled"}]`
	p := pod(corev1.RestartPolicyAlways, []corev1.Container{{Name: "setup", VolumeMounts: c.VolumeMounts}}, c)
	for name, o := range map[string]Observed{
		"not created": {},
		"created": {Containers: map[string][]engine.Container{
			"setup": {attempt("setup", labels.KindInit, 0, exit0, nil)},
			"app":   {attempt("app", labels.KindApp, 0, running, nil)}}},
	} {
		st := Compute(p, o)
		if got := jsonOf(t, st.InitContainerStatuses[0].VolumeMounts); got != want {
			t.Errorf("%s: init container volumeMounts %s, want %s", name, got, want)
		}
		if got := jsonOf(t, st.ContainerStatuses[0].VolumeMounts); got != want {
			t.Errorf("%s: container volumeMounts %s, want %s", name, got, want)
		}
	}
	if st := ContainerStatus(&corev1.Container{Name: "plain"}, nil, "", nil); st.VolumeMounts != nil {
		t.Errorf("no mounts: volumeMounts %v, want none", st.VolumeMounts)
	}
}

// TestLastStateOfFinishedContainer: lastState is the attempt before a
// running one, or the one a restart waits on; a container that exited and
// is not restarted has none (the kubelet removed the older attempt).
func TestLastStateOfFinishedContainer(t *testing.T) {
	c := &corev1.Container{Name: "app"}
	failed := attempt("app", labels.KindApp, 0, exit3, nil)
	for _, tc := range []struct {
		name string
		cur  engine.Container
		want bool
	}{
		{"running again", attempt("app", labels.KindApp, 1, running, nil), true},
		{"waiting on a back-off", attempt("app", labels.KindApp, 1, exit3, map[string]string{labels.Waiting: "CrashLoopBackOff"}), true},
		{"succeeded after a failure (OnFailure)", attempt("app", labels.KindApp, 1, exit0, nil), false},
	} {
		st := ContainerStatus(c, []engine.Container{failed, tc.cur}, "", nil)
		if got := st.LastTerminationState.Terminated != nil; got != tc.want {
			t.Errorf("%s: lastState %+v, want terminated %v", tc.name, st.LastTerminationState, tc.want)
		}
	}
	p := pod(corev1.RestartPolicyOnFailure, nil, *c)
	st := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {failed, attempt("app", labels.KindApp, 1, exit0, nil)}}})
	if cs := st.ContainerStatuses[0]; st.Phase != corev1.PodSucceeded || cs.RestartCount != 1 || cs.LastTerminationState.Terminated != nil {
		t.Errorf("finished OnFailure pod: phase %s, restartCount %d, lastState %+v; want Succeeded, 1, none",
			st.Phase, cs.RestartCount, cs.LastTerminationState)
	}
}

// TestReadyToStartContainersWhenFinished: a finished pod's sandbox is gone
// on the kubelet's side, so PodReadyToStartContainers is False though
// podrun's pause container may still run.
func TestReadyToStartContainersWhenFinished(t *testing.T) {
	sandbox := &engine.Container{ID: "pause", CreatedAt: t0, Task: running}
	app := corev1.Container{Name: "app"}
	for _, tc := range []struct {
		name  string
		task  engine.Task
		ended *Ended
		want  corev1.ConditionStatus
	}{
		{"running", running, nil, corev1.ConditionTrue},
		{"succeeded", exit0, nil, corev1.ConditionFalse},
		{"failed", exit3, nil, corev1.ConditionFalse},
		{"evicted", running, &Ended{Reason: "Evicted"}, corev1.ConditionFalse},
	} {
		o := Observed{Sandbox: sandbox, Created: t0, Ended: tc.ended, Containers: map[string][]engine.Container{
			"app": {attempt("app", labels.KindApp, 0, tc.task, nil)}}}
		st := Compute(pod(corev1.RestartPolicyNever, nil, app), o)
		if got := condition(st, corev1.PodReadyToStartContainers).Status; got != tc.want {
			t.Errorf("%s (phase %s): PodReadyToStartContainers %s, want %s", tc.name, st.Phase, got, tc.want)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfigWait: the container a pod could not create waits with the
// record's reason and message, the pod Pending; the others keep theirs.
func TestConfigWait(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "app"}, corev1.Container{Name: "web"})
	w := &ConfigWait{Container: "app", Reason: "CreateContainerConfigError", Message: "container has runAsNonRoot and image will run as root"}
	st := Compute(p, Observed{ConfigWait: w})
	if s := st.ContainerStatuses[0].State.Waiting; s == nil || s.Reason != w.Reason || s.Message != w.Message {
		t.Errorf("app: state %+v, want waiting %s %q", st.ContainerStatuses[0].State, w.Reason, w.Message)
	}
	if s := st.ContainerStatuses[1].State.Waiting; s == nil || s.Reason != "ContainerCreating" {
		t.Errorf("web: state %+v, want waiting ContainerCreating", st.ContainerStatuses[1].State)
	}
	if st.Phase != corev1.PodPending || Reason(p, st) != w.Reason {
		t.Errorf("phase %s, STATUS %s; want Pending, %s", st.Phase, Reason(p, st), w.Reason)
	}
}

// TestStatusStartError: an attempt made but not started, waiting for its
// restart, shows as the kubelet shows it: waiting RunContainerError with
// the error, lastState terminated StartError, exit code 128, started at the
// zero of Unix time, the error as its message; the pod Running under
// restartPolicy Always (a container that has exited before counts as
// stopped, not waiting, in getPhase).
func TestStatusStartError(t *testing.T) {
	const msg = `failed to create containerd task: exec: "nope": executable file not found in $PATH: unknown`
	c := corev1.Container{Name: "app"}
	failed := attempt("app", labels.KindApp, 3, engine.Task{}, map[string]string{
		labels.ExitCode: "128", labels.Reason: ReasonStartError, labels.Message: msg,
		labels.StartedAt: "1970-01-01T00:00:00Z", labels.FinishedAt: t0.Format(time.RFC3339Nano),
		labels.Waiting: ReasonRunContainerError, labels.WaitingMessage: msg,
	})
	p := pod(corev1.RestartPolicyAlways, nil, c)
	st := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {failed}}})
	cs := st.ContainerStatuses[0]
	if w := cs.State.Waiting; w == nil || w.Reason != ReasonRunContainerError || w.Message != msg {
		t.Errorf("state %+v, want waiting RunContainerError with the error", cs.State)
	}
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 128 || last.Reason != ReasonStartError || last.Message != msg ||
		!last.StartedAt.Time.Equal(time.Unix(0, 0)) || !last.FinishedAt.Time.Equal(t0) {
		t.Errorf("lastState %+v, want terminated StartError 128 started at 1970 with the message", cs.LastTerminationState)
	}
	if cs.RestartCount != 3 || st.Phase != corev1.PodRunning {
		t.Errorf("restartCount %d, phase %s; want 3, Running", cs.RestartCount, st.Phase)
	}
	// A task left created by the failed start (its delete failed too):
	// the same.
	failed.Task = engine.Task{State: engine.TaskCreated}
	again := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {failed}}}).ContainerStatuses[0]
	if again.State.Waiting == nil || again.LastTerminationState.Terminated == nil || again.LastTerminationState.Terminated.Reason != ReasonStartError {
		t.Errorf("with a created task left: state %+v, lastState %+v; want as without", again.State, again.LastTerminationState)
	}
}
