package rollout

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout/progress"
	"github.com/podrun/podrun/run"
)

var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// newHistory is a History in a temporary directory on a fake clock.
func newHistory(t *testing.T) (*History, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(start)
	return &History{store: &history.Store{Dir: t.TempDir()}, clock: clk}, clk
}

// version is pod default/web with its app's env V=v, resolved.
func version(t *testing.T, v string) *manifest.Pod {
	t.Helper()
	set, err := manifest.Options{}.ParseUnresolved("web.yaml", []byte(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: app, image: "busybox:1", env: [{name: V, value: "`+v+`"}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if set, err = manifest.Resolve(set); err != nil {
		t.Fatal(err)
	}
	return set.Pods[0]
}

// ready records the versions as Ready, in order: revisions 1, 2, ...
func ready(t *testing.T, h *History, versions ...*manifest.Pod) {
	t.Helper()
	for _, p := range versions {
		if err := h.Ready(p, "/m/web.yaml", start); err != nil {
			t.Fatal(err)
		}
	}
}

// running is pod p as listed, running.
func running(p *manifest.Pod) *run.PodInfo {
	return &run.PodInfo{UID: p.UID, Namespace: p.Namespace, Name: p.Name, State: &run.State{UID: p.UID, Hash: p.Hash}, Pod: p.Pod.DeepCopy()}
}

// fakeLifecycle answers Pod with its pods in turn (the last one again),
// and records what Sync is asked.
type fakeLifecycle struct {
	mu     sync.Mutex
	pods   []*run.PodInfo
	asked  int
	synced []*manifest.Pod
}

func (f *fakeLifecycle) Pod(_ context.Context, t run.Target) (*run.PodInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pods[min(f.asked, len(f.pods)-1)]
	f.asked++
	return p, nil
}

func (f *fakeLifecycle) Sync(_ context.Context, w run.Want, _ run.UpOptions) []run.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []run.Result
	for _, p := range w.Pods {
		f.synced = append(f.synced, p)
		out = append(out, run.Result{Pod: p.Key(), UID: p.UID, Action: run.Replaced, Phase: corev1.PodRunning})
	}
	return out
}

// TestUndoAppliesTheVersionBefore: undo of a pod of up applies the version
// before the running one, rebuilt from the history; a revision not kept
// is an error.
func TestUndoAppliesTheVersionBefore(t *testing.T) {
	h, _ := newHistory(t)
	v1, v2 := version(t, "1"), version(t, "2")
	ready(t, h, v1, v2)
	l := &fakeLifecycle{}
	to, res, err := h.Undo(context.Background(), l, running(v2), UndoOptions{})
	if err != nil || to.Revision != 1 || res == nil || res.UID != v1.UID || res.Action != run.Replaced {
		t.Fatalf("Undo = revision %d, %+v, %v; want revision 1 applied (%s)", to.Revision, res, err, v1.UID)
	}
	if len(l.synced) != 1 || l.synced[0].Hash != v1.Hash || l.synced[0].UID != v1.UID || l.synced[0].Source.File != "/m/web.yaml" {
		t.Fatalf("synced %+v, want version 1 from its file", l.synced)
	}
	if _, _, err := h.Undo(context.Background(), l, running(v2), UndoOptions{Revision: 7}); err == nil {
		t.Fatal("Undo to a revision not kept: no error")
	}
}

// TestUndoOfADaemonPodIsRecorded: undo of a daemon's pod applies nothing;
// the version stands in for the file's (Overridden) until the file
// changes, and an undo back to the file's version drops it.
func TestUndoOfADaemonPodIsRecorded(t *testing.T) {
	h, _ := newHistory(t)
	v1, v2 := version(t, "1"), version(t, "2")
	ready(t, h, v1, v2)
	l := &fakeLifecycle{}
	to, res, err := h.Undo(context.Background(), l, running(v2), UndoOptions{Daemon: true})
	if err != nil || to.Hash != v1.Hash || res != nil || len(l.synced) != 0 {
		t.Fatalf("Undo = %+v, %+v, %v, synced %d; want revision 1 recorded, nothing applied", to, res, err, len(l.synced))
	}
	got, o, err := h.Overridden(v2)
	if err != nil || o == nil || got.UID != v1.UID || o.Reason != "" {
		t.Fatalf("Overridden(v2) = %v, %+v, %v; want v1 (%s), an undo", got.UID, o, err, v1.UID)
	}
	// An undo back to the file's version drops the override.
	if _, _, err := h.Undo(context.Background(), l, running(v1), UndoOptions{Daemon: true, Revision: 2}); err != nil {
		t.Fatal(err)
	}
	if got, o, err := h.Overridden(v2); err != nil || o != nil || got != v2 {
		t.Fatalf("after undo to the file's version: Overridden(v2) = %v, %+v, %v; want v2 itself", got.UID, o, err)
	}
	// The file changes: its version applies, the override goes.
	if _, _, err := h.Undo(context.Background(), l, running(v2), UndoOptions{Daemon: true}); err != nil {
		t.Fatal(err)
	}
	v3 := version(t, "3")
	if got, o, err := h.Overridden(v3); err != nil || o != nil || got != v3 {
		t.Fatalf("Overridden(v3) = %v, %+v, %v; want v3 itself", got.UID, o, err)
	}
	if o, _ := h.store.Override("default/web"); o != nil {
		t.Fatalf("override kept after the file changed: %+v", o)
	}
}

// TestRollBackRecordsTheLastReadyVersion: a failed version is overridden
// by the newest other Ready version, shown as a Progressing=False
// condition on the pod that runs it (Condition, RolledBack).
func TestRollBackRecordsTheLastReadyVersion(t *testing.T) {
	h, _ := newHistory(t)
	v1, bad := version(t, "1"), version(t, "bad")
	ready(t, h, v1)
	to, err := h.RollBack("default/web", bad.Hash, progress.ReasonDeadlineExceeded, "not Ready")
	if err != nil || to.UID != v1.UID {
		t.Fatalf("RollBack = %+v, %v; want revision 1", to, err)
	}
	if got, o, _ := h.Overridden(bad); got.UID != v1.UID || o == nil || o.Reason != progress.ReasonDeadlineExceeded {
		t.Fatalf("Overridden(bad) = %s, %+v", got.UID, o)
	}
	if c := h.Condition("default/web", bad.UID); c != nil {
		t.Errorf("condition on the failed version's pod %+v, want none", c)
	}
	c := h.Condition("default/web", v1.UID)
	if c == nil || c.Type != ConditionProgressing || c.Status != corev1.ConditionFalse || c.Reason != progress.ReasonDeadlineExceeded ||
		!strings.HasPrefix(c.Message, "rolled back to revision 1: version "+bad.Hash[:12]+" failed: not Ready") || !c.LastTransitionTime.Time.Equal(start) {
		t.Fatalf("condition %+v, want Progressing=False ProgressDeadlineExceeded", c)
	}
	pod := v1.Pod.DeepCopy()
	pod.Status.Conditions = append(pod.Status.Conditions, *c)
	if got := RolledBack(pod); got == nil || got.Reason != progress.ReasonDeadlineExceeded {
		t.Fatalf("RolledBack = %+v", got)
	}
	if _, err := h.RollBack("default/web", v1.Hash, "x", "y"); err == nil {
		t.Fatal("RollBack of the only Ready version: no error")
	}
}

// TestAwaitRollout: rollout status looks every second until the pod is
// Ready, telling waiting each time it is not; a pod a rollback put back is
// Failed with its reason.
func TestAwaitRollout(t *testing.T) {
	h, clk := newHistory(t)
	v1 := version(t, "1")
	notReady, isReady := running(v1), running(v1)
	isReady.Pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	l := &fakeLifecycle{pods: []*run.PodInfo{notReady, notReady, isReady}}
	go func() {
		for range 2 {
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
			clk.Step(time.Second)
		}
	}()
	waited := 0
	v, name, err := h.AwaitRollout(context.Background(), l, run.Target{Namespace: "default", Name: "web"}, time.Minute, true, func(string) { waited++ })
	if err != nil || v.Phase != progress.Ready || name != "web" || waited != 2 || l.asked != 3 {
		t.Fatalf("AwaitRollout = %+v, %q, %v after %d waits, %d looks; want Ready after 2 waits, 3 looks", v, name, err, waited, l.asked)
	}
	back := running(v1)
	back.Pod.Status.Conditions = []corev1.PodCondition{{Type: ConditionProgressing, Status: corev1.ConditionFalse, Reason: "CrashLoopBackOff",
		LastTransitionTime: metav1.NewTime(start)}}
	v, _, err = h.AwaitRollout(context.Background(), &fakeLifecycle{pods: []*run.PodInfo{back}}, run.Target{Name: "web"}, time.Minute, true, func(string) {})
	if err != nil || v.Phase != progress.Failed || v.Reason != "CrashLoopBackOff" {
		t.Fatalf("AwaitRollout of a pod rolled back = %+v, %v; want Failed, CrashLoopBackOff", v, err)
	}
}

// TestOutcome: rollout status's words for each verdict.
func TestOutcome(t *testing.T) {
	tests := []struct {
		v    progress.Verdict
		line string
		err  string
	}{
		{v: progress.Verdict{Phase: progress.Ready}, line: `pod "web" successfully rolled out`},
		{v: progress.Verdict{Phase: progress.Progressing}},
		{v: progress.Verdict{Phase: progress.Failed, Reason: progress.ReasonDeadlineExceeded, Message: "slow"}, err: `pod "web" exceeded its progress deadline: slow`},
		{v: progress.Verdict{Phase: progress.Failed, Reason: "CrashLoopBackOff", Message: "exits"}, err: `pod "web" failed (CrashLoopBackOff): exits`},
	}
	for _, tt := range tests {
		line, err := Outcome(tt.v, "web")
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if line != tt.line || gotErr != tt.err {
			t.Errorf("Outcome(%+v) = %q, %q; want %q, %q", tt.v, line, gotErr, tt.line, tt.err)
		}
	}
}
