package waves

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// fakeNode is a Lifecycle on a list of pods: it logs each SyncPod
// ("key wait") and fails the keys in fail; SyncBeside syncs the pods
// not set aside, then runs apart.
type fakeNode struct {
	pods []*run.PodInfo
	fail map[string]bool

	mu    sync.Mutex
	log   []string
	aside map[string]bool
}

func (f *fakeNode) Pods(context.Context) ([]*run.PodInfo, error) { return f.pods, nil }

func (f *fakeNode) SyncPod(_ context.Context, key string, w run.Want, o run.UpOptions, _ []*run.PodInfo) []run.Result {
	f.mu.Lock()
	f.log = append(f.log, key+" "+string(o.Wait))
	f.mu.Unlock()
	res := run.Result{Pod: key, Action: run.Removed}
	for _, p := range w.Pods {
		if p.Key() == key {
			res.UID, res.Action = p.UID, run.Created
		}
	}
	if f.fail[key] {
		res.Err = errors.New("failed")
	}
	return []run.Result{res}
}

func (f *fakeNode) SyncBeside(ctx context.Context, w run.Want, o run.UpOptions, snapshot []*run.PodInfo, aside map[string]bool,
	apart func(record func(key string, rs []run.Result))) []run.Result {
	f.aside = aside
	var mu sync.Mutex
	var out []run.Result
	record := func(_ string, rs []run.Result) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, rs...)
	}
	for _, k := range w.Others(snapshot) {
		if !aside[k] {
			record(k, f.SyncPod(ctx, k, w, o, snapshot))
		}
	}
	for _, p := range w.Pods {
		if !aside[p.Key()] {
			record(p.Key(), f.SyncPod(ctx, p.Key(), w, o, snapshot))
		}
	}
	apart(record)
	return out
}

// deployment is a Deployment of replicas pods web whose app has env V=v.
func deployment(t *testing.T, replicas, v string) *manifest.Set {
	t.Helper()
	set, err := manifest.Options{}.ParseUnresolved("web.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: `+replicas+`
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "busybox:1", env: [{name: V, value: "`+v+`"}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// onNode is the node running set's pods.
func onNode(set *manifest.Set) []*run.PodInfo {
	var out []*run.PodInfo
	for _, p := range set.Pods {
		out = append(out, &run.PodInfo{UID: p.UID, Namespace: p.Namespace, Name: p.Name, Pod: p.Pod})
	}
	return out
}

// want is what up of set asks, owning the Deployment's pods.
func want(set *manifest.Set) run.Want {
	return run.Want{Pods: set.Pods, Prune: true,
		Owns: func(p *run.PodInfo) bool { return p.Pod != nil && manifest.Workload(p.Pod) == "Deployment/web" }}
}

func keys(set *manifest.Set) []string {
	var out []string
	for _, p := range set.Pods {
		out = append(out, p.Key())
	}
	slices.Sort(out)
	return out
}

// TestPlans: only a workload's change that takes more than one wave is
// rolled out in waves; its pods, old and new, are set aside.
func TestPlans(t *testing.T) {
	v1, v2 := deployment(t, "2", "1"), deployment(t, "2", "2")
	tests := []struct {
		name   string
		want   run.Want
		rolls  map[string]manifest.Rollout
		node   []*run.PodInfo
		waves  int      // of the one rollout; 0: none
		rolled []string // set aside, sorted
	}{
		{name: "no rollouts", want: want(v2), node: onNode(v1)},
		{name: "unchanged", want: want(v1), rolls: v1.Rollouts, node: onNode(v1)},
		{name: "first start, one wave", want: want(v1), rolls: v1.Rollouts},
		{name: "template changed", want: want(v2), rolls: v2.Rollouts, node: onNode(v1), waves: 4, rolled: slices.Sorted(slices.Values(append(keys(v1), keys(v2)...)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rolled := plans(tt.want, tt.rolls, tt.node)
			var gotRolled []string
			for k := range rolled {
				gotRolled = append(gotRolled, k)
			}
			slices.Sort(gotRolled)
			if !slices.Equal(gotRolled, tt.rolled) {
				t.Errorf("set aside %v, want %v", gotRolled, tt.rolled)
			}
			switch {
			case tt.waves == 0 && len(got) != 0:
				t.Errorf("rollouts %+v, want none", got)
			case tt.waves > 0 && (len(got) != 1 || got[0].workload != "default/Deployment/web" || len(got[0].waves) != tt.waves):
				t.Errorf("rollouts %+v, want default/Deployment/web in %d waves", got, tt.waves)
			}
		})
	}
}

// TestRolloutInWaves: a Deployment of 2 whose template changes is rolled
// out one pod at a time, each wave once the one before has ended: a new
// pod waited for until Ready before an old one goes down, and the second
// new pod started after that (the last wave as --wait says).
func TestRolloutInWaves(t *testing.T) {
	v1, v2 := deployment(t, "2", "1"), deployment(t, "2", "2")
	node := &fakeNode{pods: onNode(v1)}
	rs := Sync(context.Background(), node, want(v2), v2.Rollouts, run.UpOptions{Wait: run.WaitRunning})
	olds, news := keys(v1), []string{v2.Pods[0].Key(), v2.Pods[1].Key()}
	wantLog := []string{news[0] + " ready", olds[0] + " ready", news[1] + " ready", olds[1] + " running"}
	if !slices.Equal(node.log, wantLog) {
		t.Errorf("syncs:\n got %q\nwant %q", node.log, wantLog)
	}
	if len(node.aside) != 4 {
		t.Errorf("set aside %v, want the 4 pods of the rollout", node.aside)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("result %+v", r)
		}
	}
	if len(rs) != 4 {
		t.Errorf("%d results, want 4", len(rs))
	}
}

// TestRolloutStopsAtAFailedWave: a wave that fails stops the rollout: the
// old pods still there stay, the new pods not started are reported not
// started.
func TestRolloutStopsAtAFailedWave(t *testing.T) {
	v1, v2 := deployment(t, "2", "1"), deployment(t, "2", "2")
	first := v2.Pods[0].Key()
	node := &fakeNode{pods: onNode(v1), fail: map[string]bool{first: true}}
	rs := Sync(context.Background(), node, want(v2), v2.Rollouts, run.UpOptions{Wait: run.WaitRunning})
	if want := []string{first + " ready"}; !slices.Equal(node.log, want) {
		t.Errorf("syncs %q, want only %q", node.log, want)
	}
	var notStarted *run.Result
	for i, r := range rs {
		if r.Pod == v2.Pods[1].Key() {
			notStarted = &rs[i]
		}
	}
	if notStarted == nil || notStarted.UID != v2.Pods[1].UID || notStarted.Err == nil ||
		!strings.Contains(notStarted.Err.Error(), "the rollout of default/Deployment/web stopped at pod "+first) {
		t.Errorf("result of the pod not started: %+v", notStarted)
	}
}

// TestSyncWithoutWaves: pods of no workload are all synced beside, none
// set aside.
func TestSyncWithoutWaves(t *testing.T) {
	v1 := deployment(t, "2", "1")
	node := &fakeNode{}
	rs := Sync(context.Background(), node, run.Want{Pods: v1.Pods}, nil, run.UpOptions{Wait: run.WaitReady})
	if len(node.aside) != 0 || len(rs) != 2 || len(node.log) != 2 {
		t.Errorf("set aside %v, results %+v, syncs %q: want both synced beside", node.aside, rs, node.log)
	}
}
