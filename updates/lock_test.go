package updates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLockHeld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	check := func(what string, want bool, wantErr string) {
		t.Helper()
		held, err := LockHeld(dir)
		if held != want || (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: LockHeld = %v, %v; want %v, error %q", what, held, err, want, wantErr)
		}
	}
	check("no file", false, "")
	if held, err := LockHeld(filepath.Join(dir, "none")); held || err != nil {
		t.Errorf("no directory: LockHeld = %v, %v; want false, nil", held, err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("a file nobody locks", false, "")
	// The container's flock: another open file description of the file.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, how := range []int{unix.LOCK_SH, unix.LOCK_EX} {
		if err := unix.Flock(int(f.Fd()), how); err != nil {
			t.Fatal(err)
		}
		check("held", true, "")
		check("held, asked again", true, "")
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
		check("let go", false, "")
	}
	// The probe lets go at once: the container takes it right after.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("taking the lock after a probe: %v", err)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)

	// What a container may put there instead of a file is never followed
	// nor opened.
	os.Remove(path)
	if err := os.Symlink("/etc/passwd", path); err != nil {
		t.Fatal(err)
	}
	check("a symbolic link", false, "updates.lock")
	os.Remove(path)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	check("a FIFO (which would block)", false, "not a regular file")
	os.Remove(path)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	check("a directory", false, "not a regular file")
	// The directory itself a symbolic link: not followed.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LockHeld(link); err == nil {
		t.Error("LockHeld followed a symbolic link to the directory")
	}
}
