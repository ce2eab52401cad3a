package run

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

// waitTimeout bounds every real-time wait of these tests; nothing here
// should take more than a few seconds, even under -race.
const waitTimeout = 20 * time.Second

// fakeClock is the fake of the Host's clock (clocktesting.FakeClock) that
// also records every duration passed to After, so that back-off delays and
// probe periods can be observed; an After of no time fires at once.
type fakeClock struct {
	*clocktesting.FakeClock
	mu      sync.Mutex
	asked   []time.Duration
	changed chan struct{} // closed and replaced on every After
}

func newFakeClock() *fakeClock {
	return &fakeClock{FakeClock: clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)), changed: make(chan struct{})}
}

// After is the fake clock's After, recorded once its waiter is in place
// (a test that saw it asked may Advance past it).
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	var ch <-chan time.Time
	if d <= 0 {
		now := make(chan time.Time, 1)
		now <- c.Now()
		ch = now
	} else {
		ch = c.FakeClock.After(d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, d)
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Advance moves time on by d and fires the waiters that are due.
func (c *fakeClock) Advance(d time.Duration) { c.Step(d) }

// Asked returns every duration passed to After so far, in order.
func (c *fakeClock) Asked() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// waitAsked blocks until After has been called at least n times and
// returns the durations asked so far.
func (c *fakeClock) waitAsked(t *testing.T, n int) []time.Duration {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		c.mu.Lock()
		if len(c.asked) >= n {
			out := slices.Clone(c.asked)
			c.mu.Unlock()
			return out
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for After call #%d; asked so far: %v", n, c.Asked())
		}
	}
}

// Fixed values of the test pod.
const (
	testUID   = "6a5bba62-d53e-56bf-a46e-3ebbef6d4d76"
	testImage = "busybox:1"
)

// harness is a podRun on the in-memory engine and a fake clock, with no
// real sandbox: what startContainer reads is filled in by hand.
type harness struct {
	t       *testing.T
	ctx     context.Context
	eng     *fake.Engine
	machine *fakeMachine
	clk     *fakeClock
	h       *Host
	r       *podRun

	mu       sync.Mutex
	exec     func(id string, args []string) int
	termExit map[string]uint32 // exit code SIGTERM gives, per container id (default 143)
	events   []string
}

// newHarness builds a pod named default/web with spec ps.
func newHarness(t *testing.T, ps corev1.PodSpec) *harness {
	t.Helper()
	hs := &harness{t: t, eng: fake.New(), clk: newFakeClock(), termExit: map[string]uint32{}}
	hs.eng.Clock = hs.clk.Now
	hs.eng.ExecFunc = func(id string, p engine.ExecSpec) (int, error) {
		hs.mu.Lock()
		fn := hs.exec
		hs.mu.Unlock()
		if fn == nil {
			return 0, nil
		}
		return fn(id, p.Args), nil
	}
	hs.eng.KillBehaviour = func(id string, sig syscall.Signal, ignores bool) (bool, uint32) {
		exits, code := fake.DefaultKill(id, sig, ignores)
		if exits && sig == syscall.SIGTERM {
			hs.mu.Lock()
			if c, ok := hs.termExit[id]; ok {
				code = c
			}
			hs.mu.Unlock()
		}
		return exits, code
	}
	img := engine.Image{
		Ref: testImage, Digest: "sha256:" + strings.Repeat("a", 64),
		Config: spec.Image{Ref: fake.Normalize(testImage), Cmd: []string{"sleep", "3600"}},
	}
	hs.eng.AddImage(img)
	img.Ref = fake.Normalize(testImage)

	// The pod's sandbox: the supervisor restarts containers only while it runs.
	if err := hs.eng.Create(context.Background(), engine.ContainerSpec{ID: SandboxID(testUID)}); err != nil {
		t.Fatal(err)
	}
	pausePID, err := hs.eng.Start(context.Background(), SandboxID(testUID), "")
	if err != nil {
		t.Fatal(err)
	}
	hs.eng.ResetCalls()
	hs.machine = newFakeMachine()
	deps := hs.machine.deps(hs.eng)
	deps.Clock = hs.clk
	hs.h = NewHost(Config{Root: t.TempDir(), LogDir: t.TempDir()}, deps, hs.report, nil)
	pod := &manifest.Pod{
		Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(testUID)},
			Spec:       ps,
		},
		UID: testUID, Hash: "test-hash", Source: manifest.Source{File: "-"},
	}
	r := &podRun{
		h: hs.h, pod: pod, key: "default/web", layout: hs.h.layout(testUID), wait: WaitReady,
		state:     &State{UID: testUID, Hash: pod.Hash, Pod: pod.Pod, PodIPs: []string{"10.0.0.2"}},
		vols:      &volumes.Prepared{Paths: map[string]string{}},
		images:    map[string]engine.Image{testImage: img},
		netns:     "/var/run/netns/podrun-test",
		pausePID:  pausePID,
		hostname:  "web",
		sandboxID: SandboxID(testUID),
	}
	r.w = supervisor.New(r, hs.h.exits, hs.h.clock, r.pod.Spec.RestartPolicy)
	hs.r = r
	if err := os.MkdirAll(r.layout.Pod(), 0o750); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	hs.ctx = ctx
	t.Cleanup(func() {
		cancel()
		r.w.Stop()
		_ = hs.h.Close()
	})
	return hs
}

