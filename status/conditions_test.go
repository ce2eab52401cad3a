package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
				// the kubelet has stopped a finished pod's sandbox
				sandboxReady = cond{"False", "PodSandboxNotReady", "pod sandbox is not ready"}
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
	for _, tc := range []struct {
		name    string
		sandbox *engine.Container
		message string
	}{
		{"without a sandbox", nil, "no pod sandbox exists"},
		{"with its sandbox stopped", &engine.Container{ID: "pause", CreatedAt: t0, Task: exit0}, "pod sandbox is not ready"},
	} {
		st := Compute(pod(corev1.RestartPolicyAlways, nil, app), Observed{Created: t0, Sandbox: tc.sandbox})
		if c := condition(st, corev1.PodReadyToStartContainers); c.Status != "False" || c.Reason != "PodSandboxNotReady" || c.Message != tc.message {
			t.Errorf("PodReadyToStartContainers %s: %+v, want False PodSandboxNotReady %q", tc.name, c, tc.message)
		}
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

// TestPodResources: the pod-level status.resources and allocatedResources
// of a kubelet v1.37 (values from its getEffectiveAllocatedResources and
// resourcehelper.PodRequests), and as the side-by-side e2e test saw them:
// a BestEffort pod `resources: {}` and no allocatedResources.
func TestPodResources(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	for _, tc := range []struct {
		name          string
		spec          corev1.PodSpec
		want          string // status.resources, JSON
		wantAllocated string
	}{
		{"best effort", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, `{}`, `null`},
		{"requests", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("10m", "16Mi")}}}},
			`{"requests":{"cpu":"10m","memory":"16Mi"}}`, `{"cpu":"10m","memory":"16Mi"}`},
		{"containers summed, limits too (the limits set: resourcehelper.PodLimits)", corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("20m", "32Mi"), Limits: rl("20m", "32Mi")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("5m", ""), Limits: rl("", "8Mi")}}}},
			`{"limits":{"cpu":"20m","memory":"40Mi"},"requests":{"cpu":"25m","memory":"32Mi"}}`, `{"cpu":"25m","memory":"32Mi"}`},
		{"an init container's larger request wins", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: rl("100m", "")}}},
			Containers:     []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("20m", "32Mi")}}}},
			`{"requests":{"cpu":"100m","memory":"32Mi"}}`, `{"cpu":"100m","memory":"32Mi"}`},
		{"pod-level resources", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: rl("50m", "64Mi"), Limits: rl("100m", "128Mi")},
			Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("10m", "")}}}},
			`{"limits":{"cpu":"100m","memory":"128Mi"},"requests":{"cpu":"50m","memory":"64Mi"}}`, `{"cpu":"50m","memory":"64Mi"}`},
		{"overhead", corev1.PodSpec{Overhead: rl("5m", "1Mi"),
			Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("10m", "16Mi")}}}},
			`{"requests":{"cpu":"15m","memory":"17Mi"}}`, `{"cpu":"15m","memory":"17Mi"}`},
	} {
		p := &corev1.Pod{Spec: tc.spec}
		st := Compute(p, Observed{Created: t0})
		if got := jsonOf(t, st.Resources); got != tc.want {
			t.Errorf("%s: status.resources %s, want %s", tc.name, got, tc.want)
		}
		if got := jsonOf(t, st.AllocatedResources); got != tc.wantAllocated {
			t.Errorf("%s: status.allocatedResources %s, want %s", tc.name, got, tc.wantAllocated)
		}
	}
}
