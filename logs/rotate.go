package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// rotatedTimeFormat is the time in a rotated file's name, as the
// kubelet writes it.
const rotatedTimeFormat = "20060102-150405"

// nextSuffix names the file a rotation makes before it takes the log's
// name (never listed as a rotated file: Rotated skips .tmp).
const nextSuffix = ".next.tmp"

// File is a log file rotated inline by its only writer: a record that
// would take the file over MaxSize goes, whole, to a new file, so the cap
// holds and no record is split or lost (the kubelet rotates from outside
// every 10 s, and a fast writer overruns it). The rotated files over
// MaxFiles are removed at once; every rotated file but the newest is
// compressed apart from the write path (as the kubelet's log manager
// does), so a container's output never waits for gzip.
//
// A rotated file is named <log>.<n>.<yyyymmdd-hhmmss>: n, one more than
// the highest one there, orders the files whatever the clock did (a device
// without an RTC steps back); the time is for people. The new file is made
// before the log is renamed: a rotation that cannot make it (no inode, no
// file descriptor) leaves the log as it was, under its name, and is tried
// again at the next record.
type File struct {
	path string
	rot  Rotation
	f    *os.File
	size int64
	now  func() time.Time
	// at is where f is: path, unless a rotation could neither finish nor
	// be undone (its file is then given back its name first).
	at string
	// next is the number of the next rotated file.
	next int
	// rotated are the rotated files, oldest first, by their plain names
	// (a compressed one is the name and ".gz").
	rotated []string
	// failed counts the rotations failed in a row: the first is reported,
	// the others only in the report of the one that succeeds.
	failed  int
	lastErr error

	mu sync.Mutex
	// reportTo hears what goes wrong apart from a write (SetReport).
	reportTo func(msg string)
	// The compressor: one goroutine at a time, started when there is
	// something to compress.
	queue   []string      // rotated files to compress
	running chan struct{} // closed when the running compressor ends; nil: none
}

// fsys is what rotating does to the file system (a test makes it fail).
type fsys interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Rename(from, to string) error
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) Rename(from, to string) error { return os.Rename(from, to) }

// fileSystem is the one Files use.
var fileSystem fsys = osFS{}

func openRotating(path string, rot Rotation, now func() time.Time) (*File, error) {
	r := &File{path: path, at: path, rot: rot, now: now, next: 1}
	f, err := fileSystem.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r.f, r.size = f, st.Size()
	// What an earlier writer left: compressions and a rotation it was
	// killed in go (their temporary files); those it had not compressed
	// are.
	stale, _ := filepath.Glob(path + ".*.gz.tmp")
	for _, p := range append(stale, path+nextSuffix) {
		_ = os.Remove(p)
	}
	old := Rotated(path)
	for i, p := range old {
		plain := strings.TrimSuffix(p, ".gz")
		r.rotated = append(r.rotated, plain)
		if n, ok := rotationNumber(plain); ok && n >= r.next {
			r.next = n + 1
		}
		if i < len(old)-1 && plain == p {
			r.queue = append(r.queue, p)
		}
	}
	r.compressLater()
	return r, nil
}

