package volumes

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// Prepared is the result of Setup or Locate: where each volume is on the
// host.
type Prepared struct {
	layout  Layout
	Paths   map[string]string // volume name -> host path
	Created []string          // hostPaths Setup created (DirectoryOrCreate, FileOrCreate)
	// ReadOnly are the volumes always mounted read-only (config volumes,
	// as the kubelet mounts them since 1.10).
	ReadOnly map[string]bool
	// NoDev are the disk-backed volumes (emptyDir, claims), mounted nodev:
	// a device node a container makes in one opens nothing.
	NoDev map[string]bool
}

// Options are the node's rules for volumes.
type Options struct {
	// AllowedHostPaths, when not empty, are the only host path prefixes a
	// hostPath volume may resolve under (manifest.Options checks the
	// manifest's strings at admission; Setup checks what the path really
	// is, symlinks resolved, when it opens it).
	AllowedHostPaths []string
}

// Setup prepares every volume of the pod under layout l; cfg is what its
// config volumes are made of (config.go). It runs before any container of
// the pod, so it is the one place that gives a volume to the pod's fsGroup.
// On error, what was done so far is in the returned Prepared, for Undo.
func Setup(l Layout, pod *corev1.Pod, cfg *Config, o Options) (*Prepared, error) {
	return prepare(l, pod, cfg, o, false)
}

// Locate finds the volumes Setup prepared for a pod whose containers may
// be running (adoption): it checks they are there and never writes, walks
// or chmods a volume a container can write. A hostPath bind that is
// missing (a pod set up by an older podrun) is made again, which touches
// only the pod directory.
func Locate(l Layout, pod *corev1.Pod, o Options) (*Prepared, error) {
	return prepare(l, pod, nil, o, true)
}

