package run

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// TestHistoryKeepsReadyVersions: a pod waited for until Ready is recorded
// as its newest version, with the objects it was given; up again of the
// same version records nothing more; down forgets it.
func TestHistoryKeepsReadyVersions(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	revs, err := p.h.History("default/web")
	if err != nil || len(revs) != 1 {
		t.Fatalf("History = %v, %v; want one version", revs, err)
	}
	if r := revs[0]; r.Revision != 1 || r.Hash != p.pod.Hash || r.UID != p.pod.UID || r.Pod.Name != "web" || r.Ready.IsZero() {
		t.Fatalf("recorded %+v, want revision 1 of the pod as applied", r)
	}
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil || res.Action != Unchanged {
		t.Fatalf("second Up = %+v", res)
	}
	if revs, _ := p.h.History("default/web"); len(revs) != 1 {
		t.Fatalf("after the same version again: %d versions, want 1", len(revs))
	}
	if down := p.h.Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{}); down[0].Err != nil {
		t.Fatal(down[0].Err)
	}
	if revs, _ := p.h.History("default/web"); revs != nil {
		t.Fatalf("after down: %v, want nothing kept", revs)
	}
}

// TestHistoryRecordsASupervisedPodOnceReady: a pod not waited for
// (--wait running, the daemon's) is recorded by its supervision once
// Ready.
func TestHistoryRecordsASupervisedPodOnceReady(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Foreground: true}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(5 * time.Millisecond) {
		revs, err := p.h.History("default/web")
		if err == nil && len(revs) == 1 && revs[0].Hash == p.pod.Hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("History = %v, %v; want the pod's version once Ready", revs, err)
		}
	}
}

// TestUpRollsBackAChangeThatFails: a changed pod whose app exits at once
// (Ready for a moment) does not stay Ready; with Rollback the version
// before it (the last Ready one) is started again and the failure is
// reported, saying so.
func TestUpRollsBackAChangeThatFails(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	good := p.pod
	bad := changedPod(t, p, "v2")
	setup := ContainerID(bad.UID, "setup", 0)
	apps := strings.TrimSuffix(ContainerID(bad.UID, "app", 0), "0") // every attempt
	hook := p.eng.OnCall
	p.eng.OnCall = func(call string) {
		hook(call)
		switch id, _ := strings.CutPrefix(call, "Start "); {
		case id == setup:
			go p.eng.Exit(setup, 0)
		case strings.HasPrefix(call, "Start "+apps):
			go p.eng.Exit(id, 1)
		}
	}
	rs := p.h.Up(ctx, &manifest.Set{Pods: []*manifest.Pod{bad}}, UpOptions{Wait: WaitReady, Timeout: 3 * time.Second, Rollback: true})
	if rs[0].Err == nil || rs[0].Action != Replaced {
		t.Fatalf("Up of the failing change = %+v, want Replaced with an error", rs[0])
	}
	if !strings.Contains(rs[0].Err.Error(), "rolled back to revision 1") || rs[0].Phase != corev1.PodRunning {
		t.Errorf("error %q, phase %s: want it to say rolled back to revision 1, Running", rs[0].Err, rs[0].Phase)
	}
	pods, err := p.h.Pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, i := range pods {
		if i.Key() == "default/web" {
			uids = append(uids, i.UID)
		}
	}
	if len(uids) != 1 || uids[0] != good.UID {
		t.Errorf("pods named default/web: %v, want the version before, %s", uids, good.UID)
	}
}

// changedPod is the pipeline's pod with its app's env changed to value.
func changedPod(t *testing.T, p *pipeline, value string) *manifest.Pod {
	t.Helper()
	doc := strings.Replace(pipelinePod, `- {name: app, image: "busybox:1",`, `- {name: app, image: "busybox:1", env: [{name: V, value: `+value+`}],`, 1)
	set, err := manifest.Options{}.ParseUnresolved("pod.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	if set.Pods[0].UID == p.pod.UID {
		t.Fatal("the changed pod has the same UID")
	}
	return set.Pods[0]
}
