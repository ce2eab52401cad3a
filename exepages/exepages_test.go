package exepages

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile is the process's resident file pages, in kB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatal("no RssFile")
	return 0
}

// TestDrop: the binary's resident file pages go, and the process goes on
// (its code comes back as it runs).
func TestDrop(t *testing.T) {
	before := rssFile(t)
	n, err := Drop()
	if err != nil || n == 0 {
		t.Fatalf("Drop: %d bytes, %v", n, err)
	}
	after := rssFile(t)
	t.Logf("RssFile %d kB -> %d kB", before, after)
	if after >= before {
		t.Errorf("RssFile %d kB -> %d kB: nothing dropped", before, after)
	}
}

func TestReadOnlyOf(t *testing.T) {
	exe := "/usr/local/bin/podrun"
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"00400000-00c00000 r-xp 00000000 fe:00 123 /usr/local/bin/podrun", true},
		{"00c00000-01000000 r--p 00800000 fe:00 123 /usr/local/bin/podrun", true},
		{"01000000-01100000 rw-p 00c00000 fe:00 123 /usr/local/bin/podrun", false},
		{"01100000-01200000 r--s 00000000 fe:00 123 /usr/local/bin/podrun", false},
		{"7f0000000000-7f0000001000 r--p 00000000 fe:00 9 /usr/lib/other", false},
		{"7f0000000000-7f0000001000 rw-p 00000000 00:00 0", false},
	} {
		if _, _, ok := readOnlyOf(tc.line, exe); ok != tc.ok {
			t.Errorf("%q: %v, want %v", tc.line, ok, tc.ok)
		}
	}
}
