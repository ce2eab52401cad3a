package probes

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

// fakeClock is the shared fake clock (it moves only when told to), which
// also records every duration passed to After. Waiting lets a test block
// until the code under test is waiting on it.
type fakeClock struct {
	*testclock.FakeClock
	mu    sync.Mutex
	asked []time.Duration // every duration passed to After
}

func newFakeClock() *fakeClock {
	return &fakeClock{FakeClock: testclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.asked = append(c.asked, d)
	c.mu.Unlock()
	return c.FakeClock.After(d)
}

// Advance moves time on and fires the waiters that are due.
func (c *fakeClock) Advance(d time.Duration) { c.Step(d) }

// Waiting blocks until someone waits on the clock (or the worker is done).
func (c *fakeClock) Waiting(t *testing.T, done <-chan struct{}) {
	t.Helper()
	for !c.HasWaiters() {
		select {
		case <-done:
			t.Fatal("worker returned; expected it to wait")
		case <-time.After(time.Millisecond):
		}
	}
}

func (c *fakeClock) Asked() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.asked...)
}

// workerHarness runs a Worker whose attempts return scripted results.
type workerHarness struct {
	t       *testing.T
	clock   *fakeClock
	updates chan Update
	done    chan struct{}
	cancel  context.CancelFunc

	mu       sync.Mutex
	script   []Result
	attempts int
}

func startWorker(t *testing.T, kind Kind, p *corev1.Probe, script ...Result) *workerHarness {
	t.Helper()
	h := &workerHarness{
		t: t, clock: newFakeClock(), updates: make(chan Update, 100),
		done: make(chan struct{}), script: script,
	}
	w := NewWorker(kind, p, Target{ContainerID: "c1"}, h.clock, h.updates)
	w.run = func(ctx context.Context, _ *corev1.Probe, _ Target) Outcome {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.attempts >= len(h.script) {
			t.Errorf("attempt %d beyond the script", h.attempts+1)
			return Outcome{Result: Unknown}
		}
		r := h.script[h.attempts]
		h.attempts++
		return Outcome{Result: r, Output: fmt.Sprintf("attempt %d", h.attempts)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

func (h *workerHarness) Attempts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts
}

// Tick advances the clock by d and waits until the worker waits again.
func (h *workerHarness) Tick(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.clock.Waiting(h.t, h.done)
}

// Updates returns the updates sent so far (call while the worker waits).
func (h *workerHarness) Updates() []string {
	var got []string
	for {
		select {
		case u := <-h.updates:
			if u.Kind == "" || u.ContainerID != "c1" {
				h.t.Errorf("update %+v", u)
			}
			got = append(got, fmt.Sprintf("%s=%s(%s)", u.Kind, u.Result, u.Outcome.Output))
		default:
			return got
		}
	}
}

func (h *workerHarness) Expect(attempts int, updates ...string) {
	h.t.Helper()
	if got := h.Attempts(); got != attempts {
		h.t.Errorf("attempts = %d, want %d", got, attempts)
	}
	got := h.Updates()
	if fmt.Sprint(got) != fmt.Sprint(updates) {
		h.t.Errorf("updates = %q, want %q", got, updates)
	}
}

func (h *workerHarness) WaitDone() {
	h.t.Helper()
	select {
	case <-h.done:
	case <-time.After(30 * time.Second): // a hang, not a timing check
		h.t.Fatal("worker did not stop")
	}
}

const sec = time.Second

func TestWorkerInitialDelayAndPeriod(t *testing.T) {
	p := &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 7}
	h := startWorker(t, Readiness, p, Success, Success, Success)
	h.clock.Waiting(t, h.done)
	h.Expect(0)
	h.Tick(4 * sec) // not yet
	h.Expect(0)
	h.Tick(1 * sec) // initial delay over: first attempt
	h.Expect(1, "readiness=success(attempt 1)")
	h.Tick(6 * sec)
	h.Expect(1)
	h.Tick(1 * sec)
	h.Expect(2)
	if got, want := fmt.Sprint(h.clock.Asked()), fmt.Sprint([]time.Duration{5 * sec, 7 * sec, 7 * sec}); got != want {
		t.Errorf("waits = %s, want %s", got, want)
	}
}

func TestWorkerDefaults(t *testing.T) {
	// period 10 s, failure threshold 3, no initial delay.
	h := startWorker(t, Readiness, &corev1.Probe{}, Failure, Failure, Failure)
	h.clock.Waiting(t, h.done)
	h.Expect(1)
	h.Tick(10 * sec)
	h.Expect(2)
	h.Tick(10 * sec)
	h.Expect(3, "readiness=failure(attempt 3)")
	if got := h.clock.Asked(); len(got) == 0 || got[0] != 10*sec {
		t.Errorf("waits = %v", got)
	}
}

func TestWorkerLivenessFailureThreshold(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 3}
	h := startWorker(t, Liveness, p,
		Success, Failure, Failure, Success, Failure, Failure, Failure)
	h.clock.Waiting(t, h.done)
	h.Expect(1, "liveness=success(attempt 1)") // first determination
	h.Tick(sec)
	h.Expect(2)
	h.Tick(sec)
	h.Expect(3) // two failures: below threshold
	h.Tick(sec)
	h.Expect(4) // a success resets the run; no change to report
	h.Tick(sec)
	h.Tick(sec)
	h.Expect(6)
	h.clock.Advance(sec)
	h.WaitDone() // third consecutive failure: reported, and the worker stops
	h.Expect(7, "liveness=failure(attempt 7)")
}

