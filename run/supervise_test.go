package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/backoff"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/termination"
)

// TestSupervisorBackoffSchedule: an app container under restartPolicy
// Always that exits right after every start is restarted at once after its
// first exit, then after 10 s, 20 s, 40 s, 80 s, 160 s, 300 s, 300 s (the
// kubelet's doBackOff); each attempt that waits is labelled CrashLoopBackOff
// with the time its restart is due and the back-off's window, and only the
// previous attempt is kept. An attempt that ran 10 minutes starts the
// schedule over: at once, then 10 s.
func TestSupervisorBackoffSchedule(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	hs.startApp("app")

	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	waits := 0 // the clock is asked only for a back-off that waits
	for k, delay := range want {
		id := hs.waitRunning("app", k)
		if got := hs.labels(id)[labels.RestartCount]; got != strconv.Itoa(k) {
			t.Errorf("attempt %d: restart-count label %q, want %d", k, got, k)
		}
		if st := hs.loop("app").State(); st.Restarts != k {
			t.Errorf("attempt %d: loop restarts %d", k, st.Restarts)
		}
		hs.eng.Exit(id, 1)
		if delay == 0 {
			hs.waitRunning("app", k+1)
			if l := hs.labels(id); l[labels.Waiting] != "" || l[labels.ExitCode] != "1" {
				t.Errorf("attempt %d, restarted at once: waiting %q, exit code %q", k, l[labels.Waiting], l[labels.ExitCode])
			}
			continue
		}
		waits++
		asked := hs.clk.waitAsked(t, waits)
		if asked[waits-1] != delay {
			t.Fatalf("restart %d: back-off %s, want %s (all: %v)", k+1, asked[waits-1], delay, asked)
		}
		st := hs.loop("app").State()
		if st.Running || st.Done || st.Restarts != k {
			t.Errorf("restart %d: during back-off state %+v, want waiting with %d restarts", k+1, st, k)
		}
		l := hs.labels(id)
		until := hs.clk.Now().Add(delay).UTC().Format(time.RFC3339Nano)
		if l[labels.Waiting] != "CrashLoopBackOff" || l[labels.BackoffUntil] != until || l[labels.Backoff] != delay.String() {
			t.Errorf("attempt %d: waiting %q until %q (%s), want CrashLoopBackOff until %q (%s)", k, l[labels.Waiting], l[labels.BackoffUntil], l[labels.Backoff], until, delay)
		}
		if l[labels.ExitCode] != "1" || l[labels.FinishedAt] != hs.clk.Now().UTC().Format(time.RFC3339Nano) {
			t.Errorf("attempt %d: exit-code %q finished-at %q", k, l[labels.ExitCode], l[labels.FinishedAt])
		}
		if tk := hs.task(id); tk.State != engine.TaskNone {
			t.Errorf("attempt %d: task not deleted after exit: %+v", k, tk)
		}
		// Attempts older than the previous one are gone.
		wantIDs := []string{hs.id("app", k-1), id}
		if got := hs.attempts("app"); !slices.Equal(got, wantIDs) {
			t.Errorf("attempt %d: attempts kept %v, want %v", k, got, wantIDs)
		}
		if k >= 2 && !hs.called("Delete "+hs.id("app", k-2)) {
			t.Errorf("attempt %d: attempt %d was not deleted", k, k-2)
		}
		hs.clk.Advance(delay)
	}
	for _, msg := range []string{`container "app" exited with code 1; restart 1`, `container "app" exited with code 1; back-off 2m40s before restart 6`} {
		if !slices.Contains(hs.messages(), msg) {
			t.Errorf("no event %q in %q", msg, hs.messages())
		}
	}

	// Attempt 8 runs for over 10 minutes: the schedule starts over, at once then 10 s.
	id := hs.waitRunning("app", len(want))
	hs.clk.Advance(backoff.Reset + time.Second)
	hs.eng.Exit(id, 1)
	id = hs.waitRunning("app", len(want)+1)
	if got := hs.labels(id)[labels.RestartCount]; got != "9" {
		t.Errorf("restart-count label %q, want 9", got)
	}
	hs.eng.Exit(id, 1)
	asked := hs.clk.waitAsked(t, waits+1)
	if got := asked[waits]; got != 10*time.Second {
		t.Errorf("second back-off after the reset %s, want 10s", got)
	}
	if len(asked) != waits+1 {
		t.Errorf("After asked %v: unexpected extra waits", asked)
	}
	// Every attempt was created exactly once.
	for n := 0; n <= len(want)+1; n++ {
		if c := countCalls(hs.eng.Calls(), "Create "+hs.id("app", n)); c != 1 {
			t.Errorf("attempt %d created %d times", n, c)
		}
	}
}

