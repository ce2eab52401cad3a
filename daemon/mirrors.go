package daemon

import (
	"sort"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/mirror"
	"github.com/podrun/podrun/run"
)

// Mirrors is told what the node runs of its own after every sync and every
// listing of the node: the cluster's mirror pods of the static pods
// (mirror.Keeper). It must return at once: the static pods never wait on
// the cluster.
type Mirrors interface {
	Observe(mirror.Snapshot)
}

// observeStatic tells Options.Mirrors, if any, the static pods wanted (as
// they run: a rollback's version stands in for its file's) with their
// status on the node, and the daemon's pods on the node no source wants
// any more (being stopped), from the node's listing pods; never the API
// server's own pods (they are no mirror's).
func (d *Daemon) observeStatic(pods []*run.PodInfo) {
	if d.o.Mirrors == nil {
		return
	}
	var own []*run.PodInfo
	for _, p := range d.owned(pods) {
		if !d.jobPod(p) && (d.src.API == "" || p.Source != d.src.API) {
			own = append(own, p)
		}
	}
	d.o.Mirrors.Observe(staticSnapshot(d.static, own))
}

// staticSnapshot is the static pods wanted, each with the status of the
// pod of its UID on the node (none while another version, or nothing,
// runs), and the keys of the pods on the node that are not wanted.
func staticSnapshot(wanted []*manifest.Pod, onNode []*run.PodInfo) mirror.Snapshot {
	var snap mirror.Snapshot
	want := map[string]bool{}
	for _, p := range wanted {
		want[p.Key()] = true
		s := mirror.Static{Pod: p.Pod}
		for _, n := range onNode {
			if n.UID == p.UID && n.Pod != nil {
				s.Status = n.Pod.Status.DeepCopy()
			}
		}
		snap.Static = append(snap.Static, s)
	}
	stopping := map[string]bool{}
	for _, n := range onNode {
		if !want[n.Key()] {
			stopping[n.Key()] = true
		}
	}
	for k := range stopping {
		snap.Stopping = append(snap.Stopping, k)
	}
	sort.Strings(snap.Stopping)
	return snap
}
