package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces live, so `ip netns` lists them.
const netnsDir = "/run/netns"

// NetNSName is the deterministic name of a pod's network namespace, so that
// a later podrun can remove it even when the process that made it died.
func NetNSName(podUID string) string { return "podrun-" + podUID }

// NetNSPath is the bind-mount path of the named namespace.
func NetNSPath(name string) string { return filepath.Join(netnsDir, name) }

// CreateNetNS makes (or finds, after a crash) the named network namespace and
// returns its path. The calling goroutine's thread never stays in the new
// namespace: it is locked and, if switching back fails, discarded.
func CreateNetNS(name string) (string, error) {
	path := NetNSPath(name)
	if isNetNS(path) {
		return path, nil
	}
	// A file left by a crash between create and mount: remove and retry.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("removing stale %s: %w", path, err)
	}
	err := onLockedThread(func() error {
		ns, err := netns.NewNamed(name) // switches this thread into it
		if err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("creating network namespace %q: %w", name, err)
		}
		return ns.Close()
	})
	if err != nil {
		return "", err
	}
	return path, nil
}

// isNetNS reports whether path is a mounted network namespace.
func isNetNS(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// RemoveNetNS unmounts and removes the named namespace; gone is success.
func RemoveNetNS(name string) error {
	path := NetNSPath(name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// Namespaces makes and removes named network namespaces on this host.
type Namespaces struct{}

// Create makes (or finds) the named namespace and returns its path.
func (Namespaces) Create(name string) (string, error) { return CreateNetNS(name) }

// Remove unmounts and removes the named namespace; gone is success.
func (Namespaces) Remove(name string) error { return RemoveNetNS(name) }

// InterfaceAddrs returns the global unicast addresses of interface ifName in
// the network namespace at path (none when it has no such interface). The
// calling goroutine's thread never stays in that namespace.
func InterfaceAddrs(path, ifName string) ([]*net.IPNet, error) {
	var addrs []*net.IPNet
	err := onLockedThread(func() error {
		ns, err := netns.GetFromPath(path)
		if err != nil {
			return fmt.Errorf("opening network namespace %s: %w", path, err)
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("entering network namespace %s: %w", path, err)
		}
		addrs, err = globalAddrs(ifName)
		return err
	})
	return addrs, err
}

// onLockedThread runs fn on a locked thread of its own; fn may switch the
// thread's network namespace: the thread goes back to the original one
// after fn, and is discarded (locked, never unlocked) if it cannot.
func onLockedThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("getting current network namespace: %w", err)
			return // thread discarded: LockOSThread without Unlock
		}
		defer orig.Close()
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("returning to the host network namespace: %w", err)
			return // thread discarded
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// globalAddrs returns the global unicast addresses of ifName in the calling
// thread's network namespace.
func globalAddrs(ifName string) ([]*net.IPNet, error) {
	iface, err := net.InterfaceByName(ifName)
	if err != nil {
		return nil, nil // no such interface: no addresses
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", ifName, err)
	}
	var out []*net.IPNet
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
			out = append(out, ipn)
		}
	}
	return out, nil
}
