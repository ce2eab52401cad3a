package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func attempt(name, kind string, restart int, task engine.Task, extra map[string]string) engine.Container {
	l := map[string]string{
		labels.Container: name, labels.Kind: kind,
		labels.RestartCount: itoa(restart), labels.StartedAt: t0.Format(time.RFC3339Nano),
	}
	for k, v := range extra {
		l[k] = v
	}
	return engine.Container{ID: name + "-" + itoa(restart), Labels: l, CreatedAt: t0, Task: task}
}

func itoa(n int) string { return string(rune('0' + n)) }

var (
	running = engine.Task{State: engine.TaskRunning, PID: 42}
	exit0   = engine.Task{State: engine.TaskStopped, ExitCode: 0, ExitedAt: t0.Add(time.Second)}
	exit3   = engine.Task{State: engine.TaskStopped, ExitCode: 3, ExitedAt: t0.Add(time.Second)}
)

func pod(policy corev1.RestartPolicy, init []corev1.Container, apps ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy, InitContainers: init, Containers: apps}}
}

func TestComputePhaseAndReason(t *testing.T) {
	app := corev1.Container{Name: "app"}
	setup := corev1.Container{Name: "setup"}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := corev1.Container{Name: "proxy", RestartPolicy: &always}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		containers map[string][]engine.Container
		phase      corev1.PodPhase
		reason     string
		ready      bool
	}{
		{"nothing yet", pod(corev1.RestartPolicyAlways, nil, app), nil,
			corev1.PodPending, "ContainerCreating", false},
		{"running", pod(corev1.RestartPolicyAlways, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, running, nil)}},
			corev1.PodRunning, "Running", true},
		{"initializing", pod(corev1.RestartPolicyAlways, []corev1.Container{setup, {Name: "two"}}, app),
			map[string][]engine.Container{"setup": {attempt("setup", labels.KindInit, 0, running, nil)}},
			corev1.PodPending, "Init:0/2", false},
		{"init failed under Never", pod(corev1.RestartPolicyNever, []corev1.Container{setup}, app),
			map[string][]engine.Container{"setup": {attempt("setup", labels.KindInit, 0, exit3, nil)}},
			corev1.PodFailed, "Init:Error", false},
		{"job succeeded", pod(corev1.RestartPolicyNever, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit0, nil)}},
			corev1.PodSucceeded, "Completed", false},
		{"job failed", pod(corev1.RestartPolicyNever, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit3, nil)}},
			corev1.PodFailed, "Error", false},
		{"OnFailure failed: will restart, Running", pod(corev1.RestartPolicyOnFailure, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit3, nil)}},
			corev1.PodRunning, "Running", false},
		{"crash loop", pod(corev1.RestartPolicyAlways, nil, app),
			map[string][]engine.Container{"app": {
				attempt("app", labels.KindApp, 2, exit3, map[string]string{labels.Waiting: "CrashLoopBackOff", labels.BackoffUntil: t0.Format(time.RFC3339Nano)}),
				attempt("app", labels.KindApp, 1, exit3, nil),
			}},
			corev1.PodRunning, "CrashLoopBackOff", false},
		{"recorded exit without task (finished labels)", pod(corev1.RestartPolicyNever, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, engine.Task{}, map[string]string{labels.ExitCode: "0", labels.FinishedAt: t0.Format(time.RFC3339Nano)})}},
			corev1.PodSucceeded, "Completed", false},
		{"sidecar started counts as initialized", pod(corev1.RestartPolicyAlways, []corev1.Container{sidecar}, app),
			map[string][]engine.Container{
				"proxy": {attempt("proxy", labels.KindInit, 0, running, nil)},
				"app":   {attempt("app", labels.KindApp, 0, running, nil)},
			},
			corev1.PodRunning, "Running", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Compute(tt.pod, Observed{Containers: tt.containers, Created: t0})
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			if got := Reason(tt.pod, st); got != tt.reason {
				t.Errorf("reason = %q, want %q", got, tt.reason)
			}
			if got := condition(st, corev1.PodReady).Status == corev1.ConditionTrue; got != tt.ready {
				t.Errorf("Ready = %v, want %v", got, tt.ready)
			}
		})
	}
}

func TestCrashLoopKeepsLastState(t *testing.T) {
	p := pod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "app"})
	cur := attempt("app", labels.KindApp, 3, exit3, map[string]string{labels.Waiting: "CrashLoopBackOff"})
	st := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {cur}}})
	cs := st.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
		t.Fatalf("state = %+v", cs.State)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Fatalf("lastState = %+v", cs.LastTerminationState)
	}
	if cs.RestartCount != 3 {
		t.Errorf("restartCount = %d", cs.RestartCount)
	}
}

func TestReadinessFollowsProbeLabels(t *testing.T) {
	probe := &corev1.Probe{}
	p := pod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "app", ReadinessProbe: probe, StartupProbe: probe})
	readyAt := t0.Add(5 * time.Second)
	for _, tt := range []struct {
		labels         map[string]string
		started, ready bool
	}{
		{nil, false, false},
		{map[string]string{labels.Started: "true"}, true, false},
		{map[string]string{labels.Started: "true", labels.Ready: "true", labels.ReadyAt: readyAt.Format(time.RFC3339Nano)}, true, true},
		{map[string]string{labels.Started: "true", labels.Ready: "false"}, true, false},
	} {
		st := Compute(p, Observed{Containers: map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, running, tt.labels)}}, Created: t0})
		cs := st.ContainerStatuses[0]
		if *cs.Started != tt.started || cs.Ready != tt.ready {
			t.Errorf("labels %v: started=%v ready=%v, want %v %v", tt.labels, *cs.Started, cs.Ready, tt.started, tt.ready)
		}
		if tt.ready && !condition(st, corev1.PodReady).LastTransitionTime.Time.Equal(readyAt) {
			t.Errorf("Ready condition time = %s, want %s", condition(st, corev1.PodReady).LastTransitionTime, readyAt)
		}
	}
}
