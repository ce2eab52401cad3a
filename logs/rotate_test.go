package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock advances a tenth of a second per call: several rotations
// fall in one second and must still be named in order.
func fakeClock() func() time.Time {
	t := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(100 * time.Millisecond)
		return t
	}
}

func line(i int) string { return fmt.Sprintf("line %04d %s", i, strings.Repeat("x", 80)) }

// TestRotationHoldsTheCap: every file stays under MaxSize, at most MaxFiles
// files exist, all rotated files but the newest are gzip'd, and the
// readers give back a whole suffix of what was written, in order.
func TestRotationHoldsTheCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rf, err := openRotating(path, Rotation{MaxSize: 1024, MaxFiles: 3}, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(rf)
	const n = 200
	for i := 0; i < n; i++ {
		if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(path + "*")
		files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, ".tmp") }) // a compression's temporary
		// A file being compressed has its .gz complete for a moment before
		// the plain one goes (the kubelet's order too): one rotated file.
		logical := map[string]bool{}
		for _, f := range files {
			logical[strings.TrimSuffix(f, ".gz")] = true
		}
		if len(logical) > 3 {
			t.Fatalf("after line %d: %d files %v, want at most 3", i, len(files), files)
		}
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() > 1024 {
				t.Fatalf("after line %d: %s is %d bytes, over 1024", i, f, st.Size())
			}
		}
	}
	rf.Close()
	rotated := Rotated(path)
	if len(rotated) != 2 || !strings.HasSuffix(rotated[0], ".gz") || strings.HasSuffix(rotated[1], ".gz") {
		t.Errorf("rotated files %v: want the older gzip'd, the newer plain", rotated)
	}
	var out bytes.Buffer
	if err := Copy(context.Background(), &out, dir, 0, Options{Tail: -1}); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	first := n - len(got)
	for i, l := range got {
		if l != line(first+i) {
			t.Fatalf("line %d of %d read back: %q, want %q (a gap, a split or a reorder)", i, len(got), l, line(first+i))
		}
	}
	if len(got) < 10 {
		t.Errorf("only %d lines kept in 3 files of 1 KiB", len(got))
	}
	out.Reset()
	if err := Copy(context.Background(), &out, dir, 0, Options{Tail: 1}); err != nil || out.String() != line(n-1)+"\n" {
		t.Errorf("Tail 1: %q, %v", out.String(), err)
	}
}

// TestFollowAcrossRotations: `logs -f` keeps going when the file it reads
// is rotated away, missing nothing.
func TestFollowAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rf, err := openRotating(path, Rotation{MaxSize: 1024, MaxFiles: 5}, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := NewWriter(rf)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, lockedWriter{&mu, &out}, dir, 0, Options{Tail: -1, Follow: true}) }()
	const n = 60
	for i := 0; i < n; i++ {
		if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			time.Sleep(3 * pollInterval / 2) // let the follower see each rotation
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		s := out.String()
		mu.Unlock()
		if strings.Count(s, "\n") >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != n {
		t.Fatalf("followed %d lines across rotations, want %d", len(got), n)
	}
	for i, l := range got {
		if l != line(i) {
			t.Fatalf("line %d: %q, want %q", i, l, line(i))
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestFollowManyRotationsPerPoll: rotations every two records, dozens
// between two polls and some while the follower switches files: with no
// file removed (MaxFiles large), logs -f returns every line once, in order.
func TestFollowManyRotationsPerPoll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rf, err := openRotating(path, Rotation{MaxSize: 260, MaxFiles: 100000}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := NewWriter(rf)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, lockedWriter{&mu, &out}, dir, 0, Options{Tail: -1, Follow: true}) }()
	const n = 1500
	for i := 0; i < n; i++ {
		if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := strings.Count(out.String(), "\n")
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, l := range got {
		if l != line(i) {
			t.Fatalf("line %d of %d: %q, want %q", i, len(got), e(l), e(line(i)))
		}
	}
	if len(got) != n {
		t.Fatalf("followed %d lines, want %d", len(got), n)
	}
}

func e(s string) string { return s[:min(len(s), 12)] }
