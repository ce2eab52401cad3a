package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// maxWalkDepth bounds how deep walk descends: every level holds a file
// descriptor, and a container can nest directories as deep as it likes.
const maxWalkDepth = 256

// errTooDeep is returned by walk for a tree nested deeper than maxWalkDepth.
var errTooDeep = fmt.Errorf("directory tree nested deeper than %d levels", maxWalkDepth)

// entry is what walk hands its visitor: a descriptor on the very inode
// visited (O_PATH for anything but a directory, which is open for reading)
// and that inode's fstat. Acting through fd, never through a path, is what
// keeps a container that swaps a file for a symlink from redirecting the
// action: the descriptor was opened with O_NOFOLLOW relative to its
// parent's descriptor, so it is the entry itself and never lies outside the
// tree.
type entry struct {
	fd   int
	stat unix.Stat_t
	path string // for error messages only
}

func (e *entry) isDir() bool     { return e.stat.Mode&unix.S_IFMT == unix.S_IFDIR }
func (e *entry) isSymlink() bool { return e.stat.Mode&unix.S_IFMT == unix.S_IFLNK }

// walk visits dir and everything below it, parents before children,
// without ever following a symlink: each entry is opened relative to its
// parent directory's descriptor with O_NOFOLLOW (the kubelet's fix for
// CVE-2017-1002101 works the same way). visit returning fs.SkipDir for a
// directory skips its contents. Entries that vanish meanwhile are skipped:
// a container may be writing the tree.
func walk(dir string, visit func(e *entry) error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	e := &entry{fd: fd, path: dir}
	if err := unix.Fstat(fd, &e.stat); err != nil {
		return &fs.PathError{Op: "fstat", Path: dir, Err: err}
	}
	return walkDir(e, visit, 0)
}

// walkDir visits directory e (open for reading) and its contents.
func walkDir(e *entry, visit func(e *entry) error, depth int) error {
	if err := visit(e); err != nil {
		if errors.Is(err, fs.SkipDir) {
			return nil
		}
		return err
	}
	if depth >= maxWalkDepth {
		return &fs.PathError{Op: "walk", Path: e.path, Err: errTooDeep}
	}
	names, err := readNames(e.fd)
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: e.path, Err: err}
	}
	for _, name := range names {
		if err := walkChild(e, name, visit, depth); err != nil {
			return err
		}
	}
	return nil
}

// walkChild opens name in directory parent without following it and
// visits it (and, for a directory, what it holds).
func walkChild(parent *entry, name string, visit func(e *entry) error, depth int) error {
	path := parent.path + "/" + name
	fd, err := unix.Openat(parent.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	e := &entry{fd: fd, path: path}
	if err := unix.Fstat(fd, &e.stat); err != nil {
		return &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if !e.isDir() {
		return visit(e)
	}
	// Re-open the directory we hold (not its name) for reading.
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(dfd)
	e.fd = dfd
	return walkDir(e, visit, depth+1)
}

// readNames lists a directory read from descriptor fd (left open).
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return f.Readdirnames(-1)
}

// procFD is the magic link to descriptor fd: operations on it act on the
// inode the descriptor holds, whatever its path has become.
func procFD(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }
