package run

import (
	"testing"
	"time"
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
