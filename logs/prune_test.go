package logs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveAttempts: the files of the attempts selected go, <n>.log and
// its rotated files; other attempts' files (10 is not 1) and other files
// stay.
func TestRemoveAttempts(t *testing.T) {
	dir := t.TempDir()
	names := []string{"0.log", "0.log.20260101-000000.gz", "1.log", "1.log.20260101-000000", "1.log.20260101-000000.gz.tmp",
		"10.log", "10.log.20260101-000000", "2.log", "x.log", "1.logx", ".podrun"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveAttempts(dir, func(n int) bool { return n < 2 }); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := []string{".podrun", "1.logx", "10.log", "10.log.20260101-000000", "2.log", "x.log"}
	if !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if err := RemoveAttempts(filepath.Join(dir, "gone"), func(int) bool { return true }); err != nil {
		t.Errorf("a directory that is not there: %v", err)
	}
}