func countCalls(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// TestRestartPolicyNever: one exit ends the loop; nothing is restarted.
func TestRestartPolicyNever(t *testing.T) {
	for _, code := range []uint32{0, 1} {
		t.Run("exit "+strconv.Itoa(int(code)), func(t *testing.T) {
			hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"}))
			hs.startApp("app")
			id := hs.waitRunning("app", 0)
			hs.eng.Exit(id, code)
			st := hs.waitDone("app")
			if st.ExitCode != code || st.Restarts != 0 || st.Running {
				t.Errorf("state %+v, want done with exit code %d and no restart", st, code)
			}
			if asked := hs.clk.Asked(); len(asked) != 0 {
				t.Errorf("back-off waits %v, want none", asked)
			}
			if hs.called("Create " + hs.id("app", 1)) {
				t.Error("a second attempt was created")
			}
			l := hs.labels(id)
			if l[labels.ExitCode] != strconv.Itoa(int(code)) || l[labels.Waiting] != "" {
				t.Errorf("labels exit-code %q waiting %q", l[labels.ExitCode], l[labels.Waiting])
			}
		})
	}
}

// TestRestartPolicyOnFailure: exit 0 ends the loop, a non-zero exit restarts.
func TestRestartPolicyOnFailure(t *testing.T) {
	t.Run("exit 0 is done", func(t *testing.T) {
		hs := newHarness(t, appSpec(corev1.RestartPolicyOnFailure, corev1.Container{Name: "app"}))
		hs.startApp("app")
		hs.eng.Exit(hs.waitRunning("app", 0), 0)
		if st := hs.waitDone("app"); st.ExitCode != 0 || st.Restarts != 0 {
			t.Errorf("state %+v", st)
		}
		if asked := hs.clk.Asked(); len(asked) != 0 {
			t.Errorf("back-off waits %v, want none", asked)
		}
	})
	t.Run("exit 1 restarts", func(t *testing.T) {
		hs := newHarness(t, appSpec(corev1.RestartPolicyOnFailure, corev1.Container{Name: "app"}))
		hs.startApp("app")
		hs.eng.Exit(hs.waitRunning("app", 0), 1)
		id := hs.waitRunning("app", 1) // the first restart is at once
		if asked := hs.clk.Asked(); len(asked) != 0 {
			t.Errorf("back-off waits %v, want none before the first restart", asked)
		}
		if st := hs.loop("app").State(); st.Restarts != 1 || st.Done {
			t.Errorf("state %+v, want running restart 1", st)
		}
		hs.eng.Exit(id, 0)
		if st := hs.waitDone("app"); st.ExitCode != 0 || st.Restarts != 1 {
			t.Errorf("after exit 0 of restart 1: state %+v", st)
		}
	})
}

// TestLivenessFailureKillsAndRestarts: failureThreshold failed exec
// liveness probes kill the container with its stop signal; its exit then
// restarts it under restartPolicy Always.
func TestLivenessFailureKillsAndRestarts(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways,
		corev1.Container{Name: "app", LivenessProbe: execProbe("alive", 1, 2)}))
	id0 := hs.id("app", 0)
	hs.setExec(func(id string, args []string) int {
		if id == id0 && args[0] == "alive" {
			return 1
		}
		return 0
	})
	hs.startApp("app")
	hs.waitRunning("app", 0)
	if asked := hs.clk.waitAsked(t, 1); asked[0] != time.Second {
		t.Fatalf("first wait %v, want the 1s probe period", asked)
	}
	if hs.called("Kill " + id0 + " SIGTERM") {
		t.Fatal("killed after one failure; failureThreshold is 2")
	}
	hs.clk.Advance(time.Second)     // the second failure
	id1 := hs.waitRunning("app", 1) // the first restart is at once
	if asked := hs.clk.Asked(); slices.Contains(asked, 10*time.Second) {
		t.Fatalf("waits %v, want no back-off before the first restart", asked)
	}
	if !hs.called("Kill " + id0 + " SIGTERM") {
		t.Fatalf("no SIGTERM for %s; calls %v", id0, hs.eng.Calls())
	}
	if hs.called("Kill " + id0 + " SIGKILL") {
		t.Error("SIGKILL sent to a container that exited on SIGTERM")
	}
	l := hs.labels(id0)
	if l[labels.ExitCode] != strconv.Itoa(fake.CodeTerminated) {
		t.Errorf("exit-code label %q, want %d", l[labels.ExitCode], fake.CodeTerminated)
	}
	if !strings.HasPrefix(l[labels.LastProbe], "liveness probe failed") {
		t.Errorf("last-probe label %q", l[labels.LastProbe])
	}
	if st := hs.loop("app").State(); !strings.HasPrefix(st.LastFail, "liveness probe failed") {
		t.Errorf("lastFail %q", st.LastFail)
	}
	if got := hs.labels(id1)[labels.RestartCount]; got != "1" {
		t.Errorf("restart-count %q, want 1", got)
	}
	if st := hs.loop("app").State(); st.Restarts != 1 {
		t.Errorf("restarts %d, want 1", st.Restarts)
	}
	// The new attempt gets a new liveness worker (it passes now).
	n := len(hs.clk.waitAsked(t, 2))
	hs.clk.Advance(time.Second)
	hs.clk.waitAsked(t, n+1)
	if hs.called("Kill " + id1 + " SIGTERM") {
		t.Error("the passing new attempt was killed")
	}
}

