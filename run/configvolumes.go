package run

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/volumes"
)

// configFor is what the config volumes of pod p are made of: the objects it
// references and, for downwardAPI items (metadata and resources only, so
// that they can be written before the network exists), the pod and the
// node's allocatable resources.
func (h *Host) configFor(p *manifest.Pod) (*volumes.Config, error) {
	node, err := downward.NodeAllocatable(h.cfg.Root)
	if err != nil {
		return nil, err
	}
	return &volumes.Config{ConfigMaps: p.ConfigMaps, Secrets: p.Secrets,
		Downward: downward.Info{Pod: p.Pod, Node: node}}, nil
}

// UpdateConfigVolumes rewrites, in place and atomically, the configMap,
// secret and projected volumes of pod p, which is on the node unchanged,
// from the objects p now references: what the kubelet does when a ConfigMap
// or Secret changes (the pod is not restarted; the env of its running
// containers does not change, containers restarted later read the new
// objects). It reports the volumes whose files changed.
func (h *Host) UpdateConfigVolumes(p *manifest.Pod) error {
	h.mu.Lock()
	r := h.workers[p.UID]
	h.mu.Unlock()
	if r != nil {
		r.setObjects(p) // for the env of containers it restarts
	}
	if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return volumes.Updatable(&v) }) {
		return nil // called at every sync of an unchanged pod
	}
	cfg, err := h.configFor(p)
	if err != nil {
		return err
	}
	changed, err := volumes.UpdateConfig(h.layout(p.UID), p.Pod, cfg)
	if len(changed) > 0 {
		h.report(Event{Pod: p.Key(), Msg: "config volumes updated: " + strings.Join(changed, ", ")})
	}
	if err != nil {
		return fmt.Errorf("pod %s/%s: updating config volumes: %w", p.Namespace, p.Name, err)
	}
	return nil
}