func (hs *harness) report(e Event) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.events = append(hs.events, e.Msg)
}

// setExec decides the exit code of every exec (probes and hooks).
func (hs *harness) setExec(fn func(id string, args []string) int) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.exec = fn
}

// exitOnTerm makes SIGTERM end container id with code.
func (hs *harness) exitOnTerm(id string, code uint32) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.termExit[id] = code
}

func (hs *harness) messages() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return slices.Clone(hs.events)
}

// id is the container id of attempt n of container name.
func (hs *harness) id(name string, n int) string { return ContainerID(testUID, name, n) }

// container returns the pod's container (app or init) called name.
func (hs *harness) container(name string) *corev1.Container {
	hs.t.Helper()
	if c := containerSpec(hs.r.pod.Pod, name); c != nil {
		return c
	}
	hs.t.Fatalf("no container %q", name)
	return nil
}

// startApp runs the pipeline step of app container name.
func (hs *harness) startApp(name string) *supervisor.Loop {
	hs.t.Helper()
	if err := hs.r.startApps([]*corev1.Container{hs.container(name)})(hs.ctx); err != nil {
		hs.t.Fatalf("starting %q: %v", name, err)
	}
	return hs.loop(name)
}

func (hs *harness) loop(name string) *supervisor.Loop {
	hs.t.Helper()
	l := loopOf(hs.r.w, name)
	if l == nil {
		hs.t.Fatalf("no loop for %q", name)
	}
	return l
}

// waitState blocks until container name's loop state satisfies cond.
func (hs *harness) waitState(name, what string, cond func(supervisor.State) bool) supervisor.State {
	hs.t.Helper()
	l := hs.loop(name)
	ctx, cancel := context.WithTimeout(hs.ctx, waitTimeout)
	defer cancel()
	if err := hs.r.w.WaitFor(ctx, func() (bool, error) { return cond(l.State()), nil }); err != nil {
		hs.t.Fatalf("container %q: waiting for %s: %v (state %+v)", name, what, err, l.State())
	}
	return l.State()
}

// waitRunning waits until attempt n of container name runs and returns its id.
func (hs *harness) waitRunning(name string, n int) string {
	hs.t.Helper()
	id := hs.id(name, n)
	hs.waitState(name, "attempt "+id+" running", func(s supervisor.State) bool { return s.ID == id && s.Running })
	return id
}

// waitDone waits until container name's loop has finished for good.
func (hs *harness) waitDone(name string) supervisor.State {
	hs.t.Helper()
	st := hs.waitState(name, "done", func(s supervisor.State) bool { return s.Done })
	select {
	case <-hs.loop(name).Finished():
	case <-time.After(waitTimeout):
		hs.t.Fatalf("container %q: loop still running after done", name)
	}
	return st
}

// eventually polls cond until it holds.
func (hs *harness) eventually(what string, cond func() bool) {
	hs.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			hs.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// labels returns container id's labels as they are now.
func (hs *harness) labels(id string) map[string]string {
	hs.t.Helper()
	s, ok := hs.eng.Spec(id)
	if !ok {
		hs.t.Fatalf("container %s does not exist", id)
	}
	return s.Labels
}

// attempts lists the ids of the existing attempts of container name.
func (hs *harness) attempts(name string) []string {
	hs.t.Helper()
	ctrs, err := hs.eng.List(context.Background(), map[string]string{labels.PodUID: testUID, labels.Container: name})
	if err != nil {
		hs.t.Fatal(err)
	}
	var ids []string
	for _, c := range ctrs {
		ids = append(ids, c.ID)
	}
	return ids
}

func (hs *harness) task(id string) engine.Task {
	hs.t.Helper()
	t, err := hs.eng.Task(context.Background(), id)
	if err != nil {
		hs.t.Fatalf("task of %s: %v", id, err)
	}
	return t
}

// called reports whether the engine saw call (e.g. "Kill id SIGTERM").
func (hs *harness) called(call string) bool { return slices.Contains(hs.eng.Calls(), call) }

// callIndex is the position of the first call equal to call, or -1.
func (hs *harness) callIndex(call string) int { return slices.Index(hs.eng.Calls(), call) }

func ptrTo[T any](v T) *T { return &v }

// appSpec is a pod spec with restartPolicy policy and the given containers
// (image testImage unless set).
func appSpec(policy corev1.RestartPolicy, ctrs ...corev1.Container) corev1.PodSpec {
	for i := range ctrs {
		if ctrs[i].Image == "" {
			ctrs[i].Image = testImage
		}
	}
	return corev1.PodSpec{RestartPolicy: policy, Containers: ctrs}
}

func execProbe(cmd string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: period, FailureThreshold: failures, SuccessThreshold: 1, TimeoutSeconds: 1,
	}
}

// loopOf is w's loop of container name, or nil.
func loopOf(w *supervisor.Worker, name string) *supervisor.Loop {
	for _, l := range w.Loops() {
		if l.Container().Name == name {
			return l
		}
	}
	return nil
}