// TestLivenessKillUsesProbeGrace: a probe-level
// terminationGracePeriodSeconds replaces the pod's when the probe kills:
// a container that ignores SIGTERM gets SIGKILL after the probe's grace
// (at least 2 s), not the pod's 60 s.
func TestLivenessKillUsesProbeGrace(t *testing.T) {
	probe := execProbe("alive", 1, 1)
	probe.TerminationGracePeriodSeconds = ptrTo(int64(1))
	ps := appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app", LivenessProbe: probe})
	ps.TerminationGracePeriodSeconds = ptrTo(int64(60))
	hs := newHarness(t, ps)
	if got := hs.r.Grace(probe); got != time.Second {
		t.Errorf("grace(probe) = %s, want 1s", got)
	}
	if got := hs.r.Grace(nil); got != 60*time.Second {
		t.Errorf("grace(nil) = %s, want the pod's 60s", got)
	}
	id := hs.id("app", 0)
	hs.eng.IgnoreSignals(id)
	hs.setExec(func(string, []string) int { return 1 })
	start := time.Now()
	hs.startApp("app")
	st := hs.waitDone("app")
	if st.ExitCode != fake.CodeKilled {
		t.Errorf("exit code %d, want %d (SIGKILL)", st.ExitCode, fake.CodeKilled)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("SIGKILL came after %s: the pod's grace was used", el)
	}
	term, kill := hs.callIndex("Kill "+id+" SIGTERM"), hs.callIndex("Kill "+id+" SIGKILL")
	if term < 0 || kill < term {
		t.Errorf("want SIGTERM then SIGKILL; calls %v", hs.eng.Calls())
	}
}

// TestLivenessKillRestartsUnderOnFailure: the kubelet restarts a container
// killed for failing its liveness probe whenever the pod's restartPolicy is
// not Never (computePodActions: restart := shouldRestartOnFailure(pod)),
// whatever code the container exits with on SIGTERM.
func TestLivenessKillRestartsUnderOnFailure(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyOnFailure,
		corev1.Container{Name: "app", LivenessProbe: execProbe("alive", 1, 1)}))
	id0 := hs.id("app", 0)
	hs.exitOnTerm(id0, 0) // a graceful server: exits 0 on SIGTERM
	hs.setExec(func(id string, _ []string) int {
		if id == id0 {
			return 1
		}
		return 0
	})
	hs.startApp("app")
	hs.eventually("the exit of the killed attempt handled", func() bool {
		return hs.loop("app").State().Done || hs.loop("app").State().Restarts == 1
	})
	if !hs.called("Kill " + id0 + " SIGTERM") {
		t.Fatalf("no SIGTERM; calls %v", hs.eng.Calls())
	}
	if st := hs.loop("app").State(); st.Done {
		t.Fatalf("liveness-killed container marked done (exit code %d), not restarted", st.ExitCode)
	}
	hs.waitRunning("app", 1)
}

// TestReadiness: the readiness probe sets the container's Ready label (and
// when it changed); waitReady returns once every container is ready; later
// failures make it not ready again without killing it.
func TestReadiness(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways,
		corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 1, 2)}))
	var ok atomic.Bool
	hs.setExec(func(_ string, args []string) int {
		if args[0] == "ready" && ok.Load() {
			return 0
		}
		return 1
	})
	t0 := hs.clk.Now()
	hs.startApp("app")
	id := hs.waitRunning("app", 0)
	done := make(chan error, 1)
	go func() { done <- hs.r.waitReady(hs.ctx) }()

	hs.clk.waitAsked(t, 1) // first attempt failed
	select {
	case err := <-done:
		t.Fatalf("waitReady returned before the container was ready: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if st := hs.loop("app").State(); st.Ready || !st.Started {
		t.Errorf("state %+v, want started and not ready", st)
	}
	if _, set := hs.labels(id)[labels.Ready]; set {
		t.Errorf("ready label set before the probe's first determination: %q", hs.labels(id)[labels.Ready])
	}

	ok.Store(true)
	hs.clk.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waitReady: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("waitReady did not return once ready")
	}
	if phase, err := hs.r.outcome(); phase != corev1.PodRunning || err != nil || !hs.r.state.Complete {
		t.Errorf("after waitReady: phase %q (%v) complete %v", phase, err, hs.r.state.Complete)
	}
	l := hs.labels(id)
	if l[labels.Ready] != "true" || l[labels.ReadyAt] != t0.Add(time.Second).UTC().Format(time.RFC3339Nano) {
		t.Errorf("ready %q at %q, want true at %s", l[labels.Ready], l[labels.ReadyAt], t0.Add(time.Second))
	}

	ok.Store(false)
	hs.clk.waitAsked(t, 2)
	hs.clk.Advance(time.Second) // one failure: below the threshold
	hs.clk.waitAsked(t, 3)
	if !hs.loop("app").State().Ready {
		t.Error("not ready after a single failure (failureThreshold 2)")
	}
	hs.clk.Advance(time.Second) // the second failure
	hs.waitState("app", "not ready", func(s supervisor.State) bool { return !s.Ready })
	hs.eventually("ready=false label", func() bool { return hs.labels(id)[labels.Ready] == "false" })
	l = hs.labels(id)
	if l[labels.ReadyAt] != t0.Add(3*time.Second).UTC().Format(time.RFC3339Nano) {
		t.Errorf("ready-at %q, want %s", l[labels.ReadyAt], t0.Add(3*time.Second))
	}
	if !strings.HasPrefix(l[labels.LastProbe], "readiness probe failed") {
		t.Errorf("last-probe %q", l[labels.LastProbe])
	}
	if st := hs.loop("app").State(); !st.Running || st.Restarts != 0 {
		t.Errorf("readiness failure changed the container: %+v", st)
	}
	for _, c := range hs.eng.Calls() {
		if strings.HasPrefix(c, "Kill ") {
			t.Errorf("readiness failure killed the container: %s", c)
		}
	}
}

