package logs

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Rotation is how a container's log is rotated: the kubelet's
// containerLogMaxSize and containerLogMaxFiles.
type Rotation struct {
	MaxSize  int64 // bytes; 0: never rotated
	MaxFiles int   // files kept, the one being written included (at least 2)
}

// DefaultRotation is the kubelet's: 10 MiB, 5 files.
var DefaultRotation = Rotation{MaxSize: 10 << 20, MaxFiles: 5}

// rotatedTimeFormat is the suffix of a rotated file, as the kubelet names
// them: 0.log.20261126-093000, compressed 0.log.20261126-093000.gz.
const rotatedTimeFormat = "20060102-150405"

// DriverArg is the one argument of `podrun cri-log` (the shim passes the
// log URI's query to the driver in map order, so everything travels in
// one value): the log path and the rotation.
func DriverArg(path string, r Rotation) string {
	return url.Values{"path": {path}, "max-size": {strconv.FormatInt(r.MaxSize, 10)}, "max-files": {strconv.Itoa(r.MaxFiles)}}.Encode()
}

// ParseDriverArg reads DriverArg's value; a bare path (a container started
// by an older podrun) is never rotated.
func ParseDriverArg(arg string) (string, Rotation, error) {
	if strings.HasPrefix(arg, "/") {
		return arg, Rotation{}, nil
	}
	q, err := url.ParseQuery(arg)
	if err != nil {
		return "", Rotation{}, err
	}
	var r Rotation
	if r.MaxSize, err = strconv.ParseInt(q.Get("max-size"), 10, 64); err != nil {
		return "", Rotation{}, fmt.Errorf("max-size: %w", err)
	}
	if r.MaxFiles, err = strconv.Atoi(q.Get("max-files")); err != nil {
		return "", Rotation{}, fmt.Errorf("max-files: %w", err)
	}
	if q.Get("path") == "" {
		return "", Rotation{}, errors.New("no path")
	}
	return q.Get("path"), r, nil
}

// rotatingFile is a log file rotated inline by its only writer: a record
// that would take the file over MaxSize goes, whole, to a new file, so the
// cap holds at every moment and no record is split or lost (the kubelet
// rotates from outside every 10 s, and a fast writer overruns it).
type rotatingFile struct {
	path string
	rot  Rotation
	f    *os.File
	size int64
	now  func() time.Time
	// last and seq name rotations in the same second: .<time>, .<time>.1,
	// .<time>.2 ..., always after the ones before, even those removed.
	last string
	seq  int
}

func openRotating(path string, rot Rotation, now func() time.Time) (*rotatingFile, error) {
	r := &rotatingFile{path: path, rot: rot, now: now}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write writes one record (Writer writes each whole, under its lock). A
// rotation that fails (a full disk while compressing) never stops the
// container's output: the record goes to the current file and rotation is
// tried again at the next record.
func (r *rotatingFile) Write(p []byte) (int, error) {
	if r.rot.MaxSize > 0 && r.size > 0 && r.size+int64(len(p)) > r.rot.MaxSize {
		if err := r.rotate(); err != nil {
			fmt.Fprintf(os.Stderr, "podrun cri-log: rotating %s: %v\n", r.path, err) // the shim's log
			if r.f == nil {
				return 0, err
			}
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) Close() error { return r.f.Close() }

// rotate renames the file to its timestamped name, starts a new one,
// compresses the older rotated files and removes those over MaxFiles.
func (r *rotatingFile) rotate() error {
	stamp := r.now().UTC().Format(rotatedTimeFormat)
	if stamp == r.last {
		r.seq++
	} else {
		r.last, r.seq = stamp, 0
	}
	name := r.path + "." + stamp
	if r.seq > 0 {
		name += "." + strconv.Itoa(r.seq)
	}
	if exists(name) || exists(name+".gz") { // a clock set back: never overwrite
		return fmt.Errorf("%s exists already", name)
	}
	if err := os.Rename(r.path, name); err != nil {
		return err // still writing to the same file
	}
	old := r.f
	if err := r.open(); err != nil {
		r.f = old // renamed, but written on: the records are not lost
		return err
	}
	old.Close()
	return r.prune()
}

// prune compresses the older rotated files and removes those over MaxFiles.
func (r *rotatingFile) prune() error {
	old := Rotated(r.path)
	keep := max(r.rot.MaxFiles-1, 1)
	var errs []error
	for i, p := range old {
		switch {
		case i < len(old)-keep:
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		case i < len(old)-1 && !strings.HasSuffix(p, ".gz"):
			// As the kubelet: every rotated file but the newest is compressed.
			if err := compress(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// compress gzips path to path.gz (through a temporary file) and removes it.
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
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return err
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
