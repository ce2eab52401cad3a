// Package untrusted opens the files podrun reads that someone else makes
// or may be changing while podrun reads them — a container's files in its
// volumes and pod directory, the daemon's manifests and image archives —
// without being led astray by them: never through a symbolic link, never
// opening a FIFO (which blocks), a device node (which a driver acts on) or
// a socket, and never reading more than a bound; and, where what is read
// is acted on as root, only once nobody but root could have written it
// or swapped a directory on the way to it (trust.go).
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// ErrTooLarge is a file larger than the bound it was read with.
var ErrTooLarge = errors.New("larger than the limit")

// ErrNotRegular is a file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file name for reading: relative to the directory
// dir when dir is not nil (else to the working directory), the last
// component never followed. It is first opened O_PATH, which opens nothing
// (a FIFO does not block, a device's driver is not called), and only once
// the fstat of that handle says it is a regular file is it reopened for
// reading (Reopen). Anything else is an error wrapping ErrNotRegular that
// says what it is.
func Open(dir *os.File, name string) (*os.File, error) {
	at := unix.AT_FDCWD
	if dir != nil {
		at = int(dir.Fd())
	}
	fd, err := unix.Openat(at, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	h := os.NewFile(uintptr(fd), name)
	defer h.Close()
	return Reopen(h)
}

// Reopen opens for reading (O_RDONLY|O_NOCTTY|O_NONBLOCK) the file that
// the O_PATH handle h holds, through its /proc/self/fd magic link (so the
// inode checked is the one opened, whatever its path has become), once
// the fstat of h says it is a regular file.
func Reopen(h *os.File) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: h.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "open", Path: h.Name(), Err: fmt.Errorf("%w: it is %s", ErrNotRegular, Kind(st.Mode))}
	}
	f, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadAll reads r to its end, at most limit bytes: more is an error
// wrapping ErrTooLarge (never content cut short).
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// Kind names the type of a file mode (st_mode) for a message: "a FIFO".
func Kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return fmt.Sprintf("of unknown type %o", mode&unix.S_IFMT)
}