// TestWaitReadyTimesOut: a container that never gets ready makes waitReady
// fail with its state and last probe failure.
func TestWaitReadyTimesOut(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways,
		corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 1, 1)}))
	hs.setExec(func(string, []string) int { return 1 })
	hs.startApp("app")
	hs.waitState("app", "probe failure", func(s supervisor.State) bool { return s.LastFail != "" })
	ctx, cancel := context.WithTimeout(hs.ctx, 10*time.Millisecond)
	defer cancel()
	err := hs.r.waitReady(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), `container "app": running, not ready; readiness probe failed`) {
		t.Errorf("waitReady error %v", err)
	}
}

// TestPostStartFailure: a failing postStart hook kills the container,
// which never counts as running; under Never it is not restarted.
func TestPostStartFailure(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app",
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	hs.setExec(func(_ string, args []string) int {
		if args[0] == "hook" {
			return 1
		}
		return 0
	})
	hs.startApp("app") // returns: the container is done
	id := hs.id("app", 0)
	st := hs.waitDone("app")
	if st.RanOnce || st.Started || st.Restarts != 0 {
		t.Errorf("state %+v: a container whose postStart failed counted as running", st)
	}
	if st.ExitCode != fake.CodeTerminated {
		t.Errorf("exit code %d, want %d", st.ExitCode, fake.CodeTerminated)
	}
	if !strings.HasPrefix(st.LastFail, `postStart hook failed: exec hook ["hook"] exited with code 1`) {
		t.Errorf("lastFail %q", st.LastFail)
	}
	exec, kill := hs.callIndex("Exec "+id), hs.callIndex("Kill "+id+" SIGTERM")
	if exec < 0 || kill < exec {
		t.Errorf("want the hook's exec then SIGTERM; calls %v", hs.eng.Calls())
	}
	if hs.called("Create " + hs.id("app", 1)) {
		t.Error("restarted under restartPolicy Never")
	}
	if got := hs.labels(id)[labels.Started]; got != "" {
		t.Errorf("started label %q on a container whose postStart failed", got)
	}
	if asked := hs.clk.Asked(); len(asked) != 0 {
		t.Errorf("waits %v, want none", asked)
	}
}

// TestPostStartSuccess: the container is running only once its postStart
// hook has returned.
func TestPostStartSuccess(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app",
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hs.setExec(func(_ string, args []string) int {
		if args[0] == "hook" {
			entered <- struct{}{}
			<-release
		}
		return 0
	})
	started := make(chan error, 1)
	go func() { started <- hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx) }()
	select {
	case <-entered:
	case <-time.After(waitTimeout):
		t.Fatal("postStart hook not run")
	}
	id := hs.id("app", 0)
	select {
	case err := <-started:
		t.Fatalf("startApp returned while postStart ran: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if st := hs.loop("app").State(); st.Running || st.RanOnce || st.Ready {
		t.Errorf("state %+v while postStart runs, want not running", st)
	}
	if got := hs.labels(id)[labels.Started]; got != "" {
		t.Errorf("started label %q while postStart runs", got)
	}
	close(release)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("startApp: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("startApp did not return after postStart")
	}
	hs.waitState("app", "ready", func(s supervisor.State) bool { return s.Running && s.Started && s.Ready })
	l := hs.labels(id)
	if l[labels.Started] != "true" || l[labels.Ready] != "true" {
		t.Errorf("labels started %q ready %q", l[labels.Started], l[labels.Ready])
	}
	if hs.called("Kill " + id + " SIGTERM") {
		t.Error("killed after a successful postStart")
	}
}

// TestStartupProbeFailureKills: a failed startup probe kills the container
// before liveness or readiness begin.
func TestStartupProbeFailureKills(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app",
		StartupProbe:   execProbe("started", 1, 2),
		ReadinessProbe: execProbe("ready", 1, 1)}))
	var ran atomic.Int32
	hs.setExec(func(_ string, args []string) int {
		if args[0] == "ready" {
			ran.Add(1)
		}
		return 1
	})
	hs.startApp("app")
	if st := hs.loop("app").State(); st.Started {
		t.Errorf("started before the startup probe passed: %+v", st)
	}
	hs.clk.waitAsked(t, 1)
	hs.clk.Advance(time.Second)
	st := hs.waitDone("app")
	if st.ExitCode != fake.CodeTerminated || !strings.HasPrefix(st.LastFail, "startup probe failed") {
		t.Errorf("state %+v", st)
	}
	if ran.Load() != 0 {
		t.Error("readiness probed before the startup probe passed")
	}
}

