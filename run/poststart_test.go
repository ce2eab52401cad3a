package run

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
)

// hookGates lets a test decide, attempt by attempt, when a postStart hook
// returns and with what exit code.
type hookGates struct {
	mu    sync.Mutex
	gates map[string]chan int
}

func (g *hookGates) gate(id string) chan int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[string]chan int{}
	}
	if g.gates[id] == nil {
		g.gates[id] = make(chan int, 1)
	}
	return g.gates[id]
}

// containerStatus is container name's status as `podrun status` computes
// it from the engine's containers now.
func (hs *harness) containerStatus(name string) corev1.ContainerStatus {
	hs.t.Helper()
	ctrs, err := hs.eng.List(context.Background(), map[string]string{labels.PodUID: testUID, labels.Container: name})
	if err != nil {
		hs.t.Fatal(err)
	}
	return status.ContainerStatus(hs.container(name), ctrs, "ContainerCreating", nil)
}

func waitingReason(cs corev1.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}

// TestPostStartStatusAsKubelet: while its postStart hook runs, a container
// shows as the kubelet shows it (its SyncPod runs the hook, the status it
// took before unchanged meanwhile): ContainerCreating for the first
// attempt, then the attempt before waiting with the hook's failure
// (PostStartHookError, restarted at once) or in CrashLoopBackOff (after a
// back-off), never running, started or Ready; once a hook returns, running
// and Ready.
func TestPostStartStatusAsKubelet(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app",
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	var g hookGates
	hs.setExec(func(id string, _ []string) int { return <-g.gate(id) })
	go func() { _ = hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx) }()

	// want checks the status while attempt n's hook runs.
	want := func(n int, reason string, restarts int32, lastCode int32) {
		t.Helper()
		hs.eventually("attempt "+hs.id("app", n)+" started", func() bool {
			task, err := hs.eng.Task(context.Background(), hs.id("app", n))
			return err == nil && task.State == engine.TaskRunning
		})
		cs := hs.containerStatus("app")
		if waitingReason(cs) != reason || cs.RestartCount != restarts || cs.Ready || *cs.Started || cs.State.Running != nil {
			t.Errorf("attempt %d, hook running: status %+v, want waiting %s, restartCount %d, not ready or started", n, cs, reason, restarts)
		}
		if term := cs.LastTerminationState.Terminated; lastCode >= 0 && (term == nil || term.ExitCode != lastCode) {
			t.Errorf("attempt %d, hook running: lastState %+v, want terminated with %d", n, cs.LastTerminationState, lastCode)
		}
		if n == 0 && cs.ContainerID != "" {
			t.Errorf("first attempt, hook running: containerID %q, want none yet", cs.ContainerID)
		}
	}
	want(0, "ContainerCreating", 0, -1)
	g.gate(hs.id("app", 0)) <- 1 // fails: killed, restarted at once

	want(1, status.ReasonPostStartHookError, 0, 143)
	if w := hs.containerStatus("app").State.Waiting; w == nil || !strings.Contains(w.Message, "postStart hook failed") {
		t.Errorf("waiting %+v, want the hook's failure as its message", w)
	}
	g.gate(hs.id("app", 1)) <- 1 // fails again: back-off 10s
	hs.clk.waitAsked(t, 1)
	if cs := hs.containerStatus("app"); waitingReason(cs) != status.ReasonPostStartHookError || cs.RestartCount != 1 {
		t.Errorf("in back-off after the hook failed: %+v, want PostStartHookError, restartCount 1", cs.State)
	}
	hs.clk.Advance(10 * time.Second)

	want(2, "CrashLoopBackOff", 1, 143)
	g.gate(hs.id("app", 2)) <- 0 // succeeds
	hs.waitState("app", "ready", func(s supervisor.State) bool { return s.Ready })
	cs := hs.containerStatus("app")
	if cs.State.Running == nil || !cs.Ready || !*cs.Started || cs.RestartCount != 2 {
		t.Errorf("after the hook returned: %+v, want running, started, ready, restartCount 2", cs)
	}
	if got := hs.labels(hs.id("app", 2))[labels.PostStart]; got != "" {
		t.Errorf("postStart label %q after the hook returned", got)
	}
}

// TestPostStartFailureOnFailureExitZero: under OnFailure, a container
// killed for its postStart hook that exits 0 is not restarted: the
// kubelet's next sync finds it exited 0 (ShouldContainerBeRestarted), unlike
// one killed for a probe, which its sync kills and restarts at once.
func TestPostStartFailureOnFailureExitZero(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyOnFailure, corev1.Container{Name: "app",
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	hs.setExec(func(string, []string) int { return 1 })
	hs.exitOnTerm(hs.id("app", 0), 0)
	hs.startApp("app")
	st := hs.waitDone("app")
	if st.ExitCode != 0 || st.Restarts != 0 {
		t.Errorf("state %+v, want done with exit code 0 and no restart", st)
	}
	if cs := hs.containerStatus("app"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("status %+v, want terminated with 0", cs.State)
	}
}
