package run

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
)

// rollout is one workload's change, in the waves plan.Waves orders.
type rollout struct {
	workload string // "Deployment/web"
	waves    [][]string
}

// rollouts are the changes of w's workloads that take more than one wave,
// and the pods (namespace/name) they act on: a workload's pods that stay
// as they are, or that start or go in one wave, are acted on with the
// other pods.
func (w Want) rollouts(snapshot []*PodInfo) ([]rollout, map[string]bool) {
	if len(w.Rollouts) == 0 {
		return nil, nil
	}
	changes := map[string]*plan.Change{}
	change := func(workload string) *plan.Change {
		if changes[workload] == nil {
			changes[workload] = &plan.Change{}
		}
		return changes[workload]
	}
	onNode := map[string][]*PodInfo{}
	for _, p := range snapshot {
		onNode[p.Key()] = append(onNode[p.Key()], p)
	}
	for _, p := range w.Pods {
		wl := p.Namespace + "/" + manifest.Workload(p.Pod)
		if _, ok := w.Rollouts[wl]; !ok {
			continue
		}
		c, there := change(wl), onNode[p.Key()]
		switch {
		case len(there) == 0:
			c.Create = append(c.Create, p.Key())
		case len(there) == 1 && there[0].UID == p.UID:
			c.Keep = append(c.Keep, p.Key())
		default:
			c.Replace = append(c.Replace, p.Key())
		}
	}
	for _, k := range w.Others(snapshot) {
		for _, p := range onNode[k] {
			if p.Pod == nil || !w.Owns(p) {
				continue
			}
			wl := p.Namespace + "/" + manifest.Workload(p.Pod)
			if _, ok := w.Rollouts[wl]; ok {
				change(wl).Remove = append(change(wl).Remove, k)
				break
			}
		}
	}
	var out []rollout
	rolled := map[string]bool{}
	for wl, c := range changes {
		waves := plan.Waves(w.Rollouts[wl], *c)
		if len(waves) < 2 {
			continue
		}
		out = append(out, rollout{workload: wl, waves: waves})
		for _, wave := range waves {
			for _, k := range wave {
				rolled[k] = true
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].workload < out[j].workload })
	return out, rolled
}

// rollOut carries out one workload's waves, each once the one before has
// ended: the pods a wave starts are waited for until Ready (whatever
// --wait says, as a controller waits for availability), except in the
// last wave. A wave that fails stops the rollout: the old pods still there
// stay, the new pods not started are reported not started.
func (h *Host) rollOut(ctx context.Context, r rollout, w Want, o UpOptions, snapshot []*PodInfo, record func(string, []Result)) {
	var stopped string // the pod the rollout stopped at
	for i, wave := range r.waves {
		if stopped != "" {
			for _, k := range wave {
				if wants(w, k) {
					record(k, []Result{{Pod: k, UID: wantedUID(w, k), Err: fmt.Errorf(
						"pod %s not started: the rollout of %s stopped at pod %s; the old pods still there stay", k, r.workload, stopped)}})
				}
			}
			continue
		}
		wo := o
		if i < len(r.waves)-1 && wo.Wait == WaitRunning {
			wo.Wait = WaitReady
		}
		if i > 0 { // what the waves before changed, for admission
			if now, err := h.Pods(ctx); err == nil {
				snapshot = now
			}
		}
		var mu sync.Mutex
		h.eachKey(wave, func(key string) {
			rs := h.SyncPod(ctx, key, w, wo, snapshot)
			for _, res := range rs {
				if res.Err != nil {
					mu.Lock()
					if stopped == "" || key < stopped {
						stopped = key
					}
					mu.Unlock()
				}
			}
			record(key, rs)
		})
	}
}

// wantedUID is the UID of the pod w wants under key.
func wantedUID(w Want, key string) string {
	for _, p := range w.Pods {
		if p.Key() == key {
			return p.UID
		}
	}
	return ""
}
