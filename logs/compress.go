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

// compress gzips path to path.gz (through a temporary file) and removes it.
// A file removed meanwhile (over MaxFiles: removeOld, in the write path)
// leaves no .gz behind.
func compress(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err == nil && !exists(path) {
		err = os.ErrNotExist
	}
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !exists(path) {
		return os.Remove(path + ".gz")
	}
	return os.Remove(path)
}

// Rotated returns the rotated files of the log at path (path.<time>,
// path.<time>.<n>, or their .gz), oldest first, each once: a file caught
// while it is compressed (its .gz complete, the plain one not yet removed)
// is listed as its .gz. A directory listing is no snapshot: a file renamed
// to its .gz while the directory is read can be missed under both names,
// so the directory is read three times and the listings joined.
func Rotated(path string) []string {
	byKey := map[string]string{}
	for range 3 {
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

// rotationKey orders rotated files: by time, then by the counter of
// several rotations in one second (a file with none first).
func rotationKey(p string) string {
	p = strings.TrimSuffix(p, ".gz")
	ext := filepath.Ext(p) // ".<n>" after the time, or the time itself
	if n, err := strconv.Atoi(ext[1:]); err == nil && len(ext) < 8 {
		return fmt.Sprintf("%s.%08d", strings.TrimSuffix(p, ext), n)
	}
	return p + ".00000000"
}
