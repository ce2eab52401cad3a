// The node's side of a pod: the steps "pod directory" (createDirs),
// "volumes" (setupVolumes) and "images" (ensureImages), and its config
// volumes kept up to date (UpdateConfigVolumes).

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/volumes"
)

// createDirs makes the pod directory with the pod's record in it first,
// then its tmpfs mounts: a podrun killed in between leaves a directory that
// any podrun finds by its record and removes (down), never one that
// nothing names.
func (r *podRun) createDirs(context.Context) error {
	r.state = &State{UID: r.pod.UID, Hash: r.pod.Hash, Source: r.source, Pod: r.pod.Pod}
	if err := r.h.makeState(r.state); err != nil {
		return err
	}
	if err := r.h.disk.Create(r.layout); err != nil {
		return err
	}
	return r.archiveLogs()
}

// archiveLogs moves aside the logs of an earlier pod with the same UID (the
// same manifest, run again after `down`), so that its files are kept but not
// appended to: each run starts at 0.log like a new pod on Kubernetes.
func (r *podRun) archiveLogs() error {
	dir := logs.PodDir(r.h.cfg.LogDir, r.pod.Namespace, r.pod.Name, r.pod.UID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	old := fmt.Sprintf("%s.%s", dir, r.h.clock.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("keeping the logs of the previous run: %w", err)
	}
	return nil
}

func (r *podRun) removeDirs(context.Context) error { return r.h.disk.Remove(r.layout) }

func (r *podRun) setupVolumes(context.Context) error {
	var err error
	cfg, err := r.h.configFor(r.pod)
	if err != nil {
		return err
	}
	r.vols, err = r.h.disk.Setup(r.layout, r.pod.Pod, cfg, r.h.volumeOptions())
	return err
}

func (r *podRun) undoVolumes(context.Context) error {
	if r.vols == nil {
		return nil
	}
	return r.h.disk.Undo(r.vols)
}

// holdImages keeps image collection away from pod p's images (and the
// pause image) until release: from before its pipeline makes them present
// (or finds them) until its containers, which then show them in use, are
// made.
func (h *Host) holdImages(ctx context.Context, p *manifest.Pod) (release func(), err error) {
	var refs []string
	for _, c := range resources.Containers(p.Pod) {
		if !slices.Contains(refs, c.Image) {
			refs = append(refs, c.Image)
		}
	}
	if h.cfg.PauseImage != "" {
		refs = append(refs, h.cfg.PauseImage)
	}
	return h.imageHolds.Hold(ctx, refs)
}

func (r *podRun) ensureImages(ctx context.Context) error {
	r.images = map[string]engine.Image{}
	for _, c := range resources.Containers(r.pod.Pod) {
		if _, ok := r.images[c.Image]; ok {
			continue
		}
		img, err := r.image(ctx, c.Image, c.ImagePullPolicy, r.pod.PullSecrets) // with back-off (imagepull.go)
		if err != nil {
			return fmt.Errorf("container %q: %w", c.Name, err)
		}
		r.images[c.Image] = img
	}
	if r.h.cfg.PauseImage != "" {
		// The node's credentials only, as the CRI pulls the sandbox image.
		img, err := r.image(ctx, r.h.cfg.PauseImage, corev1.PullIfNotPresent, nil)
		if err != nil {
			return fmt.Errorf("pause image: %w", err)
		}
		r.images[r.h.cfg.PauseImage] = img
	}
	return nil
}

// configFor is what the config volumes of pod p are made of: the objects it
// references and, for downwardAPI items (metadata and resources only, so
// that they can be written before the network exists), the pod and the
// node's allocatable resources.
func (h *Host) configFor(p *manifest.Pod) (*volumes.Config, error) {
	node, err := downward.NodeAllocatable(h.cfg.Root)
	if err != nil {
		return nil, err
	}
	return &volumes.Config{ConfigMaps: p.ConfigMaps, Secrets: p.Secrets, Tokens: p.Tokens,
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
