package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer serializes records from several streams into one CRI log.
//
// The records of one read of a stream are written at once (one write for
// thousands of short lines, where a write per line made the keeper cost
// some 40 times the container's own work), stamped with the time of that
// read, as containerd's CRI stamps a line when it reads it.
//
// A record that cannot be written (a full disk) is dropped and counted,
// never waited for: the container's streams keep being drained, as
// containerd's CRI does, so a container never blocks on its log. The file
// is tried again at the next write; the first records written after drops
// are preceded by one saying how much was dropped and why.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	// Report, when set, hears of the first drop after a successful write
	// and of the recovery (podrun's own log, not the container's).
	Report func(msg string)

	dropped      int64 // records dropped since the last successful write
	droppedBytes int64
	dropErr      error
	broken       bool // a write stopped mid-record: the next one starts on a new line
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, now: time.Now} }

// recordsWriter takes whole records, several at once (File: it splits
// them where the file rotates).
type recordsWriter interface {
	WriteRecords(p []byte) (int, error)
}

// readSize is how much of a stream one read takes: the start of a line
// read before (less than MaxLine) is kept at the start of the buffer, and
// at least 4 KiB more is read after it. A buffer per stream for the
// container's life: little more than the bufio.Reader it replaces.
const readSize = MaxLine + 4<<10

// batchSize is how many bytes of records are made before they are written:
// it bounds the memory of a read of short lines (16 KiB of newlines are
// some 650 KiB of records).
const batchSize = 64 << 10

// Copy reads stream (named "stdout" or "stderr") until EOF and writes its
// lines: a line ended by a newline as a full record (F), one longer than
// MaxLine in partial records (P) and a full one, and what is left without a
// newline at EOF as a partial record, as it was written (so a termination
// message read from the log of `printf DONE` is "DONE"). It returns only a
// read error: what cannot be written is dropped (see Writer).
func (w *Writer) Copy(stream string, r io.Reader) error {
	buf := make([]byte, readSize)
	held := 0 // the start of a line, read before
	for {
		n, err := r.Read(buf[held:])
		rest := w.lines(stream, buf[:held+n], err != nil)
		held = copy(buf, rest)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// lines writes the records of the lines data holds, in one write when
// they fit in a batch, and returns the start of a line left over (none
// with last: it is written as a partial record).
func (w *Writer) lines(stream string, data []byte, last bool) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	bp := batches.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 2*batchSize { // a batch of long lines is not kept
			batches.Put(bp)
		}
	}()
	b := batch{buf: (*bp)[:0]}
	b.stamp(w.now().UTC(), stream)
	for len(data) > 0 {
		if i := bytes.IndexByte(data[:min(len(data), MaxLine)], '\n'); i >= 0 {
			b.add('F', bytes.TrimSuffix(data[:i], []byte{'\r'}))
			data = data[i+1:]
		} else if len(data) >= MaxLine || last {
			n := min(len(data), MaxLine)
			b.add('P', data[:n])
			data = data[n:]
		} else {
			break
		}
		if len(b.buf) >= batchSize {
			w.flush(&b)
		}
	}
	w.flush(&b)
	*bp = b.buf
	return data
}

// batches are the buffers of the batches being made (one per stream
// being written at most; none held by an idle container).
var batches = sync.Pool{New: func() any { return new([]byte) }}

// batch is records made for one write, all stamped with one time. A record
// is a line: its text never holds a newline.
type batch struct {
	buf    []byte
	prefix []byte // "<time> <stream> "
	time   []byte // "<time>"
}

func (b *batch) stamp(t time.Time, stream string) {
	b.prefix = t.AppendFormat(nil, time.RFC3339Nano)
	b.time = b.prefix
	b.prefix = append(append(append(b.prefix[:len(b.prefix):len(b.prefix)], ' '), stream...), ' ')
}

func (b *batch) add(tag byte, text []byte) {
	b.buf = append(b.buf, b.prefix...)
	b.buf = append(b.buf, tag, ' ')
	b.buf = append(append(b.buf, text...), '\n')
}

// recordOverhead is what a record holds besides its text and prefix: the
// tag, a space and the newline.
const recordOverhead = 3

// flush writes the batch's records, or drops and counts them (w.mu held),
// and empties it.
func (w *Writer) flush(b *batch) {
	if len(b.buf) == 0 {
		return
	}
	defer func() { b.buf = b.buf[:0] }()
	p := b.buf
	if w.broken || w.dropped > 0 {
		var head []byte
		if w.broken {
			head = append(head, '\n') // ends the record cut short; readers skip it
		}
		if w.dropped > 0 {
			notice := fmt.Sprintf("podrun: %d records (%d bytes) of this container's output were dropped: the log could not be written: %v",
				w.dropped, w.droppedBytes, w.dropErr)
			head = append(append(head, b.time...), " stderr F "...)
			head = append(append(head, notice...), '\n')
		}
		p = append(head, p...)
	}
	var n int
	var err error
	if rw, ok := w.w.(recordsWriter); ok {
		n, err = rw.WriteRecords(p)
	} else {
		n, err = w.w.Write(p)
	}
	if err == nil {
		if w.dropped > 0 && w.Report != nil {
			w.Report(fmt.Sprintf("writing the log again; %d records (%d bytes) were dropped", w.dropped, w.droppedBytes))
		}
		w.dropped, w.droppedBytes, w.dropErr, w.broken = 0, 0, nil, false
		return
	}
	if n > 0 {
		w.broken = p[n-1] != '\n'
	}
	if w.dropped == 0 && w.Report != nil {
		w.Report(fmt.Sprintf("dropping output: %v", err))
	}
	// The records not written whole are dropped; those before them are in
	// the log, and so is the notice of earlier drops when it was written.
	head := len(p) - len(b.buf)
	if n >= head {
		w.dropped, w.droppedBytes = 0, 0
	}
	for at := head; at < len(p); {
		end := at + bytes.IndexByte(p[at:], '\n') + 1
		if end > n {
			w.dropped++
			w.droppedBytes += int64(end - at - len(b.prefix) - recordOverhead)
		}
		at = end
	}
	w.dropErr = err
}
