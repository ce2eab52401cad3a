package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/untrusted"
)

// Mounts resolves a container's volumeMounts into bind mounts. A
// subPathExpr is expanded against vars, the container's variables
// (spec.SubPathExpr). A subPath is opened inside its volume by descriptor,
// created as a directory when missing (as the kubelet does), refused when
// it resolves outside its volume or is not a directory or a regular file,
// and bind-mounted under the pod directory (subPath); the container gets
// that bind. The mounts of a disk-backed volume (emptyDir, claim) are
// nodev: a device node a container makes there opens nothing.
func (p *Prepared) Mounts(c *corev1.Container, vars map[string]string) ([]spec.Mount, error) {
	var out []spec.Mount
	for i, vm := range c.VolumeMounts {
		src, ok := p.Paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMounts[%d]: volume %q is not prepared", i, vm.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = spec.SubPathExpr(vm.SubPathExpr, vars); err != nil {
				return nil, err // the kubelet's message as it is
			}
		}
		if sub != "" {
			var err error
			if src, err = p.subPath(src, sub, p.layout.SubPath(vm.Name, c.Name, i)); err != nil {
				if vm.SubPathExpr != "" {
					err = fmt.Errorf("subPathExpr %q: %w", vm.SubPathExpr, err)
				}
				return nil, fmt.Errorf("volumeMounts[%d] (%s): %w", i, vm.MountPath, err)
			}
		}
		out = append(out, spec.Mount{Source: src, Destination: vm.MountPath, ReadOnly: vm.ReadOnly || p.ReadOnly[vm.Name], NoDev: p.NoDev[vm.Name]})
	}
	return out, nil
}

// subPath opens sub inside volume (creating it as a directory when
// missing) and bind-mounts what it opened at target, which it returns. The
// kubelet's fix for CVE-2017-1002101 and CVE-2021-25741: the path is walked
// component by component from the volume's descriptor, symlinks never
// leaving it (pathrs-lite, openat2 RESOLVE_IN_ROOT where the kernel has
// it), and the descriptor is mounted, not the path, so a sibling container
// that swaps a directory for a symlink after the check gains nothing.
// Only a directory or a regular file is mounted: a FIFO, socket or device
// node a container made there is refused (podrun never opens one, and a
// target it is mounted at could not be checked without opening it).
func (p *Prepared) subPath(volume, sub, target string) (string, error) {
	f, err := openSubPath(volume, sub)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFDIR && k != unix.S_IFREG {
		return "", fmt.Errorf("subPath %q is %s: only a directory or a regular file can be a subPath", sub, untrusted.Kind(st.Mode))
	}
	if err := bindFD(f, &st, target); err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	return target, nil
}

// openSubPath opens (O_PATH) sub inside volume, creating it as a
// directory when missing; it never leaves the volume.
func openSubPath(volume, sub string) (*os.File, error) {
	root, err := os.OpenFile(volume, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Refuse (rather than confine) a subPath whose symlinks point out of
	// the volume, with a message that says so, as the kubelet does.
	if err := escapes(root, sub); err != nil {
		return nil, err
	}
	f, err := pathrs.OpenatInRoot(root, sub)
	if errors.Is(err, os.ErrNotExist) {
		f, err = pathrs.MkdirAllHandle(root, sub, 0o755)
		if err != nil {
			return nil, fmt.Errorf("creating subPath %q: %w", sub, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("subPath %q: %w", sub, err)
	}
	return f, nil
}

// escapes reports a subPath that resolves, through the symlinks it has
// now, outside its volume. It only reads, for the message: what is mounted
// is opened safely afterwards whatever happens meanwhile.
func escapes(root *os.File, sub string) error {
	real, err := os.Readlink(procFD(int(root.Fd())))
	if err != nil {
		return err
	}
	existing := filepath.Join(real, sub)
	for {
		if _, err := os.Lstat(existing); err == nil || existing == real || !strings.HasPrefix(existing, real) {
			break
		}
		existing = filepath.Dir(existing)
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("subPath %q: %w", sub, err)
	}
	if resolved != real && !strings.HasPrefix(resolved, real+"/") {
		return fmt.Errorf("subPath %q resolves to %s, outside its volume", sub, resolved)
	}
	return nil
}

// bindFD bind-mounts (recursively, private) the file or directory f holds
// (whose fstat is st) at target, as the kubelet's prepareSubpathTarget
// does: a target that is a mount point of that very inode already (a
// restarted container's earlier bind) is left alone, one of another inode
// is unmounted. What is mounted at a target may be a container's file, so
// it is only ever lstat'ed, never opened: a FIFO would block podrun for
// good, a device node would be opened by root. The target itself, in
// podrun's own directory, is then made exclusively when missing (mkdir,
// or O_CREAT|O_EXCL for anything but a directory) and made again when it
// is of the other kind.
func bindFD(f *os.File, st *unix.Stat_t, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if isMountPoint(target) {
		var cur unix.Stat_t
		if err := unix.Lstat(target, &cur); err == nil && cur.Dev == st.Dev && cur.Ino == st.Ino {
			return nil
		}
		if err := unmountAll(target); err != nil {
			return err
		}
	}
	if err := makeTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	if err := unix.Mount(procFD(int(f.Fd())), target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting at %s: %w", target, err)
	}
	// Keep the pods' own mounts from propagating in or out (a hostPath of
	// / on a host whose / is shared would otherwise gather every pod's).
	if err := unix.Mount("", target, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("making %s private: %w", target, err)
	}
	return nil
}

// makeTarget makes the unmounted mount point target: a directory (dir) or
// an empty file, which a bind mount of any other kind of file may cover.
// One of the other kind (the subPath changed kind between two starts) is
// removed first; neither is ever opened.
func makeTarget(target string, dir bool) error {
	var st unix.Stat_t
	err := unix.Lstat(target, &st)
	switch {
	case err == nil && (st.Mode&unix.S_IFMT == unix.S_IFDIR) == dir && (dir || st.Mode&unix.S_IFMT == unix.S_IFREG):
		return nil // made at an earlier start
	case err == nil:
		if err := os.Remove(target); err != nil {
			return err
		}
	case !errors.Is(err, unix.ENOENT):
		return &os.PathError{Op: "lstat", Path: target, Err: err}
	}
	if dir {
		return os.Mkdir(target, 0o750)
	}
	fd, err := unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o640)
	if err != nil {
		return &os.PathError{Op: "create", Path: target, Err: err}
	}
	return unix.Close(fd)
}
