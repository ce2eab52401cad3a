package logs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestGC: a gone pod's logs go after MaxAge, and oldest first over
// MaxTotal; an existing pod's logs and directories podrun did not make
// (a kubelet's, in a shared /var/log/pods) are never touched.
func TestGC(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	mk := func(name string, size int, age time.Duration, ours bool) {
		c := filepath.Join(dir, name, "app")
		if err := os.MkdirAll(c, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(c, "0.log")
		if err := os.WriteFile(f, make([]byte, size), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		if ours {
			if err := markPodDir(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("default_live_u1", 500, 30*24*time.Hour, true)                   // exists: kept however old
	mk("default_old_u2", 10, 8*24*time.Hour, true)                      // gone, older than a week
	mk("default_gone_u3", 300, 2*time.Hour, true)                       // gone, recent
	mk("default_gone_u4", 300, time.Hour, true)                         // gone, more recent
	mk("default_kubelet_u5", 900, 30*24*time.Hour, false)               // not podrun's
	mk("default_live_u1.20261120T000000.000000000", 5, time.Hour, true) // an earlier run's, gone
	alive := func(name string) bool { return name == "default_live_u1" }

	removed, err := GC(dir, alive, Retention{MaxAge: 7 * 24 * time.Hour, MaxTotal: 0}, now)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != "default_old_u2" {
		t.Fatalf("by age: removed %v, %v; want default_old_u2", removed, err)
	}
	// 500 + 300 + 300 + 5 of podrun's: a cap of 900 removes the oldest gone
	// ones until under it: u3 (2 h), then it is 805.
	removed, err = GC(dir, alive, Retention{MaxTotal: 900}, now)
	var names []string
	for _, r := range removed {
		names = append(names, filepath.Base(r))
	}
	if err != nil || !slices.Equal(names, []string{"default_gone_u3"}) {
		t.Fatalf("over the cap: removed %v, %v; want default_gone_u3", names, err)
	}
	for _, keep := range []string{"default_live_u1", "default_kubelet_u5", "default_gone_u4"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	// A cap below what live pods hold removes every gone pod's, never a live one's.
	if _, err := GC(dir, alive, Retention{MaxTotal: 1}, now); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"default_kubelet_u5", "default_live_u1"}) {
		t.Errorf("left %v", left)
	}
}
