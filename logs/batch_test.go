package logs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// countingFile counts the writes that reach it.
type countingFile struct {
	writes int
	bytes  int64
	last   []byte
}

func (c *countingFile) Write(p []byte) (int, error) {
	c.writes++
	c.bytes += int64(len(p))
	c.last = append(c.last[:0], p...)
	return len(p), nil
}

// pipeReads reads r in reads of at most n bytes, as a FIFO gives them.
type pipeReads struct {
	r io.Reader
	n int
}

func (p pipeReads) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

// TestShortLinesOneWritePerRead: 1 MiB of empty lines, read as a FIFO
// gives them (64 KiB at most a read), is 1,048,576 records written in a
// few hundred writes, not one write each.
func TestShortLinesOneWritePerRead(t *testing.T) {
	f := &countingFile{}
	w := &Writer{w: f, now: fixed}
	in := bytes.Repeat([]byte{'\n'}, 1<<20)
	if err := w.Copy("stdout", pipeReads{bytes.NewReader(in), 64 << 10}); err != nil {
		t.Fatal(err)
	}
	rec := "2026-01-02T03:04:05.000000006Z stdout F \n"
	if want := int64(len(rec)) << 20; f.bytes != want {
		t.Fatalf("%d bytes written, want %d (1 MiB records of %q)", f.bytes, want, rec)
	}
	if bound := int(f.bytes/batchSize) + 64; f.writes > bound {
		t.Errorf("%d writes for 1 MiB of newlines, want at most %d (one per %d KiB batch)", f.writes, bound, batchSize>>10)
	}
	if !strings.HasSuffix(string(f.last), rec+rec) {
		t.Errorf("last write ends %q", f.last[max(len(f.last)-100, 0):])
	}
}

// TestBatchRotatesBetweenRecords: a batch of records that goes over
// MaxSize is split where the file rotates: every file stays under MaxSize,
// each record whole in one file, in order.
func TestBatchRotatesBetweenRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	f, err := openRotating(path, Rotation{MaxSize: 1000, MaxFiles: 100}, seconds())
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{w: f, now: fixed}
	var in strings.Builder
	for i := range 300 {
		in.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	if err := w.Copy("stdout", strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	files := append(Rotated(path), path)
	if len(files) < 10 {
		t.Fatalf("%d files for ~14 KB under a 1000-byte cap", len(files))
	}
	var got strings.Builder
	for _, p := range files {
		rc, err := openRotated(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1000 {
			t.Errorf("%s: %d bytes, over MaxSize", p, len(b))
		}
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if l == "" {
				continue
			}
			r, ok := Parse([]byte(strings.TrimSuffix(l, "\n")))
			if !ok || !strings.HasSuffix(l, "\n") {
				t.Fatalf("%s: record cut: %q", p, l)
			}
			got.Write(r.Text)
			got.WriteByte('\n')
		}
	}
	if got.String() != in.String() {
		t.Errorf("the records read back differ from the lines written")
	}
}

// TestBatchCutShortDropsTheRest: a batch the disk takes only half of
// counts as dropped only the records not written whole.
func TestBatchCutShortDropsTheRest(t *testing.T) {
	f := &flakyFile{full: true}
	w := &Writer{w: f, now: fixed}
	if err := w.Copy("stdout", strings.NewReader("lost 1\nlost 2\nlost 3\n")); err != nil {
		t.Fatal(err)
	}
	f.full = false
	if err := w.Copy("stdout", strings.NewReader("after\n")); err != nil {
		t.Fatal(err)
	}
	// Half of three records of 46 bytes: the first one whole.
	if !strings.Contains(f.data.String(), " stdout F lost 1\n") {
		t.Errorf("the record written whole is not in the log:\n%s", f.data.String())
	}
	if want := "podrun: 2 records (12 bytes) of this container's output were dropped"; !strings.Contains(f.data.String(), want) {
		t.Errorf("log:\n%s\nwant %q", f.data.String(), want)
	}
}

// seconds is a clock a second further at each call (rotated names differ).
func seconds() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

// BenchmarkWriterShortLines: the cost of 1 MiB of empty lines from a
// container (the worst case per byte): the writes and CPU time per MiB.
func BenchmarkWriterShortLines(b *testing.B) {
	dir := b.TempDir()
	in := bytes.Repeat([]byte{'\n'}, 1<<20)
	b.SetBytes(int64(len(in)))
	writes := 0
	for range b.N {
		path := filepath.Join(dir, "0.log")
		f, err := openRotating(path, Rotation{MaxSize: 10 << 20, MaxFiles: 2}, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		c := &countingWrites{f: f}
		if err := NewWriter(c).Copy("stdout", pipeReads{bytes.NewReader(in), 64 << 10}); err != nil {
			b.Fatal(err)
		}
		writes += c.writes
		f.Close()
		for _, p := range append(Rotated(path), path) {
			os.Remove(p)
		}
	}
	b.ReportMetric(float64(writes)/float64(b.N), "writes/MiB")
}

// countingWrites counts the batches given to a File.
type countingWrites struct {
	f      *File
	writes int
}

func (c *countingWrites) WriteRecords(p []byte) (int, error) {
	c.writes++
	return c.f.WriteRecords(p)
}

func (c *countingWrites) Write(p []byte) (int, error) { c.writes++; return c.f.Write(p) }
