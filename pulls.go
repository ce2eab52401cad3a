package main

// Registry settings and the progress line of pulls.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/registry"
)

// defaultRegistryConfig is where Docker keeps credentials:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
func defaultRegistryConfig() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

// insecureRegistries checks the --insecure-registry values.
func insecureRegistries(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		host, err := registry.ParseInsecure(strings.TrimSpace(v))
		if err != nil {
			return nil, usageError{err.Error()}
		}
		out = append(out, host)
	}
	return out, nil
}

// pullLine is the progress line of pulls; nil unless stderr is a terminal.
var pullLine *termProgress

// pullProgress returns the progress line when stderr is a terminal, and
// nothing otherwise (logs and pipes get no progress).
func pullProgress() images.Progress {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	if pullLine == nil {
		pullLine = &termProgress{w: os.Stderr, fd: int(os.Stderr.Fd()), pulls: map[string][2]int64{}}
	}
	return pullLine
}

// clearPullLine erases the progress line so that a log line can be printed;
// the next update draws it again.
func clearPullLine() {
	if pullLine != nil {
		pullLine.clear()
	}
}

// termProgress draws one line, "pulling REF: 3.1 MiB / 10.0 MiB (31%)",
// redrawn in place on each update; concurrent pulls are summed.
type termProgress struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	pulls map[string][2]int64 // ref -> done, total
	shown bool
}

func (p *termProgress) Update(ref string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pulls[ref] = [2]int64{done, total}
	p.draw()
}

func (p *termProgress) Done(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pulls, ref)
	if len(p.pulls) == 0 {
		p.erase()
		return
	}
	p.draw()
}

func (p *termProgress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

func (p *termProgress) erase() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

func (p *termProgress) draw() {
	refs := make([]string, 0, len(p.pulls))
	var done, total int64
	for ref, n := range p.pulls {
		refs = append(refs, ref)
		done += n[0]
		total += n[1]
	}
	sort.Strings(refs)
	what := fmt.Sprintf("%d images", len(refs))
	if len(refs) == 1 {
		what = refs[0]
	}
	line := fmt.Sprintf("pulling %s: %s / %s", what, humanSize(done), humanSize(total))
	if total > 0 {
		line += fmt.Sprintf(" (%d%%)", done*100/total)
	}
	// Never wider than the terminal: a wrapped line cannot be redrawn in place.
	if width, _, err := term.GetSize(p.fd); err == nil && width > 1 && len(line) >= width {
		line = line[:width-1]
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.shown = true
}
