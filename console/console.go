// Package console is podrun's stderr: the lines of its progress and logs
// and, on a terminal, one line showing how pulls are going, redrawn in
// place. One lock covers both, so that a line is never printed into the
// progress line. It also handles the user's terminal for exec and attach
// with -t (terminal.go).
package console

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"golang.org/x/term"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/printers"
)

// Console writes to one stream.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	tty   bool
	clock clock.PassiveClock
	pulls map[string]*pull // by ref
	shown bool             // the progress line is on the screen
}

// pull is how far one pull is, and how fast it goes.
type pull struct {
	engine.PullProgress
	rate   float64   // bytes per second over the last rateEvery or more
	mark   int64     // Done at at
	at     time.Time // when the rate was last measured
	marked bool
}

// rateEvery is the least time over which a rate is measured.
const rateEvery = time.Second

// update records p at now: the rate is the bytes fetched since the last
// measure, once at least rateEvery has passed.
func (u *pull) update(p engine.PullProgress, now time.Time) {
	u.PullProgress = p
	switch {
	case !u.marked:
		u.mark, u.at, u.marked = p.Done, now, true
	case now.Sub(u.at) >= rateEvery:
		u.rate = float64(max(p.Done-u.mark, 0)) / now.Sub(u.at).Seconds()
		u.mark, u.at = p.Done, now
	}
}

// New returns the console of f (os.Stderr).
func New(f *os.File) *Console {
	fd := int(f.Fd())
	return &Console{w: f, fd: fd, tty: term.IsTerminal(fd), clock: clock.RealClock{}, pulls: map[string]*pull{}}
}

// Terminal reports whether the stream is a terminal (progress is drawn).
func (c *Console) Terminal() bool { return c.tty }

// Println prints a line; a progress line shown is erased first and drawn
// again below it.
func (c *Console) Println(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	fmt.Fprintln(c.w, line)
	if len(c.pulls) > 0 {
		c.draw()
	}
}

// Update says how far the pull of ref is (images.Progress).
func (c *Console) Update(ref string, p engine.PullProgress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.pulls[ref]
	if u == nil {
		u = &pull{}
		c.pulls[ref] = u
	}
	u.update(p, c.clock.Now())
	c.draw()
}

// Done says the pull of ref has ended (images.Progress).
func (c *Console) Done(ref string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pulls, ref)
	if len(c.pulls) == 0 {
		c.erase()
		return
	}
	c.draw()
}

func (c *Console) erase() {
	if c.shown {
		fmt.Fprint(c.w, "\r\x1b[K")
		c.shown = false
	}
}

// draw shows "pulling REF: layer 2/3 0123456789ab: 3.1 MiB / 10.0 MiB
// (31%), 1.2 MiB/s"; concurrent pulls are summed ("pulling 2 images: ...").
func (c *Console) draw() {
	if !c.tty {
		return
	}
	line := progressLine(c.pulls)
	// Never wider than the terminal: a wrapped line cannot be redrawn in place.
	if width, _, err := term.GetSize(c.fd); err == nil && width > 1 && len(line) >= width {
		line = line[:width-1]
	}
	fmt.Fprint(c.w, "\r\x1b[K"+line)
	c.shown = true
}

// progressLine is the line of the pulls under way.
func progressLine(pulls map[string]*pull) string {
	refs := make([]string, 0, len(pulls))
	var done, total int64
	var rate float64
	for ref, p := range pulls {
		refs = append(refs, ref)
		done += p.Done
		total += p.Total
		rate += p.rate
	}
	sort.Strings(refs)
	what := fmt.Sprintf("%d images", len(refs))
	if len(refs) == 1 {
		what = refs[0]
		if p := pulls[what]; p.Layers > 0 {
			// The layer being fetched is the one after those done.
			what += fmt.Sprintf(": layer %d/%d", min(p.LayersDone+1, p.Layers), p.Layers)
			if p.Layer != "" {
				what += " " + p.Layer
			}
		}
	}
	line := fmt.Sprintf("pulling %s: %s / %s", what, printers.HumanSize(done), printers.HumanSize(total))
	if total > 0 {
		line += fmt.Sprintf(" (%d%%)", done*100/total)
	}
	if rate > 0 {
		line += fmt.Sprintf(", %s/s", printers.HumanSize(int64(rate)))
	}
	return line
}
