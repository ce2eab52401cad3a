package volumes

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// Permission bits the kubelet ORs into a volume's files when it gives them
// to the pod's fsGroup (pkg/volume/volume_linux.go).
const (
	fsGroupRW   = os.FileMode(0o660)
	fsGroupRO   = os.FileMode(0o440) // read-only volumes (configMap, secret, ...)
	fsGroupExec = os.FileMode(0o110) // directories only
)

// SetOwnership gives a volume's directory tree to the pod's fsGroup, as the
// kubelet does for the volume kinds that support ownership management
// (emptyDir, configMap, secret, downwardAPI, projected; never hostPath):
// every file and directory gets group fsGroup and group read-write (read
// only for a readOnly volume kind), and directories group execute and the
// setgid bit, so that files created in them later belong to fsGroup too.
// Symlinks are re-owned but not chmod'ed. Setup calls it once, when it
// creates the volume, before any container of the pod runs (as the
// kubelet's SetUp does); adoption never does.
// With fsGroupChangePolicy OnRootMismatch, a tree whose root already has
// the group and the permissions is left alone. Without fsGroup it does
// nothing.
func SetOwnership(dir string, pod *corev1.Pod, readOnly bool) error {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	mask := fsGroupRW
	if readOnly {
		mask = fsGroupRO
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p == corev1.FSGroupChangeOnRootMismatch && ownedBy(dir, gid, mask|fsGroupExec) {
		return nil
	}
	return setOwnership(dir, gid, mask)
}

// setOwnership gives every file and directory below dir to group gid with
// the permission bits mask (and, for directories, group execute and
// setgid), whatever fsGroupChangePolicy says: config volumes (config.go)
// call it on every write, as the kubelet's atomic writer does. It acts on
// each entry through a descriptor opened without following symlinks
// (walk.go): a symlink is re-owned itself, never its target, and an entry a
// container swaps for a symlink meanwhile is never followed out of the
// volume.
func setOwnership(dir string, gid int, mask os.FileMode) error {
	err := walk(dir, func(e *entry) error {
		if err := unix.Fchownat(e.fd, "", -1, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "chown", Path: e.path(), Err: err}
		}
		if e.isSymlink() {
			return nil
		}
		mode := e.stat.Mode&0o7777 | uint32(mask.Perm())
		if e.isDir() {
			mode |= uint32(fsGroupExec.Perm()) | unix.S_ISGID
			if err := unix.Fchmod(e.fd, mode); err != nil {
				return &fs.PathError{Op: "chmod", Path: e.path(), Err: err}
			}
			return nil
		}
		// e.fd is an O_PATH descriptor, which fchmod refuses; its magic
		// link reaches the same inode (and it is not a symlink).
		if err := unix.Chmod(procFD(e.fd), mode); err != nil {
			return &fs.PathError{Op: "chmod", Path: e.path(), Err: err}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("giving the volume to fsGroup %d: %w", gid, err)
	}
	return nil
}

// ownedBy reports whether dir already has group gid, the setgid bit and
// the permission bits want.
func ownedBy(dir string, gid int, want os.FileMode) bool {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Gid) == gid && st.Mode&unix.S_ISGID != 0 && st.Mode&uint32(want.Perm()) == uint32(want.Perm())
}
