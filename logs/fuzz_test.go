package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadLog: any bytes in a log file are read without a panic, in lines
// of at most MaxJoined, by Copy and Tail.
func FuzzReadLog(f *testing.F) {
	f.Add([]byte("2026-11-26T09:00:00.000000000Z stdout F hello\n"))
	f.Add([]byte("2026-11-26T09:00:00Z stdout P a\n2026-11-26T09:00:01Z stderr F b\n2026-11-26T09:00:02Z stdout F c\n"))
	f.Add([]byte("garbage\n\n x y z\n2026-11-26T09:00:00Z stdout P unterminated"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "0.log"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Copy(context.Background(), &out, dir, 0, Options{Tail: 5}); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if len(l) > MaxJoined {
				t.Fatalf("a line of %d bytes", len(l))
			}
		}
		for _, l := range Tail(bytes.NewReader(raw), 3) {
			if len(l) > MaxJoined {
				t.Fatalf("Tail: a line of %d bytes", len(l))
			}
		}
	})
}
