package run

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/spec"
)

// podCgroup is the pod cgroup of pod uid in podrun's containerd namespace.
func (h *Host) podCgroup(uid string) string {
	return spec.PodCgroup(h.cfg.Namespace, uid)
}

// createPodCgroup is the "pod cgroup" step: the pod's cgroup with its limits
// (resources.Pod), before the pause starts in it.
func (r *podRun) createPodCgroup(context.Context) error {
	return r.h.cgroups.Create(r.h.podCgroup(r.pod.UID), resources.Pod(r.pod.Pod))
}

func (r *podRun) removePodCgroup(context.Context) error {
	return r.h.cgroups.Remove(r.h.podCgroup(r.pod.UID))
}

// pauseResources are the pause container's limits and oom_score_adj: those
// the CRI plugin gives every sandbox.
func (h *Host) pauseResources() (*specs.LinuxResources, int) {
	shares := uint64(resources.SandboxCPUShares)
	return &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}, resources.SandboxOOMScoreAdj(h.node())
}
