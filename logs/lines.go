package logs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"time"
)

// maxRecord bounds one raw line; a longer one is not something Writer wrote
// and is skipped as malformed.
const maxRecord = 4 * MaxLine

// timestampFormat is how Copy prints times with Options.Timestamps: RFC 3339
// with nanoseconds always written out, as the kubelet does for kubectl logs.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

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
	since      time.Time       // lines before it are not written
	stream     string          // "": both streams
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
	if c.err != nil || l.Time.Before(c.since) || (c.stream != "" && l.Stream != c.stream) {
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
