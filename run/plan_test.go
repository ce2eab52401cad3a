package run

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
)

func basePod() *manifest.Pod {
	return &manifest.Pod{
		Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.PodSpec{
				RestartPolicy:  corev1.RestartPolicyAlways,
				InitContainers: []corev1.Container{{Name: "setup", Image: "busybox:1"}},
				Containers:     []corev1.Container{{Name: "app", Image: "busybox:1"}, {Name: "side", Image: "busybox:1"}},
			},
		},
		UID: "6a5bba62-d53e-56bf-a46e-3ebbef6d4d76",
	}
}

func stepNames(r *podRun) []string {
	var names []string
	for _, s := range r.plan() {
		names = append(names, s.Name)
	}
	return names
}

func TestPlan(t *testing.T) {
	sandboxed := []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: netns", "sandbox: pause + network", "sandbox: files"}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		wait   Wait
		want   []string
	}{
		{"pod network, restartPolicy Always, wait ready", func(*corev1.Pod) {},
			WaitReady, append(append([]string{}, sandboxed...), "init/setup", "container/app,side", "wait: ready")},
		{"hostNetwork skips netns and CNI", func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			WaitReady, []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: pause", "sandbox: files", "init/setup", "container/app,side", "wait: ready"}},
		{"run to completion waits for ready (or finished)", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever; p.Spec.InitContainers = nil },
			WaitReady, append(append([]string{}, sandboxed...), "container/app,side", "wait: ready")},
		{"--wait=completion waits for completion", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever; p.Spec.InitContainers = nil },
			WaitCompletion, append(append([]string{}, sandboxed...), "container/app,side", "wait: completion")},
		{"wait running only records", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			WaitRunning, append(append([]string{}, sandboxed...), "init/setup", "container/app,side", "record")},
		{"native sidecar keeps its place in the init order", func(p *corev1.Pod) {
			p.Spec.InitContainers = append([]corev1.Container{{Name: "proxy", Image: "busybox:1", RestartPolicy: &always}}, p.Spec.InitContainers...)
		}, WaitReady, append(append([]string{}, sandboxed...), "sidecar/proxy", "init/setup", "container/app,side", "wait: ready")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePod()
			tt.mutate(p.Pod)
			got := stepNames(&podRun{pod: p, wait: tt.wait})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("steps:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestPlanUndoesWhatItMakes: every step that makes something has an undo
// (Execute registers it before the step runs).
func TestPlanUndoesWhatItMakes(t *testing.T) {
	for _, s := range (&podRun{pod: basePod()}).plan() {
		switch s.Name {
		case "pod directory", "volumes", "pod cgroup", "sandbox: netns", "sandbox: pause + network", "init/setup", "container/app":
			if s.Undo == nil {
				t.Errorf("step %q has no undo", s.Name)
			}
		}
	}
}

func TestIDs(t *testing.T) {
	uid := "6a5bba62-d53e-56bf-a46e-3ebbef6d4d76"
	if got := SandboxID(uid); got != "6a5bba62d53e-pause" {
		t.Errorf("SandboxID = %q", got)
	}
	if got := ContainerID(uid, "pause", 0); got == SandboxID(uid) {
		t.Errorf("a container named pause clashes with the sandbox: %q", got)
	}
}

func TestStopSignal(t *testing.T) {
	for in, want := range map[string]int{"": 15, "SIGQUIT": 3, "quit": 3, "9": 9, "SIGUSR1": 10} {
		got, err := StopSignal(in)
		if err != nil || int(got) != want {
			t.Errorf("StopSignal(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := StopSignal("SIGNOPE"); err == nil {
		t.Error("unknown signal accepted")
	}
}
