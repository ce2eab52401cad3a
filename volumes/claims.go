package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// A persistentVolumeClaim volume is a named local volume of the node, as
// podman makes one for a claim: the directory <root>/volumes/<namespace>/
// <claimName>, made the first time a pod uses it, kept across pod
// replacements and down, removed only by RemoveClaim (podrun volume rm).

// ClaimsDir is where the claims' volumes are.
func (l Layout) ClaimsDir() string { return filepath.Join(l.Root, "volumes") }

// Claim is the directory of claim name in namespace.
func (l Layout) Claim(namespace, name string) string {
	return filepath.Join(l.ClaimsDir(), namespace, name)
}

// claim makes (or finds) a claim's volume; a new one is world-writable, as
// a local provisioner's, and given to the pod's fsGroup.
func (p *Prepared) claim(l Layout, pod *corev1.Pod, name string, c *corev1.PersistentVolumeClaimVolumeSource, adopt bool) error {
	dir := l.Claim(pod.Namespace, c.ClaimName)
	if c.ReadOnly {
		p.ReadOnly[name] = true
	}
	st, err := os.Lstat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("claim %s: %s is not a directory", c.ClaimName, dir)
	case err == nil || adopt:
		// An existing volume keeps its data, mode and owners (a pod that
		// is adopted never changes a volume its containers write).
		p.Paths[name], p.NoDev[name] = dir, true
		return err
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := unix.Chmod(dir, 0o777); err != nil { // apart from Mkdir: the umask
		return err
	}
	p.Paths[name], p.NoDev[name] = dir, true
	return SetOwnership(dir, pod, c.ReadOnly)
}

// Claim is a claim's volume on the node.
type Claim struct {
	Namespace, Name, Path string
}

// Claims lists the claims' volumes, by namespace and name.
func Claims(l Layout) ([]Claim, error) {
	nss, err := os.ReadDir(l.ClaimsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Claim
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(l.ClaimsDir(), ns.Name()))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if n.IsDir() {
				out = append(out, Claim{Namespace: ns.Name(), Name: n.Name(), Path: l.Claim(ns.Name(), n.Name())})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out, nil
}

// RemoveClaim removes a claim's volume and everything in it (os.RemoveAll
// removes through descriptors and never follows a symlink a container
// left there); gone is success.
func RemoveClaim(l Layout, namespace, name string) error {
	return os.RemoveAll(l.Claim(namespace, name))
}

// UsesClaim says whether a pod mounts claim name of its namespace.
func UsesClaim(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
			return true
		}
	}
	return false
}
