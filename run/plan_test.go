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
		pinned bool
	}{
		{"no pause: the namespaces pinned", func(*corev1.Pod) {},
			WaitReady, []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: netns", "sandbox: namespaces + network", "sandbox: files", "init/setup", "container/app,side", "wait: ready"}, true},
		{"no pause, hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			WaitReady, []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: namespaces", "sandbox: files", "init/setup", "container/app,side", "wait: ready"}, true},
		{"pod network, restartPolicy Always, wait ready", func(*corev1.Pod) {},
			WaitReady, append(append([]string{}, sandboxed...), "init/setup", "container/app,side", "wait: ready"), false},
		{"hostNetwork skips netns and CNI", func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			WaitReady, []string{"pod directory", "volumes", "images", "pod cgroup", "sandbox: pause", "sandbox: files", "init/setup", "container/app,side", "wait: ready"}, false},
		{"run to completion waits for ready (or finished)", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever; p.Spec.InitContainers = nil },
			WaitReady, append(append([]string{}, sandboxed...), "container/app,side", "wait: ready"), false},
		{"--wait=completion waits for completion", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever; p.Spec.InitContainers = nil },
			WaitCompletion, append(append([]string{}, sandboxed...), "container/app,side", "wait: completion"), false},
		{"wait running only records", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			WaitRunning, append(append([]string{}, sandboxed...), "init/setup", "container/app,side", "record"), false},
		{"native sidecar keeps its place in the init order", func(p *corev1.Pod) {
			p.Spec.InitContainers = append([]corev1.Container{{Name: "proxy", Image: "busybox:1", RestartPolicy: &always}}, p.Spec.InitContainers...)
		}, WaitReady, append(append([]string{}, sandboxed...), "sidecar/proxy", "init/setup", "container/app,side", "wait: ready"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePod()
			tt.mutate(p.Pod)
			got := stepNames(&podRun{pod: p, wait: tt.wait, pinned: tt.pinned})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("steps:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestPlanUndoesWhatItMakes: every step that makes something has an undo
// (Execute registers it before the step runs).
func TestPlanUndoesWhatItMakes(t *testing.T) {
	for _, s := range append((&podRun{pod: basePod()}).plan(), (&podRun{pod: basePod(), pinned: true}).plan()...) {
		switch s.Name {
		case "pod directory", "volumes", "pod cgroup", "sandbox: netns", "sandbox: pause + network", "sandbox: namespaces + network", "init/setup", "container/app":
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

// TestPinnedSandbox: a pod runs without a pause unless it needs one.
func TestPinnedSandbox(t *testing.T) {
	yes := true
	for _, tt := range []struct {
		name   string
		mutate func(*corev1.Pod)
		pause  string
		want   bool
	}{
		{"a plain pod", func(*corev1.Pod) {}, "", true},
		{"hostNetwork: the IPC namespace pinned", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "", true},
		{"hostIPC: the UTS namespace pinned", func(p *corev1.Pod) { p.Spec.HostIPC = true }, "", true},
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true }, "", true},
		{"--pause-image asks for a pause", func(*corev1.Pod) {}, "registry.k8s.io/pause:3.9", false},
		{"shareProcessNamespace: the pause is PID 1", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = &yes }, "", false},
		{"sysctls are set in the pause's namespaces", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
		}, "", false},
		{"host network and IPC: nothing to pin", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostIPC = true, true }, "", false},
	} {
		p := basePod()
		tt.mutate(p.Pod)
		if got := pinnedSandbox(p.Pod, tt.pause); got != tt.want {
			t.Errorf("%s: pinnedSandbox = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPinnedSandboxAlive: a supervisor's pinned sandbox is alive while its
// own namespaces are pinned; pinned anew (the pod made again), it is not
// its sandbox any more.
func TestPinnedSandboxAlive(t *testing.T) {
	hs := newHarness(t, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testImage}}})
	r := hs.r
	r.pinned, r.pins = true, hs.h.pinsOf(r.pod.UID, r.pod.Pod)
	if err := hs.h.pins.Pin(r.pins, "web"); err != nil { // as startSandbox (run through Sync in pipeline_test.go)
		t.Fatal(err)
	}
	r.pinID, _ = hs.h.pins.ID(r.pins.Identity())
	if !r.SandboxAlive(hs.ctx) {
		t.Fatal("the sandbox just pinned is not alive")
	}
	if ipc, uts := r.sandboxNamespaces(); ipc != r.pins.IPC || uts != r.pins.UTS || ipc == "" || uts == "" {
		t.Errorf("containers join %q and %q, want the pins %+v", ipc, uts, r.pins)
	}
	if id, ok := hs.h.pinnedID(r.pod.UID, nil); !ok || id != r.pinID {
		t.Errorf("pinnedID without the pod = %d, %v; want %d", id, ok, r.pinID)
	}
	if err := hs.h.pins.Pin(r.pins, "web"); err != nil { // another up made it again
		t.Fatal(err)
	}
	if r.SandboxAlive(hs.ctx) {
		t.Error("a sandbox pinned again is still this supervisor's")
	}
	if err := hs.h.pins.Unpin(hs.h.pinsOf(r.pod.UID, nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := hs.h.pinnedID(r.pod.UID, nil); ok || r.SandboxAlive(hs.ctx) {
		t.Error("an unpinned sandbox is alive")
	}
}
