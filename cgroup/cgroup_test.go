package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podrun/podrun/resources"
)

// The tests run without root: a Manager pointed at a temporary directory
// tree that stands in for /sys/fs/cgroup, laid out as the kernel would for
// the mode under test (the files a test needs are made by it; the kernel's
// own bookkeeping, such as taking a pid out of the cgroup.procs it leaves,
// is not imitated).

// v2Tree is a unified hierarchy: the root and the parents of a cgroup
// offer cgroup.subtree_control, as the kernel's do.
func v2Tree(t *testing.T, parents ...string) Manager {
	t.Helper()
	root := t.TempDir()
	for _, dir := range append([]string{"/"}, parents...) {
		write(t, filepath.Join(root, dir, "cgroup.subtree_control"), "")
	}
	return Manager{root: root, mode: cgroups.Unified}
}

// v1Tree is a v1 (or hybrid) host with the cpu, memory and blkio
// hierarchies mounted under the root.
func v1Tree(t *testing.T, mode cgroups.CGMode) Manager {
	t.Helper()
	root := t.TempDir()
	return Manager{root: root, mode: mode, v1: func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{cgroup1.NewCpu(root), cgroup1.NewMemory(root), cgroup1.NewBlkio(root)}, nil
	}}
}

func write(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// read returns a file's content, or "<absent>".
func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}

func ptr[T any](v T) *T { return &v }

func TestV2Resources(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   specs.LinuxResources
		want cgroup2.Resources
	}{
		{"nothing", specs.LinuxResources{}, cgroup2.Resources{}},
		{"lowest shares: weight 1", specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr[uint64](2)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{Weight: ptr[uint64](1)}}},
		{"default shares: weight 39", specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr[uint64](1024)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{Weight: ptr[uint64](39)}}},
		{"highest shares: weight 10000", specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr[uint64](262144)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{Weight: ptr[uint64](10000)}}},
		{"quota and period", specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: ptr[int64](50000), Period: ptr[uint64](100000)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{Max: "50000 100000"}}},
		{"period without quota: no limit", specs.LinuxResources{CPU: &specs.LinuxCPU{Period: ptr[uint64](100000)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{Max: "max 100000"}}},
		{"quota without period: left out", specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: ptr[int64](50000)}},
			cgroup2.Resources{CPU: &cgroup2.CPU{}}},
		{"memory limit", specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr[int64](20 << 20)}},
			cgroup2.Resources{Memory: &cgroup2.Memory{Max: ptr[int64](20 << 20)}}},
		{"memory without a limit: left out", specs.LinuxResources{Memory: &specs.LinuxMemory{Reservation: ptr[int64](1 << 20)}},
			cgroup2.Resources{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := v2Resources(&tc.in); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("v2Resources = %s, want %s", show(*got), show(tc.want))
			}
		})
	}
}

// show prints the resources v2Resources sets, pointers followed.
func show(r cgroup2.Resources) string {
	var b strings.Builder
	if r.CPU != nil {
		fmt.Fprintf(&b, "cpu{max %q", r.CPU.Max)
		if r.CPU.Weight != nil {
			fmt.Fprintf(&b, " weight %d", *r.CPU.Weight)
		}
		b.WriteString("} ")
	}
	if r.Memory != nil && r.Memory.Max != nil {
		fmt.Fprintf(&b, "memory{max %d}", *r.Memory.Max)
	}
	return b.String()
}

