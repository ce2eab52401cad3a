package run

import (
	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/spec"
)

// envSources returns what the env valueFrom and envFrom of the pod's
// containers read. It is called at each container start, as the kubelet
// resolves the environment at each start: the pod's IPs are known by then
// (containers start after CNI), and the node's are read afresh.
func (r *podRun) envSources() (spec.EnvSources, error) {
	node, err := downward.NodeAllocatable(r.h.cfg.Root)
	if err != nil {
		return spec.EnvSources{}, err
	}
	nodeName, err := downward.NodeName()
	if err != nil {
		return spec.EnvSources{}, err
	}
	info := downward.Info{Pod: r.pod.Pod, PodIPs: r.state.PodIPs, NodeName: nodeName, Node: node}
	if ips := sandbox.HostIPs(); len(ips) > 0 {
		info.HostIP = ips[0].String() // as list.go reports status.hostIP
	}
	r.objMu.Lock()
	defer r.objMu.Unlock()
	return spec.EnvSources{ConfigMaps: r.pod.ConfigMaps, Secrets: r.pod.Secrets, Downward: info}, nil
}

// setObjects replaces the ConfigMaps and Secrets the pod's next container
// starts read, as a restarted container on Kubernetes reads the objects of
// the time.
func (r *podRun) setObjects(from *manifest.Pod) {
	r.objMu.Lock()
	defer r.objMu.Unlock()
	r.pod.ConfigMaps, r.pod.Secrets = from.ConfigMaps, from.Secrets
}
