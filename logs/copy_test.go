package logs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sample has partials on both streams, interleaved, and malformed lines.
const sample = `2026-01-02T03:04:05.1Z stdout F one
2026-01-02T03:04:05.2Z stdout P tw
2026-01-02T03:04:05.3Z stderr P err-
bad
2026-01-02T03:04:05.4Z stdout F o
not-a-time stdout F skipped
2026-01-02T03:04:05.5Z stdin F skipped
2026-01-02T03:04:05.5Z stdout X skipped

2026-01-02T03:04:05.5Z stderr F line
2026-01-02T03:04:05.6Z stdout F three
2026-01-02T03:04:05.7Z stdout F 
2026-01-02T03:04:05.8Z stdout F with  two spaces
`

func writeLog(t *testing.T, dir string, restart int, content string) string {
	t.Helper()
	p := filepath.Join(dir, strconv.Itoa(restart)+".log")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyString(t *testing.T, dir string, restart int, o Options) string {
	t.Helper()
	var out bytes.Buffer
	if err := Copy(context.Background(), &out, dir, restart, o); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestCopyTail(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 0, sample)
	all := "one\ntwo\nerr-line\nthree\n\nwith  two spaces\n"
	for _, tc := range []struct {
		tail int
		want string
	}{
		{-1, all},
		{0, ""},
		{1, "with  two spaces\n"},
		{4, "err-line\nthree\n\nwith  two spaces\n"},
		{6, all},
		{100, all},
	} {
		if got := copyString(t, dir, 0, Options{Tail: tc.tail}); got != tc.want {
			t.Errorf("Tail %d:\n got %q\nwant %q", tc.tail, got, tc.want)
		}
	}
}

func TestCopyTimestamps(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 0, sample)
	got := copyString(t, dir, 0, Options{Tail: 3, Timestamps: true})
	// A joined line has the time of its first record; times are written
	// with all nine fraction digits, as kubectl logs --timestamps shows them.
	want := "2026-01-02T03:04:05.600000000Z three\n" +
		"2026-01-02T03:04:05.700000000Z \n" +
		"2026-01-02T03:04:05.800000000Z with  two spaces\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got = copyString(t, dir, 0, Options{Tail: -1, Timestamps: true})
	if !strings.Contains(got, "2026-01-02T03:04:05.200000000Z two\n") ||
		!strings.Contains(got, "2026-01-02T03:04:05.300000000Z err-line\n") {
		t.Fatalf("joined lines' times: %q", got)
	}
	if _, err := time.Parse(time.RFC3339Nano, strings.Fields(got)[0]); err != nil {
		t.Fatalf("timestamp is not RFC 3339: %v", err)
	}
}

func TestCopyEndOfFile(t *testing.T) {
	dir := t.TempDir()
	// An unterminated last record is read; a partial never finished is
	// written as a line at the end; an overlong garbage line is skipped.
	junk := strings.Repeat("x", maxRecord+100)
	writeLog(t, dir, 0, "2026-01-02T03:04:05Z stderr P dangling\n"+
		junk+"\n"+
		"2026-01-02T03:04:06Z stdout F a\n"+
		"2026-01-02T03:04:07Z stdout F no-newline")
	got := copyString(t, dir, 0, Options{Tail: -1})
	if want := "a\nno-newline\ndangling\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := copyString(t, dir, 0, Options{Tail: 1}); got != "dangling\n" {
		t.Fatalf("tail 1: got %q", got)
	}
}

