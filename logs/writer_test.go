package logs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// flakyFile fails its writes while full is set (a full disk), writing
// half of what it is given first as a real file would.
type flakyFile struct {
	mu   sync.Mutex
	full bool
	data strings.Builder
}

func (f *flakyFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		f.data.Write(p[:len(p)/2])
		return len(p) / 2, syscall.ENOSPC
	}
	return f.data.Write(p)
}

// TestWriterDropsWhatCannotBeWritten: while the log cannot be written, the
// stream is still read to its end (the container never blocks) and the
// records are dropped and counted; once writing works again, one record
// says how many were dropped and why, then the output goes on, each record
// on a line of its own (the one cut short is ended).
func TestWriterDropsWhatCannotBeWritten(t *testing.T) {
	f := &flakyFile{}
	w := &Writer{w: f, now: fixed}
	var reports []string
	w.Report = func(m string) { reports = append(reports, m) }
	if err := w.Copy("stdout", strings.NewReader("before\n")); err != nil {
		t.Fatal(err)
	}
	f.full = true
	for _, l := range []string{"lost 1\n", "lost 2\n", "lost 3\n"} { // three reads, three writes
		if err := w.Copy("stdout", strings.NewReader(l)); err != nil {
			t.Fatalf("a write error ended the copy: %v", err)
		}
	}
	f.full = false
	if err := w.Copy("stdout", strings.NewReader("after\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(f.data.String(), "\n"), "\n")
	ts := "2026-01-02T03:04:05.000000006Z"
	if lines[0] != ts+" stdout F before" {
		t.Errorf("first record %q", lines[0])
	}
	n := len(lines)
	if want := ts + " stderr F podrun: 3 records (18 bytes) of this container's output were dropped: the log could not be written: no space left on device"; lines[n-2] != want {
		t.Errorf("notice %q\nwant %q", lines[n-2], want)
	}
	if lines[n-1] != ts+" stdout F after" {
		t.Errorf("last record %q", lines[n-1])
	}
	for _, l := range lines[1 : n-2] { // the records cut short by the full disk
		if _, ok := Parse([]byte(l)); !ok && l != "" && !strings.HasPrefix(l, ts[:len(l)]) {
			t.Errorf("a cut record runs into another: %q", l)
		}
	}
	if len(reports) != 2 {
		t.Errorf("reports %q: want one when dropping starts, one when it ends", reports)
	}
}

// TestCompressionOffTheWritePath: while a compression takes its time, the
// records go on being written and rotated; Close waits for it.
func TestCompressionOffTheWritePath(t *testing.T) {
	release := make(chan struct{})
	compressFile = func(p string) (string, error) { <-release; return compress(p) }
	defer func() { compressFile = compress }()
	path := filepath.Join(t.TempDir(), "0.log")
	rf, err := openRotating(path, Rotation{MaxSize: 300, MaxFiles: 4}, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(rf)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range 20 {
			_ = w.Copy("stdout", strings.NewReader(line(i)+"\n"))
		}
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("writes wait for the compression")
	}
	if n := len(Rotated(path)); n != 3 {
		t.Errorf("%d rotated files while compressions wait, want 3", n)
	}
	close(release)
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	rotated := Rotated(path)
	for i, p := range rotated {
		if gz := strings.HasSuffix(p, ".gz"); gz != (i < len(rotated)-1) {
			t.Errorf("after Close: %v (every rotated file but the newest compressed)", rotated)
		}
	}
}

// TestStaleCompressionRemoved: the temporary file of a compression a
// killed writer left is removed, and what it had not compressed is.
func TestStaleCompressionRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, f := range []string{".20260101-000000", ".20260101-000000.gz.tmp", ".20260101-000001"} {
		if err := os.WriteFile(path+f, []byte("2026-01-01T00:00:00Z stdout F x\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	rf, err := openRotating(path, DefaultRotation, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".20260101-000000.gz.tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
	if got := Rotated(path); len(got) != 2 || got[0] != path+".20260101-000000.gz" || got[1] != path+".20260101-000001" {
		t.Errorf("rotated files %v", got)
	}
}
