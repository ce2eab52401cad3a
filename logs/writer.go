package logs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer serializes records from several streams into one CRI log.
//
// A record that cannot be written (a full disk) is dropped and counted,
// never waited for: the container's streams keep being drained, as
// containerd's CRI does, so a container never blocks on its log. The file
// is tried again at the next record; the first record written after drops
// is preceded by one saying how much was dropped and why.
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

// Copy reads stream (named "stdout" or "stderr") until EOF and writes its
// lines: a line ended by a newline as a full record (F), one longer than
// MaxLine in partial records (P) and a full one, and what is left without a
// newline at EOF as a partial record, as it was written (so a termination
// message read from the log of `printf DONE` is "DONE"). It returns only a
// read error: what cannot be written is dropped (see Writer).
func (w *Writer) Copy(stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		tag := "P"
		if err == nil {
			tag, line = "F", bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		}
		if len(line) > 0 || err == nil || errors.Is(err, bufio.ErrBufferFull) {
			w.record(stream, tag, line)
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && !errors.Is(err, bufio.ErrBufferFull):
			return err
		}
	}
}

// record writes one record, or drops and counts it.
func (w *Writer) record(stream, tag string, line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now().UTC()
	buf := make([]byte, 0, len(line)+160)
	if w.broken {
		buf = append(buf, '\n') // ends the record cut short; readers skip it
	}
	if w.dropped > 0 {
		notice := fmt.Sprintf("podrun: %d records (%d bytes) of this container's output were dropped: the log could not be written: %v",
			w.dropped, w.droppedBytes, w.dropErr)
		buf = appendRecord(buf, now, "stderr", "F", []byte(notice))
	}
	buf = appendRecord(buf, now, stream, tag, line)
	n, err := w.w.Write(buf)
	if err == nil {
		if w.dropped > 0 && w.Report != nil {
			w.Report(fmt.Sprintf("writing the log again; %d records (%d bytes) were dropped", w.dropped, w.droppedBytes))
		}
		w.dropped, w.droppedBytes, w.dropErr, w.broken = 0, 0, nil, false
		return
	}
	if n > 0 {
		w.broken = buf[n-1] != '\n'
	}
	if w.dropped == 0 && w.Report != nil {
		w.Report(fmt.Sprintf("dropping output: %v", err))
	}
	w.dropped++
	w.droppedBytes += int64(len(line))
	w.dropErr = err
}

func appendRecord(buf []byte, t time.Time, stream, tag string, line []byte) []byte {
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = append(buf, tag...)
	buf = append(buf, ' ')
	buf = append(buf, line...)
	return append(buf, '\n')
}
