package run

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
)

// ErrNotAdoptable is returned for a pod that cannot be supervised as it is
// (half made, or its sandbox is gone); the caller replaces it.
var ErrNotAdoptable = errors.New("pod cannot be adopted")

// Adopt takes over the supervision of a pod already on the node (left by a
// podrun process that exited): probes resume,
// exited containers restart per policy with their back-off, and nothing
// that runs is restarted. from, when not nil, is the pod as read from its
// manifest: the objects it references (ConfigMaps, Secrets, pull Secrets),
// which its state on disk does not keep (Secrets never reach the disk), are
// taken from it for the env of restarted containers.
func (h *Host) Adopt(ctx context.Context, uid string, from *manifest.Pod) error {
	r, err := h.rebuild(ctx, uid)
	if err != nil {
		return err
	}
	return h.adopt(ctx, r, from)
}

// adopt supervises the pod r was rebuilt for.
func (h *Host) adopt(ctx context.Context, r *podRun, from *manifest.Pod) error {
	if from != nil {
		r.pod.ConfigMaps, r.pod.Secrets, r.pod.PullSecrets = from.ConfigMaps, from.Secrets, from.PullSecrets
	}
	r.w = supervisor.New(r, h.exits, h.clock, r.pod.Spec.RestartPolicy)
	ctrs, err := h.engine.List(ctx, map[string]string{labels.PodUID: r.pod.UID})
	if err != nil {
		return err
	}
	for i := range r.pod.Spec.InitContainers {
		if c := &r.pod.Spec.InitContainers[i]; status.IsSidecar(c) {
			r.w.Adopt(c, supervisor.RoleSidecar, attemptsOf(ctrs, c.Name))
		}
	}
	if r.pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || !r.finished(ctrs) {
		for i := range r.pod.Spec.Containers {
			c := &r.pod.Spec.Containers[i]
			r.w.Adopt(c, supervisor.RoleApp, attemptsOf(ctrs, c.Name))
		}
	}
	h.supervise(r)
	return nil
}

// finished reports whether every app container of a run-to-completion pod
// has exited for good.
func (r *podRun) finished(ctrs []engine.Container) bool {
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		cur := status.Latest(attemptsOf(ctrs, c.Name))
		if cur == nil || cur.Task.State == engine.TaskRunning {
			return false
		}
		st := status.ContainerStatus(c, []engine.Container{*cur}, "", nil)
		if t := st.State.Terminated; t == nil || (t.ExitCode != 0 && r.pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure) {
			return false
		}
	}
	return true
}

// rebuild reconstructs a complete pod's pipeline context from its state
// file and the runtime, without changing anything.
func (h *Host) rebuild(ctx context.Context, uid string) (*podRun, error) {
	st, err := h.loadState(uid)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Pod == nil || !st.Complete {
		return nil, fmt.Errorf("%w: pod %s was never fully set up", ErrNotAdoptable, uid)
	}
	pod := &manifest.Pod{Pod: st.Pod, UID: st.UID, Hash: st.Hash}
	r := &podRun{h: h, pod: pod, key: pod.Key(), layout: h.layout(uid), state: st,
		source: st.Source, sandboxID: SandboxID(uid), wait: WaitRunning}
	if r.vols, err = h.disk.Locate(r.layout, pod.Pod, h.volumeOptions()); err != nil {
		return nil, fmt.Errorf("%w: volumes: %w", ErrNotAdoptable, err)
	}
	r.images = map[string]engine.Image{}
	for _, c := range resources.Containers(pod.Pod) {
		img, err := h.engine.Image(ctx, c.Image)
		if err != nil {
			return nil, fmt.Errorf("%w: image %q: %w", ErrNotAdoptable, c.Image, err)
		}
		r.images[c.Image] = img
	}
	r.pins = h.pinsOf(uid, pod.Pod)
	if r.pinID, r.pinned = h.pinnedID(uid, pod.Pod); !r.pinned {
		t, err := h.engine.Task(ctx, r.sandboxID)
		if err != nil || t.State != engine.TaskRunning {
			return nil, fmt.Errorf("%w: its sandbox is not running", ErrNotAdoptable)
		}
		r.pausePID = t.PID
	}
	if !pod.Spec.HostNetwork {
		r.netns = sandbox.NetNSPath(sandbox.NetNSName(uid))
	}
	if r.hostname, err = sandbox.Hostname(pod.Pod, h.cfg.ClusterDomain); err != nil {
		return nil, err
	}
	return r, nil
}
