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

	"golang.org/x/term"

	"github.com/podrun/podrun/printers"
)

// Console writes to one stream.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	tty   bool
	pulls map[string][2]int64 // ref -> done, total
	shown bool                // the progress line is on the screen
}

// New returns the console of f (os.Stderr).
func New(f *os.File) *Console {
	fd := int(f.Fd())
	return &Console{w: f, fd: fd, tty: term.IsTerminal(fd), pulls: map[string][2]int64{}}
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

// Update says how many bytes of ref are fetched out of the total known so
// far (images.Progress).
func (c *Console) Update(ref string, done, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pulls[ref] = [2]int64{done, total}
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

// draw shows "pulling REF: 3.1 MiB / 10.0 MiB (31%)"; concurrent pulls are
// summed.
func (c *Console) draw() {
	if !c.tty {
		return
	}
	refs := make([]string, 0, len(c.pulls))
	var done, total int64
	for ref, n := range c.pulls {
		refs = append(refs, ref)
		done += n[0]
		total += n[1]
	}
	sort.Strings(refs)
	what := fmt.Sprintf("%d images", len(refs))
	if len(refs) == 1 {
		what = refs[0]
	}
	line := fmt.Sprintf("pulling %s: %s / %s", what, printers.HumanSize(done), printers.HumanSize(total))
	if total > 0 {
		line += fmt.Sprintf(" (%d%%)", done*100/total)
	}
	// Never wider than the terminal: a wrapped line cannot be redrawn in place.
	if width, _, err := term.GetSize(c.fd); err == nil && width > 1 && len(line) >= width {
		line = line[:width-1]
	}
	fmt.Fprint(c.w, "\r\x1b[K"+line)
	c.shown = true
}
