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
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/podrun/podrun/atomicfile"
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

// HostPath is where a hostPath volume is bind-mounted for the pod's
// containers (volumes.go).
func (l Layout) HostPath(name string) string {
	return filepath.Join(l.Pod(), "volumes", "kubernetes.io~host-path", name)
}

// SubPath is where the subPath of a container's index-th volumeMount of
// volume is bind-mounted (the kubelet's volume-subpaths directory).
func (l Layout) SubPath(volume, container string, index int) string {
	return filepath.Join(l.Pod(), "volume-subpaths", volume, container, strconv.Itoa(index))
}

// File is a pod-level file such as "etc-hosts", "resolv.conf", "hostname" or "pod.json".
func (l Layout) File(name string) string { return filepath.Join(l.Pod(), name) }

// TerminationLog is the file mounted at a container's terminationMessagePath.
func (l Layout) TerminationLog(container, id string) string {
	return filepath.Join(l.containers(), container, id)
}

// containers holds the containers' termination-message files (a tmpfs of
// TerminationLogsSize for a pod made since podrun bounds them).
func (l Layout) containers() string { return filepath.Join(l.Pod(), "containers") }

// Shm is the pod's shared /dev/shm (a tmpfs).
func (l Layout) Shm() string { return filepath.Join(l.Pod(), "shm") }

// ShmSize is the size of the pod's /dev/shm, as Docker and the CRI default it.
const ShmSize = 64 << 20

// TerminationLogsSize bounds the tmpfs at <pod>/containers that holds the
// files mounted at the containers' terminationMessagePath. Each is its
// container's to write (0666, as the kubelet makes it), and only its last
// 4096 bytes are ever read; on the state filesystem a container could
// grow it until the filesystem is full. On this tmpfs it can fill 1 MiB at
// most (charged to its own memory cgroup), and only its own pod's.
const TerminationLogsSize = 1 << 20

// Make makes the pod directory with its record, the file record holding
// data: the directory is made aside with the record in it, then renamed
// in place, so that no pod directory is ever without the record that
// names its pod (a podrun killed while making it leaves nothing another
// can miss). A directory already there gets its record replaced,
// atomically.
func (l Layout) Make(record string, data []byte) error {
	if _, err := os.Lstat(l.Pod()); err == nil {
		return atomicfile.WriteFile(l.File(record), data, 0o640)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.Pod()), 0o750); err != nil {
		return err
	}
	aside := creating(l)
	// One a make cut off left (the pod's lock is held: no other podrun
	// makes this pod now).
	if err := removeTree(aside); err != nil {
		return err
	}
	if err := os.Mkdir(aside, 0o750); err != nil {
		return fmt.Errorf("making the pod directory: %w", err)
	}
	// Locked while it is made: a sweep removes it only once the lock is
	// free (its podrun died before the rename).
	d, err := os.OpenFile(aside, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("making the pod directory: %w", err)
	}
	defer d.Close()
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("making the pod directory: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(aside, record), data, 0o640); err != nil {
		return errors.Join(fmt.Errorf("making the pod directory: %w", err), os.RemoveAll(aside))
	}
	if err := os.Rename(aside, l.Pod()); err != nil {
		return errors.Join(fmt.Errorf("making the pod directory: %w", err), os.RemoveAll(aside))
	}
	pods, err := os.Open(filepath.Dir(l.Pod()))
	if err != nil {
		return err
	}
	defer pods.Close()
	return pods.Sync() // the rename is durable: the record is there after a power loss
}

// Create mounts the pod directory's shared /dev/shm tmpfs and the tmpfs of
// its containers' termination-message files. The directory is Make's: one
// that is not there is not made here (it would have no record).
func (l Layout) Create() error {
	if _, err := os.Lstat(l.Pod()); err != nil {
		return fmt.Errorf("mounting the pod's tmpfs: %w", err)
	}
	if err := mountTmpfs(l.Shm(), ShmSize, 0o1777); err != nil {
		return err
	}
	return mountTmpfs(l.containers(), TerminationLogsSize, 0o750)
}

