package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/run"
)

// fakeProbe: sockets that exist, and how many probes of each address
// fail before it answers (-1: never).
type fakeProbe struct {
	exists  map[string]bool
	slow    map[string]int
	answers map[string]int // probes made
}

func (f *fakeProbe) Exists(addr string) bool { return f.exists[addr] }

func (f *fakeProbe) Answers(_ context.Context, addr string, _ time.Duration) bool {
	f.answers[addr]++
	n, ok := f.slow[addr]
	return ok && n >= 0 && f.answers[addr] > n
}

// TestChooseRuntime: a configured containerd that is slow to answer is
// waited for, never replaced by a private one (which would split the pods
// across two runtimes); only commands that create pods start the private one.
func TestChooseRuntime(t *testing.T) {
	const sys, priv = "/run/containerd/containerd.sock", "/run/podrun/containerd/containerd.sock"
	for _, tt := range []struct {
		name      string
		exists    map[string]bool
		slow      map[string]int
		start     bool // cfg.StartPrivate
		wantAddr  string
		wantStart bool
		wantErr   bool
	}{
		{"system answers", map[string]bool{sys: true}, map[string]int{sys: 0}, false, sys, false, false},
		{"system slow: waited for, ps", map[string]bool{sys: true}, map[string]int{sys: 2}, false, sys, false, false},
		{"system slow: waited for, up", map[string]bool{sys: true}, map[string]int{sys: 2}, true, sys, false, false},
		{"no system, private runs, ps", nil, map[string]int{priv: 0}, false, priv, false, false},
		{"no system, nothing runs, ps", nil, nil, false, "", false, true},
		{"no system, nothing runs, up", nil, nil, true, priv, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProbe{exists: tt.exists, slow: tt.slow, answers: map[string]int{}}
			cfg := run.Config{Address: sys, AutoStart: true, StartPrivate: tt.start}
			addr, start, err := chooseRuntime(context.Background(), cfg, priv, p)
			if (err != nil) != tt.wantErr || addr != tt.wantAddr || start != tt.wantStart {
				t.Errorf("got %q start %v err %v; want %q start %v err %v", addr, start, err, tt.wantAddr, tt.wantStart, tt.wantErr)
			}
			if err != nil && !errors.Is(err, engine.ErrUnavailable) {
				t.Errorf("error %v does not wrap ErrUnavailable", err)
			}
		})
	}
}

// TestOnceOK: the first success is kept; a failure is tried again.
func TestOnceOK(t *testing.T) {
	calls := 0
	f := onceOK(func() (int, error) {
		calls++
		if calls == 1 {
			return 0, errors.New("not yet")
		}
		return calls, nil
	})
	if _, err := f(); err == nil {
		t.Fatal("the first failure was not returned")
	}
	for range 3 {
		if v, err := f(); v != 2 || err != nil {
			t.Fatalf("f() = %d, %v; want 2 kept", v, err)
		}
	}
}
