package volumes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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
// setgid bit, so that files created in them later belong to fsGroup too. Symlinks are re-owned but not chmod'ed.
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
// call it on every write, as the kubelet's atomic writer does.
func setOwnership(dir string, gid int, mask os.FileMode) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		add := mask
		if info.IsDir() {
			add |= fsGroupExec | os.ModeSetgid
		}
		return os.Chmod(path, info.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky)|add)
	})
	if err != nil {
		return fmt.Errorf("giving the volume to fsGroup %d: %w", gid, err)
	}
	return nil
}

// ownedBy reports whether dir already has group gid, the setgid bit and
// the permission bits want.
func ownedBy(dir string, gid int, want os.FileMode) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == gid && info.Mode()&os.ModeSetgid != 0 && info.Mode()&want == want
}
