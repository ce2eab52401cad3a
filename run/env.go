// A container's environment: what its env and envFrom read (ConfigMaps,
// Secrets, the downward API, env files of earlier containers), resolved at
// each of its starts.

package run

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/volumes"
)

// envSources returns what the env valueFrom and envFrom of container c
// read. It is called at each start of the container, as the kubelet resolves
// the environment at each start: the pod's IPs are known by then
// (containers start after CNI), and the node's facts are read afresh — only
// when c's env asks for them (fieldRef, resourceFieldRef), as most
// containers' do not.
func (r *podRun) envSources(c *corev1.Container) (spec.EnvSources, error) {
	info := downward.Info{Pod: r.pod.Pod}
	if usesDownward(c) {
		info.PodIPs = r.state.PodIPs // known once the network is up (prepareApps skips c before)
		node, err := downward.NodeAllocatable(r.h.cfg.Root)
		if err != nil {
			return spec.EnvSources{}, err
		}
		if info.NodeName, err = downward.NodeName(); err != nil {
			return spec.EnvSources{}, err
		}
		info.Node = node
		if ips := r.h.hostIPs(); len(ips) > 0 {
			info.HostIP = ips[0].String() // as list.go reports status.hostIP
		}
	}
	r.objMu.Lock()
	defer r.objMu.Unlock()
	return spec.EnvSources{ConfigMaps: r.pod.ConfigMaps, Secrets: r.pod.Secrets, Downward: info, EnvFile: r.envFile}, nil
}

// envFile reads an env file an earlier container wrote into one of the
// pod's emptyDir volumes (fileKeyRef), inside the volume by descriptor.
func (r *podRun) envFile(volume, path string) (map[string]string, error) {
	dir, ok := r.vols.Paths[volume]
	if !ok {
		return nil, fmt.Errorf("no volume %q", volume)
	}
	return volumes.ReadEnvFile(dir, path)
}

// usesDownward reports whether c's env reads the downward API.
func usesDownward(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.ValueFrom != nil && (e.ValueFrom.FieldRef != nil || e.ValueFrom.ResourceFieldRef != nil)
	})
}

// setObjects replaces the ConfigMaps and Secrets the pod's next container
// starts read, as a restarted container on Kubernetes reads the objects of
// the time.
func (r *podRun) setObjects(from *manifest.Pod) {
	r.objMu.Lock()
	defer r.objMu.Unlock()
	r.pod.ConfigMaps, r.pod.Secrets = from.ConfigMaps, from.Secrets
}
