package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLineWithoutNewlineBounded: a container writing 8 MiB with no newline
// gets P records of at most MaxLine in its log, and the readers give it
// back as lines of at most MaxJoined, whole and in order, instead of
// holding it all at once.
func TestLineWithoutNewlineBounded(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16)
	if err := NewWriter(f).Copy("stdout", bytes.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	raw, err := os.ReadFile(filepath.Join(dir, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		if r, ok := Parse(rec); !ok || len(r.Text) > MaxLine {
			t.Fatalf("record %d: %d bytes of text, want at most %d", i, len(r.Text), MaxLine)
		}
	}

	var out bytes.Buffer
	if err := Copy(context.Background(), &out, dir, 0, Options{Tail: -1}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, l := range lines {
		if len(l) > MaxJoined {
			t.Fatalf("Copy line %d: %d bytes, want at most %d", i, len(l), MaxJoined)
		}
	}
	if got := strings.Join(lines, ""); got != string(text) {
		t.Errorf("Copy gave back %d bytes, not the %d written", len(got), len(text))
	}
	tail := Tail(bytes.NewReader(raw), 3)
	if len(tail) != 3 {
		t.Fatalf("Tail: %d lines", len(tail))
	}
	for _, l := range tail {
		if len(l) > MaxJoined {
			t.Errorf("Tail line of %d bytes", len(l))
		}
	}
}
