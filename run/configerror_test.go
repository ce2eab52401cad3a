package run

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
)

// TestCreateContainerConfigErrorAtRestart: a restart that cannot be made
// (the ConfigMap its env reads is gone, as for a pod adopted from a broken
// daemon source) creates no container and counts no restart; the container
// shows Waiting, CreateContainerConfigError with the message, over its last
// termination, as the kubelet shows it; the loop tries again with its
// back-off and starts the container once the ConfigMap is back.
func TestCreateContainerConfigErrorAtRestart(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app", Env: []corev1.EnvVar{{
		Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}},
	}}}))
	withCfg := &manifest.Pod{ConfigMaps: map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}}
	hs.r.setObjects(withCfg)
	hs.startApp("app")
	id0 := hs.waitRunning("app", 0)

	hs.r.setObjects(&manifest.Pod{}) // the ConfigMap is gone
	hs.eng.Exit(id0, 1)              // the first restart is tried at once
	id1 := hs.id("app", 1)
	const msg = `env "V": configmap "cfg" not found`
	for n, delay := range []time.Duration{10 * time.Second, 20 * time.Second} {
		// Each try fails and waits for the next, with a growing back-off.
		if asked := hs.clk.waitAsked(t, n+1); asked[n] != delay {
			t.Fatalf("back-off after failed try %d: %s, want %s (all: %v)", n+1, asked[n], delay, asked)
		}
		st := hs.loop("app").State()
		if _, ok := st.StartErr.(*spec.ConfigError); !ok || st.Restarts != 1 {
			t.Errorf("try %d: loop state %+v, want a ConfigError and restarts 1", n+1, st)
		}
		if got := hs.attempts("app"); !slices.Equal(got, []string{id0}) {
			t.Errorf("try %d: attempts %v, want only %s (nothing created)", n+1, got, id0)
		}
		cs, pod := hs.status()
		w := cs.State.Waiting
		if w == nil || w.Reason != spec.ReasonCreateContainerConfigError || w.Message != msg {
			t.Errorf("try %d: state %+v, want Waiting CreateContainerConfigError %q", n+1, cs.State, msg)
		}
		if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || cs.RestartCount != 0 {
			t.Errorf("try %d: last termination %+v, restartCount %d; want the exit 1 of attempt 0, 0", n+1, cs.LastTerminationState, cs.RestartCount)
		}
		if r := status.Reason(pod, pod.Status); r != spec.ReasonCreateContainerConfigError || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("try %d: ps STATUS %q, phase %s; want CreateContainerConfigError, Running", n+1, r, pod.Status.Phase)
		}
		if n == 0 {
			hs.clk.Advance(delay)
		}
	}
	if c := countCalls(hs.eng.Calls(), "Create "+id1); c != 0 {
		t.Errorf("%s created %d times while its ConfigMap was missing", id1, c)
	}
	want := `container "app" failed to start: CreateContainerConfigError: ` + msg
	if !slices.Contains(hs.messages(), want) {
		t.Errorf("no event %q in %q", want, hs.messages())
	}

	// The ConfigMap is back: the next try starts attempt 1, the first restart.
	hs.r.setObjects(withCfg)
	hs.clk.Advance(20 * time.Second)
	hs.waitRunning("app", 1)
	if got := hs.labels(id1)[labels.RestartCount]; got != "1" {
		t.Errorf("restart-count label of %s: %q, want 1", id1, got)
	}
	cs, _ := hs.status()
	if cs.State.Running == nil || cs.RestartCount != 1 {
		t.Errorf("after the fix: state %+v, restartCount %d; want Running, 1", cs.State, cs.RestartCount)
	}

	// A later crash shows CrashLoopBackOff, not the stale config message.
	hs.eng.Exit(id1, 1)
	hs.clk.waitAsked(t, 3) // the labels are set before the back-off starts
	if cs, _ := hs.status(); cs.State.Waiting == nil || cs.State.Waiting.Message != "back-off 40s restarting failed container=app pod=web_default("+testUID+")" {
		t.Errorf("after a crash: state %+v, want the CrashLoopBackOff message", cs.State)
	}
}

// status computes container app's status and the pod's from the engine's
// containers, as `podrun ps` and `status` do.
func (hs *harness) status() (corev1.ContainerStatus, *corev1.Pod) {
	hs.t.Helper()
	ctrs, err := hs.eng.List(context.Background(), map[string]string{labels.PodUID: testUID, labels.Container: "app"})
	if err != nil {
		hs.t.Fatal(err)
	}
	pod := hs.r.pod.Pod.DeepCopy()
	pod.Status = status.Compute(pod, status.Observed{Containers: map[string][]engine.Container{"app": ctrs}})
	return pod.Status.ContainerStatuses[0], pod
}