func prepare(l Layout, pod *corev1.Pod, cfg *Config, o Options, adopt bool) (*Prepared, error) {
	p := &Prepared{layout: l, Paths: map[string]string{}, ReadOnly: map[string]bool{}, NoDev: map[string]bool{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var err error
		switch {
		case configPlugin(v) != "":
			err = p.configVolume(l, pod, v, cfg) // config.go; cfg nil: only checked
		case v.HostPath != nil:
			err = p.hostPath(v.Name, v.HostPath, o.AllowedHostPaths, adopt)
		case v.EmptyDir != nil && adopt:
			err = p.locateEmptyDir(l, v.Name)
		case v.EmptyDir != nil:
			err = p.emptyDir(l, pod, v.Name, v.EmptyDir)
		case v.PersistentVolumeClaim != nil:
			err = p.claim(l, pod, v.Name, v.PersistentVolumeClaim, adopt) // claims.go
		default:
			err = errors.New("volume kind not supported by podrun yet")
		}
		if err != nil {
			return p, fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	return p, nil
}

// Undo removes what Setup made outside the pod directory: the hostPath
// binds are unmounted and hostPaths Setup created that are still empty are
// removed (a user's file is never touched). tmpfs mounts and emptyDir
// directories go with the pod directory (Layout.Remove).
func (p *Prepared) Undo() error {
	var errs []error
	for name, dir := range p.Paths {
		if dir == p.layout.HostPath(name) {
			errs = append(errs, unmountAll(dir))
		}
	}
	for i := len(p.Created) - 1; i >= 0; i-- {
		if err := removeIfEmpty(p.Created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeIfEmpty(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() && st.Size() > 0 {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// emptyDir creates an emptyDir volume (a tmpfs for medium Memory) and
// gives it to the pod's fsGroup.
func (p *Prepared) emptyDir(l Layout, pod *corev1.Pod, name string, e *corev1.EmptyDirVolumeSource) error {
	dir := l.EmptyDir(name)
	mode := uint32(0o777) // world-writable like the kubelet's, unless emptyDir.mode says
	if e.Mode != nil {
		mode = uint32(*e.Mode) // may hold the sticky bit (01777), which os.FileMode spells apart
	}
	if e.Medium == corev1.StorageMediumMemory {
		var size int64
		if e.SizeLimit != nil {
			size = e.SizeLimit.Value()
		}
		if err := mountTmpfs(dir, size, os.FileMode(mode)); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
			return err
		}
		switch err := os.Mkdir(dir, 0o700); {
		case err == nil:
			// Mkdir honours the umask: the mode is set apart.
			if err := unix.Chmod(dir, mode); err != nil {
				return err
			}
		case !errors.Is(err, os.ErrExist):
			return err
			// An existing one (a Setup resumed after a crash) keeps its
			// mode: a chmod would clear the setgid bit fsGroup gave it.
		}
	}
	p.Paths[name], p.NoDev[name] = dir, true
	return SetOwnership(dir, pod, false) // fsGroup (fsgroup.go), by descriptor
}

// locateEmptyDir finds an emptyDir Setup made.
func (p *Prepared) locateEmptyDir(l Layout, name string) error {
	dir := l.EmptyDir(name)
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	p.Paths[name], p.NoDev[name] = dir, true
	return nil
}

// hostPath opens a hostPath volume once, runs the kubelet's type checks
// (and the node's allowed prefixes) on what it opened, creates what
// *OrCreate asks for, and bind-mounts the opened file under the pod
// directory: that bind, which nothing but podrun can change, is what
// containers get, so a path swapped after the checks is never mounted.
func (p *Prepared) hostPath(name string, h *corev1.HostPathVolumeSource, allowed []string, adopt bool) error {
	target := p.layout.HostPath(name)
	if adopt && isMountPoint(target) {
		p.Paths[name] = target
		return nil
	}
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	f, created, err := openHostPath(h.Path, typ, allowed)
	if created {
		p.Created = append(p.Created, h.Path)
	}
	if err != nil {
		return fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	if err := checkType(h.Path, st.Mode, typ); err != nil {
		return err
	}
	if len(allowed) > 0 {
		real, err := os.Readlink(procFD(int(f.Fd())))
		if err != nil {
			return fmt.Errorf("hostPath %s: %w", h.Path, err)
		}
		if !manifest.UnderPrefix(real, allowed) {
			return fmt.Errorf("hostPath %s resolves to %s, which is not under an allowed host path (--allowed-host-paths %s)", h.Path, real, strings.Join(allowed, ","))
		}
	}
	if err := bindFD(f, &st, target); err != nil {
		return fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	p.Paths[name] = target
	return nil
}

// openHostPath opens a host path (O_PATH), creating it first for the
// *OrCreate types. With allowed prefixes, it is opened inside the prefix
// it is under, with symlinks kept inside that prefix (pathrs-lite), so that
// neither the opening nor the creating ever leaves it.
func openHostPath(p string, typ corev1.HostPathType, allowed []string) (f *os.File, created bool, err error) {
	root, rel := "/", strings.TrimPrefix(path.Clean(p), "/")
	for _, a := range allowed {
		if a = path.Clean(a); manifest.UnderPrefix(p, []string{a}) {
			root, rel = a, strings.TrimPrefix(strings.TrimPrefix(path.Clean(p), a), "/")
			break
		}
	}
	if rel == "" {
		rel = "." // the root (or the allowed prefix) itself
	}
	open := func() (*os.File, error) {
		if len(allowed) == 0 {
			fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0) // symlinks followed, as the kubelet's hostPath does
			if err != nil {
				return nil, &os.PathError{Op: "open", Path: p, Err: err}
			}
			return os.NewFile(uintptr(fd), p), nil
		}
		return pathrs.OpenInRoot(root, rel)
	}
	f, err = open()
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return f, false, err
	}
	switch typ {
	case corev1.HostPathDirectoryOrCreate, corev1.HostPathUnset:
		// Unset: the runtime (containerd's CRI) creates a missing bind
		// source as a directory; podrun does it here, with the same mode.
		if err := mkdirAllIn(root, rel); err != nil {
			return nil, false, fmt.Errorf("creating directory: %w", err)
		}
	case corev1.HostPathFileOrCreate:
		if err := createFileIn(root, rel); err != nil {
			return nil, false, fmt.Errorf("creating file: %w", err)
		}
	default:
		return nil, false, fmt.Errorf("type check failed: it does not exist (type %s)", typ)
	}
	f, err = open()
	return f, true, err
}

// mkdirAllIn makes directory rel (mode 0755) inside root, never following
// a symlink out of it.
func mkdirAllIn(root, rel string) error {
	r, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	d, err := pathrs.MkdirAllHandle(r, rel, 0o755)
	if err != nil {
		return err
	}
	return d.Close()
}

// createFileIn creates the empty file rel (mode 0644) inside root: its
// directory is made or opened inside root, the file created in it with
// O_EXCL|O_NOFOLLOW.
func createFileIn(root, rel string) error {
	if err := mkdirAllIn(root, path.Dir(rel)); err != nil {
		return err
	}
	r, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	dir, err := pathrs.OpenatInRoot(r, path.Dir(rel))
	if err != nil {
		return err
	}
	defer dir.Close()
	fd, err := unix.Openat(int(dir.Fd()), path.Base(rel), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func checkType(p string, mode uint32, typ corev1.HostPathType) error {
	ok, what := false, ""
	switch typ {
	case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate:
		ok, what = typ == corev1.HostPathUnset || mode&unix.S_IFMT == unix.S_IFDIR, "a directory"
	case corev1.HostPathFileOrCreate:
		ok, what = mode&unix.S_IFMT != unix.S_IFDIR, "a file"
	case corev1.HostPathDirectory:
		ok, what = mode&unix.S_IFMT == unix.S_IFDIR, "a directory"
	case corev1.HostPathFile:
		ok, what = mode&unix.S_IFMT == unix.S_IFREG, "a file"
	case corev1.HostPathSocket:
		ok, what = mode&unix.S_IFMT == unix.S_IFSOCK, "a socket"
	case corev1.HostPathCharDev:
		ok, what = mode&unix.S_IFMT == unix.S_IFCHR, "a character device"
	case corev1.HostPathBlockDev:
		ok, what = mode&unix.S_IFMT == unix.S_IFBLK, "a block device"
	default:
		return fmt.Errorf("hostPath %s: unknown type %q", p, typ)
	}
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", p, what)
	}
	return nil
}
