package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
)

func condition(st corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// TestConditionsAsTheKubelet: the conditions' order, statuses, reasons and
// messages are the kubelet's generators' (pkg/kubelet/status/generate.go),
// and a completed init container is ready.
func TestConditionsAsTheKubelet(t *testing.T) {
	app, web := corev1.Container{Name: "app"}, corev1.Container{Name: "web"}
	init1, init2 := corev1.Container{Name: "init1"}, corev1.Container{Name: "init2"}
	always := corev1.ContainerRestartPolicyAlways
	proxy := corev1.Container{Name: "proxy", RestartPolicy: &always, ReadinessProbe: &corev1.Probe{}}
	sandbox := &engine.Container{ID: "pause", CreatedAt: t0, Task: running}
	type cond struct {
		status          corev1.ConditionStatus
		reason, message string
	}
	tests := []struct {
		name                   string
		pod                    *corev1.Pod
		ctrs                   map[string][]engine.Container
		initialized, readiness cond // Ready and ContainersReady are the same
	}{
		{"second init container running", pod(corev1.RestartPolicyAlways, []corev1.Container{init1, init2}, app),
			map[string][]engine.Container{
				"init1": {attempt("init1", labels.KindInit, 0, exit0, nil)},
				"init2": {attempt("init2", labels.KindInit, 0, running, nil)},
			},
			cond{"False", "ContainersNotInitialized", "containers with incomplete status: [init2]"},
			cond{"False", "ContainersNotReady", "containers with unready status: [app]"}},
		{"a sidecar and an app not ready", pod(corev1.RestartPolicyAlways, []corev1.Container{proxy}, app, web),
			map[string][]engine.Container{
				"proxy": {attempt("proxy", labels.KindInit, 0, running, nil)},
				"app":   {attempt("app", labels.KindApp, 0, running, nil)},
				"web":   {attempt("web", labels.KindApp, 0, exit3, nil)},
			},
			cond{"True", "", ""},
			cond{"False", "ContainersNotReady", "containers with unready status: [proxy web]"}},
		{"all ready", pod(corev1.RestartPolicyAlways, []corev1.Container{init1}, app),
			map[string][]engine.Container{
				"init1": {attempt("init1", labels.KindInit, 0, exit0, nil)},
				"app":   {attempt("app", labels.KindApp, 0, running, nil)},
			},
			cond{"True", "", ""}, cond{"True", "", ""}},
		{"succeeded", pod(corev1.RestartPolicyNever, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit0, nil)}},
			cond{"True", "PodCompleted", ""}, cond{"False", "PodCompleted", ""}},
		{"failed", pod(corev1.RestartPolicyNever, nil, app),
			map[string][]engine.Container{"app": {attempt("app", labels.KindApp, 0, exit3, nil)}},
			cond{"True", "", ""}, cond{"False", "PodFailed", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Compute(tt.pod, Observed{Sandbox: sandbox, Containers: tt.ctrs, Created: t0})
			var order []corev1.PodConditionType
			for _, c := range st.Conditions {
				order = append(order, c.Type)
			}
			want := []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}
			if len(order) != len(want) {
				t.Fatalf("conditions %v, want %v", order, want)
			}
			for i := range want {
				if order[i] != want[i] {
					t.Fatalf("conditions %v, want %v", order, want)
				}
			}
			check := func(typ corev1.PodConditionType, w cond) {
				c := condition(st, typ)
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("%s = %s %q %q, want %s %q %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
			check(corev1.PodInitialized, tt.initialized)
			check(corev1.PodReady, tt.readiness)
			check(corev1.ContainersReady, tt.readiness)
			sandboxReady := cond{"True", "", ""}
			if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
				sandboxReady.status = "False" // the kubelet has stopped a finished pod's sandbox
			}
			check(corev1.PodReadyToStartContainers, sandboxReady)
			for i, ic := range tt.pod.Spec.InitContainers {
				cs := st.InitContainerStatuses[i]
				done := cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
				if !IsSidecar(&ic) && cs.Ready != done {
					t.Errorf("init container %s: ready %v, want %v (a completed one is ready)", ic.Name, cs.Ready, done)
				}
			}
		})
	}
	if st := Compute(pod(corev1.RestartPolicyAlways, nil, app), Observed{Created: t0}); condition(st, corev1.PodReadyToStartContainers).Status != "False" {
		t.Errorf("PodReadyToStartContainers without a sandbox: %+v", condition(st, corev1.PodReadyToStartContainers))
	}
}

// TestImageNameAsTheCRI: a created container's image is reported
// normalized, as the kubelet shows it through containerd; one not yet
// created shows the spec's image as written (convertToAPIContainerStatuses'
// default status).
func TestImageNameAsTheCRI(t *testing.T) {
	for in, want := range map[string]string{
		"busybox:1.28":              "docker.io/library/busybox:1.28",
		"nginx":                     "docker.io/library/nginx:latest",
		"registry.k8s.io/pause:3.9": "registry.k8s.io/pause:3.9",
		"127.0.0.1:5000/app:1":      "127.0.0.1:5000/app:1",
		"user/app@sha256:" + strings.Repeat("a", 64): "docker.io/user/app@sha256:" + strings.Repeat("a", 64),
	} {
		c := &corev1.Container{Name: "c", Image: in}
		if st := ContainerStatus(c, nil, "ContainerCreating", nil); st.Image != in {
			t.Errorf("waiting, not created: image %s reported as %s, want it as written", in, st.Image)
		}
		st := ContainerStatus(c, []engine.Container{attempt("c", labels.KindApp, 0, running, nil)}, "ContainerCreating", nil)
		if st.Image != want {
			t.Errorf("created: image %s reported as %s, want %s", in, st.Image, want)
		}
	}
}
