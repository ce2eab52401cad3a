package logs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// sameLog reports whether the log file at path (plain or gzip'd since) is
// the one f holds: the same inode, or the same first record (its time to
// the nanosecond makes it the file's identity; compression changes the
// inode, not the content).
func sameLog(path string, f *os.File) bool {
	if isFile(path, f) {
		return true
	}
	buf := make([]byte, fingerprintSize)
	n, _ := f.ReadAt(buf, 0)
	if n == 0 {
		return false
	}
	return fingerprint(buf[:n]) == fingerprintOf(path)
}

// fingerprintSize is how much of a log's start identifies it.
const fingerprintSize = 512

// fingerprint is a log's first record (at most fingerprintSize bytes).
func fingerprint(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// fingerprintOf is the fingerprint of the rotated log file at path ("" if
// none).
func fingerprintOf(path string) string {
	rc, err := openRotated(path)
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, fingerprintSize)
	n, _ := io.ReadFull(rc, buf)
	if n == 0 {
		return ""
	}
	return fingerprint(buf[:n])
}

// isFile reports whether path is the file f holds.
func isFile(path string, f *os.File) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// rotatedAway reports whether the file at path is no longer the one f
// holds (the writer renamed it and started a new one).
func rotatedAway(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && !os.SameFile(a, b)
}

// errUnreadable is a rotated file that is not the gzip it is named.
var errUnreadable = errors.New("not a gzip file")

// openRotated opens a rotated log file for reading, gunzipping a .gz; a
// plain one compressed meanwhile is opened as its .gz (complete before the
// plain one goes).
func openRotated(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !strings.HasSuffix(path, ".gz") {
		path += ".gz"
		f, err = os.Open(path)
	}
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return f, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %w", path, errUnreadable, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// Latest returns the highest restart number with a log file in dir (or an
// error wrapping os.ErrNotExist when there is none).
func Latest(dir string) (int, error) {
	ns, err := restarts(dir)
	if err != nil {
		return 0, err
	}
	if len(ns) == 0 {
		return 0, fmt.Errorf("no log file in %s: %w", dir, os.ErrNotExist)
	}
	return ns[len(ns)-1], nil
}

func logFile(dir string, restart int) string {
	return filepath.Join(dir, strconv.Itoa(restart)+".log")
}

// restarts returns the restart numbers of the <n>.log files in dir, ascending.
func restarts(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ns []int
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if n, ok := restartOf(e.Name()); ok {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns) // ReadDir's order is by name: 10 before 2
	return ns, nil
}

// restartOf parses "<n>.log" with n all decimal digits.
func restartOf(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// nextRestart is the lowest restart number above cur with a file in dir.
func nextRestart(dir string, cur int) (int, bool) {
	ns, err := restarts(dir)
	if err != nil {
		return 0, false
	}
	for _, n := range ns {
		if n > cur {
			return n, true
		}
	}
	return 0, false
}
