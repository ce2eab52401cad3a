package untrusted

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readFile opens name (Open) and reads it (ReadAll).
func readFile(dir *os.File, name string, limit int64) ([]byte, error) {
	f, err := Open(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, limit)
}

// TestOpenRegularFilesOnly: a regular file opens (relative to a directory
// descriptor, or by path); a symlink, FIFO, socket, directory or device
// node is refused, saying what it is, without blocking.
func TestOpenRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if data, err := readFile(d, "file", 5); err != nil || string(data) != "hello" {
		t.Errorf("readFile(file) = %q, %v", data, err)
	}
	if data, err := readFile(nil, filepath.Join(dir, "file"), 5); err != nil || string(data) != "hello" {
		t.Errorf("readFile(path) = %q, %v", data, err)
	}
	for name, want := range map[string]string{"link": "a symbolic link", "fifo": "a FIFO", "sock": "a socket", "sub": "a directory"} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(d, name)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
				t.Errorf("Open(%s): %v, want ErrNotRegular saying %q", name, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocks", name)
		}
	}
	if _, err := Open(nil, "/dev/null"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("Open(/dev/null): %v, want ErrNotRegular", err)
	}
	if _, err := Open(d, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing): %v, want ErrNotExist", err)
	}
}

// TestReadAllBounded: a file over the bound is ErrTooLarge, never cut.
func TestReadAllBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4097), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := readFile(nil, filepath.Join(dir, "big"), 4096); !errors.Is(err, ErrTooLarge) || data != nil {
		t.Errorf("readFile over the bound: %d bytes, %v; want ErrTooLarge", len(data), err)
	}
	if data, err := readFile(nil, filepath.Join(dir, "big"), 4097); err != nil || len(data) != 4097 {
		t.Errorf("readFile at the bound: %d bytes, %v", len(data), err)
	}
}

// TestReopenChecksTheHandle: Reopen reads the inode the O_PATH handle
// holds even after its name is taken by a FIFO.
func TestReopenChecksTheHandle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := os.OpenFile(path, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Reopen(h)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if data, err := ReadAll(f, 100); err != nil || string(data) != "first" {
		t.Errorf("read %q, %v; want the file the handle holds", data, err)
	}
}