// Remove unmounts everything below the pod directory and deletes it. A pod
// directory that is already gone is success. Nothing is deleted while
// anything is still mounted below it: a hostPath bind would take the
// host's files with it. The directory is first renamed out of the way
// (atomically: its record and its data go together), so a removal cut off
// (a kill -9) never leaves a pod's data without the record another podrun
// needs; what is left under the new name, SweepRemoved deletes.
func (l Layout) Remove() error {
	if err := unmountAll(l.Pod()); err != nil {
		return err
	}
	gone := removing(l)
	// One a removal cut off after its rename left, when a pod with the same
	// uid (its content's hash) was made again before any sweep.
	if err := removeTree(gone); err != nil {
		return err
	}
	if err := os.Rename(l.Pod(), gone); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pod directory: %w", err)
	}
	return removeTree(gone)
}

// removingPrefix names a pod directory being removed: <root>/pods/.removing-<uid>;
// creatingPrefix one being made (Make): <root>/pods/.creating-<uid>.
const (
	removingPrefix = ".removing-"
	creatingPrefix = ".creating-"
)

// removing is where Remove moves pod directory l before deleting it.
func removing(l Layout) string { return filepath.Join(l.Root, "pods", removingPrefix+l.UID) }

// creating is where Make makes pod directory l before renaming it in place.
func creating(l Layout) string { return filepath.Join(l.Root, "pods", creatingPrefix+l.UID) }

// SweepRemoved deletes what podruns cut off (kill -9) left under root:
// the pod directories renamed for removal (Remove), those made aside and
// never renamed in place by a podrun that is gone (Make), and pod directories without their record
// (the file record), which a podrun before Make left between making a
// pod directory, with its tmpfs mounts, and writing its record: nothing
// names their pod, so nothing else would ever remove them. Every podrun
// that opens the host calls it.
func SweepRemoved(root, record string) error {
	dir := filepath.Join(root, "pods")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), removingPrefix):
			errs = append(errs, removeTree(path))
		case strings.HasPrefix(e.Name(), creatingPrefix):
			errs = append(errs, sweepCreating(path))
		case e.IsDir() && !strings.HasPrefix(e.Name(), "."):
			if _, err := os.Lstat(filepath.Join(path, record)); errors.Is(err, os.ErrNotExist) {
				errs = append(errs, removeTree(path))
			}
		}
	}
	return errors.Join(errs...)
}

// sweepCreating removes the pod directory being made at path (Make) if
// the podrun making it is gone: its lock is free, and the path still
// names the directory locked (not renamed in place, nor made again).
func sweepCreating(path string) error {
	d, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		return nil // its podrun makes it now
	} else if err != nil {
		return err
	}
	var held, now unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &held); err != nil {
		return err
	}
	if err := unix.Lstat(path, &now); errors.Is(err, unix.ENOENT) || err == nil && (held.Dev != now.Dev || held.Ino != now.Ino) {
		return nil
	} else if err != nil {
		return err
	}
	return removeTree(path)
}

// removeTree unmounts everything at or below dir, then deletes it; one
// already gone is success.
func removeTree(dir string) error {
	if err := unmountAll(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
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

// unmountAll unmounts every mount at or below dir, deepest first, over
// again until none is left (mounts can be stacked on one mount point), and
// fails if any stays.
func unmountAll(dir string) error {
	for range 8 {
		mounts, err := mountsBelow(dir)
		if err != nil || len(mounts) == 0 {
			return err
		}
		var errs []error
		for _, m := range mounts {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if mounts, err := mountsBelow(dir); err != nil || len(mounts) > 0 {
		return errors.Join(err, fmt.Errorf("still mounted below %s: %v", dir, mounts))
	}
	return nil
}

// mountsBelow lists the mount points at or below dir, deepest first.
func mountsBelow(dir string) ([]string, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	var out []string
	for _, m := range mounts {
		if m.Mountpoint == dir || strings.HasPrefix(m.Mountpoint, dir+"/") {
			out = append(out, m.Mountpoint)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// isMountPoint reports whether something is mounted at dir.
func isMountPoint(dir string) bool {
	mounted, err := mountinfo.Mounted(dir)
	return err == nil && mounted
}
