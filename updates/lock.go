package updates

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/untrusted"
)

// LockFile is the update lock's file, in the directory a pod names for it
// (balena-supervisor's convention, updates.lock): a container holds the
// lock by holding flock(2) on it (`flock /lock/updates.lock CMD`, or
// flock(LOCK_EX) in its own code), shared or exclusive.
const LockFile = "updates.lock"

// LockHeld reports whether someone holds flock on LockFile in dir: the
// file is taken with a non-blocking exclusive flock and let go at once. A
// directory or file that is not there holds no lock. The directory is the
// pod's (a container writes in it): the file is opened inside it by
// descriptor, never through a symbolic link, never blocking on a FIFO nor
// opening a device (untrusted.Open); anything but a regular file is an
// error.
func LockHeld(dir string) (bool, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	f, err := untrusted.Open(d, LockFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("the update lock in %s: %w", dir, err)
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return false, unix.Flock(int(f.Fd()), unix.LOCK_UN) // and Close lets go anyway
}

// LockVolumeAnnotation, on a pod, names the emptyDir volume that holds its
// update lock (LockFile): the pod mounts it where it likes, and holds flock
// on updates.lock in it for as long as it must not be replaced.
const LockVolumeAnnotation = "podrun.io/update-lock-volume"
