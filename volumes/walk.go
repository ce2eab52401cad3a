package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maxOpenDirs bounds the directory descriptors walk holds at once, however
// deep the tree: the root's and those of the deepest levels. A level whose
// descriptor was closed is reopened through ".." of its child's when the
// walk comes back to it, and checked to be the same directory.
const maxOpenDirs = 32

// maxWalkDepth bounds the memory of walk's stack (a name and the names
// left to visit per level), not the descriptors: a tree nested deeper is an
// error, never a part left out (eviction counts it as over the limit).
const maxWalkDepth = 1 << 16

var (
	// errTooDeep is returned by walk for a tree nested deeper than maxWalkDepth.
	errTooDeep = fmt.Errorf("directory tree nested deeper than %d levels", maxWalkDepth)
	// errMoved is returned by walk when a directory it reopens through its
	// child's ".." is no longer the one it left: the tree was moved meanwhile.
	errMoved = errors.New("directory moved while it was walked")
)

// entry is what walk hands its visitor: a descriptor on the very inode
// visited (O_PATH for anything but a directory, which is open for reading)
// and that inode's fstat. Acting through fd, never through a path, is what
// keeps a container that swaps a file for a symlink from redirecting the
// action: the descriptor was opened with O_NOFOLLOW relative to its
// parent's descriptor, so it is the entry itself and never lies outside the
// tree. An entry is valid only during the visit.
type entry struct {
	fd   int
	stat unix.Stat_t
	w    *walker
	name string // in its parent ("" for the root)
}

func (e *entry) isDir() bool     { return e.stat.Mode&unix.S_IFMT == unix.S_IFDIR }
func (e *entry) isSymlink() bool { return e.stat.Mode&unix.S_IFMT == unix.S_IFLNK }

// path is the entry's path, for messages only.
func (e *entry) path() string { return e.w.path(len(e.w.stack), e.name) }

// frame is a directory being walked.
type frame struct {
	fd       int // -1 while closed to bound the descriptors
	dev, ino uint64
	name     string   // in its parent ("" for the root)
	names    []string // entries left to visit
}

// walker is walk's state: the stack of directories from the root down to
// the one being walked; the root's and stack[open:] hold descriptors.
type walker struct {
	root  string
	stack []*frame
	open  int
	visit func(e *entry) error
}

// walk visits dir and everything below it, parents before children,
// without ever following a symlink: each entry is opened relative to its
// parent directory's descriptor with O_NOFOLLOW (the kubelet's fix for
// CVE-2017-1002101 works the same way). visit returning fs.SkipDir for a
// directory skips its contents. Entries that vanish meanwhile are skipped:
// a container may be writing the tree. It holds at most maxOpenDirs
// directory descriptors, so depth is no limit up to maxWalkDepth.
func walk(dir string, visit func(e *entry) error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	w := &walker{root: dir, open: 1, visit: visit}
	defer w.closeAll()
	if err := w.enter(fd, ""); err != nil {
		return err
	}
	for len(w.stack) > 0 {
		top := w.stack[len(w.stack)-1]
		if len(top.names) == 0 {
			if err := w.leave(); err != nil {
				return err
			}
			continue
		}
		name := top.names[0]
		top.names = top.names[1:]
		if err := w.child(top, name); err != nil {
			return err
		}
	}
	return nil
}

// enter visits the directory open at fd (name in the top directory, "" for
// the root) and, unless the visit skips it, pushes it to be walked. It
// takes fd over.
func (w *walker) enter(fd int, name string) error {
	e := &entry{fd: fd, w: w, name: name}
	err := unix.Fstat(fd, &e.stat)
	if err != nil {
		err = &fs.PathError{Op: "fstat", Path: e.path(), Err: err}
	} else if err = w.visit(e); errors.Is(err, fs.SkipDir) {
		unix.Close(fd)
		return nil
	}
	var names []string
	if err == nil && len(w.stack) >= maxWalkDepth {
		err = &fs.PathError{Op: "walk", Path: e.path(), Err: errTooDeep}
	}
	if err == nil {
		if names, err = readNames(fd); err != nil {
			err = &fs.PathError{Op: "readdir", Path: e.path(), Err: err}
		}
	}
	if err != nil {
		unix.Close(fd)
		return err
	}
	w.stack = append(w.stack, &frame{fd: fd, dev: uint64(e.stat.Dev), ino: e.stat.Ino, name: name, names: names})
	for len(w.stack)-w.open+1 > maxOpenDirs { // the root's, and stack[open:]
		f := w.stack[w.open]
		unix.Close(f.fd)
		f.fd = -1
		w.open++
	}
	return nil
}

// child opens name in directory parent without following it and visits
// it (and, for a directory, enters it).
func (w *walker) child(parent *frame, name string) error {
	fd, err := unix.Openat(parent.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: w.path(len(w.stack), name), Err: err}
	}
	e := &entry{fd: fd, w: w, name: name}
	if err := unix.Fstat(fd, &e.stat); err != nil {
		unix.Close(fd)
		return &fs.PathError{Op: "fstat", Path: e.path(), Err: err}
	}
	if !e.isDir() {
		err := w.visit(e)
		unix.Close(fd)
		return err
	}
	// Re-open the directory we hold (not its name) for reading.
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return &fs.PathError{Op: "open", Path: e.path(), Err: err}
	}
	return w.enter(dfd, name)
}

// leave pops the top directory. Its parent's descriptor, if closed, is
// reopened first as ".." of the top's, and must be the very directory the
// walk left (the same device and inode): a container may move directories.
func (w *walker) leave() error {
	n := len(w.stack)
	top := w.stack[n-1]
	if n >= 2 && w.stack[n-2].fd < 0 {
		parent := w.stack[n-2]
		fd, err := unix.Openat(top.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: w.path(n-2, parent.name), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != parent.dev || st.Ino != parent.ino {
			unix.Close(fd)
			return &fs.PathError{Op: "walk", Path: w.path(n-2, parent.name), Err: errors.Join(errMoved, err)}
		}
		parent.fd = fd
		w.open = n - 2
	}
	unix.Close(top.fd)
	w.stack = w.stack[:n-1]
	return nil
}

// closeAll closes the descriptors the walk still holds.
func (w *walker) closeAll() {
	for _, f := range w.stack {
		if f.fd >= 0 {
			unix.Close(f.fd)
		}
	}
}

// path is the path of name in the directory stack[depth-1] (the root when
// depth is 0 and name is ""), for messages.
func (w *walker) path(depth int, name string) string {
	var b strings.Builder
	b.WriteString(w.root)
	for _, f := range w.stack[min(1, depth):depth] {
		b.WriteString("/" + f.name)
	}
	if name != "" {
		b.WriteString("/" + name)
	}
	return b.String()
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
