package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
)

// deadlineHarness is a harness whose pod has activeDeadlineSeconds and a
// sandbox labelled as up labels it, so that its start time can be read.
func deadlineHarness(t *testing.T, policy corev1.RestartPolicy, seconds int64) *harness {
	t.Helper()
	ps := appSpec(policy, corev1.Container{Name: "main"})
	ps.ActiveDeadlineSeconds = &seconds
	hs := newHarness(t, ps)
	sandbox := map[string]string{labels.PodUID: testUID, labels.Container: labels.SandboxName, labels.Kind: labels.KindSandbox}
	if err := hs.eng.SetLabels(context.Background(), SandboxID(testUID), sandbox); err != nil {
		t.Fatal(err)
	}
	return hs
}

// checkDeadlineExceeded checks a pod ended at its deadline: the state and
// the computed status say Failed/DeadlineExceeded with the kubelet's
// message, its container got SIGTERM and was not restarted, its sandbox
// was killed.
func checkDeadlineExceeded(t *testing.T, hs *harness, id string) {
	t.Helper()
	var st *State
	hs.eventually("the deadline recorded", func() bool {
		st, _ = hs.h.loadState(testUID)
		return st != nil && st.Ended != nil
	})
	if *st.Ended != (status.Ended{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}) {
		t.Fatalf("state.Ended = %+v", st.Ended)
	}
	if !hs.called("Kill " + id + " SIGTERM") {
		t.Errorf("the container was not sent SIGTERM; calls: %v", hs.eng.Calls())
	}
	if !hs.called("Kill " + SandboxID(testUID) + " SIGKILL") {
		t.Errorf("the sandbox was not killed; calls: %v", hs.eng.Calls())
	}
	hs.clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	if hs.called("Create " + hs.id("main", 1)) {
		t.Error("the container was restarted after the deadline")
	}
	pods, err := hs.h.Pods(hs.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Pod == nil {
		t.Fatalf("Pods = %+v", pods)
	}
	s := pods[0].Pod.Status
	if s.Phase != corev1.PodFailed || s.Reason != "DeadlineExceeded" || s.Message != st.Ended.Message {
		t.Errorf("status phase %s reason %q message %q, want Failed/DeadlineExceeded", s.Phase, s.Reason, s.Message)
	}
	if r := status.Reason(pods[0].Pod, s); r != "DeadlineExceeded" {
		t.Errorf("ps STATUS %q, want DeadlineExceeded", r)
	}
	if !slices.ContainsFunc(hs.messages(), func(m string) bool { return strings.Contains(m, "DeadlineExceeded: Pod was active") }) {
		t.Errorf("no DeadlineExceeded event in %q", hs.messages())
	}
}

// TestActiveDeadlineSupervised: the supervisor ends a restartPolicy Always
// pod activeDeadlineSeconds after its start time, not a moment before.
func TestActiveDeadlineSupervised(t *testing.T) {
	hs := deadlineHarness(t, corev1.RestartPolicyAlways, 30)
	hs.clk.Advance(10 * time.Second) // the pod started 10 s ago
	hs.startApp("main")
	id := hs.waitRunning("main", 0)
	hs.h.supervise(hs.r)
	if asked := hs.clk.waitAsked(t, 1); asked[len(asked)-1] != 20*time.Second {
		t.Fatalf("clock waits %v, want 20 s: the rest of the deadline from the start time", asked)
	}
	hs.clk.Advance(20*time.Second - time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if hs.called("Kill " + id + " SIGTERM") {
		t.Fatal("killed before the deadline")
	}
	hs.clk.Advance(time.Millisecond)
	checkDeadlineExceeded(t, hs, id)
}

// TestActiveDeadlineAlreadyPast: a pod adopted after its deadline (a
// restarted daemon) is ended at once.
func TestActiveDeadlineAlreadyPast(t *testing.T) {
	hs := deadlineHarness(t, corev1.RestartPolicyOnFailure, 5)
	hs.startApp("main")
	id := hs.waitRunning("main", 0)
	hs.clk.Advance(time.Minute)
	hs.h.supervise(hs.r)
	checkDeadlineExceeded(t, hs, id)
}

// TestActiveDeadlineTerminalPod: a pod whose containers finished for good
// before its deadline keeps its phase: a terminal pod never changes.
func TestActiveDeadlineTerminalPod(t *testing.T) {
	hs := deadlineHarness(t, corev1.RestartPolicyNever, 30)
	hs.startApp("main")
	id := hs.waitRunning("main", 0)
	hs.h.supervise(hs.r)
	hs.clk.waitAsked(t, 1)
	hs.eng.Exit(id, 0)
	hs.waitDone("main")
	hs.clk.Advance(30 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if st, _ := hs.h.loadState(testUID); st != nil && st.Ended != nil {
		t.Fatalf("a Succeeded pod was ended at its deadline: %+v", st.Ended)
	}
	if hs.called("Kill " + SandboxID(testUID) + " SIGKILL") {
		t.Error("the sandbox of a finished pod was killed at the deadline")
	}
}

// TestActiveDeadlineEndsWaitCompletion: `up --wait=ready` on a
// run-to-completion pod returns at the deadline with the pod Failed.
func TestActiveDeadlineEndsWaitCompletion(t *testing.T) {
	hs := deadlineHarness(t, corev1.RestartPolicyNever, 3)
	hs.startApp("main")
	id := hs.waitRunning("main", 0)
	errc := make(chan error, 1)
	go func() { errc <- hs.r.waitCompletion(hs.ctx) }()
	if asked := hs.clk.waitAsked(t, 1); asked[0] != 3*time.Second {
		t.Fatalf("clock waits %v, want the 3 s deadline", asked)
	}
	hs.clk.Advance(3 * time.Second)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("waitCompletion: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("waitCompletion did not return at the deadline")
	}
	if phase, err := hs.r.outcome(); phase != corev1.PodFailed || err == nil || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Errorf("phase %s failure %v, want Failed with DeadlineExceeded", phase, err)
	}
	if st, _ := hs.h.loadState(testUID); st == nil || !st.Complete {
		t.Errorf("state %+v, want complete", st)
	}
	checkDeadlineExceeded(t, hs, id)
}

// TestEndingTakesThePodsLock: the active deadline and an eviction end a
// pod under its lock, as every teardown does: while another podrun holds
// it (its `down`), nothing is stopped or recorded; once it is free, a pod
// still there is ended, and a pod taken down meanwhile is left alone (its
// record is not written back).
func TestEndingTakesThePodsLock(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		hs := deadlineHarness(t, corev1.RestartPolicyOnFailure, 5)
		hs.startApp("main")
		id := hs.waitRunning("main", 0)
		unlock, err := hs.h.locks.Lock(hs.ctx, "default/web", nil) // another podrun's
		if err != nil {
			t.Fatal(err)
		}
		hs.clk.Advance(time.Minute)
		hs.h.supervise(hs.r)
		time.Sleep(100 * time.Millisecond)
		if hs.called("Kill "+id+" SIGTERM") || hs.called("Kill "+SandboxID(testUID)+" SIGKILL") {
			t.Fatalf("ended while another podrun held the pod's lock; calls: %v", hs.eng.Calls())
		}
		unlock(false)
		checkDeadlineExceeded(t, hs, id)
	})
	t.Run("eviction of a pod taken down meanwhile", func(t *testing.T) {
		ps := appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "main"})
		ps.Volumes = []corev1.Volume{emptyDirVolume("scratch", "", "1Mi")}
		hs := newHarness(t, ps)
		dir := hs.r.layout.EmptyDir("scratch")
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		hs.startApp("main")
		id := hs.waitRunning("main", 0)
		unlock, err := hs.h.locks.Lock(hs.ctx, "default/web", nil)
		if err != nil {
			t.Fatal(err)
		}
		hs.h.supervise(hs.r)
		hs.clk.waitAsked(t, 1)
		hs.clk.Advance(eviction.HousekeepingInterval)
		time.Sleep(100 * time.Millisecond)
		if hs.called("Kill " + id + " SIGTERM") {
			t.Fatalf("evicted while another podrun held the pod's lock; calls: %v", hs.eng.Calls())
		}
		// The other podrun's down: the sandbox and the pod directory go.
		if err := hs.eng.Kill(hs.ctx, SandboxID(testUID), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(hs.r.layout.Pod()); err != nil {
			t.Fatal(err)
		}
		unlock(false)
		time.Sleep(100 * time.Millisecond)
		if st, _ := hs.h.loadState(testUID); st != nil {
			t.Errorf("the removed pod's record was written back: %+v", st)
		}
		if hs.called("Kill " + id + " SIGTERM") {
			t.Errorf("the pod taken down meanwhile was evicted; calls: %v", hs.eng.Calls())
		}
	})
}
