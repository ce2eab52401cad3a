// Package cgroup handles podrun's cgroups on the host (v1, hybrid or
// unified, with containerd's cgroups library): it makes and removes pod
// cgroups, moves a long-lived process such as the stream keeper into a
// cgroup of its own, and reads the node facts that limits depend on.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/resources"
)

// cgroupMount is where the cgroup hierarchies are mounted; runc and the
// cgroups library assume it too.
const cgroupMount = "/sys/fs/cgroup"

// Node is what this machine offers, found out once per process.
var Node = sync.OnceValue(func() resources.Node {
	return Manager{}.node("/proc/self", downward.MemTotal)
})

// node reads the facts resources.Container needs: the cgroup version, the
// memory size (memTotal), whether swap is accounted, and how low podrun may
// set an oom_score_adj. proc is this process's /proc/self.
func (m Manager) node(proc string, memTotal func() (int64, error)) resources.Node {
	n := resources.Node{CgroupV2: m.unified(), MinOOMScoreAdj: -1000}
	if mem, err := memTotal(); err == nil {
		n.MemoryCapacity = mem
	}
	swap := filepath.Join(m.mount(), "memory", "memory.memsw.limit_in_bytes")
	if n.CgroupV2 {
		// The root has no memory.swap.max; podrun's own cgroup has, like the
		// kubelet's swapControllerAvailable.
		swap = filepath.Join(m.mount(), ownCgroupV2(proc), "memory.swap.max")
	}
	_, err := os.Stat(swap)
	n.SwapController = err == nil
	if !hasCapability(proc, unix.CAP_SYS_RESOURCE) {
		// Without CAP_SYS_RESOURCE no process may go below the adj it
		// inherited (podrun inside a container): runc would fail to start the
		// container, so the CRI plugin's restrict_oom_score_adj clamps it.
		if b, err := os.ReadFile(filepath.Join(proc, "oom_score_adj")); err == nil {
			if adj, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				n.MinOOMScoreAdj = adj
			}
		}
	}
	return n
}

// ownCgroupV2 is podrun's own cgroup on a unified host ("0::<path>" in
// proc's cgroup file).
func ownCgroupV2(proc string) string {
	b, _ := os.ReadFile(filepath.Join(proc, "cgroup"))
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return "/"
}

// hasCapability reports whether podrun has capability c in its effective
// set (CapEff in proc's status file).
func hasCapability(proc string, c int) bool {
	b, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && set&(1<<c) != 0
		}
	}
	return false
}

// Manager makes and removes cgroups on this host. Its zero value works on
// this machine's hierarchies; its fields are the seam a test points at a
// directory tree instead.
type Manager struct {
	root string            // where the hierarchies are mounted; "" is /sys/fs/cgroup
	mode cgroups.CGMode    // the host's mode; Unavailable (the zero value) asks cgroups.Mode
	v1   cgroup1.Hierarchy // the v1 hierarchies; nil is the mounted ones (cgroup1.Default)
}

// mount is where the hierarchies are mounted.
func (m Manager) mount() string {
	if m.root == "" {
		return cgroupMount
	}
	return m.root
}

// unified reports whether the host has cgroup v2 only.
func (m Manager) unified() bool { return m.cgMode() == cgroups.Unified }

// cgMode is the host's cgroup mode: v1, hybrid or unified.
func (m Manager) cgMode() cgroups.CGMode {
	if m.mode == cgroups.Unavailable {
		return cgroups.Mode()
	}
	return m.mode
}

// Create creates (or updates) the cgroup at path with the limits of r,
// in every v1 hierarchy or in the unified one.
func (m Manager) Create(path string, r *specs.LinuxResources) error {
	var err error
	if m.unified() {
		_, err = cgroup2.NewManager(m.mount(), path, v2Resources(r))
	} else {
		_, err = cgroup1.New(cgroup1.StaticPath(path), r, cgroup1.WithHiearchy(m.v1Hierarchy))
	}
	if err != nil {
		return fmt.Errorf("creating cgroup %s: %w", path, err)
	}
	return nil
}

// Remove removes the cgroup at path; one that is not there is gone
// already. It fails while a process is left in it.
func (m Manager) Remove(path string) error {
	var err error
	if m.unified() {
		if _, serr := os.Stat(filepath.Join(m.mount(), path)); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		var cg *cgroup2.Manager
		if cg, err = cgroup2.Load(path, cgroup2.WithMountpoint(m.mount())); err == nil {
			err = cg.Delete()
		}
	} else {
		var cg cgroup1.Cgroup
		cg, err = cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHiearchy(m.v1Hierarchy))
		if errors.Is(err, cgroup1.ErrCgroupDeleted) {
			return nil
		}
		if err == nil {
			err = cg.Delete()
		}
	}
	if err != nil {
		return fmt.Errorf("removing cgroup %s: %w", path, err)
	}
	return nil
}

// OOMKills returns how many processes of the cgroup at path the kernel's
// OOM killer has killed (v1 memory.oom_control's oom_kill, v2
// memory.events' oom_kill); 0 when the cgroup or the counter is not there.
func (m Manager) OOMKills(path string) (uint64, error) {
	file := filepath.Join(m.mount(), "memory", path, "memory.oom_control")
	if m.unified() {
		file = filepath.Join(m.mount(), path, "memory.events")
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// v1Hierarchy is every mounted v1 hierarchy, plus on a hybrid host the
// unified one, where runc also creates the container's cgroups (and so the
// pod's as their parent).
func (m Manager) v1Hierarchy() ([]cgroup1.Subsystem, error) {
	mounted := m.v1
	if mounted == nil {
		mounted = cgroup1.Default
	}
	subsystems, err := mounted()
	if err != nil {
		return nil, err
	}
	if m.cgMode() == cgroups.Hybrid {
		subsystems = append(subsystems, cgroup1.NewNamed(m.mount(), "unified"))
	}
	return subsystems, nil
}

// v2Resources converts v1-style limits to cgroup v2 ones, as runc does: the
// weight from the shares, cpu.max from quota and period, memory.max.
func v2Resources(r *specs.LinuxResources) *cgroup2.Resources {
	out := &cgroup2.Resources{}
	if c := r.CPU; c != nil {
		out.CPU = &cgroup2.CPU{}
		if c.Shares != nil {
			w := 1 + (*c.Shares-2)*9999/262142
			out.CPU.Weight = &w
		}
		if c.Period != nil {
			out.CPU.Max = cgroup2.NewCPUMax(c.Quota, c.Period)
		}
	}
	if m := r.Memory; m != nil && m.Limit != nil {
		out.Memory = &cgroup2.Memory{Max: m.Limit}
	}
	return out
}
