package spec

import (
	"context"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestContainerResources(t *testing.T) {
	in := baseInput()
	shares, quota, period, mem := uint64(256), int64(25000), uint64(100000), int64(20<<20)
	in.Resources = &specs.LinuxResources{
		CPU:     &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period},
		Memory:  &specs.LinuxMemory{Limit: &mem, Swap: &mem},
		Unified: map[string]string{"memory.oom.group": "1"},
	}
	in.OOMScoreAdj = -997
	s := mustContainer(t, in)
	r := s.Linux.Resources
	if *r.CPU.Shares != 256 || *r.CPU.Quota != 25000 || *r.CPU.Period != 100000 {
		t.Errorf("cpu = %+v", r.CPU)
	}
	if *r.Memory.Limit != 20<<20 || *r.Memory.Swap != 20<<20 {
		t.Errorf("memory = %+v", r.Memory)
	}
	if r.Unified["memory.oom.group"] != "1" {
		t.Errorf("unified = %v", r.Unified)
	}
	if len(r.Devices) == 0 || r.Devices[0].Allow {
		t.Errorf("devices = %+v, want the default deny-all rule kept", r.Devices)
	}
	if p := s.Process.OOMScoreAdj; p == nil || *p != -997 {
		t.Errorf("oomScoreAdj = %v, want -997", p)
	}
	if s.Linux.CgroupsPath != PodCgroup("podrun", testPodUID)+"/ctr-1" {
		t.Errorf("cgroupsPath = %q", s.Linux.CgroupsPath)
	}
}

func TestPauseResources(t *testing.T) {
	in := basePause()
	shares := uint64(2)
	in.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}
	in.OOMScoreAdj = -998
	s, err := Pause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Linux.Resources; r.CPU == nil || *r.CPU.Shares != 2 || r.Memory != nil {
		t.Errorf("resources = %+v, want 2 cpu shares only", r)
	}
	if p := s.Process.OOMScoreAdj; p == nil || *p != -998 {
		t.Errorf("oomScoreAdj = %v, want -998", p)
	}
}
