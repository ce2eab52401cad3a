package logs

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// compress gzips path to path.gz.tmp and returns that name; the
// compressor (File.compressLater) gives it the .gz name and removes path,
// under the File's lock, unless path was removed meanwhile (over MaxFiles:
// removeOver, in the write path), so no .gz outlives its file.
func compress(path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if err = errors.Join(err, zw.Close(), out.Close()); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// Rotated returns the rotated files of the log at path (path.<n>.<time>,
// or path.<time>[.<n>] as podrun named them before, or their .gz), oldest
// first (rotationKey), each once: a file caught while it is compressed (its
// .gz complete, the plain one not yet removed) is listed as its .gz. A
// directory listing is no snapshot: a file renamed to its .gz while the
// directory is read can be missed under both names, so the directory is
// read three times and the listings joined, and read again while the
// numbers have a gap (up to maxListings: a number can be skipped, see
// nextName).
func Rotated(path string) []string {
	byKey := map[string]string{}
	for i := 0; i < 3 || (i < maxListings && hasGap(byKey)); i++ {
		matches, _ := filepath.Glob(path + ".*")
		for _, m := range matches {
			if strings.HasSuffix(m, ".tmp") {
				continue
			}
			if k := rotationKey(m); byKey[k] == "" || strings.HasSuffix(m, ".gz") {
				byKey[k] = m
			}
		}
	}
	out := make([]string, 0, len(byKey))
	for _, m := range byKey {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return rotationKey(out[i]) < rotationKey(out[j]) })
	return out
}

// maxListings bounds the listings of Rotated.
const maxListings = 20

// hasGap reports whether the numbered files among the rotated ones (by
// key, Rotated) miss a number between the lowest and the highest: the
// rotations number them one after another, and remove the oldest first.
func hasGap(byKey map[string]string) bool {
	lo, hi, n := -1, -1, 0
	for _, p := range byKey {
		if k, ok := rotationNumber(p); ok {
			if lo < 0 || k < lo {
				lo = k
			}
			hi = max(hi, k)
			n++
		}
	}
	return n > 0 && hi-lo+1 != n
}

// rotationKey orders rotated files, and names one whether compressed or
// not: by number (path.<n>.<time>), never by time, which can step back;
// the files podrun named by time alone before (path.<time>[.<n>], n for
// several in one second) before them, by time then n, and anything else
// before those.
func rotationKey(p string) string {
	base := filepath.Base(strings.TrimSuffix(p, ".gz"))
	parts := strings.Split(base, ".")
	last, prev := parts[len(parts)-1], ""
	if len(parts) > 1 {
		prev = parts[len(parts)-2]
	}
	switch {
	case isStamp(last) && isNumber(prev):
		n, _ := strconv.ParseUint(prev, 10, 64)
		return fmt.Sprintf("2 %020d", n)
	case isStamp(last):
		return "1 " + last + "." + strings.Repeat("0", 20)
	case isNumber(last) && isStamp(prev):
		n, _ := strconv.ParseUint(last, 10, 64)
		return fmt.Sprintf("1 %s.%020d", prev, n)
	}
	return "0 " + base
}

// rotationNumber is the number of a rotated file named path.<n>.<time>.
func rotationNumber(p string) (int, bool) {
	k, ok := strings.CutPrefix(rotationKey(p), "2 ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(k)
	return n, err == nil
}

// isStamp reports whether s is a rotation's time, yyyymmdd-hhmmss.
func isStamp(s string) bool {
	return len(s) == len(rotatedTimeFormat) && s[8] == '-' && isNumber(s[:8]) && isNumber(s[9:])
}

// isNumber reports whether s is 1 to 19 decimal digits.
func isNumber(s string) bool {
	return s != "" && len(s) <= 19 && strings.Trim(s, "0123456789") == ""
}
