package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/engine"
)

func TestPullString(t *testing.T) {
	for _, tc := range []struct {
		p    Pull
		want string
	}{
		{Pull{Image: "r/a:1", Done: 52 << 20, Total: 104 << 20, Layers: 5, LayersDone: 2, BytesPerSecond: 2 << 20},
			"r/a:1: layer 3/5, 52.0 MiB / 104.0 MiB (50%), 2.0 MiB/s"},
		{Pull{Image: "r/a:1", Done: 104 << 20, Total: 104 << 20, Layers: 5, LayersDone: 5},
			"r/a:1: layer 5/5, 104.0 MiB / 104.0 MiB (100%)"},
		{Pull{Image: "r/a:1", Done: 0, Total: 0}, "r/a:1: 0.0 B / 0.0 B"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestPulls: the board lists each image's last progress, with its rate
// over the last 10 s (what it had at its start aside), until its pull is
// done; each change is said on changed.
func TestPulls(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	b := NewPulls(clk)
	b.Update("r/b:1", engine.PullProgress{Done: 10 << 20, Total: 100 << 20, Layers: 5, LayersDone: 1})
	clk.SetTime(t0.Add(500 * time.Millisecond))
	b.Update("r/a:1", engine.PullProgress{Done: 0, Total: 8 << 20, Layers: 1})
	clk.SetTime(t0.Add(4 * time.Second))
	b.Update("r/b:1", engine.PullProgress{Done: 18 << 20, Total: 100 << 20, Layers: 5, LayersDone: 1})
	select {
	case <-b.changed:
	default:
		t.Error("no change said")
	}
	want := []Pull{
		{Image: "r/a:1", Since: t0.Add(500 * time.Millisecond), Total: 8 << 20, Layers: 1},
		{Image: "r/b:1", Since: t0, Done: 18 << 20, Total: 100 << 20, Layers: 5, LayersDone: 1, BytesPerSecond: 2 << 20},
	}
	if got := b.List(); !reflect.DeepEqual(got, want) {
		t.Errorf("List() =\n%+v, want\n%+v", got, want)
	}
	if n, left := b.remaining(); n != 2 || left != 8<<20+82<<20 {
		t.Errorf("remaining() = %d, %d; want 2, %d", n, left, 8<<20+82<<20)
	}
	// The rate is the last 10 s's: a link that stalls shows 0, one that
	// comes back its new rate.
	clk.SetTime(t0.Add(14 * time.Second))
	if got := rateOf(b, "r/b:1"); got != 0 {
		t.Errorf("stalled since t0+4s, at t0+14s: %d B/s, want 0", got)
	}
	for i := int64(1); i <= 4; i++ { // 1 MiB/s from t0+14s
		clk.SetTime(t0.Add(time.Duration(14+i) * time.Second))
		b.Update("r/b:1", engine.PullProgress{Done: (18 + i) << 20, Total: 100 << 20, Layers: 5, LayersDone: 1})
	}
	if got := rateOf(b, "r/b:1"); got != 4<<20/10 {
		t.Errorf("at t0+18s, 4 MiB in the last 10 s: %d B/s, want %d", got, 4<<20/10)
	}
	clk.SetTime(t0.Add(24 * time.Second))
	b.Update("r/b:1", engine.PullProgress{Done: 32 << 20, Total: 100 << 20, Layers: 5, LayersDone: 2})
	if got := rateOf(b, "r/b:1"); got != 14<<20/10 {
		t.Errorf("at t0+24s, 14 MiB since t0+14s: %d B/s, want %d", got, 14<<20/10)
	}
	for range 1000 { // a burst of progress: the samples stay bounded
		b.Update("r/b:1", engine.PullProgress{Done: 32 << 20, Total: 100 << 20})
	}
	if n := len(b.under["r/b:1"].samples); n > int(rateWindow/sampleEvery)+2 {
		t.Errorf("%d samples kept", n)
	}
	b.Done("r/b:1")
	if got := b.List(); len(got) != 1 || got[0].Image != "r/a:1" {
		t.Errorf("after r/b:1 is done: %+v", got)
	}
	b.Done("r/a:1")
	if n, left := b.remaining(); n != 0 || left != 0 {
		t.Errorf("remaining() = %d, %d with no pull", n, left)
	}
}

func rateOf(b *Pulls, ref string) int64 {
	for _, p := range b.List() {
		if p.Image == ref {
			return p.BytesPerSecond
		}
	}
	return -1
}

// TestRewriteStatus: the status file is written again with the pulls
// under way, the rest as the last sync wrote it (its time too); nothing is
// written before the first sync's status.
func TestRewriteStatus(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "daemon.json")
	pulls := NewPulls(clk)
	d := New(nil, Options{ManifestDir: t.TempDir(), StatusFile: path, Clock: clk, Pulls: pulls}, slog.New(slog.DiscardHandler), NewMetrics())
	pulls.Update("r/a:1", engine.PullProgress{Done: 1, Total: 2})
	d.rewriteStatus()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a status file before the first sync's: %v", err)
	}
	d.writeStatus(Status{Problems: []Problem{{Source: "/m/x.yaml", Msg: "bad"}}})
	synced := clk.Now().UTC()
	clk.Step(time.Minute)
	pulls.Update("r/a:1", engine.PullProgress{Done: 2, Total: 4})
	d.rewriteStatus()
	var st Status
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Updated.Equal(synced) || len(st.Problems) != 1 || st.PID != os.Getpid() {
		t.Errorf("rewritten: updated %v, problems %v, pid %d; want the sync's (%v, 1 problem, %d)", st.Updated, st.Problems, st.PID, synced, os.Getpid())
	}
	if len(st.Pulls) != 1 || st.Pulls[0].Image != "r/a:1" || st.Pulls[0].Done != 2 || st.Pulls[0].Total != 4 {
		t.Errorf("rewritten pulls: %+v", st.Pulls)
	}
}

// TestPublishPulls: a change of the pulls under way is written to the
// status file, the next one not before pullsEvery; the writer stops with
// its context.
func TestPublishPulls(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "daemon.json")
	pulls := NewPulls(clk)
	d := New(nil, Options{ManifestDir: t.TempDir(), StatusFile: path, Clock: clk, Pulls: pulls}, slog.New(slog.DiscardHandler), NewMetrics())
	d.writeStatus(Status{})
	ctx, cancel := context.WithCancel(context.Background())
	done := d.publishPulls(ctx)
	read := func() []Pull {
		var st Status
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		return st.Pulls
	}
	waitFor := func(what string, cond func([]Pull) bool) {
		t.Helper()
		for range 2000 {
			if cond(read()) {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("%s: the status file's pulls are %+v", what, read())
	}
	pulls.Update("r/a:1", engine.PullProgress{Done: 1, Total: 4})
	waitFor("the first change", func(p []Pull) bool { return len(p) == 1 && p[0].Done == 1 })
	for !clk.HasWaiters() { // the writer waits pullsEvery
		time.Sleep(time.Millisecond)
	}
	pulls.Update("r/a:1", engine.PullProgress{Done: 3, Total: 4})
	time.Sleep(20 * time.Millisecond)
	if p := read(); len(p) != 1 || p[0].Done != 1 {
		t.Errorf("written again before pullsEvery: %+v", p)
	}
	clk.Step(pullsEvery)
	waitFor("the next change, pullsEvery on", func(p []Pull) bool { return len(p) == 1 && p[0].Done == 3 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not stop with its context")
	}
}
