package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/spec"
)

// Prepared is the result of Setup: where each volume is on the host.
type Prepared struct {
	Paths   map[string]string // volume name -> host path
	Created []string          // hostPaths Setup created (DirectoryOrCreate, FileOrCreate)
	// ReadOnly are the volumes always mounted read-only (config volumes,
	// as the kubelet mounts them since 1.10).
	ReadOnly map[string]bool
}

// Setup prepares every volume of the pod under layout l; cfg is what its
// config volumes are made of (config.go), nil for a pod whose config volumes
// were written already. On error, what was done so far is in the returned
// Prepared, for Undo.
func Setup(l Layout, pod *corev1.Pod, cfg *Config) (*Prepared, error) {
	p := &Prepared{Paths: map[string]string{}, ReadOnly: map[string]bool{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var err error
		switch {
		case configPlugin(v) != "":
			err = p.configVolume(l, pod, v, cfg) // config.go
		case v.HostPath != nil:
			err = p.hostPath(v.Name, v.HostPath)
		case v.EmptyDir != nil:
			err = p.emptyDir(l, v.Name, v.EmptyDir)
			if err == nil {
				err = SetOwnership(p.Paths[v.Name], pod, false) // fsGroup (fsgroup.go)
			}
		default:
			err = errors.New("volume kind not supported by podrun yet")
		}
		if err != nil {
			return p, fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	return p, nil
}

// Undo removes what Setup made: tmpfs mounts and the emptyDir directories
// go with the pod directory; here, hostPaths Setup created that are still
// empty are removed (a user's file is never touched).
func (p *Prepared) Undo() error {
	var errs []error
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

func (p *Prepared) emptyDir(l Layout, name string, e *corev1.EmptyDirVolumeSource) error {
	dir := l.EmptyDir(name)
	if e.Medium == corev1.StorageMediumMemory {
		var size int64
		if e.SizeLimit != nil {
			size = e.SizeLimit.Value()
		}
		if err := mountTmpfs(dir, size, 0o777); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		// MkdirAll honours the umask; emptyDir is world-writable like the kubelet's.
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	}
	p.Paths[name] = dir
	return nil
}

// hostPath runs the kubelet's type checks and creates what *OrCreate asks for.
func (p *Prepared) hostPath(name string, h *corev1.HostPathVolumeSource) error {
	path := h.Path
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	st, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostPath %s: %w", path, err)
	}
	switch typ {
	case corev1.HostPathUnset:
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("hostPath %s: creating directory: %w", path, err)
			}
			p.Created = append(p.Created, path)
		} else if !st.IsDir() {
			return typeMismatch(path, "a directory")
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("hostPath %s: creating file: %w", path, err)
			}
			f.Close()
			p.Created = append(p.Created, path)
		} else if st.IsDir() {
			return typeMismatch(path, "a file")
		}
	default:
		if !exists {
			return fmt.Errorf("hostPath type check failed: %s does not exist (type %s)", path, typ)
		}
		if err := checkType(path, st, typ); err != nil {
			return err
		}
	}
	p.Paths[name] = path
	return nil
}

func checkType(path string, st os.FileInfo, typ corev1.HostPathType) error {
	m := st.Mode()
	ok, what := false, ""
	switch typ {
	case corev1.HostPathDirectory:
		ok, what = m.IsDir(), "a directory"
	case corev1.HostPathFile:
		ok, what = m.IsRegular(), "a file"
	case corev1.HostPathSocket:
		ok, what = m&os.ModeSocket != 0, "a socket"
	case corev1.HostPathCharDev:
		ok, what = m&os.ModeCharDevice != 0, "a character device"
	case corev1.HostPathBlockDev:
		ok, what = m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0, "a block device"
	default:
		return fmt.Errorf("hostPath %s: unknown type %q", path, typ)
	}
	if !ok {
		return typeMismatch(path, what)
	}
	return nil
}

func typeMismatch(path, what string) error {
	return fmt.Errorf("hostPath type check failed: %s is not %s", path, what)
}

// Mounts resolves a container's volumeMounts into bind mounts. A
// subPathExpr is expanded against vars, the container's variables
// (spec.SubPathExpr). A subPath is created as a directory when missing (as
// the kubelet does) and refused when it resolves, through symlinks, outside
// its volume.
func Mounts(c *corev1.Container, p *Prepared, vars map[string]string) ([]spec.Mount, error) {
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
				return nil, fmt.Errorf("volumeMounts[%d] (%s): %w", i, vm.MountPath, err)
			}
		}
		if sub != "" {
			var err error
			if src, err = subPath(src, sub); err != nil {
				if vm.SubPathExpr != "" {
					err = fmt.Errorf("subPathExpr %q: %w", vm.SubPathExpr, err)
				}
				return nil, fmt.Errorf("volumeMounts[%d] (%s): %w", i, vm.MountPath, err)
			}
		}
		out = append(out, spec.Mount{Source: src, Destination: vm.MountPath, ReadOnly: vm.ReadOnly || p.ReadOnly[vm.Name]})
	}
	return out, nil
}

func subPath(volume, sub string) (string, error) {
	root, err := filepath.EvalSymlinks(volume)
	if err != nil {
		return "", err
	}
	naive := filepath.Join(root, sub)
	// The path, or its nearest existing ancestor, must resolve inside the
	// volume: a symlink pointing out of it is refused, never followed.
	existing := naive
	for {
		if _, err := os.Lstat(existing); err == nil || existing == root {
			break
		}
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	if real != root && !strings.HasPrefix(real, root+"/") {
		return "", fmt.Errorf("subPath %q resolves to %s, outside its volume", sub, real)
	}
	safe, err := securejoin.SecureJoin(root, sub)
	if err != nil {
		return "", err
	}
	if existing != naive {
		if err := os.MkdirAll(safe, 0o755); err != nil {
			return "", fmt.Errorf("creating subPath %q: %w", sub, err)
		}
	}
	return safe, nil
}
