package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/untrusted"
)

// The daemon acts on what its manifest and images directories hold as
// root: anyone who can change a file there, or swap one of the
// directories on the way to it, runs anything on the node. It opens them
// with untrusted's checks (trust.go there: sshd's StrictModes, done on
// descriptors so that what is checked is what is read).
var (
	openDir     = untrusted.OpenDir
	openTrusted = untrusted.OpenTrusted
)

// CheckStateDirs checks, at the daemon's start, the directories its state
// and its containerd's live in (--root, --run-dir and their io/ and
// containerd/): each must be a directory, not a symlink, of root's (or the
// daemon's user's), that nobody else may write. One missing is made later,
// root's alone.
func CheckStateDirs(dirs ...string) error {
	for _, dir := range dirs {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			return &os.PathError{Op: "lstat", Path: dir, Err: err}
		}
		if err := untrusted.CheckDirStat(&st, dir, false); err != nil {
			return err
		}
	}
	return nil
}
