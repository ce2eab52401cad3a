package kept

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/untrusted"
)

// dirs are the kept state's two directories: pods/ (one file per pod) and
// aside/ (the files refused). Each operation opens its directory anew
// through untrusted.OpenDir (it and every directory above it root's, and
// nobody else may write them) and works relative to that descriptor,
// never by path again.
type dirs struct {
	pods, aside string
	// rename is unix.Renameat; a test's crash between write and rename.
	rename func(fromDir int, from string, toDir int, to string) error
}

// tempPrefix starts the name of a file being written: one left over is a
// write a crash cut short before its rename, never the kept state.
const tempPrefix = ".tmp-"

func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// untrustedError is a kept file that someone else than root could have
// written (or swapped), or that is not a regular file.
type untrustedError struct{ err error }

func (e *untrustedError) Error() string { return e.err.Error() }

// makeDirs makes dir, dir/pods and dir/aside (root's alone) where missing,
// each synced into its parent, and checks that they are trusted.
func makeDirs(dir string) (*dirs, error) {
	d := &dirs{pods: filepath.Join(dir, "pods"), aside: filepath.Join(dir, "aside"), rename: unix.Renameat}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	for _, path := range []string{dir, d.pods, d.aside} {
		if err := mkdir(path); err != nil {
			return nil, err
		}
		f, err := open(path)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return d, nil
}

// mkdir makes the directory path, mode 0700, when missing, and syncs its
// parent so that it survives a power cut.
func mkdir(path string) error {
	err := os.Mkdir(path, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// open opens the directory path once it is trusted (untrusted.OpenDir),
// and makes it 0700 if it was readable by others: it holds Secrets.
func open(path string) (*os.File, error) {
	d, err := untrusted.OpenDir(path)
	if err != nil {
		return nil, err
	}
	if err := private(d, 0o700); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// private takes the group's and others' bits off the open file f (a
// trusted one: nobody else may write it already), leaving mode.
func private(f *os.File, mode uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if st.Mode&0o077 == 0 {
		return nil
	}
	if err := unix.Fchmod(int(f.Fd()), mode); err != nil {
		return &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return nil
}

func (d *dirs) path(name string) string { return filepath.Join(d.pods, name) }

// write replaces pods/name with data, atomically and durably: a new
// temporary file (0600) in the same directory written and synced, renamed
// over name, the directory synced. A failure removes the temporary file;
// a crash may leave it, which list's caller removes (isTemp).
func (d *dirs) write(name string, data []byte) error {
	dir, err := open(d.pods)
	if err != nil {
		return err
	}
	defer dir.Close()
	var random [8]byte
	_, _ = rand.Read(random[:]) // never fails (crypto/rand)
	tmp := tempPrefix + name + "." + hex.EncodeToString(random[:])
	fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: d.path(tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path(tmp))
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = d.rename(int(dir.Fd()), tmp, int(dir.Fd()), name); err != nil {
			err = &os.LinkError{Op: "rename", Old: d.path(tmp), New: d.path(name), Err: err}
		}
	}
	if err != nil {
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return err
	}
	return dir.Sync()
}

// remove removes pods/name; none is success.
func (d *dirs) remove(name string) error {
	dir, err := open(d.pods)
	if err != nil {
		return err
	}
	defer dir.Close()
	err = unix.Unlinkat(int(dir.Fd()), name, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: d.path(name), Err: err}
	}
	return dir.Sync()
}

// list is the names in pods/, sorted, at most max of them (more says
// there were others).
func (d *dirs) list(max int) (names []string, more bool, err error) {
	dir, err := open(d.pods)
	if err != nil {
		return nil, false, err
	}
	defer dir.Close()
	names, err = dir.Readdirnames(max + 1)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: empty
		return nil, false, &os.PathError{Op: "readdir", Path: d.pods, Err: err}
	}
	if len(names) > max {
		names, more = names[:max], true
	}
	slices.Sort(names)
	return names, more, nil
}

// read reads pods/name, a regular file that nobody else than root may
// write (an untrustedError otherwise), at most limit bytes; it is made
// 0600 if others could read it.
func (d *dirs) read(name string, limit int64) ([]byte, error) {
	dir, err := open(d.pods)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	f, err := untrusted.OpenTrusted(dir, name)
	if err != nil {
		return nil, &untrustedError{err}
	}
	defer f.Close()
	if err := private(f, 0o600); err != nil {
		return nil, err
	}
	return untrusted.ReadAll(f, limit)
}

// setAside moves pods/name to aside/ as to (to.1, to.2, ... if taken), and
// is its path there.
func (d *dirs) setAside(name, to string) (string, error) {
	from, err := open(d.pods)
	if err != nil {
		return "", err
	}
	defer from.Close()
	aside, err := open(d.aside)
	if err != nil {
		return "", err
	}
	defer aside.Close()
	free := ""
	for i := 0; i < 100 && free == ""; i++ {
		cand := to
		if i > 0 {
			cand = fmt.Sprintf("%s.%d", to, i)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(int(aside.Fd()), cand, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			free = cand
		}
	}
	if free == "" {
		return "", fmt.Errorf("%s is taken in %s", to, d.aside)
	}
	if err := unix.Renameat(int(from.Fd()), name, int(aside.Fd()), free); err != nil {
		return "", &os.LinkError{Op: "rename", Old: d.path(name), New: filepath.Join(d.aside, free), Err: err}
	}
	if err := aside.Sync(); err != nil {
		return "", err
	}
	return filepath.Join(d.aside, free), from.Sync()
}
