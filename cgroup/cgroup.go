// Package cgroup makes and removes pod cgroups (v1, hybrid or unified,
// with containerd's cgroups library) and reads the node facts their limits
// depend on.
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
var Node = sync.OnceValue(detectNode)

// detectNode reads the facts resources.Container needs: the cgroup version,
// the memory size, whether swap is accounted, and how low podrun may set an
// oom_score_adj.
func detectNode() resources.Node {
	n := resources.Node{CgroupV2: cgroups.Mode() == cgroups.Unified, MinOOMScoreAdj: -1000}
	if mem, err := downward.MemTotal(); err == nil {
		n.MemoryCapacity = mem
	}
	swap := filepath.Join(cgroupMount, "memory", "memory.memsw.limit_in_bytes")
	if n.CgroupV2 {
		// The root has no memory.swap.max; podrun's own cgroup has, like the
		// kubelet's swapControllerAvailable.
		swap = filepath.Join(cgroupMount, ownCgroupV2(), "memory.swap.max")
	}
	_, err := os.Stat(swap)
	n.SwapController = err == nil
	if !hasCapability(unix.CAP_SYS_RESOURCE) {
		// Without CAP_SYS_RESOURCE no process may go below the adj it
		// inherited (podrun inside a container): runc would fail to start the
		// container, so the CRI plugin's restrict_oom_score_adj clamps it.
		if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
			if adj, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				n.MinOOMScoreAdj = adj
			}
		}
	}
	return n
}

// ownCgroupV2 is podrun's own cgroup on a unified host ("0::<path>").
func ownCgroupV2() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return "/"
}

// hasCapability reports whether podrun has capability c in its effective set.
func hasCapability(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
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

// Manager makes and removes cgroups on this host.
type Manager struct{}

// Create creates (or updates) the cgroup at path with the limits of r,
// in every v1 hierarchy or in the unified one.
func (Manager) Create(path string, r *specs.LinuxResources) error {
	var err error
	if cgroups.Mode() == cgroups.Unified {
		_, err = cgroup2.NewManager(cgroupMount, path, v2Resources(r))
	} else {
		_, err = cgroup1.New(cgroup1.StaticPath(path), r, cgroup1.WithHiearchy(v1Hierarchy))
	}
	if err != nil {
		return fmt.Errorf("creating cgroup %s: %w", path, err)
	}
	return nil
}

// Remove removes the cgroup at path; one that is not there is gone
// already. It fails while a process is left in it.
func (Manager) Remove(path string) error {
	var err error
	if cgroups.Mode() == cgroups.Unified {
		if _, serr := os.Stat(filepath.Join(cgroupMount, path)); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		var m *cgroup2.Manager
		if m, err = cgroup2.Load(path); err == nil {
			err = m.Delete()
		}
	} else {
		var cg cgroup1.Cgroup
		cg, err = cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHiearchy(v1Hierarchy))
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
func (Manager) OOMKills(path string) (uint64, error) {
	file := filepath.Join(cgroupMount, "memory", path, "memory.oom_control")
	if cgroups.Mode() == cgroups.Unified {
		file = filepath.Join(cgroupMount, path, "memory.events")
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
func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	subsystems, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	if cgroups.Mode() == cgroups.Hybrid {
		subsystems = append(subsystems, cgroup1.NewNamed(cgroupMount, "unified"))
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
