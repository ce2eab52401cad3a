package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
)

// twoProcesses are two Hosts on one machine, one engine and one set of pod
// locks, as two podrun processes on one state dir.
type twoProcesses struct {
	m      *fakeMachine
	eng    *fake.Engine
	locks  *localLocks
	cfg    Config
	events []string
	mu     sync.Mutex
}

func newTwoProcesses(t *testing.T) *twoProcesses {
	tp := &twoProcesses{m: newFakeMachine(), eng: fake.New(), locks: &localLocks{}}
	tp.eng.AddImage(engine.Image{Ref: testImage, Digest: "sha256:" + strings.Repeat("a", 64),
		Config: spec.Image{Ref: fake.Normalize(testImage), Cmd: []string{"sleep", "3600"}}})
	tp.cfg = Config{Root: t.TempDir(), LogDir: t.TempDir(), PauseImage: testImage, Namespace: "podrun"}
	return tp
}

func (tp *twoProcesses) host(t *testing.T) *Host {
	d := tp.m.deps(tp.eng)
	d.Locks = tp.locks
	h := NewHost(tp.cfg, d, func(e Event) {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		tp.events = append(tp.events, e.Pod+" "+e.Msg)
	}, nil)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func (tp *twoProcesses) said(s string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.ContainsFunc(tp.events, func(e string) bool { return strings.Contains(e, s) })
}

// pods parses a manifest of simple pods named names, each with env value v
// (a different v is a changed manifest).
func simplePods(t *testing.T, v string, names ...string) *manifest.Set {
	t.Helper()
	var docs []string
	for _, n := range names {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  containers:
  - {name: app, image: "busybox:1", env: [{name: V, value: %q}]}
`, n, v))
	}
	set, err := manifest.Options{}.ParseUnresolved("pods.yaml", []byte(strings.Join(docs, "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestConcurrentUpsDecideAgainAfterWaiting: two processes apply the same
// changed manifest at once; the second waits for the first's lock, then
// decides on what it finds: replaced once, unchanged once, no error, and
// one pod left, the new one.
func TestConcurrentUpsDecideAgainAfterWaiting(t *testing.T) {
	tp := newTwoProcesses(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	h1, h2 := tp.host(t), tp.host(t)
	o := UpOptions{Wait: WaitRunning}
	if r := h1.Up(ctx, simplePods(t, "1", "web"), o)[0]; r.Err != nil || r.Action != Created {
		t.Fatalf("first up: %+v", r)
	}
	changed := simplePods(t, "2", "web")
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, h := range []*Host{h1, h2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.Up(ctx, changed, o)[0]
		}()
	}
	wg.Wait()
	var actions []string
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("up: %v", r.Err)
		}
		actions = append(actions, string(r.Action))
	}
	slices.Sort(actions)
	if !slices.Equal(actions, []string{"replaced", "unchanged"}) {
		t.Errorf("actions %v, want replaced once and unchanged once", actions)
	}
	pods, err := h1.Pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].UID != changed.Pods[0].UID || pods[0].State == nil || !pods[0].State.Complete {
		t.Errorf("pods on the node: %+v, want the new one alone, complete", pods)
	}
}

// TestMultiPodUpHoldsOneLockAtATime: while another process holds pod b's
// lock, an up of a and b brings a up and releases a's lock (nobody waits
// for b holding a), says whom it waits for, and finishes b once the lock is
// free.
func TestMultiPodUpHoldsOneLockAtATime(t *testing.T) {
	tp := newTwoProcesses(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	unlockB, err := tp.locks.Lock(ctx, "default/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := tp.host(t)
	done := make(chan []Result, 1)
	set := simplePods(t, "1", "a", "b")
	go func() { done <- h.Up(ctx, set, UpOptions{Wait: WaitRunning}) }()
	deadline := time.Now().Add(waitTimeout)
	for {
		pods, _ := h.Pods(ctx)
		if len(pods) == 1 && pods[0].Name == "a" && pods[0].State != nil && pods[0].State.Complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod a not up while b's lock is held elsewhere: %+v", pods)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// a's lock is free: up holds no lock while it waits for b's.
	lctx, lcancel := context.WithTimeout(ctx, time.Second)
	unlockA, err := tp.locks.Lock(lctx, "default/a", nil)
	lcancel()
	if err != nil {
		t.Fatalf("a's lock still held while up waits for b's: %v", err)
	}
	unlockA(false)
	if !tp.said("default/b waiting for podrun") {
		t.Errorf("no word of the wait: %v", tp.events)
	}
	unlockB(false)
	rs := <-done
	for _, r := range rs {
		if r.Err != nil || r.Action != Created {
			t.Errorf("%s: %+v", r.Pod, r)
		}
	}
}

// TestUpWaitsForTheLockWithinItsTimeout: an up whose pod another process
// holds gives up after its timeout, touching nothing.
func TestUpWaitsForTheLockWithinItsTimeout(t *testing.T) {
	tp := newTwoProcesses(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	unlock, err := tp.locks.Lock(ctx, "default/web", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock(false)
	h := tp.host(t)
	r := h.Up(ctx, simplePods(t, "1", "web"), UpOptions{Wait: WaitRunning, Timeout: 100 * time.Millisecond})[0]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "deadline exceeded") {
		t.Fatalf("up = %+v, want a timeout waiting for the lock", r)
	}
	if got := tp.m.left(); len(got) != 0 {
		t.Errorf("made %v while it had no lock", got)
	}
}

// TestOwnersExcludeJoinsShare: within one process, a pod has one owner at a
// time (a second lockPod waits for the first's unlock, saying so), while
// the supervisor's join shares the owner's hold at once; across processes
// the lock is held from the first hold to the last, and its file goes with
// the last when the owner found the pod gone.
func TestOwnersExcludeJoinsShare(t *testing.T) {
	tp := newTwoProcesses(t)
	h := tp.host(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	const key = "default/web"
	u1, err := h.lockPod(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u2, err := h.lockPod(ctx, key, 100*time.Millisecond); err == nil {
		u2(false)
		t.Fatal("two owners of the pod in one process at once")
	}
	if !tp.said(key + " waiting for podrun") {
		t.Errorf("no word of the wait: %v", tp.events)
	}
	jctx, jcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	join, err := h.joinPod(jctx, key)
	jcancel()
	if err != nil {
		t.Fatalf("the supervisor's join waited for its owner: %v", err)
	}
	second := make(chan func(bool), 1)
	go func() {
		u2, err := h.lockPod(ctx, key, 0)
		if err != nil {
			t.Error(err)
		}
		second <- u2
	}()
	time.Sleep(20 * time.Millisecond)
	u1(true)
	// The next owner, while the join still holds.
	u2 := <-second
	// other tries to lock the pod as another process.
	other := func() error {
		octx, ocancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer ocancel()
		u, err := tp.locks.Lock(octx, key, nil)
		if err == nil {
			u(false)
		}
		return err
	}
	if other() == nil {
		t.Fatal("another process locked the pod while this one held it")
	}
	u2(false)
	if other() == nil {
		t.Fatal("another process locked the pod while the supervisor's join held it")
	}
	join()
	if err := other(); err != nil {
		t.Fatalf("the lock is still held after every hold ended: %v", err)
	}
}

// goneLocks record which locks were released as gone.
type goneLocks struct {
	localLocks
	mu   sync.Mutex
	gone []string
}

func (g *goneLocks) Lock(ctx context.Context, key string, waiting func(int)) (func(bool), error) {
	unlock, err := g.localLocks.Lock(ctx, key, waiting)
	if err != nil {
		return nil, err
	}
	return func(gone bool) {
		if gone {
			g.mu.Lock()
			g.gone = append(g.gone, key)
			g.mu.Unlock()
		}
		unlock(gone)
	}, nil
}

func (g *goneLocks) removed() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.gone)
}

// TestLockFilesGoWithTheirPods: the lock of a pod brought up stays; down
// releases it as gone (its file is removed), also when nothing was there;
// so does an up that fails and undoes all it made.
func TestLockFilesGoWithTheirPods(t *testing.T) {
	tp := newTwoProcesses(t)
	g := &goneLocks{}
	d := tp.m.deps(tp.eng)
	d.Locks = g
	h := NewHost(tp.cfg, d, nil, nil)
	t.Cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if r := h.Up(ctx, simplePods(t, "1", "web"), UpOptions{Wait: WaitRunning})[0]; r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := g.removed(); len(got) != 0 {
		t.Fatalf("locks removed with the pod up: %v", got)
	}
	for _, name := range []string{"web", "none"} {
		if r := h.Down(ctx, []Target{{Namespace: "default", Name: name}}, DownOptions{})[0]; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if got := g.removed(); !slices.Equal(got, []string{"default/web", "default/none"}) {
		t.Errorf("locks removed: %v, want web's and none's", got)
	}
	tp.m.failOn("netns.create", 0)
	if r := h.Up(ctx, simplePods(t, "1", "failing"), UpOptions{Wait: WaitRunning})[0]; r.Err == nil {
		t.Fatal("up did not fail")
	}
	if got := g.removed(); !slices.Contains(got, "default/failing") {
		t.Errorf("locks removed: %v, want the failed pod's", got)
	}
}