// TestNativeSidecarRestartsUnderNever: an init container with
// restartPolicy Always is restarted on any exit although the pod's policy
// is Never, while the pod's app container is not.
func TestNativeSidecarRestartsUnderNever(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ps := appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"})
	ps.InitContainers = []corev1.Container{{Name: "proxy", Image: testImage, RestartPolicy: &always}}
	hs := newHarness(t, ps)
	if err := hs.r.startSidecar(hs.container("proxy"))(hs.ctx); err != nil {
		t.Fatalf("startSidecar: %v", err)
	}
	if st := hs.loop("proxy").State(); !st.Started {
		t.Errorf("startSidecar returned before the sidecar started: %+v", st)
	}
	hs.startApp("app")

	p0 := hs.waitRunning("proxy", 0)
	if got := hs.labels(p0)[labels.Kind]; got != labels.KindInit {
		t.Errorf("sidecar kind label %q", got)
	}
	hs.eng.Exit(p0, 0)               // even a successful exit restarts a sidecar
	p1 := hs.waitRunning("proxy", 1) // at once, the first time
	if got := hs.labels(p1)[labels.RestartCount]; got != "1" {
		t.Errorf("sidecar restart-count %q", got)
	}
	hs.eng.Exit(p1, 2)
	if asked := hs.clk.waitAsked(t, 1); asked[0] != 10*time.Second {
		t.Fatalf("second sidecar back-off %v, want 10s", asked)
	}
	if got := hs.labels(p1)[labels.Waiting]; got != "CrashLoopBackOff" {
		t.Errorf("waiting label %q", got)
	}

	hs.eng.Exit(hs.waitRunning("app", 0), 1)
	if st := hs.waitDone("app"); st.ExitCode != 1 || st.Restarts != 0 {
		t.Errorf("app state %+v, want done with code 1", st)
	}
	if hs.called("Create " + hs.id("app", 1)) {
		t.Error("app container restarted under Never")
	}
	if asked := hs.clk.Asked(); len(asked) != 1 {
		t.Errorf("waits %v, want only the sidecar's back-off", asked)
	}
}

// TestStartedLabelFailureLeavesNoStrayTask: when a label write fails
// after the task started, either the attempt counts as started (and is the
// only one), or it counts as failed and its task is stopped before the next
// attempt: never two live attempts of one container.
func TestStartedLabelFailureLeavesNoStrayTask(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	id0 := hs.id("app", 0)
	hs.eng.Fail("SetLabels", errors.New("containerd hiccup")) // the started-at label
	go func() { _ = hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx) }()
	hs.eventually("attempt 0 running or a back-off", func() bool {
		l := loopOf(hs.r.w, "app")
		if l == nil {
			return false
		}
		st := l.State()
		return (st.ID == id0 && st.Running) || len(hs.clk.Asked()) > 0
	})
	if asked := hs.clk.Asked(); len(asked) > 0 {
		hs.clk.Advance(asked[0])
		hs.waitRunning("app", 1)
		if tk := hs.task(id0); tk.State == engine.TaskRunning {
			t.Errorf("attempt 0 still runs beside attempt 1: %+v", tk)
		}
		return
	}
	if got := hs.attempts("app"); !slices.Equal(got, []string{id0}) {
		t.Errorf("attempts %v, want only %s", got, id0)
	}
	if st := hs.loop("app").State(); st.StartErr != nil || st.Restarts != 0 {
		t.Errorf("state %+v", st)
	}
	if hs.task(id0).State != engine.TaskRunning {
		t.Errorf("attempt 0 not running: %+v", hs.task(id0))
	}
}

// TestSupervisorSurvivesBrokenExitStream: a container whose exit happened
// while the event stream was down is still restarted.
func TestSupervisorSurvivesBrokenExitStream(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	hs.startApp("app")
	id := hs.waitRunning("app", 0)
	hs.eng.BreakExits(errors.New("containerd restarted"))
	hs.eng.Exit(id, 1)
	id1 := hs.waitRunning("app", 1)
	if got := hs.labels(id)[labels.ExitCode]; got != "1" {
		t.Errorf("exit-code label %q", got)
	}
	hs.eng.Exit(id1, 1) // through the new stream
	if asked := hs.clk.waitAsked(t, 1); asked[0] != 10*time.Second {
		t.Fatalf("waits %v", asked)
	}
}

// TestExitRightAfterStart: a container that exits before the supervisor
// looked at it is seen exactly once (one restart, not two).
func TestExitRightAfterStart(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	// Exit attempt 0 as soon as it is started, from the engine's side.
	id0 := hs.id("app", 0)
	go func() {
		for !slices.Contains(hs.eng.Calls(), "Start "+id0) {
			if hs.ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		hs.eng.Exit(id0, 1)
	}()
	go func() { _ = hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx) }()
	hs.eventually("loop", func() bool { return loopOf(hs.r.w, "app") != nil })
	hs.waitRunning("app", 1)
	time.Sleep(20 * time.Millisecond)
	if asked := hs.clk.Asked(); len(asked) != 0 {
		t.Errorf("waits %v: the exit was handled more than once", asked)
	}
	if hs.called("Create " + hs.id("app", 2)) {
		t.Error("attempt 2 created: the exit was handled more than once")
	}
	if st := hs.loop("app").State(); st.Restarts != 1 || !st.Running {
		t.Errorf("state %+v", st)
	}
}

