// Package waves rolls out a workload's changed pods in waves, as a
// Deployment's or StatefulSet's controller does on one node: it decides
// the order (plan.Waves, pure) and has the pod lifecycle (run.Host) bring
// up and take down each wave's pods, each wave once the one before has
// ended. `podrun up` syncs its pods through it.
package waves

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
)

// Lifecycle is what the waves need of the pod lifecycle (run.Host).
type Lifecycle interface {
	// Pods lists the node's pods.
	Pods(ctx context.Context) ([]*run.PodInfo, error)
	// SyncPod brings pod key to what w asks, under its lock.
	SyncPod(ctx context.Context, key string, w run.Want, o run.UpOptions, snapshot []*run.PodInfo) []run.Result
	// SyncBeside syncs the pods of w that aside does not name, beside
	// apart, which acts on those it names.
	SyncBeside(ctx context.Context, w run.Want, o run.UpOptions, snapshot []*run.PodInfo, aside map[string]bool,
		apart func(record func(key string, rs []run.Result))) []run.Result
}

// Sync brings the node to what w asks, as run.Host.Sync, each workload's
// changes that take more than one wave rolled out in its waves (rollouts,
// by "namespace/Kind/name": manifest.Set.Rollouts), beside the other pods'
// changes, once the other pods to remove are gone.
func Sync(ctx context.Context, l Lifecycle, w run.Want, rollouts map[string]manifest.Rollout, o run.UpOptions) []run.Result {
	snapshot, err := l.Pods(ctx)
	if err != nil {
		out := make([]run.Result, len(w.Pods))
		for i, p := range w.Pods {
			out[i] = run.Result{Pod: p.Key(), UID: p.UID, Err: err}
		}
		return out
	}
	changes, rolled := plans(w, rollouts, snapshot)
	return l.SyncBeside(ctx, w, o, snapshot, rolled, func(record func(string, []run.Result)) {
		var wg sync.WaitGroup
		for _, r := range changes {
			wg.Go(func() { rollOut(ctx, l, r, w, o, snapshot, record) })
		}
		wg.Wait()
	})
}

// rollout is one workload's change, in the waves plan.Waves orders.
type rollout struct {
	workload string // "Deployment/web"
	waves    [][]string
}

// plans are the changes of w's workloads (rollouts) that take more than
// one wave, and the pods (namespace/name) they act on: a workload's pods
// that stay as they are, or that start or go in one wave, are acted on
// with the other pods.
func plans(w run.Want, rollouts map[string]manifest.Rollout, snapshot []*run.PodInfo) ([]rollout, map[string]bool) {
	if len(rollouts) == 0 {
		return nil, nil
	}
	changes := map[string]*plan.Change{}
	change := func(workload string) *plan.Change {
		if changes[workload] == nil {
			changes[workload] = &plan.Change{}
		}
		return changes[workload]
	}
	onNode := map[string][]*run.PodInfo{}
	for _, p := range snapshot {
		onNode[p.Key()] = append(onNode[p.Key()], p)
	}
	for _, p := range w.Pods {
		wl := p.Namespace + "/" + manifest.Workload(p.Pod)
		if _, ok := rollouts[wl]; !ok {
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
			if _, ok := rollouts[wl]; ok {
				change(wl).Remove = append(change(wl).Remove, k)
				break
			}
		}
	}
	var out []rollout
	rolled := map[string]bool{}
	for wl, c := range changes {
		waves := plan.Waves(rollouts[wl], *c)
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
func rollOut(ctx context.Context, l Lifecycle, r rollout, w run.Want, o run.UpOptions, snapshot []*run.PodInfo, record func(string, []run.Result)) {
	uids := map[string]string{} // of the wanted pods, by key (the first one's)
	for _, p := range w.Pods {
		if _, ok := uids[p.Key()]; !ok {
			uids[p.Key()] = p.UID
		}
	}
	var stopped string // the pod the rollout stopped at
	for i, wave := range r.waves {
		if stopped != "" {
			for _, k := range wave {
				if uid, ok := uids[k]; ok {
					record(k, []run.Result{{Pod: k, UID: uid, Err: fmt.Errorf(
						"pod %s not started: the rollout of %s stopped at pod %s; the old pods still there stay", k, r.workload, stopped)}})
				}
			}
			continue
		}
		wo := o
		if i < len(r.waves)-1 && wo.Wait == run.WaitRunning {
			wo.Wait = run.WaitReady
		}
		if i > 0 { // what the waves before changed, for admission
			if now, err := l.Pods(ctx); err == nil {
				snapshot = now
			}
		}
		var mu sync.Mutex
		eachKey(wave, func(key string) {
			rs := l.SyncPod(ctx, key, w, wo, snapshot)
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

// eachKey runs fn for each distinct key, concurrently, and waits.
func eachKey(keys []string, fn func(key string)) {
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			wg.Go(func() { fn(k) })
		}
	}
	wg.Wait()
}
