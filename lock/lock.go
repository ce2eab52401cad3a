// Package lock serializes podrun processes that share a state directory,
// with flock(2) on files under it: one owner of a pod at a time, one starter
// of the private containerd, one import or image collection at a time. The
// kernel releases a lock when its holder exits, however it exits, so a kill
// -9 never leaves a stale lock. A lock file holds the pid of its last
// holder (and what it locks), for the message of whoever waits.
//
// A lock file may be removed, by its holder only (Remove): a waiter that
// had opened the file before then finds, once it has the lock, that the
// path no longer names the file it locked, and opens the path again. So
// every holder holds the file the path names, and no two at once.
package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// poll is how often a waiter tries again (flock cannot be cancelled).
const poll = 20 * time.Millisecond

// File is a held lock.
type File struct {
	f    *os.File
	path string
}

// Acquire takes the exclusive lock on path (made 0600 if missing), waiting
// until ctx ends. While it waits, waiting is called once with the pid the
// file names, once it names one (a holder writes its pid just after it
// locks the file: a waiter that looks in between finds it empty).
func Acquire(ctx context.Context, path string, waiting func(holder int)) (*File, error) {
	return acquire(ctx, path, "", waiting)
}

// acquire is Acquire, writing what after the holder's pid.
func acquire(ctx context.Context, path, what string, waiting func(holder int)) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	told := false
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		if err := wait(ctx, f, path, &told, waiting); err != nil {
			f.Close()
			return nil, err
		}
		same, err := names(path, f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !same {
			f.Close() // its holder removed it meanwhile: lock what the path names now
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+what), 0)
		}
		return &File{f: f, path: path}, nil
	}
}

// wait takes the flock on f, waiting until ctx ends; waiting is told once
// (*told) who holds it, at the first try that finds the holder's pid in the
// file (not 0: the holder has the lock, it has not written its pid yet).
func wait(ctx context.Context, f *os.File, path string, told *bool, waiting func(holder int)) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("locking %s: %w", path, err)
		}
		if !*told && waiting != nil {
			if pid := holder(f); pid != 0 {
				*told = true
				waiting(pid)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the lock %s: %w", path, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// names reports whether path still names the file f has open.
func names(path string, f *os.File) (bool, error) {
	var held, now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		return false, err
	}
	if err := unix.Lstat(path, &now); errors.Is(err, unix.ENOENT) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return held.Dev == now.Dev && held.Ino == now.Ino, nil
}

// holder is the pid written in a lock file, or 0.
func holder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Release gives the lock up. The file stays.
func (l *File) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// Remove removes the lock file, then gives the lock up: whoever waits for
// it locks a new file.
func (l *File) Remove() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, l.Release())
}

// Pods are the per-pod locks, one file per namespace/name under Dir, named
// by a hash of the name (a pod's name may be 253 bytes, a file's 255): the
// file's second line is the pod's namespace/name.
type Pods struct{ Dir string }

// Lock takes the lock of pod key ("namespace/name"), waiting until ctx
// ends; waiting is told once which pid holds it. unlock(gone) gives it up,
// removing its file when gone (the pod is no longer on the node: otherwise
// the files of Jobs', CronJobs' and rollouts' pods would pile up).
func (p Pods) Lock(ctx context.Context, key string, waiting func(holder int)) (unlock func(gone bool), err error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" || strings.ContainsAny(key[len(ns)+1:], "/\n") || strings.Contains(ns, "\n") {
		return nil, fmt.Errorf("lock: bad pod key %q", key)
	}
	l, err := acquire(ctx, filepath.Join(p.Dir, podFile(key)), key+"\n", waiting)
	if err != nil {
		return nil, err
	}
	return func(gone bool) {
		if gone {
			_ = l.Remove()
			return
		}
		_ = l.Release()
	}, nil
}

// podFile is the name of pod key's lock file.
func podFile(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]) + ".lock"
}
