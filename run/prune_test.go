package run

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestCrashLoopKeepsCurrentAndPreviousAttempt: a container that keeps
// crashing keeps, after each restart, the containers and log files
// (rotated ones included) of its current and previous attempts only, as
// the kubelet's container GC does (one dead container per container, its
// log removed with it); each attempt is removed once, not visited again
// at every later restart.
func TestCrashLoopKeepsCurrentAndPreviousAttempt(t *testing.T) {
	hs := newHarness(t, appSpec(corev1.RestartPolicyAlways, corev1.Container{Name: "app"}))
	hs.startApp("app")
	logDir := filepath.Dir(hs.r.logPath("app", 0))
	write := func(n int) {
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{hs.r.logPath("app", n), hs.r.logPath("app", n) + ".20260101-000000.gz", hs.r.logPath("app", n) + ".20260101-000001"} {
			if err := os.WriteFile(name, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Not a log of an attempt: left alone.
	other := filepath.Join(logDir, "notes.txt")
	write(0)
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const restarts = 8
	for n := 0; n < restarts; n++ {
		id := hs.waitRunning("app", n)
		hs.eng.Exit(id, 1)
		if n > 0 {
			hs.clk.waitAsked(t, n)
			hs.clk.Advance(5 * time.Minute)
		}
		hs.waitRunning("app", n+1)
		write(n + 1)
		cur := n + 1
		want := []string{hs.id("app", cur)}
		if cur > 0 {
			want = append([]string{hs.id("app", cur-1)}, want...)
		}
		if got := hs.attempts("app"); !slices.Equal(got, want) {
			t.Errorf("after restart %d: containers %v, want %v", cur, got, want)
		}
		ents, err := os.ReadDir(logDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if n, ok := attemptOfName(e.Name()); ok && n < cur-1 {
				t.Errorf("after restart %d: %s is still there", cur, e.Name())
			}
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is no attempt's log was removed: %v", err)
	}
	for _, n := range []int{restarts - 1, restarts} {
		if _, err := os.Stat(hs.r.logPath("app", n)); err != nil {
			t.Errorf("the log of attempt %d: %v", n, err)
		}
	}
	deletes := 0
	for _, c := range hs.eng.Calls() {
		if strings.HasPrefix(c, "Delete "+hs.id("app", 0)[:len(hs.id("app", 0))-1]) {
			deletes++
		}
	}
	if want := restarts - 1; deletes != want {
		t.Errorf("%d deletes of attempts over %d restarts, want %d (each attempt once)", deletes, restarts, want)
	}
}

// attemptOfName is the attempt of a log file's name ("3.log", "3.log.<time>").
func attemptOfName(name string) (int, bool) {
	digits, _, ok := strings.Cut(name, ".log")
	if !ok {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, digits != ""
}
