package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/updates"
)

func TestReplaced(t *testing.T) {
	want := &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, UID: "new"}
	on := func(name, uid, source string, phase corev1.PodPhase, refused bool) *run.PodInfo {
		return &run.PodInfo{UID: uid, Namespace: "default", Name: name, Source: source, State: &run.State{UID: uid, Refused: refused},
			Pod: &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}}
	}
	owns := func(p *run.PodInfo) bool { return p.Source == "/dir/web.yaml" }
	for _, tc := range []struct {
		name string
		node []*run.PodInfo
		want string // the uid of the pod replaced, "" for none
	}{
		{"a new pod", nil, ""},
		{"another pod's name", []*run.PodInfo{on("db", "old", "/dir/web.yaml", corev1.PodRunning, false)}, ""},
		{"the running version", []*run.PodInfo{on("web", "old", "/dir/web.yaml", corev1.PodRunning, false)}, "old"},
		{"the new one there already", []*run.PodInfo{on("web", "old", "/dir/web.yaml", corev1.PodRunning, false), on("web", "new", "/dir/web.yaml", corev1.PodPending, false)}, ""},
		{"not the daemon's", []*run.PodInfo{on("web", "old", "-", corev1.PodRunning, false)}, ""},
		{"refused: nothing runs", []*run.PodInfo{on("web", "old", "/dir/web.yaml", corev1.PodFailed, true)}, ""},
		{"still Pending", []*run.PodInfo{on("web", "old", "/dir/web.yaml", corev1.PodPending, false)}, ""},
		{"failed", []*run.PodInfo{on("web", "old", "/dir/web.yaml", corev1.PodFailed, false)}, ""},
		{"no state", []*run.PodInfo{{UID: "old", Namespace: "default", Name: "web", Source: "/dir/web.yaml"}}, ""},
	} {
		got := ""
		if r := replaced(want, tc.node, owns); r != nil {
			got = r.UID
		}
		if got != tc.want {
			t.Errorf("%s: replaced = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestHoldUpdate: the facts holdUpdate gathers (the clock, the lock of the
// pod there) and what it keeps between syncs (since when the lock holds),
// on a fake clock and a fake lock.
func TestHoldUpdate(t *testing.T) {
	zone := time.FixedZone("NODE", 3600)
	clk := testclock.NewFakeClock(time.Date(2026, 11, 30, 1, 59, 0, 0, zone))
	night, err := updates.ParseWindow("02:00-04:00")
	if err != nil {
		t.Fatal(err)
	}
	held, probed := true, ""
	var log bytes.Buffer
	d := &Daemon{clock: clk, log: slog.New(slog.NewTextHandler(&log, nil)), o: Options{
		Root: "/var/lib/podrun", UpdateWindows: []updates.Window{night}, UpdateLockTimeout: 10 * time.Minute,
		LockProbe: func(dir string) (bool, error) { probed = dir; return held, nil }}}
	p := &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, UID: "new"}
	old := &run.PodInfo{UID: "old", Namespace: "default", Name: "web", Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{updates.LockVolumeAnnotation: "lock"}},
		Spec:       corev1.PodSpec{Volumes: []corev1.Volume{{Name: "lock", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}}
	step := func(by time.Duration, wantApply bool, wantReason string, wantNext time.Time) {
		t.Helper()
		clk.Step(by)
		d.updates.beginSync()
		v := d.holdUpdate(p, "/dir/web.yaml", old)
		if v.Apply != wantApply || v.Reason != wantReason {
			t.Fatalf("at %s: %+v, want apply %v, reason %q", clk.Now().Format(time.TimeOnly), v, wantApply, wantReason)
		}
		d.updates.keep(func(string) bool { return !v.Apply })
		if got := d.updates.nextSync(); !got.Equal(wantNext) {
			t.Errorf("at %s: next sync %s, want %s", clk.Now().Format(time.TimeOnly), got, wantNext)
		}
	}
	step(0, false, updates.ReasonWindow, time.Date(2026, 11, 30, 2, 0, 0, 0, zone))
	if probed != "" {
		t.Errorf("the lock was probed outside the window (%s)", probed)
	}
	if pe := d.updates.pending(); len(pe) != 1 || pe[0].Reason != updates.ReasonWindow || !strings.HasPrefix(pe[0].Message, "update pending: window") || pe[0].Source != "/dir/web.yaml" {
		t.Errorf("pending = %+v", pe)
	}
	// The window opens: the lock holds it, looked at again every lockPoll.
	step(time.Minute, false, updates.ReasonLock, clk.Now().Add(time.Minute+lockPoll))
	if probed != "/var/lib/podrun/pods/old/volumes/kubernetes.io~empty-dir/lock" {
		t.Errorf("probed %q, want the emptyDir of the pod there", probed)
	}
	step(9*time.Minute, false, updates.ReasonLock, clk.Now().Add(9*time.Minute+lockPoll))
	// Ten minutes after it was first seen held: applied anyway, and said.
	step(time.Minute, true, updates.ReasonLockTimeout, time.Time{})
	if !strings.Contains(log.String(), "update lock held too long: replacing the pod anyway") {
		t.Errorf("the timeout was not logged:\n%s", log.String())
	}
	if pe := d.updates.pending(); len(pe) != 0 {
		t.Errorf("pending after the update went ahead: %+v", pe)
	}
	// Another change: the lock's hold counts from when it is seen again;
	// let go, it goes ahead.
	p = &manifest.Pod{Pod: p.Pod, UID: "newer"}
	step(time.Second, false, updates.ReasonLock, clk.Now().Add(time.Second+lockPoll))
	held = false
	step(lockPoll, true, "", time.Time{})
	if !strings.Contains(log.String(), "update no longer held: replacing the pod") {
		t.Errorf("the update going ahead was not logged:\n%s", log.String())
	}
}

// TestStandIn: the running version stands in for a held update as the
// history keeps it (it became Ready), else as its own record holds it,
// with the file's objects as they are now; nil with neither.
func TestStandIn(t *testing.T) {
	d := &Daemon{o: Options{History: rollout.Open(t.TempDir())}}
	meta := metav1.ObjectMeta{Namespace: "default", Name: "web"}
	oldCM := map[string]*corev1.ConfigMap{"cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"v": "1"}}}
	newCM := map[string]*corev1.ConfigMap{"cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"v": "2"}}}
	ready := &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: meta}, Hash: "h-ready", UID: "ready", ConfigMaps: oldCM}
	if err := d.o.History.Ready(ready, "/dir/web.yaml", time.Now()); err != nil {
		t.Fatal(err)
	}
	update := &manifest.Pod{Pod: &corev1.Pod{ObjectMeta: meta}, Hash: "h-new", UID: "new", ConfigMaps: newCM,
		Source: manifest.Source{File: "/dir/web.yaml"}}

	if in := d.standIn("default/web", &run.PodInfo{UID: "ready"}, update); in == nil || in.UID != "ready" || in.Hash != "h-ready" || in.ConfigMaps["cfg"].Data["v"] != "1" {
		t.Errorf("a version kept in the history: %+v, want it with its own objects", in)
	}

	running := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	old := &run.PodInfo{UID: "never-ready", Namespace: "default", Name: "web",
		State: &run.State{UID: "never-ready", Hash: "h-old", Pod: running}}
	in := d.standIn("default/web", old, update)
	switch {
	case in == nil:
		t.Fatal("a version never Ready with its record: nil")
	case in.UID != "never-ready" || in.Hash != "h-old" || in.Spec.Containers[0].Image != "app:1":
		t.Errorf("from the record: UID %s, hash %s, spec %+v; want the running version", in.UID, in.Hash, in.Spec)
	case in.Status.Phase != "" || running.Status.Phase != corev1.PodRunning:
		t.Errorf("status %q (record's %q): want none in the stand-in, the record untouched", in.Status.Phase, running.Status.Phase)
	case in.ConfigMaps["cfg"].Data["v"] != "2" || in.Source.File != "/dir/web.yaml":
		t.Errorf("objects %+v, source %+v; want the file's as they are now", in.ConfigMaps, in.Source)
	}

	if in := d.standIn("default/web", &run.PodInfo{UID: "gone"}, update); in != nil {
		t.Errorf("no history, no record: %+v, want nil", in)
	}
}