func TestCopyLongRecords(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", 3*MaxLine+5)
	if err := NewWriter(f).Copy("stdout", strings.NewReader("short\n"+long+"\nend\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := copyString(t, dir, 0, Options{Tail: 2}); got != long+"\nend\n" {
		t.Fatalf("got %d bytes, want the long line and end", len(got))
	}
}

func TestCopyMissingFile(t *testing.T) {
	err := Copy(context.Background(), &bytes.Buffer{}, t.TempDir(), 3, Options{Tail: -1})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestCopyWriteError(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 0, sample)
	if err := Copy(context.Background(), failWriter{}, dir, 0, Options{Tail: -1}); err == nil {
		t.Fatal("no error from a failing writer")
	}
}

// syncBuffer is written by Copy and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q does not end with %q", out.String(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestCopyFollowAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	p0 := writeLog(t, dir, 0, "2026-01-02T03:04:05Z stdout F old\n2026-01-02T03:04:06Z stdout F first\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, out, dir, 0, Options{Tail: 1, Follow: true}) }()

	waitFor(t, out, "first\n")
	appendTo(t, p0, "2026-01-02T03:04:07Z stdout F second\n")
	waitFor(t, out, "first\nsecond\n")

	// A record written in two pieces, and a partial completed later.
	appendTo(t, p0, "2026-01-02T03:04:08Z stderr F hal")
	time.Sleep(2 * pollInterval)
	if s := out.String(); strings.Contains(s, "hal") {
		t.Fatalf("unterminated record written: %q", s)
	}
	appendTo(t, p0, "ves\n2026-01-02T03:04:09Z stdout P jo\n")
	waitFor(t, out, "second\nhalves\n")
	time.Sleep(2 * pollInterval)
	if s := out.String(); strings.Contains(s, "jo") {
		t.Fatalf("partial record written as a line: %q", s)
	}
	appendTo(t, p0, "2026-01-02T03:04:10Z stdout F ined\n")
	waitFor(t, out, "halves\njoined\n")

	// The container restarts: the old file's last lines, then the new file.
	appendTo(t, p0, "2026-01-02T03:04:11Z stdout F last of 0\n")
	p1 := filepath.Join(dir, "1.log")
	f, err := os.OpenFile(p1, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f)
	if err := w.Copy("stdout", strings.NewReader("restarted\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "joined\nlast of 0\nrestarted\n")
	if err := w.Copy("stderr", strings.NewReader("more\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "restarted\nmore\n")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Copy = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Copy did not end with ctx")
	}
	if want := "first\nsecond\nhalves\njoined\nlast of 0\nrestarted\nmore\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func TestCopyFollowSkipsToNextExistingRestart(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 2, "2026-01-02T03:04:05Z stdout F two\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Copy(ctx, out, dir, 2, Options{Tail: -1, Follow: true}) }()
	waitFor(t, out, "two\n")
	writeLog(t, dir, 1, "2026-01-02T03:04:05Z stdout F older, ignored\n")
	writeLog(t, dir, 10, "2026-01-02T03:04:05Z stdout F ten\n")
	writeLog(t, dir, 3, "2026-01-02T03:04:05Z stdout F three\n")
	waitFor(t, out, "two\nthree\nten\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLatest(t *testing.T) {
	dir := t.TempDir()
	if _, err := Latest(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty dir: %v", err)
	}
	if _, err := Latest(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	for _, name := range []string{"0.log", "1.log", "10.log", "2.log", "x.log", "11.log.gz", "-20.log", "+30.log", ".log", "9.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "99.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := Latest(dir)
	if err != nil || n != 10 {
		t.Fatalf("Latest = %d, %v; want 10", n, err)
	}
}

func TestCopyCancelledContext(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 0, sample)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Copy(ctx, &bytes.Buffer{}, dir, 0, Options{Tail: -1, Follow: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestCopySinceAndStream: Since and Stream leave lines out after Tail has
// picked them, as the kubelet applies sinceTime and stream after tail.
func TestCopySinceAndStream(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 0, sample)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"since the first line", Options{Tail: -1, Since: at("2026-01-02T03:04:05.1Z")}, "one\ntwo\nerr-line\nthree\n\nwith  two spaces\n"},
		{"since a joined line's first record", Options{Tail: -1, Since: at("2026-01-02T03:04:05.3Z")}, "err-line\nthree\n\nwith  two spaces\n"},
		{"since after the last line", Options{Tail: -1, Since: at("2026-01-02T03:04:06Z")}, ""},
		{"since after tail", Options{Tail: 2, Since: at("2026-01-02T03:04:05.75Z")}, "with  two spaces\n"},
		{"stdout", Options{Tail: -1, Stream: "stdout"}, "one\ntwo\nthree\n\nwith  two spaces\n"},
		{"stderr", Options{Tail: -1, Stream: "stderr"}, "err-line\n"},
		{"stderr after tail", Options{Tail: 2, Stream: "stderr"}, ""},
	} {
		if got := copyString(t, dir, 0, tc.o); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
