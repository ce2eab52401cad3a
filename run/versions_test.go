package run

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// fakeVersions is a Versions that records what the lifecycle tells it
// and answers Condition and Before as set.
type fakeVersions struct {
	mu     sync.Mutex
	ready  []string // "key hash uid source", in order
	forgot []string
	before []string // the versions asked for ("key hash")

	back     *manifest.Pod // Before's answer
	revision int
	cond     map[string]*corev1.PodCondition // Condition's answer, by uid
}

func (f *fakeVersions) Ready(p *manifest.Pod, source string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at.IsZero() || p.Pod == nil {
		f.ready = append(f.ready, "incomplete")
		return nil
	}
	f.ready = append(f.ready, strings.Join([]string{p.Key(), p.Hash, p.UID, source}, " "))
	return nil
}

func (f *fakeVersions) Forget(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, key)
	return nil
}

func (f *fakeVersions) Condition(_, uid string) *corev1.PodCondition { return f.cond[uid] }

func (f *fakeVersions) Before(key, hash string) (*manifest.Pod, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = append(f.before, key+" "+hash)
	return f.back, f.revision, nil
}

func (f *fakeVersions) told() (ready, forgot []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ready...), append([]string(nil), f.forgot...)
}

// withVersions gives p's host a fakeVersions.
func withVersions(p *pipeline) *fakeVersions {
	v := &fakeVersions{}
	p.h.versions = v
	return v
}

// TestHistoryKeepsReadyVersions: a pod waited for until Ready is told to
// Versions as Ready, as applied; up again of the same version tells
// nothing more; down tells Versions to forget it.
func TestHistoryKeepsReadyVersions(t *testing.T) {
	p := newPipeline(t)
	v := withVersions(p)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	want := "default/web " + p.pod.Hash + " " + p.pod.UID + " " + p.pod.Source.Origin()
	if ready, _ := v.told(); len(ready) != 1 || ready[0] != want {
		t.Fatalf("told Ready %q, want once %q", ready, want)
	}
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil || res.Action != Unchanged {
		t.Fatalf("second Up = %+v", res)
	}
	if ready, _ := v.told(); len(ready) != 1 {
		t.Fatalf("after the same version again: told Ready %q, want once", ready)
	}
	if down := p.h.Down(ctx, []Target{{Namespace: "default", Name: "web"}}, DownOptions{}); down[0].Err != nil {
		t.Fatal(down[0].Err)
	}
	if _, forgot := v.told(); len(forgot) != 1 || forgot[0] != "default/web" {
		t.Fatalf("after down: told Forget %q, want default/web", forgot)
	}
}

// TestHistoryRecordsASupervisedPodOnceReady: a pod not waited for
// (--wait running, the daemon's) is told Ready by its supervision once
// Ready.
func TestHistoryRecordsASupervisedPodOnceReady(t *testing.T) {
	p := newPipeline(t)
	v := withVersions(p)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Foreground: true}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(5 * time.Millisecond) {
		ready, _ := v.told()
		if len(ready) == 1 && strings.Contains(ready[0], p.pod.Hash) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("told Ready %q; want the pod's version once Ready", ready)
		}
	}
}

// TestUpRollsBackAChangeThatFails: a changed pod whose app exits at once
// (Ready for a moment) does not stay Ready; with Rollback the version
// Versions keeps from before it (the last Ready one) is started again and
// the failure is reported, saying so.
func TestUpRollsBackAChangeThatFails(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	good := p.pod
	v := withVersions(p)
	v.back, v.revision = good, 1
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
	if want := "default/web " + bad.Hash; len(v.before) != 1 || v.before[0] != want {
		t.Errorf("asked Before %q, want once %q", v.before, want)
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

// TestUpWithNothingToRollBackTo: with Rollback, a changed pod that fails
// and has no version kept to go back to fails as it is.
func TestUpWithNothingToRollBackTo(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	v := withVersions(p) // keeps nothing: Before answers nil
	bad := changedPod(t, p, "v2")
	hook := p.eng.OnCall
	p.eng.OnCall = func(call string) {
		hook(call)
		if id, ok := strings.CutPrefix(call, "Start "); ok && strings.HasPrefix(id, strings.TrimSuffix(ContainerID(bad.UID, "", 0), "0")) {
			go p.eng.Exit(id, 1)
		}
	}
	rs := p.h.Up(ctx, &manifest.Set{Pods: []*manifest.Pod{bad}}, UpOptions{Wait: WaitReady, Timeout: 3 * time.Second, Rollback: true})
	if rs[0].Err == nil || strings.Contains(rs[0].Err.Error(), "rolled back") {
		t.Fatalf("Up of the failing change = %+v, want its failure, nothing rolled back", rs[0])
	}
	if len(v.before) != 1 {
		t.Errorf("asked Before %q, want once", v.before)
	}
}

// TestListShowsTheConditionOfVersions: a listed pod carries the condition
// Versions shows on it (a rollback's Progressing=False).
func TestListShowsTheConditionOfVersions(t *testing.T) {
	p := newPipeline(t)
	ctx := p.ctx()
	if res := p.up(ctx, UpOptions{Wait: WaitReady}); res.Err != nil {
		t.Fatalf("Up = %+v", res)
	}
	v := withVersions(p)
	cond := corev1.PodCondition{Type: "Progressing", Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
	v.cond = map[string]*corev1.PodCondition{p.pod.UID: &cond}
	info, err := p.h.Pod(ctx, Target{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var got *corev1.PodCondition
	for i, c := range info.Pod.Status.Conditions {
		if c.Type == cond.Type {
			got = &info.Pod.Status.Conditions[i]
		}
	}
	if got == nil || *got != cond {
		t.Fatalf("conditions %+v, want %+v among them", info.Pod.Status.Conditions, cond)
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
