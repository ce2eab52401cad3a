package run

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/podrun/podrun/manifest"
)

// TestRolloutInWaves: a Deployment of 2 whose template changes is rolled
// out one pod at a time: a new pod is Ready (its last step done) before an
// old one goes down, and the second new pod starts after that.
func TestRolloutInWaves(t *testing.T) {
	tp := newTwoProcesses(t)
	var mu sync.Mutex
	var order []string
	d := tp.m.deps(tp.eng)
	d.Locks = tp.locks
	h := NewHost(tp.cfg, d, func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Step == "down":
			order = append(order, "down "+e.Pod)
		case (e.Step == "wait: ready" || e.Step == "record") && e.Err == nil:
			order = append(order, "up "+e.Pod)
		}
	}, nil)
	t.Cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	deployment := func(v string) *manifest.Set {
		set, err := manifest.Options{}.ParseUnresolved("web.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
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
	sync := func(set *manifest.Set) {
		t.Helper()
		w := Want{Pods: set.Pods, Rollouts: set.Rollouts, Prune: true,
			Owns: func(p *PodInfo) bool { return p.Pod != nil && manifest.Workload(p.Pod) == "Deployment/web" }}
		for _, r := range h.Sync(ctx, w, UpOptions{Wait: WaitRunning}) {
			if r.Err != nil {
				t.Fatalf("sync: %v", r.Err)
			}
		}
	}
	v1, v2 := deployment("1"), deployment("2")
	sync(v1)
	mu.Lock()
	order = nil
	mu.Unlock()
	sync(v2)
	olds := []string{"default/" + v1.Pods[0].Name, "default/" + v1.Pods[1].Name}
	slices.Sort(olds) // old pods go in name order
	new0, new1 := "default/"+v2.Pods[0].Name, "default/"+v2.Pods[1].Name
	want := strings.Join([]string{"up " + new0, "down " + olds[0], "up " + new1, "down " + olds[1]}, ", ")
	if got := strings.Join(order, ", "); got != want {
		t.Errorf("rollout order:\n got %s\nwant %s", got, want)
	}
	pods, err := h.Pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Key())
	}
	wantPods := []string{new0, new1}
	slices.Sort(names)
	slices.Sort(wantPods)
	if !slices.Equal(names, wantPods) {
		t.Errorf("pods after the rollout %v, want %s and %s", names, new0, new1)
	}
}
