package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Pins are the files a pod's IPC and UTS namespaces are bind-mounted on
// when no pause process holds them, as CRI-O's pinns pins them for a pod
// without an infra container: the namespaces live as long as the mounts,
// and the pod's containers join them by path.
type Pins struct {
	IPC string // "": the pod uses the host's IPC namespace (hostIPC)
	UTS string // "": the host's UTS namespace (hostNetwork)
}

// Identity is the pin whose namespace identifies the sandbox: a pod made
// again gets new namespaces, so a supervisor of the old one can tell.
func (p Pins) Identity() string {
	if p.UTS != "" {
		return p.UTS
	}
	return p.IPC
}

// Pin makes new IPC and UTS namespaces (the UTS one with hostname) and
// bind-mounts each at its path ("" : not made). Pins a killed podrun left
// are made anew. The thread that made the namespaces is discarded: it never
// runs another goroutine.
func Pin(p Pins, hostname string) error {
	if err := Unpin(p); err != nil { // left by a crash: not the pod's any more
		return err
	}
	var flags int
	if p.IPC != "" {
		flags |= unix.CLONE_NEWIPC
	}
	if p.UTS != "" {
		flags |= unix.CLONE_NEWUTS
	}
	if flags == 0 {
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- pinOnThisThread(p, flags, hostname)
	}()
	if err := <-errc; err != nil {
		return errors.Join(err, Unpin(p))
	}
	return nil
}

func pinOnThisThread(p Pins, flags int, hostname string) error {
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unsharing the pod's namespaces: %w", err)
	}
	if p.UTS != "" {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("setting the pod's hostname: %w", err)
		}
	}
	for kind, path := range map[string]string{"ipc": p.IPC, "uts": p.UTS} {
		if path == "" {
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
		if err != nil {
			return fmt.Errorf("pinning the pod's %s namespace: %w", kind, err)
		}
		f.Close()
		self := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), unix.Gettid(), kind)
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("pinning the pod's %s namespace at %s: %w", kind, path, err)
		}
	}
	return nil
}

// Unpin unmounts and removes the pins; gone is success.
func Unpin(p Pins) error {
	var errs []error
	for _, path := range []string{p.IPC, p.UTS} {
		if path == "" {
			continue
		}
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", path, err))
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// PinnedID is the inode of the namespace pinned at path; false when no
// namespace is.
func PinnedID(path string) (uint64, bool) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil || fs.Type != unix.NSFS_MAGIC {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// Pinner pins namespaces on this host (Pin, Unpin, PinnedID).
type Pinner struct{}

// Pin makes and pins the namespaces.
func (Pinner) Pin(p Pins, hostname string) error { return Pin(p, hostname) }

// Unpin unmounts and removes the pins; gone is success.
func (Pinner) Unpin(p Pins) error { return Unpin(p) }

// ID is the inode of the namespace pinned at path.
func (Pinner) ID(path string) (uint64, bool) { return PinnedID(path) }