// TestLivenessKillUsesStopSignal: the kill sends the image's STOPSIGNAL.
func TestLivenessKillUsesStopSignal(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyNever,
		corev1.Container{Name: "app", LivenessProbe: execProbe("alive", 1, 1)}))
	img := hs.r.images[testImage]
	img.Config.StopSignal = "SIGQUIT"
	hs.r.images[testImage] = img
	hs.setExec(func(string, []string) int { return 1 })
	hs.startApp("app")
	hs.waitDone("app")
	id := hs.id("app", 0)
	if !hs.called("Kill "+id+" SIGQUIT") || hs.called("Kill "+id+" SIGTERM") {
		t.Errorf("want SIGQUIT (the image's STOPSIGNAL); calls %v", hs.eng.Calls())
	}
}

// TestPostStartFailureRestartsUnderAlways: the killed container is
// restarted per policy (the first time at once).
func TestPostStartFailureRestartsUnderAlways(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app",
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	id0 := hs.id("app", 0)
	hs.setExec(func(id string, _ []string) int {
		if id == id0 {
			return 1
		}
		return 0
	})
	go func() { _ = hs.r.startApps([]*corev1.Container{hs.container("app")})(hs.ctx) }()
	hs.eventually("loop", func() bool { return loopOf(hs.r.w, "app") != nil })
	hs.waitRunning("app", 1) // the first restart is at once
	if !hs.called("Kill " + id0 + " SIGTERM") {
		t.Errorf("attempt 0 not killed; calls %v", hs.eng.Calls())
	}
	if st := hs.loop("app").State(); !st.RanOnce || st.Restarts != 1 {
		t.Errorf("state %+v", st)
	}
}

// TestSidecarWaitsForStartupProbe: the step of a native sidecar ends only
// once its startup probe has passed, so the next init container waits.
func TestSidecarWaitsForStartupProbe(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	ps := appSpec(corev1.RestartPolicyAlways)
	ps.InitContainers = []corev1.Container{{Name: "proxy", Image: testImage, RestartPolicy: &always,
		StartupProbe: execProbe("started", 1, 30)}}
	hs := newHarness(t, ps)
	var ok atomic.Bool
	hs.setExec(func(string, []string) int {
		if ok.Load() {
			return 0
		}
		return 1
	})
	done := make(chan error, 1)
	go func() { done <- hs.r.startSidecar(hs.container("proxy"))(hs.ctx) }()
	hs.clk.waitAsked(t, 1)
	select {
	case err := <-done:
		t.Fatalf("startSidecar returned before the startup probe passed: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if st := hs.loop("proxy").State(); !st.Running || st.Started {
		t.Errorf("state %+v, want running, not started", st)
	}
	ok.Store(true)
	hs.clk.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("startSidecar: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("startSidecar did not return after the startup probe passed")
	}
	if got := hs.labels(hs.id("proxy", 0))[labels.Started]; got != "true" {
		t.Errorf("started label %q", got)
	}
}

// TestInitContainerRestartsInTheSupervisor: an init container runs in the
// same restart loop as app containers: under Always and OnFailure a failed
// attempt is restarted at once the first time, then waits in CrashLoopBackOff (labelled, so `ps` shows
// Init:CrashLoopBackOff), attempts older than the previous one are pruned,
// and the step succeeds once an attempt exits 0; under Never the first
// failure fails the step with the exit code.
func TestInitContainerRestartsInTheSupervisor(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure} {
		t.Run(string(policy), func(t *testing.T) {
			ps := appSpec(policy, corev1.Container{Name: "app"})
			ps.InitContainers = []corev1.Container{{Name: "setup", Image: testImage}}
			hs := newHarness(t, ps)
			errc := make(chan error, 1)
			go func() { errc <- hs.r.runInit(&hs.r.pod.Spec.InitContainers[0])(hs.ctx) }()
			hs.eventually("the init loop", func() bool { return loopOf(hs.r.w, "setup") != nil })
			hs.eng.Exit(hs.waitRunning("setup", 0), 1) // restarted at once the first time
			for n := 1; n < 3; n++ {
				id := hs.waitRunning("setup", n)
				hs.eng.Exit(id, 1)
				hs.clk.waitAsked(t, n)
				hs.eventually("CrashLoopBackOff on "+id, func() bool { return hs.labels(id)[labels.Waiting] == "CrashLoopBackOff" })
				if hs.labels(id)[labels.BackoffUntil] == "" {
					t.Errorf("%s: no back-off-until label", id)
				}
				if hs.labels(id)[labels.Kind] != labels.KindInit {
					t.Errorf("%s: kind %q", id, hs.labels(id)[labels.Kind])
				}
				hs.clk.Advance(5 * time.Minute)
			}
			last := hs.waitRunning("setup", 3)
			if got := hs.attempts("setup"); slices.Contains(got, hs.id("setup", 0)) || slices.Contains(got, hs.id("setup", 1)) {
				t.Errorf("attempts %v: the ones before the previous should be pruned", got)
			}
			if l := hs.labels(last); l[labels.Ready] != "" || l[labels.Started] != "" {
				t.Errorf("a running init container is labelled started/ready: %v", l)
			}
			hs.eng.Exit(last, 0)
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("init step: %v", err)
				}
			case <-time.After(waitTimeout):
				t.Fatal("init step did not end after exit 0")
			}
			if st := hs.loop("setup").State(); !st.Done || st.Restarts != 3 {
				t.Errorf("state %+v, want done after 3 restarts", st)
			}
		})
	}
	t.Run("Never", func(t *testing.T) {
		ps := appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"})
		ps.InitContainers = []corev1.Container{{Name: "setup", Image: testImage}}
		hs := newHarness(t, ps)
		errc := make(chan error, 1)
		go func() { errc <- hs.r.runInit(&hs.r.pod.Spec.InitContainers[0])(hs.ctx) }()
		hs.eventually("the init loop", func() bool { return loopOf(hs.r.w, "setup") != nil })
		hs.eng.Exit(hs.waitRunning("setup", 0), 3)
		var xerr *ExitError
		if err := <-errc; !errors.As(err, &xerr) || xerr.Code != 3 || !strings.HasPrefix(err.Error(), `init container "setup" exited with code 3`) {
			t.Fatalf("init step = %v, want exit code 3", err)
		}
		if asked := hs.clk.Asked(); len(asked) != 0 {
			t.Errorf("back-off waits %v, want none", asked)
		}
	})
}

