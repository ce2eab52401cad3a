package untrusted

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// podrun acts as root on what some directories hold (the daemon's
// manifests and image archives, the node's kept state): anyone who can
// change a file there, or swap one of the directories on the way to it,
// runs anything on the node. These checks are sshd's StrictModes, done on
// descriptors so that what is checked is what is read.

// OpenDir opens the directory at path for reading once every directory
// from / down to it is trusted. Each is opened (O_PATH|O_NOFOLLOW)
// relative to the one above it and checked through that very descriptor:
// not a symlink, owned by root (or the daemon's user), and not writable by
// its group or by others — except an ancestor with the sticky bit (as
// /tmp), in which only an entry's owner (or root) can rename or remove it,
// the entry being checked next. sshd refuses that too; podrun trusts it, as
// a root-owned directory made in /tmp cannot be swapped by anyone else.
// Files are then opened relative to the descriptor returned (OpenTrusted),
// never by path again.
func OpenDir(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	at := "/"
	for _, name := range strings.Split(strings.TrimPrefix(abs, "/"), "/") {
		if name == "" {
			continue // abs is /
		}
		if err := checkDir(fd, at, true); err != nil {
			unix.Close(fd)
			return nil, err
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		at = filepath.Join(at, name)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
		fd = next
	}
	defer unix.Close(fd)
	if err := checkDir(fd, at, false); err != nil {
		return nil, err
	}
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: at, Err: err}
	}
	return os.NewFile(uintptr(dfd), abs), nil
}

// checkDir checks the directory open at fd (path for messages): an
// ancestor may be group- or world-writable with the sticky bit.
func checkDir(fd int, path string, ancestor bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return CheckDirStat(&st, path, ancestor)
}

// CheckDirStat checks what st says of the directory at path: a directory
// (not a symlink) of root's or the process's user's that nobody else may
// write; an ancestor may be group- or world-writable with the sticky bit.
func CheckDirStat(st *unix.Stat_t, path string, ancestor bool) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		return fmt.Errorf("%s is a symlink: give the directory's real path", path)
	default:
		return fmt.Errorf("%s is not a directory", path)
	}
	if err := owner(st.Uid); err != nil {
		return fmt.Errorf("%s is %w", path, err)
	}
	if st.Mode&0o022 != 0 && !(ancestor && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("%s is writable by its group or by others (mode %04o): chmod go-w", path, st.Mode&0o7777)
	}
	return nil
}

// owner refuses a uid other than root's and the daemon's own.
func owner(uid uint32) error {
	if uid != 0 && int(uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, neither root nor the daemon's user", uid)
	}
	return nil
}

// OpenTrusted opens the file name of the trusted directory dir (OpenDir)
// for reading as a container's file is opened (Open: never
// through a symlink, a FIFO or device swapped in never opened, only a
// regular file), and only when root or the daemon's user owns it and
// nobody else can write it (trusted).
func OpenTrusted(dir *os.File, name string) (*os.File, error) {
	f, err := Open(dir, name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the caller names the file
		}
		return nil, err
	}
	if err := trusted(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// trusted refuses a file (checked through its open descriptor) that
// another user than root or the daemon's own owns, or that its group or
// others may write: anyone who can write a manifest runs anything as root.
func trusted(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if err := owner(st.Uid); err != nil {
		return err
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("writable by its group or by others (mode %04o): chmod go-w", st.Mode&0o777)
	}
	return nil
}
