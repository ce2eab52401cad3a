package run

import (
	"context"
	"path"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/spec"
)

// podCgroup is the pod cgroup of pod uid in podrun's containerd namespace.
func (h *Host) podCgroup(uid string) string {
	return spec.PodCgroup(h.cfg.Namespace, uid)
}

// containerCgroup is the cgroup of container id of pod uid (the spec's
// cgroupsPath).
func (h *Host) containerCgroup(uid, id string) string {
	return path.Join(h.podCgroup(uid), id)
}

// oomKilled reports whether the OOM killer killed a process of container id
// of pod uid: the reason the kubelet gives when no podrun saw containerd's
// OOM event, read from its cgroup before its task is deleted.
func (h *Host) oomKilled(uid, id string) bool {
	n, err := h.cgroups.OOMKills(h.containerCgroup(uid, id))
	return err == nil && n > 0
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