// TestOOMKillFromTheCgroup: an OOM kill whose event nobody saw (the process
// that watched was gone) is read from the container's cgroup counter: the
// attempt's exit is recorded OOMKilled, and a listing shows a stopped task
// nobody finished as OOMKilled, as the kubelet (through containerd's CRI,
// which always watches) would.
func TestOOMKillFromTheCgroup(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"}))
	hs.startApp("app")
	id := hs.waitRunning("app", 0)
	hs.machine.mu.Lock()
	hs.machine.oomKills[hs.h.containerCgroup(testUID, id)] = 1
	hs.machine.mu.Unlock()
	hs.eng.Exit(id, fake.CodeKilled) // no OOM event
	hs.waitDone("app")
	if got := hs.labels(id)[labels.Reason]; got != "OOMKilled" {
		t.Errorf("reason label %q, want OOMKilled", got)
	}

	// A container that ended while nobody watched: its task is stopped, not finished.
	ctx := context.Background()
	other := ContainerID(testUID, "other", 0)
	if err := hs.eng.Create(ctx, engine.ContainerSpec{ID: other, Labels: map[string]string{labels.PodUID: testUID,
		labels.PodNamespace: "default", labels.PodName: "web", labels.Container: "other"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.eng.Start(ctx, other, ""); err != nil {
		t.Fatal(err)
	}
	hs.eng.Exit(other, fake.CodeKilled)
	reason := func() string {
		pods, err := hs.h.list(ctx, nil, nil)
		if err != nil || len(pods) != 1 {
			t.Fatalf("list: %v, %d pods", err, len(pods))
		}
		for _, c := range pods[0].Containers {
			if c.ID == other {
				return c.Labels[labels.Reason]
			}
		}
		t.Fatalf("%s not listed", other)
		return ""
	}
	if got := reason(); got != "" {
		t.Errorf("reason %q with no OOM kill counted, want none", got)
	}
	hs.machine.mu.Lock()
	hs.machine.oomKills[hs.h.containerCgroup(testUID, other)] = 2
	hs.machine.mu.Unlock()
	if got := reason(); got != "OOMKilled" {
		t.Errorf("reason %q with the cgroup's OOM kills counted, want OOMKilled", got)
	}
}

// TestTerminationMessages: when an attempt ends its termination message is
// read as the kubelet's getTerminationMessage reads it and recorded, and
// status shows it in state and then lastState: the end of the file (the
// last 4096 bytes), or with FallbackToLogsOnError, a failure and an empty
// file, the end of the log as written (a last line without newline stays
// without); nothing from the log under the default policy or on success.
func TestTerminationMessages(t *testing.T) {
	big := strings.Repeat("x", 5000) + "END"
	for _, tc := range []struct {
		name     string
		policy   corev1.TerminationMessagePolicy
		file     string
		log      string
		code     uint32
		want     string
		wantSize int
	}{
		{name: "file", file: "bye\n", code: 0, want: "bye\n"},
		{name: "file wins over the log", policy: corev1.TerminationMessageFallbackToLogsOnError, file: "from the file", log: "t stdout F from the log\n", code: 1, want: "from the file"},
		{name: "fallback to the log", policy: corev1.TerminationMessageFallbackToLogsOnError, log: "t stdout F a\nt stdout P DONE\n", code: 1, want: "a\nDONE"},
		{name: "no fallback on success", policy: corev1.TerminationMessageFallbackToLogsOnError, log: "t stdout F a\n", code: 0, want: ""},
		{name: "no fallback under ReadFile", log: "t stdout F a\n", code: 1, want: ""},
		{name: "the end of a big file", file: big, code: 0, want: big[len(big)-4096:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app",
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: tc.policy}))
			hs.startApp("app")
			id := hs.waitRunning("app", 0)
			if err := os.WriteFile(hs.r.layout.TerminationLog("app", id), []byte(tc.file), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(hs.r.logPath("app", 0)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hs.r.logPath("app", 0), []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			hs.eng.Exit(id, tc.code)
			hs.waitRunning("app", 1) // restarted at once: the message is in lastState
			ctrs, err := hs.eng.List(context.Background(), map[string]string{labels.PodUID: testUID, labels.Container: "app"})
			if err != nil {
				t.Fatal(err)
			}
			msgs := hs.h.messages(hs.r.pod.Pod, testUID, ctrs)
			if got := msgs[id]; got != tc.want {
				t.Errorf("message %.60q (%d bytes), want %.60q (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
			b, err := os.ReadFile(termination.Record(hs.r.layout, "app", id))
			if err != nil || string(b) != tc.want {
				t.Errorf("record %.60q, %v; want %.60q", b, err, tc.want)
			}
			cs := status.ContainerStatus(hs.container("app"), ctrs, "", msgs)
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.Message != tc.want {
				t.Errorf("lastState %+v, want terminated with the message", cs.LastTerminationState)
			}
		})
	}
}

// TestWaitReadyNeverKillsAHealthyPod: under restartPolicy Never, the wait
// for Ready ends when the pod is Ready (it keeps running) or when it has
// finished first (then completed, Succeeded); --wait=completion waits for
// the end.
func TestWaitReadyNeverKillsAHealthyPod(t *testing.T) {
	t.Run("ready", func(t *testing.T) {
		hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"}))
		hs.startApp("app")
		if err := hs.r.waitReady(hs.ctx); err != nil {
			t.Fatalf("waitReady: %v", err)
		}
		if ph, err := hs.r.outcome(); ph != corev1.PodRunning || err != nil {
			t.Errorf("outcome %s, %v; want Running", ph, err)
		}
		if tk := hs.task(hs.id("app", 0)); tk.State != engine.TaskRunning {
			t.Errorf("the app's task %+v, want running", tk)
		}
	})
	t.Run("finished before ready", func(t *testing.T) {
		hs := newHarness(t, appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 1, 1)}))
		hs.setExec(func(string, []string) int { return 1 }) // never ready
		hs.startApp("app")
		done := make(chan error, 1)
		go func() { done <- hs.r.waitReady(hs.ctx) }()
		hs.eng.Exit(hs.id("app", 0), 0)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("waitReady: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("waitReady did not return when the pod finished")
		}
		if ph, err := hs.r.outcome(); ph != corev1.PodSucceeded || err != nil {
			t.Errorf("outcome %s, %v; want Succeeded", ph, err)
		}
		if !hs.r.state.Complete {
			t.Error("a finished pod is not completed")
		}
	})
}

// TestLifecycleStopSignalWins: a container's lifecycle.stopSignal stops it,
// over its image's STOPSIGNAL.
func TestLifecycleStopSignalWins(t *testing.T) {
	usr1 := corev1.Signal("SIGUSR1")
	hs := newHarness(t, appSpec(corev1.RestartPolicyNever,
		corev1.Container{Name: "app", LivenessProbe: execProbe("alive", 1, 1), Lifecycle: &corev1.Lifecycle{StopSignal: &usr1}}))
	img := hs.r.images[testImage]
	img.Config.StopSignal = "SIGQUIT"
	hs.r.images[testImage] = img
	hs.setExec(func(string, []string) int { return 1 })
	hs.startApp("app")
	hs.waitDone("app")
	id := hs.id("app", 0)
	if !hs.called("Kill "+id+" SIGUSR1") || hs.called("Kill "+id+" SIGQUIT") {
		t.Errorf("want SIGUSR1 (lifecycle.stopSignal); calls %v", hs.eng.Calls())
	}
	if got := hs.labels(id)[labels.StopSignal]; got != "SIGUSR1" {
		t.Errorf("stop-signal label %q, want SIGUSR1 (down of a later podrun reads it)", got)
	}
}

// TestRestartPolicyRules: a container's restartPolicyRules decide first
// (restart on exit code 42 only), then its own restartPolicy (Never) over
// the pod's (Always).
func TestRestartPolicyRules(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app", RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}))
	hs.startApp("app")
	hs.eng.Exit(hs.waitRunning("app", 0), 42)
	hs.eng.Exit(hs.waitRunning("app", 1), 3) // restarted for 42; 3 matches no rule: Never
	if st := hs.waitDone("app"); st.ExitCode != 3 || st.Restarts != 1 {
		t.Errorf("state %+v, want done with code 3 after one restart", st)
	}
}

// TestInitRestartPolicyRules: an init container's own rules and policy
// decide over the pod's: under a Never pod, restarted on exit code 42 (at
// once, the first restart), and a failure no rule matches fails the step.
func TestInitRestartPolicyRules(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	ps := appSpec(corev1.RestartPolicyNever, corev1.Container{Name: "app"})
	ps.InitContainers = []corev1.Container{{Name: "setup", Image: testImage, RestartPolicy: &never,
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}
	hs := newHarness(t, ps)
	errc := make(chan error, 1)
	go func() { errc <- hs.r.runInit(&hs.r.pod.Spec.InitContainers[0])(hs.ctx) }()
	hs.eventually("the init loop", func() bool { return loopOf(hs.r.w, "setup") != nil })
	hs.eng.Exit(hs.waitRunning("setup", 0), 42)
	hs.eng.Exit(hs.waitRunning("setup", 1), 3)
	var xerr *ExitError
	if err := <-errc; !errors.As(err, &xerr) || xerr.Code != 3 {
		t.Fatalf("init step = %v, want exit code 3 after one restart", err)
	}
	if st := hs.loop("setup").State(); st.Restarts != 1 {
		t.Errorf("state %+v, want one restart", st)
	}
}
