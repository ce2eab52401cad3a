package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// File is a log file rotated inline by its only writer: a record that
// would take the file over MaxSize goes, whole, to a new file, so the cap
// holds at every moment and no record is split or lost (the kubelet
// rotates from outside every 10 s, and a fast writer overruns it). The
// rotated files over MaxFiles are removed at once; every rotated file but
// the newest is compressed apart from the write path (as the kubelet's log
// manager does), so a container's output never waits for gzip.
type File struct {
	path string
	rot  Rotation
	f    *os.File
	size int64
	now  func() time.Time
	// last and seq name rotations in the same second: .<time>, .<time>.1,
	// .<time>.2 ..., always after the ones before, even those removed.
	last string
	seq  int
	// rotated are the rotated files, oldest first, by their plain names
	// (a compressed one is the name and ".gz").
	rotated []string

	// The compressor: one goroutine at a time, started when there is
	// something to compress.
	mu      sync.Mutex
	queue   []string      // rotated files to compress
	running chan struct{} // closed when the running compressor ends; nil: none
}

func openRotating(path string, rot Rotation, now func() time.Time) (*File, error) {
	r := &File{path: path, rot: rot, now: now}
	if err := r.open(); err != nil {
		return nil, err
	}
	// The rotated files an earlier writer left: compressions it was killed
	// in go (their temporary files), those it had not compressed are.
	stale, _ := filepath.Glob(path + ".*.gz.tmp")
	for _, p := range stale {
		_ = os.Remove(p)
	}
	old := Rotated(path)
	for i, p := range old {
		plain := strings.TrimSuffix(p, ".gz")
		r.rotated = append(r.rotated, plain)
		if i < len(old)-1 && plain == p {
			r.queue = append(r.queue, p)
		}
	}
	r.compressLater()
	return r, nil
}

func (r *File) open() error {
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
// rotation that fails (a full disk) never stops the container's output:
// the record goes to the current file and rotation is tried again at the
// next record.
func (r *File) Write(p []byte) (int, error) {
	if r.rot.MaxSize > 0 && r.size > 0 && r.size+int64(len(p)) > r.rot.MaxSize {
		if err := r.rotate(); err != nil {
			fmt.Fprintf(os.Stderr, "podrun: rotating %s: %v\n", r.path, err) // the keeper's log
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// Close closes the file, after the compression under way.
func (r *File) Close() error {
	r.mu.Lock()
	done := r.running
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	return r.f.Close()
}

// rotate renames the file to its timestamped name, starts a new one,
// removes the rotated files over MaxFiles and has the one before the new
// one compressed.
func (r *File) rotate() error {
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
	r.rotated = append(r.rotated, name)
	var errs []error
	over := max(len(r.rotated)-max(r.rot.MaxFiles-1, 1), 0)
	for _, p := range r.rotated[:over] {
		for _, f := range []string{p, p + ".gz"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	r.rotated = slices.Delete(r.rotated, 0, over)
	if n := len(r.rotated); n > 1 {
		r.mu.Lock()
		r.queue = append(r.queue, r.rotated[n-2])
		r.mu.Unlock()
		r.compressLater()
	}
	return errors.Join(errs...)
}

// compressLater starts the compressor when there is something to compress
// and none runs. A file removed meanwhile is skipped (compress).
func (r *File) compressLater() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != nil || len(r.queue) == 0 {
		return
	}
	done := make(chan struct{})
	r.running = done
	go func() {
		defer close(done)
		for {
			r.mu.Lock()
			if len(r.queue) == 0 {
				r.running = nil
				r.mu.Unlock()
				return
			}
			p := r.queue[0]
			r.queue = r.queue[1:]
			r.mu.Unlock()
			if err := compressFile(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "podrun: compressing %s: %v\n", p, err)
			}
		}
	}()
}

// compressFile is compress; tests hold it up.
var compressFile = compress

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
