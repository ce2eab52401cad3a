// Package volumes owns a pod's directory on the host and its volumes:
// hostPath with the kubelet's type checks, emptyDir on disk or tmpfs, and the
// resolution of volumeMounts (with subPath) into bind mounts.
package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Layout is the kubelet-style pod directory, <root>/pods/<uid>/.
type Layout struct {
	Root string // podrun's state dir
	UID  string // the pod's UID
}

// Pod is the pod's directory.
func (l Layout) Pod() string { return filepath.Join(l.Root, "pods", l.UID) }

// EmptyDir is an emptyDir volume's directory.
func (l Layout) EmptyDir(name string) string {
	return filepath.Join(l.Pod(), "volumes", "kubernetes.io~empty-dir", name)
}

// File is a pod-level file such as "etc-hosts", "resolv.conf", "hostname" or "pod.json".
func (l Layout) File(name string) string { return filepath.Join(l.Pod(), name) }

// TerminationLog is the file mounted at a container's terminationMessagePath.
func (l Layout) TerminationLog(container, id string) string {
	return filepath.Join(l.Pod(), "containers", container, id)
}

// Shm is the pod's shared /dev/shm (a tmpfs).
func (l Layout) Shm() string { return filepath.Join(l.Pod(), "shm") }

// ShmSize is the size of the pod's /dev/shm, as Docker and the CRI default it.
const ShmSize = 64 << 20

// Create makes the pod directory and its shared /dev/shm tmpfs.
func (l Layout) Create() error {
	if err := os.MkdirAll(l.Pod(), 0o750); err != nil {
		return err
	}
	return mountTmpfs(l.Shm(), ShmSize, 0o1777)
}

// Remove unmounts everything below the pod directory and deletes it. A pod
// directory that is already gone is success.
func (l Layout) Remove() error {
	if err := unmountBelow(l.Pod()); err != nil {
		return err
	}
	if err := os.RemoveAll(l.Pod()); err != nil {
		return fmt.Errorf("removing pod directory: %w", err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of size bytes (0: the kernel default) at dir,
// unless one is mounted there already.
func mountTmpfs(dir string, size int64, mode os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(dir); err == nil && mounted {
		return nil
	}
	data := fmt.Sprintf("mode=%o", mode)
	if size > 0 {
		data += fmt.Sprintf(",size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NODEV|unix.MS_NOSUID|unix.MS_NOEXEC, data); err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
	}
	return nil
}

// unmountBelow unmounts every mount at or below dir, deepest first.
func unmountBelow(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	var errs []error
	for _, m := range mounts {
		if m.Mountpoint != dir && !strings.HasPrefix(m.Mountpoint, dir+"/") {
			continue
		}
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m.Mountpoint, err))
		}
	}
	return errors.Join(errs...)
}
