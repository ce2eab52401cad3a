package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// TestRunFiresItsTimers: Run's loop, on the injected clock, syncs once at
// start, re-scans when --resync is over and not before, at SIGHUP, for a
// rollback (kick), and for a file written once it is left alone for
// Settle.
func TestRunFiresItsTimers(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	h := run.NewHost(run.Config{Root: root, LogDir: t.TempDir()}, run.Deps{Engine: fake.New()}, nil, nil)
	defer h.Close()
	clk := testclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	o := Options{ManifestDir: dir, Resync: time.Minute, Settle: 2 * time.Second, StatusFile: filepath.Join(root, "daemon.json"), Clock: clk}
	m := NewMetrics()
	d := New(h, o, slog.New(slog.NewTextHandler(io.Discard, nil)), m)
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, hup) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	syncs := func() uint64 {
		var out dto.Metric
		if err := m.syncDuration.Write(&out); err != nil {
			t.Fatal(err)
		}
		return out.GetHistogram().GetSampleCount()
	}
	// waitSyncs waits (in real time, a hang's bound) for n syncs in all.
	// The fake clock fires a timer only when stepped: a step of 0 fires
	// those due now (a timer the loop set after the last step).
	waitSyncs := func(n uint64, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); syncs() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d syncs, want %d", what, syncs(), n)
			}
			clk.Step(0)
		}
		for range 4 { // none more comes
			time.Sleep(5 * time.Millisecond)
			clk.Step(0)
		}
		if got := syncs(); got != n {
			t.Fatalf("%s: %d syncs, want %d", what, got, n)
		}
	}
	waitSyncs(1, "at start")
	// The loop's timers start from the clock's time once it waits on it.
	for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop never waited on the clock")
		}
	}
	clk.Step(time.Minute - time.Second)
	waitSyncs(1, "before --resync is over")
	clk.Step(time.Second)
	waitSyncs(2, "--resync over")
	hup <- os.Interrupt
	waitSyncs(3, "SIGHUP")
	d.kick <- struct{}{} // a sync now
	waitSyncs(4, "a rollback's kick")

	// A file written is read once left alone for Settle (the file events
	// arrive in real time; the clock stands still meanwhile).
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	waitSyncs(4, "a file being written")
	// Under load its events may come after a step: the next one reads it
	// (10 steps of Settle stay well short of the next re-scan).
	for i := 0; syncs() < 5; i++ {
		if i == 10 {
			t.Fatal("the file written was never read")
		}
		clk.Step(o.Settle)
		time.Sleep(20 * time.Millisecond)
	}
	waitSyncs(5, "a file left alone for Settle")
}
