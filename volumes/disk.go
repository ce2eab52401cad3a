package volumes

import (
	"errors"
	"os"

	"github.com/podrun/podrun/atomicfile"
	corev1 "k8s.io/api/core/v1"
)

// Disk lays pods out on this host: the pod directory, the volumes and their
// mounts, and the files written into the pod directory.
type Disk struct{}

// Make makes the pod directory with its record (Make).
func (Disk) Make(l Layout, record string, data []byte) error { return l.Make(record, data) }

// Create mounts the pod directory's tmpfs: /dev/shm, termination messages.
func (Disk) Create(l Layout) error { return l.Create() }

// Remove unmounts everything below the pod directory and deletes it.
func (Disk) Remove(l Layout) error { return l.Remove() }

// Setup prepares the pod's volumes (Setup).
func (Disk) Setup(l Layout, pod *corev1.Pod, cfg *Config, o Options) (*Prepared, error) {
	return Setup(l, pod, cfg, o)
}

// Locate finds the volumes of a pod that runs (Locate).
func (Disk) Locate(l Layout, pod *corev1.Pod, o Options) (*Prepared, error) {
	return Locate(l, pod, o)
}

// Undo reverts what Setup made outside the pod directory.
func (Disk) Undo(p *Prepared) error { return p.Undo() }

// WriteFile replaces path atomically (a temporary file renamed over it).
func (Disk) WriteFile(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm) // exactly perm, not cut by the umask
}

// RemoveFile removes the file at path; one that is not there is gone already.
func (Disk) RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
