package logs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pollInterval is how often Copy with Follow looks for new lines and files.
const pollInterval = 200 * time.Millisecond

// maxRecord bounds one raw line; a longer one is not something Writer wrote
// and is skipped as malformed.
const maxRecord = 4 * MaxLine

// timestampFormat is how Copy prints times with Options.Timestamps: RFC 3339
// with nanoseconds always written out, as the kubelet does for kubectl logs.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// Options for Copy.
type Options struct {
	Tail       int  // last N lines (-1: all)
	Timestamps bool // prefix each line with its RFC3339Nano time, like kubectl logs --timestamps
	Follow     bool // keep reading; across restarts: when a newer <n>.log appears in the container dir, finish the current file and continue with the new one
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
	c := &copier{out: bufio.NewWriter(w), timestamps: o.Timestamps, tail: -1}
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

// sameLog reports whether the log file at path (plain or gzip'd since) is
// the one f holds: the same inode, or the same first record (its time to
// the nanosecond makes it the file's identity; compression changes the
// inode, not the content).
func sameLog(path string, f *os.File) bool {
	if isFile(path, f) {
		return true
	}
	buf := make([]byte, fingerprintSize)
	n, _ := f.ReadAt(buf, 0)
	if n == 0 {
		return false
	}
	return fingerprint(buf[:n]) == fingerprintOf(path)
}

// fingerprintSize is how much of a log's start identifies it.
const fingerprintSize = 512

// fingerprint is a log's first record (at most fingerprintSize bytes).
func fingerprint(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// fingerprintOf is the fingerprint of the rotated log file at path ("" if
// none).
func fingerprintOf(path string) string {
	rc, err := openRotated(path)
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, fingerprintSize)
	n, _ := io.ReadFull(rc, buf)
	if n == 0 {
		return ""
	}
	return fingerprint(buf[:n])
}

// isFile reports whether path is the file f holds.
func isFile(path string, f *os.File) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// rotatedAway reports whether the file at path is no longer the one f
// holds (the writer renamed it and started a new one).
func rotatedAway(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && !os.SameFile(a, b)
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

// errUnreadable is a rotated file that is not the gzip it is named.
var errUnreadable = errors.New("not a gzip file")

// openRotated opens a rotated log file for reading, gunzipping a .gz; a
// plain one compressed meanwhile is opened as its .gz (complete before the
// plain one goes).
func openRotated(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !strings.HasSuffix(path, ".gz") {
		path += ".gz"
		f, err = os.Open(path)
	}
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return f, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %w", path, errUnreadable, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// Latest returns the highest restart number with a log file in dir (or an
// error wrapping os.ErrNotExist when there is none).
func Latest(dir string) (int, error) {
	ns, err := restarts(dir)
	if err != nil {
		return 0, err
	}
	if len(ns) == 0 {
		return 0, fmt.Errorf("no log file in %s: %w", dir, os.ErrNotExist)
	}
	return ns[len(ns)-1], nil
}

func logFile(dir string, restart int) string {
	return filepath.Join(dir, strconv.Itoa(restart)+".log")
}

// restarts returns the restart numbers of the <n>.log files in dir, ascending.
func restarts(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ns []int
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if n, ok := restartOf(e.Name()); ok {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns) // ReadDir's order is by name: 10 before 2
	return ns, nil
}

// restartOf parses "<n>.log" with n all decimal digits.
func restartOf(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// nextRestart is the lowest restart number above cur with a file in dir.
func nextRestart(dir string, cur int) (int, bool) {
	ns, err := restarts(dir)
	if err != nil {
		return 0, false
	}
	for _, n := range ns {
		if n > cur {
			return n, true
		}
	}
	return 0, false
}

// entry is one line of a container's output, joined from its records.
type entry struct {
	Time   time.Time // of the first record
	Stream string
	Text   []byte
}

// parseRecord is Parse made strict: the time must be RFC 3339, the stream
// stdout or stderr and the tag F or P.
func parseRecord(line []byte) (Record, time.Time, bool) {
	parts := bytes.SplitN(line, []byte{' '}, 4)
	if len(parts) < 3 {
		return Record{}, time.Time{}, false
	}
	stream, tag := string(parts[1]), string(parts[2])
	if (stream != "stdout" && stream != "stderr") || (tag != "F" && tag != "P") {
		return Record{}, time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return Record{}, time.Time{}, false
	}
	r := Record{Time: string(parts[0]), Stream: stream, Partial: tag == "P"}
	if len(parts) == 4 {
		r.Text = parts[3]
	}
	return r, ts, true
}

// joiner joins partial records into lines, separately per stream (the
// streams' partials may interleave).
type joiner struct {
	open [2]*pending // stdout, stderr
	seq  int
}

type pending struct {
	entry
	seq int // order of first record, for flush
}

// add takes one raw log line and returns the lines it completes: none,
// one, or two when a line grown to MaxJoined is cut before this record.
func (j *joiner) add(raw []byte) []entry {
	r, ts, ok := parseRecord(raw)
	if !ok {
		return nil
	}
	i := 0
	if r.Stream == "stderr" {
		i = 1
	}
	var out []entry
	p := j.open[i]
	if p != nil && len(p.Text)+len(r.Text) > MaxJoined {
		out = append(out, p.entry) // a line that long is read as several
		p = nil
	}
	if p == nil {
		j.seq++
		p = &pending{entry: entry{Time: ts, Stream: r.Stream}, seq: j.seq}
		j.open[i] = p
	}
	p.Text = append(p.Text, r.Text...)
	if r.Partial {
		return out
	}
	j.open[i] = nil
	return append(out, p.entry)
}

// flush returns the lines still open (partials without their F record), in
// the order they began, and forgets them.
func (j *joiner) flush() []entry {
	var out []entry
	a, b := j.open[0], j.open[1]
	if a != nil && b != nil && b.seq < a.seq {
		a, b = b, a
	}
	for _, p := range []*pending{a, b} {
		if p != nil {
			out = append(out, p.entry)
		}
	}
	j.open = [2]*pending{}
	return out
}

// copier holds Copy's state: the current file, the joiner and the output.
type copier struct {
	r          lineReader
	j          joiner
	out        *bufio.Writer
	timestamps bool
	seen       map[string]bool // rotated files present when the current file was opened
	tail       int             // -1: write lines as they come; else keep the last tail in ring
	ring       []entry         // the last tail lines, oldest at head
	head       int
	err        error // first write error
}

// drain handles every complete line currently in the file.
func (c *copier) drain() error {
	for {
		raw, err := c.r.next()
		if errors.Is(err, io.EOF) {
			return c.err
		}
		if err != nil {
			return err
		}
		for _, l := range c.j.add(raw) {
			c.emit(l)
		}
		if c.err != nil {
			return c.err
		}
	}
}

// endFile handles what is left when the file is done: an unterminated last
// record and open partials.
func (c *copier) endFile() {
	if raw := c.r.rest(); len(raw) > 0 {
		for _, l := range c.j.add(raw) {
			c.emit(l)
		}
	}
	for _, l := range c.j.flush() {
		c.emit(l)
	}
}

func (c *copier) emit(l entry) {
	if c.tail < 0 {
		c.write(l)
		return
	}
	if c.tail == 0 {
		return
	}
	if len(c.ring) < c.tail {
		c.ring = append(c.ring, l)
		return
	}
	c.ring[c.head] = l // overwrite the oldest
	c.head = (c.head + 1) % c.tail
}

func (c *copier) write(l entry) {
	if c.err != nil {
		return
	}
	if c.timestamps {
		var buf [64]byte
		c.out.Write(l.Time.AppendFormat(buf[:0], timestampFormat))
		c.out.WriteByte(' ')
	}
	c.out.Write(l.Text)
	if err := c.out.WriteByte('\n'); err != nil {
		c.err = err
	}
}

func (c *copier) flush() error {
	if c.err != nil {
		return c.err
	}
	c.err = c.out.Flush()
	return c.err
}

// lineReader reads complete lines from a file that may still be growing:
// at the end of the file it keeps the unterminated bytes and tries again on
// the next call.
type lineReader struct {
	f       io.ReadCloser
	br      *bufio.Reader
	partial []byte // unterminated bytes read so far
	skip    bool   // discarding an overlong line up to its newline
}

func (r *lineReader) reset(f io.ReadCloser) {
	r.f = f
	if r.br == nil {
		r.br = bufio.NewReaderSize(f, 64*1024)
	} else {
		r.br.Reset(f)
	}
	r.partial = r.partial[:0]
	r.skip = false
}

// next returns the next complete line without its newline, valid until the
// next call, or io.EOF when none is complete yet.
func (r *lineReader) next() ([]byte, error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			if r.skip {
				r.skip = false
				continue
			}
			line := chunk
			if len(r.partial) > 0 {
				r.partial = append(r.partial, chunk...)
				line = r.partial
				r.partial = r.partial[:0]
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull) || errors.Is(err, io.EOF):
			if !r.skip {
				r.partial = append(r.partial, chunk...)
				if len(r.partial) > maxRecord {
					r.partial, r.skip = r.partial[:0], true
				}
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
		default:
			return nil, err
		}
	}
}

// rest returns and forgets the unterminated bytes at the end of the file.
func (r *lineReader) rest() []byte {
	if r.skip {
		r.skip = false
		return nil
	}
	b := r.partial
	r.partial = nil
	return b
}