func TestWorkerReadinessRecovery(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 2}
	h := startWorker(t, Readiness, p,
		Success, Success, Success, Failure, Failure, Failure, Success, Success, Success)
	h.clock.Waiting(t, h.done)
	h.Expect(1) // one success < successThreshold 2: still the initial not-ready
	h.Tick(sec)
	h.Expect(2, "readiness=success(attempt 2)")
	h.Tick(sec)
	h.Expect(3)
	h.Tick(sec)
	h.Expect(4)
	h.Tick(sec)
	h.Expect(5, "readiness=failure(attempt 5)")
	h.Tick(sec)
	h.Expect(6) // still failing: no change
	h.Tick(sec)
	h.Expect(7)
	h.Tick(sec)
	h.Expect(8, "readiness=success(attempt 8)") // recovered after 2 successes
	h.Tick(sec)
	h.Expect(9)
}

func TestWorkerReadinessInitialState(t *testing.T) {
	if Initial(Readiness) != Failure || Initial(Liveness) != Success || Initial(Startup) != Success {
		t.Fatal("initial states")
	}
	p := &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2}
	h := startWorker(t, Readiness, p, Failure, Failure, Failure)
	h.clock.Waiting(t, h.done)
	h.Expect(1) // nothing reported before a threshold is reached
	h.Tick(sec)
	h.Expect(2, "readiness=failure(attempt 2)") // first determination, same as initial
	h.Tick(sec)
	h.Expect(3)
}

func TestWorkerUnknownDiscarded(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2}
	h := startWorker(t, Liveness, p, Failure, Unknown, Unknown, Success, Failure, Unknown, Failure)
	h.clock.Waiting(t, h.done)
	for i := 0; i < 3; i++ {
		h.Tick(sec)
	}
	h.Expect(4, "liveness=success(attempt 4)") // the unknowns neither failed nor reset
	h.Tick(sec)
	h.Tick(sec)
	h.Expect(6)
	h.clock.Advance(sec)
	h.WaitDone()
	h.Expect(7, "liveness=failure(attempt 7)")
}

func TestWorkerStartupStopsAfterSuccess(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: 2, FailureThreshold: 30}
	h := startWorker(t, Startup, p, Failure, Failure, Success)
	h.clock.Waiting(t, h.done)
	h.Tick(2 * sec)
	h.Expect(2)
	h.clock.Advance(2 * sec)
	h.WaitDone()
	h.Expect(3, "startup=success(attempt 3)")
}

func TestWorkerStartupStopsAfterFailure(t *testing.T) {
	p := &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2}
	h := startWorker(t, Startup, p, Failure, Failure)
	h.clock.Waiting(t, h.done)
	h.clock.Advance(sec)
	h.WaitDone()
	h.Expect(2, "startup=failure(attempt 2)")
}

func TestWorkerStopsOnCancel(t *testing.T) {
	h := startWorker(t, Readiness, &corev1.Probe{InitialDelaySeconds: 100})
	h.clock.Waiting(t, h.done)
	h.cancel()
	h.WaitDone()
	h.Expect(0)
}

// TestWorkerExecProbe drives a Worker through the real Probe with a fake
// Execer, checking the update's outcome and State/Last.
func TestWorkerExecProbe(t *testing.T) {
	codes := []int{1, 1, 0}
	var mu sync.Mutex
	fe := &fakeExec{run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		code := codes[0]
		codes = codes[1:]
		fmt.Fprintf(out, "exit %d\n", code)
		return code, nil
	}}
	clock := newFakeClock()
	updates := make(chan Update, 10)
	p := execProbeSpec("check")
	p.PeriodSeconds, p.FailureThreshold = 3, 2
	w := NewWorker(Readiness, p, Target{ContainerID: "c9", Exec: fe}, clock, updates)
	if w.State() != Unknown {
		t.Errorf("state before = %v", w.State())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	clock.Waiting(t, done)
	clock.Advance(3 * sec)
	clock.Waiting(t, done)
	u := <-updates
	want := Update{Kind: Readiness, ContainerID: "c9", Result: Failure, Outcome: Outcome{Result: Failure, Output: "exit 1"}}
	if u != want {
		t.Errorf("update = %+v, want %+v", u, want)
	}
	clock.Advance(3 * sec)
	clock.Waiting(t, done)
	u = <-updates
	if u.Result != Success || u.Outcome.Output != "exit 0" {
		t.Errorf("update = %+v", u)
	}
	if w.State() != Success || w.Last().Output != "exit 0" {
		t.Errorf("state %v, last %+v", w.State(), w.Last())
	}
}
