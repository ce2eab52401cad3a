package console

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{w: &buf, fd: -1, tty: true, pulls: map[string][2]int64{}}
	c.Update("r.io/a:1", 512, 2048)
	if got := buf.String(); got != "\r\x1b[Kpulling r.io/a:1: 512.0 B / 2.0 KiB (25%)" {
		t.Errorf("one pull: %q", got)
	}
	buf.Reset()
	c.Update("r.io/b:1", 1024, 2048)
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
	c := &Console{w: &buf, fd: -1, pulls: map[string][2]int64{}}
	c.Update("r.io/a:1", 512, 2048)
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
	c := &Console{w: &buf, fd: -1, tty: true, pulls: map[string][2]int64{}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); c.Println("event line") }()
		go func() { defer wg.Done(); c.Update("r.io/a:1", int64(i), 8) }()
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
