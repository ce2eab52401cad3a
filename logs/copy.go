package logs

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// pollInterval is how often Copy with Follow looks for new lines and files.
const pollInterval = 200 * time.Millisecond

// Options for Copy.
type Options struct {
	Tail       int  // last N lines (-1: all)
	Timestamps bool // prefix each line with its RFC3339Nano time, like kubectl logs --timestamps
	Follow     bool // keep reading; across restarts: when a newer <n>.log appears in the container dir, finish the current file and continue with the new one
	// Since, when set, leaves out the lines before it (kubectl logs
	// --since, --since-time); as the kubelet, after Tail has picked the lines.
	Since time.Time
	// Stream, when set ("stdout" or "stderr"), leaves out the other
	// stream's lines (the kubelet's PodLogOptions.stream); after Tail too.
	Stream string
}

// Copy writes the text of a container's log (records joined across P
// partials, one line per F record; stdout and stderr interleaved in file
// order) to w. dir is the container's log directory (<...>/<container>),
// restart selects the file (the caller picks the current or, for
// --previous, the previous attempt). Malformed records are skipped.
//
// A joined line carries the time of its first record. Partial records left
// open at the end of a file are written as a line once the file is done
// (at its end without Follow, when the next restart's file appears with it).
// Tail applies to the lines present when Copy starts; with Follow every
// later line is written.
//
// With Follow it runs until ctx ends and then returns nil. A missing file
// is an error wrapping os.ErrNotExist.
func Copy(ctx context.Context, w io.Writer, dir string, restart int, o Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := openLog(logFile(dir, restart))
	if err != nil {
		return err
	}
	c := &copier{out: bufio.NewWriter(w), timestamps: o.Timestamps, since: o.Since, stream: o.Stream, tail: -1}
	defer func() { c.r.f.Close() }()

	// The lines present now, keeping the last o.Tail: the rotated files,
	// oldest first, then the one being written.
	if o.Tail >= 0 {
		c.ring = make([]entry, 0, min(o.Tail, 1024))
		c.tail = o.Tail
	}
	rotated := Rotated(logFile(dir, restart))
	c.seen = map[string]bool{}
	for _, old := range rotated {
		if sameLog(old, f) {
			break // rotated since it was opened: read through f; newer ones after it (followRotation)
		}
		c.seen[rotationKey(old)] = true
		if err := c.drainRotated(old); err != nil {
			f.Close()
			return err
		}
	}
	c.r.reset(f)
	if err := c.drain(); err != nil {
		return err
	}
	if !o.Follow {
		c.endFile()
	}
	c.tail = -1
	for i := range c.ring {
		c.write(c.ring[(c.head+i)%len(c.ring)])
	}
	c.ring = nil
	if err := c.flush(); err != nil || !o.Follow {
		return err
	}

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := c.drain(); err != nil {
			return err
		}
		if err := c.followRotation(logFile(dir, restart)); err != nil {
			return err
		}
		next, ok := nextRestart(dir, restart)
		if ok {
			nf, err := os.Open(logFile(dir, next))
			if err == nil {
				// Whatever the old attempt wrote last, then the new file.
				if err := c.drain(); err != nil {
					nf.Close()
					return err
				}
				c.endFile()
				c.r.f.Close()
				c.r.reset(nf)
				restart = next
				if err := c.drain(); err != nil {
					return err
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := c.flush(); err != nil {
			return err
		}
	}
}

// openLog opens a container's current log file, waiting out the instant
// of a rotation (renamed, the new file not created yet).
func openLog(path string) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := os.Open(path)
		if err == nil || !errors.Is(err, os.ErrNotExist) || i == 50 || len(Rotated(path)) == 0 {
			return f, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// followRotation, when the file being followed was rotated away (its
// content is drained already), reads the files rotated after it that were
// never seen (several rotations between two polls), then goes on in the
// new file. Records are whole in one file; a line's P records may go on in
// the next, so open partials are kept.
func (c *copier) followRotation(path string) error {
	cur, ok := c.r.f.(*os.File)
	if !ok || !rotatedAway(cur, path) {
		return nil
	}
	nf, err := os.Open(path)
	if err != nil {
		return nil // between the rename and the new file: next poll
	}
	// The writer moved to the new file before it was there to open: what
	// it wrote to the old one since the last poll is read now.
	if err := c.drain(); err != nil {
		nf.Close()
		return err
	}
	rotated := Rotated(path)
	var unseen []string
	for _, p := range rotated {
		if !c.seen[rotationKey(p)] {
			unseen = append(unseen, p)
		}
	}
	// The file cur holds, drained already, is among them, unless removed
	// (then every unseen one is newer); only those after it are new, up to
	// the one nf holds.
	held := slices.IndexFunc(unseen, func(p string) bool { return sameLog(p, cur) })
	nfAt := len(unseen)
	for i, p := range unseen {
		if i > held && sameLog(p, nf) {
			nfAt = i // rotated again since nf was opened: read through nf
			break
		}
	}
	for _, p := range unseen[held+1 : nfAt] {
		if err := c.drainRotated(p); err != nil {
			nf.Close()
			return err
		}
	}
	// Seen: everything listed but the file nf holds, which must be found
	// unseen (as the held one) at its own rotation.
	c.seen = map[string]bool{}
	for _, p := range rotated {
		if !slices.Contains(unseen[nfAt:], p) {
			c.seen[rotationKey(p)] = true
		}
	}
	cur.Close()
	c.r.reset(nf)
	return c.drain()
}

// drainRotated reads a whole rotated file; one removed meanwhile (over
// MaxFiles) or unreadable is skipped.
func (c *copier) drainRotated(path string) error {
	rc, err := openRotated(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errUnreadable) {
		return nil
	}
	if err != nil {
		return err
	}
	c.r.reset(rc)
	defer rc.Close()
	return c.drain()
}
