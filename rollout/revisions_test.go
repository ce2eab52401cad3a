package run

import (
	"testing"
	"time"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/progress"
)

// upTwoVersions brings up the pipeline's pod, then a changed version of
// it, both Ready: revisions 1 and 2.
func upTwoVersions(t *testing.T, p *pipeline) (v1, v2 *manifest.Pod) {
	t.Helper()
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up v1 = %+v", res)
	}
	v2 = changedPod(t, p, "v2")
	setup := ContainerID(v2.UID, "setup", 0)
	hook := p.eng.OnCall
	p.eng.OnCall = func(call string) {
		hook(call)
		if call == "Start "+setup {
			go p.eng.Exit(setup, 0)
		}
	}
	if rs := p.h.Up(ctx, &manifest.Set{Pods: []*manifest.Pod{v2}}, UpOptions{Wait: WaitReady, Timeout: 5 * time.Second}); rs[0].Err != nil {
		t.Fatalf("Up v2 = %+v", rs[0])
	}
	return p.pod, v2
}

// TestUndoAppliesTheVersionBefore: undo of a pod of up replaces it by the
// version before; rollout status says Ready.
func TestUndoAppliesTheVersionBefore(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	v1, _ := upTwoVersions(t, p)
	info, err := p.h.Pod(ctx, Target{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	to, res, err := p.h.Undo(ctx, info, UndoOptions{Up: UpOptions{Wait: WaitReady, Timeout: 5 * time.Second}})
	if err != nil || to.Revision != 1 || res == nil || res.UID != v1.UID || res.Action != Replaced {
		t.Fatalf("Undo = revision %d, %+v, %v; want revision 1 applied (%s)", to.Revision, res, err, v1.UID)
	}
	v, name, err := p.h.AwaitRollout(ctx, Target{Namespace: "default", Name: "web"}, time.Minute, false, func(string) {})
	if err != nil || v.Phase != progress.Ready || name != "web" {
		t.Fatalf("AwaitRollout = %+v, %q, %v; want Ready", v, name, err)
	}
	if _, _, err := p.h.Undo(ctx, info, UndoOptions{Revision: 7}); err == nil {
		t.Fatal("Undo to a revision not kept: no error")
	}
}

// TestUndoOfADaemonPodIsRecorded: undo of a daemon's pod applies nothing;
// the version stands in for the file's (Overridden) until the file
// changes, and an undo back to the file's version drops it.
func TestUndoOfADaemonPodIsRecorded(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	v1, v2 := upTwoVersions(t, p)
	info, err := p.h.Pod(ctx, Target{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	to, res, err := p.h.Undo(ctx, info, UndoOptions{Daemon: true})
	if err != nil || to.Hash != v1.Hash || res != nil {
		t.Fatalf("Undo = %+v, %+v, %v; want revision 1 recorded, nothing applied", to, res, err)
	}
	if info, _ := p.h.Pod(ctx, Target{Namespace: "default", Name: "web"}); info.UID != v2.UID {
		t.Fatalf("the undo of a daemon's pod applied something: %s runs", info.UID)
	}
	got, o, err := p.h.Overridden(v2)
	if err != nil || o == nil || got.UID != v1.UID || o.Reason != "" {
		t.Fatalf("Overridden(v2) = %v, %+v, %v; want v1 (%s), an undo", got.UID, o, err, v1.UID)
	}
	// The file changes: its version applies, the override goes.
	v3 := changedPod(t, p, "v3")
	if got, o, err := p.h.Overridden(v3); err != nil || o != nil || got != v3 {
		t.Fatalf("Overridden(v3) = %v, %+v, %v; want v3 itself", got.UID, o, err)
	}
	if o, _ := p.h.history.Override("default/web"); o != nil {
		t.Fatalf("override kept after the file changed: %+v", o)
	}
}

// TestRollBackRecordsTheLastReadyVersion: a failed version is overridden
// by the newest other Ready version, shown as a Progressing=False
// condition on the pod that runs it.
func TestRollBackRecordsTheLastReadyVersion(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	bad := changedPod(t, p, "bad")
	to, err := p.h.RollBack("default/web", bad.Hash, progress.ReasonDeadlineExceeded, "not Ready")
	if err != nil || to.UID != p.pod.UID {
		t.Fatalf("RollBack = %+v, %v; want revision 1", to, err)
	}
	if got, o, _ := p.h.Overridden(bad); got.UID != p.pod.UID || o == nil || o.Reason != progress.ReasonDeadlineExceeded {
		t.Fatalf("Overridden(bad) = %s, %+v", got.UID, o)
	}
	info, err := p.h.Pod(ctx, Target{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if c := RolledBack(info.Pod); c == nil || c.Reason != progress.ReasonDeadlineExceeded {
		t.Fatalf("condition %+v, want Progressing=False ProgressDeadlineExceeded", c)
	}
	if _, err := p.h.RollBack("default/web", p.pod.Hash, "x", "y"); err == nil {
		t.Fatal("RollBack of the only Ready version: no error")
	}
}
