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
	unlockA()
	if !tp.said("default/b waiting for podrun") {
		t.Errorf("no word of the wait: %v", tp.events)
	}
	unlockB()
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
	defer unlock()
	h := tp.host(t)
	r := h.Up(ctx, simplePods(t, "1", "web"), UpOptions{Wait: WaitRunning, Timeout: 100 * time.Millisecond})[0]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "deadline exceeded") {
		t.Fatalf("up = %+v, want a timeout waiting for the lock", r)
	}
	if got := tp.m.left(); len(got) != 0 {
		t.Errorf("made %v while it had no lock", got)
	}
}
