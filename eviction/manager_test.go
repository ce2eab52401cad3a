package eviction

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakePod is a Pod whose facts the test sets; it records what the Manager
// asks of it.
type fakePod struct {
	pod      *corev1.Pod
	start    time.Time
	startErr error
	ended    bool  // End's answer
	endErr   error // End's error
	ends     chan Verdict

	mu      sync.Mutex
	alive   bool
	usage   int64 // of every volume
	reports []string
}

func newFakePod(spec corev1.PodSpec, start time.Time) *fakePod {
	return &fakePod{pod: &corev1.Pod{Spec: spec}, start: start, alive: true, ended: true, ends: make(chan Verdict, 4)}
}

func (p *fakePod) Spec() *corev1.Pod { return p.pod }
func (p *fakePod) StartTime(context.Context) (time.Time, error) {
	return p.start, p.startErr
}
func (p *fakePod) SandboxAlive(context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alive
}
func (p *fakePod) VolumeUsage(string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usage, nil
}
func (p *fakePod) End(_ context.Context, v Verdict) (bool, error) {
	p.ends <- v
	return p.ended, p.endErr
}
func (p *fakePod) Report(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reports = append(p.reports, msg)
}
func (p *fakePod) set(alive bool, usage int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.alive, p.usage = alive, usage
}
func (p *fakePod) reported() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reports)
}

// watch runs m.Watch(p) until the test ends; the channel closes when it
// returns.
func watch(t *testing.T, m *Manager, p Pod) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Watch(ctx, p) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

// waitWaiting waits until the Watch waits on clk.
func waitWaiting(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the manager never waited on the clock")
		}
	}
}

func noEnd(t *testing.T, p *fakePod, when string) {
	t.Helper()
	select {
	case v := <-p.ends:
		t.Fatalf("%s: ended with %+v", when, v)
	default:
	}
}

func nextEnd(t *testing.T, p *fakePod) Verdict {
	t.Helper()
	select {
	case v := <-p.ends:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("the pod was not ended")
		return Verdict{}
	}
}

func returned(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return")
	}
}

func limitedSpec() corev1.PodSpec {
	return corev1.PodSpec{Volumes: []corev1.Volume{emptyDirVolume("scratch", "", "1Mi")}}
}

// TestWatchEvicts: the manager measures every housekeeping interval, only
// while the sandbox is up, and ends the pod with the eviction's verdict
// once an emptyDir is over its limit; then it is done.
func TestWatchEvicts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p := newFakePod(limitedSpec(), time.Time{})
	p.set(true, 1<<20) // at its limit exactly
	done := watch(t, NewManager(clk), p)
	for _, step := range []struct {
		alive bool
		usage int64
	}{{true, 1 << 20}, {false, 2 << 20}} { // at the limit; over it but not started (or finished)
		p.set(step.alive, step.usage)
		waitWaiting(t, clk)
		clk.Step(HousekeepingInterval)
		waitWaiting(t, clk) // measured, and waiting for the next interval
		noEnd(t, p, "at the limit or not alive")
	}
	p.set(true, 1<<20+1)
	clk.Step(HousekeepingInterval)
	v := nextEnd(t, p)
	if want := Evicted(`Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `); v.Why != want.Why || v.While != Alive || *v.Grace != time.Second {
		t.Errorf("verdict %+v, want %+v", v, want)
	}
	returned(t, done)
}

// TestWatchDeadline: the active deadline is counted from the start time,
// not a moment early; a pod no longer active (End: false) is left as it
// is, and with nothing else to watch the manager is done.
func TestWatchDeadline(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	p := newFakePod(corev1.PodSpec{ActiveDeadlineSeconds: ptr[int64](30)}, now.Add(-10*time.Second))
	p.ended = false // finished meanwhile: a terminal pod keeps its phase
	done := watch(t, NewManager(clk), p)
	waitWaiting(t, clk)
	clk.Step(20*time.Second - time.Millisecond)
	noEnd(t, p, "before the deadline")
	clk.Step(time.Millisecond)
	if v := nextEnd(t, p); v.Why.Reason != ReasonDeadlineExceeded || v.Grace != nil || v.While != Active {
		t.Errorf("verdict %+v, want DeadlineExceeded with the pod's grace, while active", v)
	}
	returned(t, done)
}

// TestWatchKeepsMeasuringAfterTheDeadline: a pod the deadline left alone
// (finished) is still measured while its sandbox is up.
func TestWatchKeepsMeasuringAfterTheDeadline(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	spec := limitedSpec()
	spec.ActiveDeadlineSeconds = ptr[int64](5)
	p := newFakePod(spec, now.Add(-time.Minute))
	p.ended = false
	p.set(true, 0)
	watch(t, NewManager(clk), p)
	waitWaiting(t, clk)
	clk.Step(time.Millisecond) // the deadline passed already: due at once
	if v := nextEnd(t, p); v.Why.Reason != ReasonDeadlineExceeded {
		t.Fatalf("first verdict %+v, want the deadline's", v)
	}
	p.set(true, 2<<20)
	clk.Step(HousekeepingInterval)
	if v := nextEnd(t, p); v.Why.Reason != ReasonEvicted {
		t.Errorf("verdict %+v, want Evicted", v)
	}
}

// TestWatchReports: a pod without a start time has its deadline not
// enforced, said once; an End that fails is said and ends the watch.
func TestWatchReports(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p := newFakePod(corev1.PodSpec{ActiveDeadlineSeconds: ptr[int64](30)}, time.Time{})
	p.startErr = errors.New("pod u1 has no sandbox")
	returned(t, watch(t, NewManager(clk), p))
	if got, want := p.reported(), []string{"activeDeadlineSeconds not enforced: pod u1 has no sandbox"}; !slices.Equal(got, want) {
		t.Errorf("reports %q, want %q", got, want)
	}

	p = newFakePod(limitedSpec(), time.Time{})
	p.set(true, 2<<20)
	p.ended, p.endErr = false, errors.New("locking: no")
	done := watch(t, NewManager(clk), p)
	waitWaiting(t, clk)
	clk.Step(HousekeepingInterval)
	nextEnd(t, p)
	returned(t, done)
	if got, want := p.reported(), []string{"ending the pod: locking: no"}; !slices.Equal(got, want) {
		t.Errorf("reports %q, want %q", got, want)
	}
}

// TestWatched: only a pod with a size-limited emptyDir or a deadline is
// watched.
func TestWatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"nothing", corev1.PodSpec{Volumes: []corev1.Volume{emptyDirVolume("a", "", "")}}, false},
		{"memory emptyDir", corev1.PodSpec{Volumes: []corev1.Volume{emptyDirVolume("a", corev1.StorageMediumMemory, "1Mi")}}, false},
		{"size-limited emptyDir", limitedSpec(), true},
		{"deadline", corev1.PodSpec{ActiveDeadlineSeconds: ptr[int64](1)}, true},
	} {
		if got := Watched(&corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: Watched = %v, want %v", tc.name, got, tc.want)
		}
	}
}
