package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Weights are the shares of CPU and disk time a cgroup gets against its
// siblings when they compete: cpu.shares (2-262144, 1024 by default; on
// cgroup v2 cpu.weight, converted as runc does) and the I/O weight (1-1000,
// 100 by default).
type Weights struct {
	CPUShares uint64
	IOWeight  uint16
}

// joinAttempts bounds the retries of a join that races the removal of the
// cgroup by the last process leaving it (Leave).
const joinAttempts = 3

// Join moves process pid into the cgroup at path, made with weights w: a
// cgroup of podrun's own for a long-lived process such as the stream
// keeper, apart from the cgroup of whoever started it (a process left in
// an SSH session's scope is killed with the session). The CPU weight is
// always set; the I/O weight where the kernel offers one (the BFQ
// scheduler, or cgroup v2's iocost), and it is reported whether it was.
func (m Manager) Join(path string, pid int, w Weights) (ioWeight bool, err error) {
	for i := 0; ; i++ {
		ioWeight, err = m.join(path, pid, w)
		if err == nil || !errors.Is(err, os.ErrNotExist) || i == joinAttempts-1 {
			break
		}
	}
	if err != nil {
		return false, fmt.Errorf("joining cgroup %s: %w", path, err)
	}
	return ioWeight, nil
}

func (m Manager) join(path string, pid int, w Weights) (bool, error) {
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &w.CPUShares}}
	if m.unified() {
		cg, err := cgroup2.NewManager(m.mount(), path, v2Resources(r))
		if err != nil {
			return false, err
		}
		// The io controller, where the parent can give it; no error if not.
		_ = cg.ToggleControllers([]string{"io"}, cgroup2.Enable)
		io := setIOWeight(filepath.Join(m.mount(), path), map[string]string{
			"io.weight": "default " + strconv.Itoa(int(w.IOWeight)), "io.bfq.weight": strconv.Itoa(int(w.IOWeight))})
		return io, cg.AddProc(uint64(pid))
	}
	cg, err := cgroup1.New(cgroup1.StaticPath(path), r, cgroup1.WithHiearchy(m.v1Hierarchy))
	if err != nil {
		return false, err
	}
	io := setIOWeight(filepath.Join(m.mount(), "blkio", path), map[string]string{
		"blkio.weight": strconv.Itoa(int(w.IOWeight)), "blkio.bfq.weight": strconv.Itoa(int(w.IOWeight))})
	return io, cg.AddProc(uint64(pid))
}

// setIOWeight writes the first of the weight files (name: value) the
// cgroup directory has, and reports whether one was written.
func setIOWeight(dir string, files map[string]string) bool {
	for _, name := range []string{"io.weight", "io.bfq.weight", "blkio.weight", "blkio.bfq.weight"} {
		v, ok := files[name]
		if !ok {
			continue
		}
		if writeExisting(filepath.Join(dir, name), v) == nil {
			return true
		}
	}
	return false
}

// writeExisting writes v to the file, which must exist: a cgroup file the
// kernel does not offer is not made as a plain one.
func writeExisting(file, v string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Leave moves the calling process out of the cgroup at path, to the root
// cgroup, and removes that cgroup unless a process is left in it (another
// keeper's): podrun leaves no cgroup of its own behind.
func (m Manager) Leave(path string) error {
	pid := uint64(os.Getpid())
	procs := filepath.Join(m.mount(), path, "cgroup.procs")
	if m.unified() {
		root, err := cgroup2.Load("/", cgroup2.WithMountpoint(m.mount()))
		if err != nil {
			return fmt.Errorf("leaving cgroup %s: %w", path, err)
		}
		if err := root.AddProc(pid); err != nil {
			return fmt.Errorf("leaving cgroup %s: %w", path, err)
		}
	} else {
		procs = filepath.Join(m.mount(), "cpu", path, "cgroup.procs")
		root, err := cgroup1.Load(cgroup1.RootPath, cgroup1.WithHiearchy(m.v1Hierarchy))
		if err != nil {
			return fmt.Errorf("leaving cgroup %s: %w", path, err)
		}
		if err := root.AddProc(pid); err != nil {
			return fmt.Errorf("leaving cgroup %s: %w", path, err)
		}
	}
	b, err := os.ReadFile(procs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || strings.TrimSpace(string(b)) != "" {
		return err // another process is in it: the last one removes it
	}
	return m.Remove(path) // fails if another process joined meanwhile: it removes it
}
