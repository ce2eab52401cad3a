// Package logs writes and reads container logs in the CRI format the kubelet
// uses: one line per record, `<RFC3339Nano time> <stdout|stderr> <F|P> <text>`,
// where P marks a partial line (split because it was longer than MaxLine).
package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/runtime/v2/logging"
)

// MaxLine is the longest line written as one record, as in containerd's CRI
// (max_container_log_line_size): a longer one is split into P records.
const MaxLine = 16 * 1024

// MaxJoined is the longest line the readers (Copy, Tail) join from P
// records: a container's line with no newline in sight is read as lines of
// this size, so reading a log takes bounded memory whatever was written.
const MaxJoined = 4 * MaxLine

// Path is where a container's log lives: <dir>/<ns>_<pod>_<uid>/<container>/<restarts>.log.
func Path(dir, namespace, pod, uid, container string, restarts int) string {
	return filepath.Join(PodDir(dir, namespace, pod, uid), container, fmt.Sprintf("%d.log", restarts))
}

// PodDir is the pod's directory under the log dir.
func PodDir(dir, namespace, pod, uid string) string {
	return filepath.Join(dir, namespace+"_"+pod+"_"+uid)
}

// Writer serializes records from several streams into one CRI log.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, now: time.Now} }

// Copy reads stream (named "stdout" or "stderr") until EOF and writes its
// lines: a line ended by a newline as a full record (F), one longer than
// MaxLine in partial records (P) and a full one, and what is left without a
// newline at EOF as a partial record, as it was written (so a termination
// message read from the log of `printf DONE` is "DONE").
func (w *Writer) Copy(stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		tag := "P"
		if err == nil {
			tag, line = "F", bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		}
		if len(line) > 0 || err == nil || errors.Is(err, bufio.ErrBufferFull) {
			if werr := w.record(stream, tag, line); werr != nil {
				return werr
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && !errors.Is(err, bufio.ErrBufferFull):
			return err
		}
	}
}

func (w *Writer) record(stream, tag string, line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 0, len(line)+48)
	buf = w.now().UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = append(buf, tag...)
	buf = append(buf, ' ')
	buf = append(buf, line...)
	buf = append(buf, '\n')
	_, err := w.w.Write(buf)
	return err
}

// OpenDriverLog opens the log a driver writes, from its argument
// (DriverArg: the log's path and its rotation), making its directory.
func OpenDriverLog(arg string) (io.WriteCloser, error) {
	path, rot, err := ParseDriverArg(arg)
	if err != nil {
		return nil, fmt.Errorf("log driver %q: %w", arg, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := markPodDir(filepath.Dir(path)); err != nil { // GC removes only what podrun made
		return nil, err
	}
	return openRotating(path, rot, time.Now)
}

// RunDriver is the containerd shim's binary log driver: the shim runs
// `podrun cri-log ARG` (DriverArg: the log's path and its rotation) with the
// container's stdout and stderr as fds 3 and 4. It never returns.
func RunDriver(arg string) {
	logging.Run(func(_ context.Context, cfg *logging.Config, ready func() error) error {
		f, err := OpenDriverLog(arg)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := ready(); err != nil {
			return err
		}
		w := NewWriter(f)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []struct {
			name string
			r    io.Reader
		}{{"stdout", cfg.Stdout}, {"stderr", cfg.Stderr}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.Copy(s.name, s.r)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}
