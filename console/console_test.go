package console

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/engine"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{w: &buf, fd: -1, tty: true, clock: clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), pulls: map[string]*pull{}}
	c.Update("r.io/a:1", engine.PullProgress{Done: 512, Total: 2048})
	if got := buf.String(); got != "\r\x1b[Kpulling r.io/a:1: 512.0 B / 2.0 KiB (25%)" {
		t.Errorf("one pull: %q", got)
	}
	buf.Reset()
	c.Update("r.io/b:1", engine.PullProgress{Done: 1024, Total: 2048})
	if got := buf.String(); got != "\r\x1b[Kpulling 2 images: 1.5 KiB / 4.0 KiB (37%)" {
		t.Errorf("two pulls: %q", got)
	}
	buf.Reset()
	// A line in between: the progress line is erased, the line printed on
	// its own, the progress line drawn again below it.
	c.Println("default/web [1/9] pod directory (1ms)")
	if got := buf.String(); got != "\r\x1b[Kdefault/web [1/9] pod directory (1ms)\n\r\x1b[Kpulling 2 images: 1.5 KiB / 4.0 KiB (37%)" {
		t.Errorf("line during pulls: %q", got)
	}
	buf.Reset()
	c.Done("r.io/a:1")
	c.Done("r.io/b:1")
	if got := buf.String(); !strings.HasPrefix(got, "\r\x1b[Kpulling r.io/b:1") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("done: %q; want the remaining pull, then the line erased", got)
	}
	buf.Reset()
	c.Println("after")
	if got := buf.String(); got != "after\n" {
		t.Errorf("after the pulls: %q", got)
	}
}

// TestNotATerminal: no progress is drawn into a pipe or a log.
func TestNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{w: &buf, fd: -1, clock: clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), pulls: map[string]*pull{}}
	c.Update("r.io/a:1", engine.PullProgress{Done: 512, Total: 2048})
	c.Println("line")
	c.Done("r.io/a:1")
	if got := buf.String(); got != "line\n" {
		t.Errorf("output %q, want the line alone", got)
	}
}

// TestConcurrentLines: lines and progress from many goroutines never share
// a line (run with -race).
func TestConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{w: &buf, fd: -1, tty: true, clock: clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), pulls: map[string]*pull{}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); c.Println("event line") }()
		go func() { defer wg.Done(); c.Update("r.io/a:1", engine.PullProgress{Done: int64(i), Total: 8}) }()
	}
	wg.Wait()
	c.Done("r.io/a:1")
	// What a terminal shows: each printed line is what follows the last
	// erase on it.
	lines := strings.Split(buf.String(), "\n")
	for _, l := range lines[:len(lines)-1] {
		parts := strings.Split(l, "\r\x1b[K")
		if visible := parts[len(parts)-1]; visible != "event line" {
			t.Errorf("a printed line shows %q", visible)
		}
	}
	if n := len(lines) - 1; n != 8 {
		t.Errorf("%d lines, want 8", n)
	}
}

// TestProgressLineLayerAndRate: one pull shows its layer (the one after
// those done, of those known) and, once a second has passed, its rate over
// that second; several pulls sum their rates.
func TestProgressLineLayerAndRate(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	var buf bytes.Buffer
	c := &Console{w: &buf, fd: -1, tty: true, clock: clk, pulls: map[string]*pull{}}
	for _, tc := range []struct {
		after time.Duration
		ref   string
		p     engine.PullProgress
		want  string
	}{
		{0, "r.io/a:1", engine.PullProgress{Done: 1 << 20, Total: 10 << 20, Layers: 3, LayersDone: 1, Layer: "0123456789ab"},
			"pulling r.io/a:1: layer 2/3 0123456789ab: 1.0 MiB / 10.0 MiB (10%)"},
		{500 * time.Millisecond, "r.io/a:1", engine.PullProgress{Done: 2 << 20, Total: 10 << 20, Layers: 3, LayersDone: 1, Layer: "0123456789ab"},
			"pulling r.io/a:1: layer 2/3 0123456789ab: 2.0 MiB / 10.0 MiB (20%)"}, // not a second yet: no rate
		{500 * time.Millisecond, "r.io/a:1", engine.PullProgress{Done: 3 << 20, Total: 10 << 20, Layers: 3, LayersDone: 2},
			"pulling r.io/a:1: layer 3/3: 3.0 MiB / 10.0 MiB (30%), 2.0 MiB/s"},
		{2 * time.Second, "r.io/a:1", engine.PullProgress{Done: 4 << 20, Total: 10 << 20, Layers: 3, LayersDone: 3},
			"pulling r.io/a:1: layer 3/3: 4.0 MiB / 10.0 MiB (40%), 512.0 KiB/s"},
		{0, "r.io/b:1", engine.PullProgress{Done: 1 << 20, Total: 2 << 20},
			"pulling 2 images: 5.0 MiB / 12.0 MiB (41%), 512.0 KiB/s"},
	} {
		clk.SetTime(clk.Now().Add(tc.after))
		buf.Reset()
		c.Update(tc.ref, tc.p)
		if got := strings.TrimPrefix(buf.String(), "\r\x1b[K"); got != tc.want {
			t.Errorf("after %v, %s %+v:\n got %q\nwant %q", tc.after, tc.ref, tc.p, got, tc.want)
		}
	}
}