// Write writes one record (Writer writes each whole, under its lock). A
// rotation that fails never stops the container's output: the record goes
// to the current file, up to twice MaxSize, and rotation is tried again at
// the next record; past that, the record is refused (Writer drops and
// counts it), so a log that cannot rotate still has a cap.
func (r *File) Write(p []byte) (int, error) {
	if r.at != r.path {
		r.noteRotation(r.restore())
	}
	if r.rot.MaxSize > 0 && r.size > 0 && r.size+int64(len(p)) > r.rot.MaxSize {
		err := r.rotate()
		r.noteRotation(err)
		if err != nil && r.size+int64(len(p)) > 2*r.rot.MaxSize {
			return 0, fmt.Errorf("the log is at twice its size and cannot be rotated: %w", err)
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// noteRotation reports the first failed rotation of a streak, and the end
// of a streak: one line, not one per record, however long it lasts.
func (r *File) noteRotation(err error) {
	switch {
	case err != nil && r.failed == 0:
		r.report(fmt.Sprintf("rotating %s: %v (reported again once a rotation succeeds)", r.path, err))
	case err == nil && r.failed > 0:
		r.report(fmt.Sprintf("rotating %s again, after %d failed attempts (the last: %v)", r.path, r.failed, r.lastErr))
	}
	if err != nil {
		r.failed, r.lastErr = r.failed+1, err
	} else {
		r.failed, r.lastErr = 0, nil
	}
}

// SetReport has what goes wrong apart from a write (a rotation, a
// compression, a removal) reported to report rather than to stderr.
func (r *File) SetReport(report func(msg string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reportTo = report
}

func (r *File) report(msg string) {
	r.mu.Lock()
	report := r.reportTo
	r.mu.Unlock()
	if report != nil {
		report(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "podrun: %s\n", msg)
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

// rotate makes the next file, renames the log to its rotated name, gives
// the next file the log's name, removes the rotated files over MaxFiles and
// has the one before the new one compressed. Whatever fails, the file
// written stays the log (renamed back when it was renamed), whole.
func (r *File) rotate() error {
	if err := r.restore(); err != nil {
		return err
	}
	fs := fileSystem
	name := r.nextName()
	tmp := r.path + nextSuffix
	nf, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("making the next file: %w", err)
	}
	undo := func() {
		nf.Close()
		_ = os.Remove(tmp)
	}
	if err := fs.Rename(r.path, name); err != nil {
		undo()
		return err
	}
	if err := fs.Rename(tmp, r.path); err != nil {
		if berr := fs.Rename(name, r.path); berr != nil {
			r.at = name // still written; renamed back at the next rotation
		}
		undo()
		return err
	}
	r.f.Close()
	r.f, r.size = nf, 0
	r.rotated = append(r.rotated, name)
	r.next++
	r.removeOver()
	if n := len(r.rotated); n > 1 {
		r.mu.Lock()
		r.queue = append(r.queue, r.rotated[n-2])
		r.mu.Unlock()
		r.compressLater()
	}
	return nil
}

// restore gives the file written its name back after a rotation that
// could not be undone.
func (r *File) restore() error {
	if r.at == r.path {
		return nil
	}
	if err := fileSystem.Rename(r.at, r.path); err != nil {
		return fmt.Errorf("renaming %s back: %w", filepath.Base(r.at), err)
	}
	r.at = r.path
	return nil
}

// nextName is the name of the next rotated file: the next number, and
// any number taken already (a file nobody listed) skipped.
func (r *File) nextName() string {
	for {
		name := fmt.Sprintf("%s.%0*d.%s", r.path, numberWidth, r.next, r.now().UTC().Format(rotatedTimeFormat))
		if !exists(name) && !exists(name+".gz") {
			return name
		}
		r.next++
	}
}

// numberWidth pads the numbers of rotated files, so that their names
// sort in order too (ls).
const numberWidth = 8

// removeOver removes the oldest rotated files over MaxFiles; one that
// cannot be removed is kept in the list, tried again at the next rotation.
// A file being compressed is removed too, under the lock the compressor
// commits under (commit): no .gz of a removed file appears after it, so the
// cap holds at every moment.
func (r *File) removeOver() {
	over := max(len(r.rotated)-max(r.rot.MaxFiles-1, 1), 0)
	var kept []string
	var failed []error
	r.mu.Lock()
	for _, p := range r.rotated[:over] {
		for _, f := range []string{p, p + ".gz"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				failed = append(failed, err)
				kept = append(kept, p)
				break
			}
		}
	}
	r.mu.Unlock()
	for _, err := range failed {
		r.report(fmt.Sprintf("removing an old log: %v", err))
	}
	r.rotated = append(kept, r.rotated[over:]...)
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
			tmp, err := compressFile(p)
			if err == nil {
				err = r.commit(p, tmp)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				r.report(fmt.Sprintf("compressing %s: %v", p, err))
			}
		}
	}()
}

// commit gives a compressed file its .gz name and removes the plain one,
// or drops it when removeOver removed the plain one meanwhile.
func (r *File) commit(p, tmp string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !exists(p) {
		os.Remove(tmp)
		return nil
	}
	if err := os.Rename(tmp, p+".gz"); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Remove(p)
}

// compressFile is compress; tests hold it up.
var compressFile = compress

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