func TestOOMKills(t *testing.T) {
	const path = "/podrun/pod1"
	for _, tc := range []struct {
		name    string
		mode    cgroups.CGMode
		file    string // relative to the root; "" writes none
		content string
		want    uint64
		wantErr bool
	}{
		{"v1 counter", cgroups.Legacy, "memory/podrun/pod1/memory.oom_control",
			"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3, false},
		{"hybrid reads v1's memory", cgroups.Hybrid, "memory/podrun/pod1/memory.oom_control", "oom_kill 1\n", 1, false},
		{"v1 kernel without the counter", cgroups.Legacy, "memory/podrun/pod1/memory.oom_control",
			"oom_kill_disable 0\nunder_oom 0\n", 0, false},
		{"v2 counter", cgroups.Unified, "podrun/pod1/memory.events",
			"low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 0\n", 2, false},
		{"v2 reads not v1's file", cgroups.Unified, "memory/podrun/pod1/memory.oom_control", "oom_kill 3\n", 0, false},
		{"no cgroup", cgroups.Unified, "", "", 0, false},
		{"garbled counter", cgroups.Unified, "podrun/pod1/memory.events", "oom_kill many\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Manager{root: t.TempDir(), mode: tc.mode}
			if tc.file != "" {
				write(t, filepath.Join(m.root, tc.file), tc.content)
			}
			got, err := m.OOMKills(path)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("OOMKills = %d, %v; want %d, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestNode(t *testing.T) {
	const (
		withSysResource    = "Name:\tpodrun\nCapEff:\t000001ffffffffff\n"
		withoutSysResource = "Name:\tpodrun\nCapEff:\t00000000a80425fb\n"
	)
	mem := func() (int64, error) { return 8 << 30, nil }
	for _, tc := range []struct {
		name  string
		mode  cgroups.CGMode
		files map[string]string // "proc/..." under the fake /proc/self, "cg/..." under the cgroup root
		mem   func() (int64, error)
		want  resources.Node
	}{
		{"v1 with swap accounting and CAP_SYS_RESOURCE", cgroups.Legacy, map[string]string{
			"cg/memory/memory.memsw.limit_in_bytes": "9223372036854771712\n",
			"proc/status":                           withSysResource,
			"proc/oom_score_adj":                    "-500\n",
		}, mem, resources.Node{MemoryCapacity: 8 << 30, SwapController: true, MinOOMScoreAdj: -1000}},
		{"v1 without swap accounting", cgroups.Legacy, map[string]string{
			"proc/status": withSysResource,
		}, mem, resources.Node{MemoryCapacity: 8 << 30, MinOOMScoreAdj: -1000}},
		{"v2: swap in podrun's own cgroup", cgroups.Unified, map[string]string{
			"proc/cgroup": "0::/system.slice/podrun.service\n",
			"cg/system.slice/podrun.service/memory.swap.max": "max\n",
			"proc/status": withSysResource,
		}, mem, resources.Node{MemoryCapacity: 8 << 30, CgroupV2: true, SwapController: true, MinOOMScoreAdj: -1000}},
		{"v2: swap only in another cgroup", cgroups.Unified, map[string]string{
			"proc/cgroup":                   "0::/system.slice/podrun.service\n",
			"cg/user.slice/memory.swap.max": "max\n",
			"proc/status":                   withSysResource,
		}, mem, resources.Node{MemoryCapacity: 8 << 30, CgroupV2: true, MinOOMScoreAdj: -1000}},
		{"v2: unreadable own cgroup is the root, which has no swap file", cgroups.Unified, map[string]string{
			"cg/memory.swap.max": "max\n",
			"proc/status":        withSysResource,
		}, mem, resources.Node{MemoryCapacity: 8 << 30, CgroupV2: true, SwapController: true, MinOOMScoreAdj: -1000}},
		{"without CAP_SYS_RESOURCE: its own adj is the floor", cgroups.Unified, map[string]string{
			"proc/status":        withoutSysResource,
			"proc/oom_score_adj": "-500\n",
		}, mem, resources.Node{MemoryCapacity: 8 << 30, CgroupV2: true, MinOOMScoreAdj: -500}},
		{"without status: no capability, own adj", cgroups.Legacy, map[string]string{
			"proc/oom_score_adj": "0\n",
		}, mem, resources.Node{MemoryCapacity: 8 << 30, MinOOMScoreAdj: 0}},
		{"without CAP_SYS_RESOURCE, garbled adj: -1000 stays", cgroups.Legacy, map[string]string{
			"proc/status":        withoutSysResource,
			"proc/oom_score_adj": "low\n",
		}, mem, resources.Node{MemoryCapacity: 8 << 30, MinOOMScoreAdj: -1000}},
		{"memory size unknown", cgroups.Legacy, map[string]string{
			"proc/status": withSysResource,
		}, func() (int64, error) { return 0, os.ErrNotExist }, resources.Node{MinOOMScoreAdj: -1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				write(t, filepath.Join(dir, name), content)
			}
			m := Manager{root: filepath.Join(dir, "cg"), mode: tc.mode}
			if got := m.node(filepath.Join(dir, "proc"), tc.mem); got != tc.want {
				t.Errorf("node = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCreateV2(t *testing.T) {
	m := v2Tree(t, "/podrun")
	r := &specs.LinuxResources{
		CPU:    &specs.LinuxCPU{Shares: ptr[uint64](1024), Quota: ptr[int64](50000), Period: ptr[uint64](100000)},
		Memory: &specs.LinuxMemory{Limit: ptr[int64](20 << 20)},
	}
	if err := m.Create("/podrun/pod1", r); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(m.root, "podrun/pod1")
	for file, want := range map[string]string{
		"cpu.weight": "39", "cpu.max": "50000 100000", "memory.max": strconv.Itoa(20 << 20),
	} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// The controllers are given to the cgroup by its parents.
	for _, parent := range []string{m.root, filepath.Join(m.root, "podrun")} {
		if got := read(t, filepath.Join(parent, "cgroup.subtree_control")); got != "+cpu +memory" {
			t.Errorf("%s/cgroup.subtree_control = %q, want %q", parent, got, "+cpu +memory")
		}
	}
}

func TestCreateV2ParentWithoutControllers(t *testing.T) {
	m := v2Tree(t) // no /podrun/cgroup.subtree_control: not a cgroup
	err := m.Create("/podrun/pod1", &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr[uint64](2)}})
	if err == nil || !strings.Contains(err.Error(), "creating cgroup /podrun/pod1") {
		t.Errorf("Create = %v, want an error naming the cgroup", err)
	}
	if exists(filepath.Join(m.root, "podrun/pod1")) {
		t.Error("the half-made cgroup is left behind")
	}
}

func TestCreateV1(t *testing.T) {
	r := &specs.LinuxResources{
		CPU:    &specs.LinuxCPU{Shares: ptr[uint64](1024), Quota: ptr[int64](50000), Period: ptr[uint64](100000)},
		Memory: &specs.LinuxMemory{Limit: ptr[int64](20 << 20)},
	}
	for _, tc := range []struct {
		name    string
		mode    cgroups.CGMode
		unified bool // the pod's cgroup in the unified hierarchy too
	}{
		{"legacy", cgroups.Legacy, false},
		{"hybrid", cgroups.Hybrid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := v1Tree(t, tc.mode)
			if err := m.Create("/podrun/pod1", r); err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string]string{
				"cpu/podrun/pod1/cpu.shares":               "1024",
				"cpu/podrun/pod1/cpu.cfs_quota_us":         "50000",
				"cpu/podrun/pod1/cpu.cfs_period_us":        "100000",
				"memory/podrun/pod1/memory.limit_in_bytes": strconv.Itoa(20 << 20),
			} {
				if got := read(t, filepath.Join(m.root, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if !exists(filepath.Join(m.root, "blkio/podrun/pod1")) {
				t.Error("no blkio cgroup")
			}
			if got := exists(filepath.Join(m.root, "unified/podrun/pod1")); got != tc.unified {
				t.Errorf("cgroup in the unified hierarchy: %t, want %t", got, tc.unified)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tree   func(t *testing.T) Manager
		dirs   []string // the cgroup's directories, relative to the root
		procs  string   // content of the cgroup.procs of the first; "" makes none
		kept   []string // the directories left, of dirs
		errSub string
	}{
		{"v2 not there", func(t *testing.T) Manager { return v2Tree(t) }, nil, "", nil, ""},
		{"v2 empty", func(t *testing.T) Manager { return v2Tree(t) }, []string{"podrun/pod1"}, "", nil, ""},
		{"v2 a process left", func(t *testing.T) Manager { return v2Tree(t) }, []string{"podrun/pod1"}, "4242\n",
			[]string{"podrun/pod1"}, "removing cgroup /podrun/pod1"},
		{"v1 not there", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) }, nil, "", nil, ""},
		{"v1 empty", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) },
			[]string{"cpu/podrun/pod1", "memory/podrun/pod1", "blkio/podrun/pod1"}, "", nil, ""},
		{"v1 in some hierarchies only", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) },
			[]string{"memory/podrun/pod1"}, "", nil, ""},
		// The hierarchies without the process lose the cgroup; the next
		// Remove finishes.
		{"v1 a process left", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) },
			[]string{"cpu/podrun/pod1", "memory/podrun/pod1"}, "4242\n", []string{"cpu/podrun/pod1"},
			"removing cgroup /podrun/pod1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.tree(t)
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(m.root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.procs != "" {
				write(t, filepath.Join(m.root, tc.dirs[0], "cgroup.procs"), tc.procs)
			}
			err := m.Remove("/podrun/pod1")
			if (err == nil) != (tc.errSub == "") || (err != nil && !strings.Contains(err.Error(), tc.errSub)) {
				t.Errorf("Remove = %v, want error %q", err, tc.errSub)
			}
			for _, d := range tc.dirs {
				if got, want := exists(filepath.Join(m.root, d)), contains(tc.kept, d); got != want {
					t.Errorf("%s there: %t, want %t", d, got, want)
				}
			}
		})
	}
}

func TestSetIOWeight(t *testing.T) {
	files := map[string]string{"io.weight": "default 50", "io.bfq.weight": "50", "blkio.weight": "50", "blkio.bfq.weight": "50"}
	for _, tc := range []struct {
		name    string
		offered []string // the weight files the cgroup directory has
		written string   // the one written, "" none
	}{
		{"iocost", []string{"io.weight", "io.bfq.weight"}, "io.weight"},
		{"v2 BFQ", []string{"io.bfq.weight"}, "io.bfq.weight"},
		{"v1 CFQ", []string{"blkio.weight", "blkio.bfq.weight"}, "blkio.weight"},
		{"v1 BFQ", []string{"blkio.bfq.weight"}, "blkio.bfq.weight"},
		{"no I/O weight: none is made", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.offered {
				write(t, filepath.Join(dir, f), "100")
			}
			if got := setIOWeight(dir, files); got != (tc.written != "") {
				t.Errorf("setIOWeight = %t, want %t", got, tc.written != "")
			}
			for _, f := range []string{"io.weight", "io.bfq.weight", "blkio.weight", "blkio.bfq.weight"} {
				want := "<absent>"
				switch {
				case f == tc.written:
					want = files[f]
				case contains(tc.offered, f):
					want = "100"
				}
				if got := read(t, filepath.Join(dir, f)); got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestJoinV2(t *testing.T) {
	w := Weights{CPUShares: 256, IOWeight: 50}
	for _, tc := range []struct {
		name     string
		ioWeight bool // the kernel offers io.weight
	}{
		{"with iocost", true},
		{"without an I/O weight", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := v2Tree(t, "/podrun")
			dir := filepath.Join(m.root, "podrun/keeper")
			if tc.ioWeight {
				write(t, filepath.Join(dir, "io.weight"), "default 100")
			}
			io, err := m.Join("/podrun/keeper", 4242, w)
			if err != nil || io != tc.ioWeight {
				t.Fatalf("Join = %t, %v; want %t, nil", io, err, tc.ioWeight)
			}
			want := map[string]string{"cgroup.procs": "4242", "cpu.weight": "10", "io.weight": "<absent>"}
			if tc.ioWeight {
				want["io.weight"] = "default 50"
			}
			for file, want := range want {
				if got := read(t, filepath.Join(dir, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
		})
	}
}

func TestJoinV1(t *testing.T) {
	m := v1Tree(t, cgroups.Legacy)
	write(t, filepath.Join(m.root, "blkio/podrun/keeper/blkio.weight"), "500")
	io, err := m.Join("/podrun/keeper", 4242, Weights{CPUShares: 256, IOWeight: 50})
	if err != nil || !io {
		t.Fatalf("Join = %t, %v; want true, nil", io, err)
	}
	for file, want := range map[string]string{
		"cpu/podrun/keeper/cpu.shares":      "256",
		"blkio/podrun/keeper/blkio.weight":  "50",
		"cpu/podrun/keeper/cgroup.procs":    "4242",
		"memory/podrun/keeper/cgroup.procs": "4242",
		"blkio/podrun/keeper/cgroup.procs":  "4242",
	} {
		if got := read(t, filepath.Join(m.root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestJoinGivesUp(t *testing.T) {
	m := v2Tree(t) // /podrun is not a cgroup: every attempt fails
	_, err := m.Join("/podrun/keeper", 4242, Weights{CPUShares: 256, IOWeight: 50})
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "joining cgroup /podrun/keeper") {
		t.Errorf("Join = %v, want a wrapped ErrNotExist naming the cgroup", err)
	}
}

func TestLeave(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name   string
		tree   func(t *testing.T) Manager
		roots  []string // the hierarchies' roots, relative to the tree's
		others string   // the cgroup's cgroup.procs once this process has left
		gone   bool
	}{
		{"v2 last to leave removes it", func(t *testing.T) Manager { return v2Tree(t, "/podrun") },
			[]string{"."}, "", true},
		{"v2 another keeper stays in it", func(t *testing.T) Manager { return v2Tree(t, "/podrun") },
			[]string{"."}, "4242\n", false},
		{"v1 last to leave removes it", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) },
			[]string{"cpu", "memory", "blkio"}, "", true},
		{"v1 another keeper stays in it", func(t *testing.T) Manager { return v1Tree(t, cgroups.Legacy) },
			[]string{"cpu", "memory", "blkio"}, "4242\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.tree(t)
			if _, err := m.Join("/podrun/keeper", os.Getpid(), Weights{CPUShares: 256, IOWeight: 50}); err != nil {
				t.Fatal(err)
			}
			// The kernel takes the pid out of the cgroup it leaves.
			for _, r := range tc.roots {
				write(t, filepath.Join(m.root, r, "podrun/keeper/cgroup.procs"), tc.others)
			}
			if err := m.Leave("/podrun/keeper"); err != nil {
				t.Fatalf("Leave: %v", err)
			}
			for _, r := range tc.roots {
				if got := read(t, filepath.Join(m.root, r, "cgroup.procs")); got != self {
					t.Errorf("%s: the root cgroup's cgroup.procs = %q, want this process %s", r, got, self)
				}
				if got := exists(filepath.Join(m.root, r, "podrun/keeper")); got == tc.gone {
					t.Errorf("%s: cgroup left: %t, want %t", r, got, !tc.gone)
				}
			}
		})
	}
}
