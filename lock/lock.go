// Package lock serializes podrun processes that share a state directory,
// with flock(2) on files under it: one owner of a pod at a time, one starter
// of the private containerd. The kernel releases a lock when its holder
// exits, however it exits, so a kill -9 never leaves a stale lock. A lock
// file holds the pid of its last holder, for the message of whoever waits.
package lock

import (
	"context"
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
type File struct{ f *os.File }

// Acquire takes the exclusive lock on path (made 0600 if missing), waiting
// until ctx ends. While it waits, waiting is called once with the pid the
// file names (0 if none).
func Acquire(ctx context.Context, path string, waiting func(holder int)) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !told && waiting != nil {
			told = true
			waiting(holder(f))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", path, ctx.Err())
		case <-time.After(poll):
		}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &File{f: f}, nil
}

// holder is the pid written in a lock file, or 0.
func holder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid
}

// Release gives the lock up. The file stays (removing it would let a
// waiter lock a file no one else sees).
func (l *File) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// Pods are the per-pod locks, one file per namespace/name under Dir.
type Pods struct{ Dir string }

// Lock takes the lock of pod key ("namespace/name"), waiting until ctx
// ends; waiting is told once which pid holds it.
func (p Pods) Lock(ctx context.Context, key string, waiting func(holder int)) (unlock func(), err error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" || strings.ContainsAny(key[len(ns)+1:], "/") || strings.HasPrefix(ns, ".") || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("lock: bad pod key %q", key)
	}
	l, err := Acquire(ctx, filepath.Join(p.Dir, ns+"_"+name+".lock"), waiting)
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}
