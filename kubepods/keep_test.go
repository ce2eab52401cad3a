package kubepods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/kubenode/kept"
	"github.com/podrun/podrun/manifest"
)

// webPod is apiPod under another name and UID, mutated.
func webPod(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := decodePod(t, strings.ReplaceAll(apiPod, "web-5d9c7b8f6-x2k4q", "web-"+name))
	p.UID = types.UID("uid-" + name)
	if mutate != nil {
		mutate(p)
	}
	return p
}

// countingKeeper is a Keeper that counts the Saves of the store it wraps.
type countingKeeper struct {
	*kept.Store
	mu    sync.Mutex
	saves int
}

func (k *countingKeeper) Save(p kept.Pod) error {
	k.mu.Lock()
	k.saves++
	k.mu.Unlock()
	return k.Store.Save(p)
}

func (k *countingKeeper) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.saves
}

var testCluster = kept.NewCluster("https://192.0.2.1:6443", []byte("CA"), "vm")

func openKept(t *testing.T, dir string, c kept.Cluster) *countingKeeper {
	t.Helper()
	s, err := kept.Open(kept.Options{Dir: dir, Cluster: c, Clock: clocktesting.NewFakePassiveClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	return &countingKeeper{Store: s}
}

func keptKeys(t *testing.T, k Keeper) string {
	t.Helper()
	pods, problems, err := k.Load()
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", problems, err)
	}
	var out []string
	for _, p := range pods {
		out = append(out, p.Key()+" "+string(p.Pod.Status.Phase))
	}
	return strings.Join(out, ", ")
}

func podKeys(w Wanted) string {
	var out []string
	for _, p := range w.Pods {
		out = append(out, p.Key()+" "+p.UID+" "+p.Hash[:8])
	}
	return strings.Join(out, ", ")
}

// TestFromKept: at start, the kept pods are read as the API's would be
// (a pod being deleted is not run, its grace kept; a finished one is not
// started; a mirror pod is not the source's), against the objects kept
// with them, and what runs is the same pod (UID and hash) as the API's
// list of the same pod makes: adopted, never replaced, when the API
// answers.
func TestFromKept(t *testing.T) {
	now := metav1.NewTime(t0)
	seven := int64(7)
	web := webPod(t, "a", nil)
	deleting := webPod(t, "del", func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &seven })
	done := webPod(t, "done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	mirror := webPod(t, "mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{MirrorAnnotation: "x"} })
	objects := &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}}
	var pods []kept.Pod
	for _, p := range []*corev1.Pod{deleting, done, mirror, web} {
		pods = append(pods, kept.New(p, objects))
	}
	// The API server answers nothing: the kept objects stand.
	cs := tokenIssuing()
	cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	w := s.fromKept(context.Background(), pods)
	if w.Synced || w.API != nil || len(w.Problems) != 0 {
		t.Errorf("synced %v, API %v, problems %q: want none of the API's", w.Synced, w.API, w.Problems)
	}
	if g := podKeys(w); !strings.HasPrefix(g, "default/web-a uid-a ") || strings.Contains(g, ",") {
		t.Errorf("pods %s, want default/web-a alone", g)
	}
	if len(w.Grace) != 1 || w.Grace["uid-del"] != 7*time.Second {
		t.Errorf("grace %v", w.Grace)
	}
	if len(w.Pods) == 1 {
		p := w.Pods[0]
		if p.ConfigMaps["kube-root-ca.crt"] == nil {
			t.Errorf("the kept ConfigMap was not given: %v", p.ConfigMaps)
		}
		// The API's list of the same pod, its ConfigMap read again.
		api := s.read(context.Background(), []*corev1.Pod{web})
		if len(api.Pods) != 1 || api.Pods[0].UID != p.UID || api.Pods[0].Hash != p.Hash {
			t.Errorf("the API's pod %s differs from the kept one %s: it would be replaced", podKeys(api), podKeys(w))
		}
	}
}

// TestStartKept: at start, the kept pods stand for the API's unless the
// API server lists first within FirstListWait; a failed list ends the
// wait at once.
func TestStartKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		synced bool // the first list answered
		failed bool // a list failed
		wait   bool // FirstListWait passes
		want   string
	}{
		{name: "listed first", synced: true, want: ""},
		{name: "list failed", failed: true, want: "default/web-a"},
		{name: "no answer", wait: true, want: "default/web-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := openKept(t, t.TempDir(), testCluster)
			if err := k.Save(kept.New(webPod(t, "a", nil), &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}})); err != nil {
				t.Fatal(err)
			}
			clk := clocktesting.NewFakeClock(t0)
			s := NewSource(tokenIssuing(), "vm", manifest.Options{}, clk, quiet())
			s.Kept = k
			synced, failed := make(chan struct{}), make(chan struct{}, 1)
			if tc.synced {
				close(synced)
			}
			if tc.failed {
				failed <- struct{}{}
			}
			done := make(chan struct{})
			go func() { s.startKept(context.Background(), synced, failed); close(done) }()
			if tc.wait {
				for !clk.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
				clk.Step(FirstListWait)
			}
			<-done
			var keys []string
			for _, p := range s.Current().Pods {
				keys = append(keys, p.Key())
			}
			if g := strings.Join(keys, ", "); g != tc.want || s.Current().Synced {
				t.Errorf("wanted %q (synced %v), want %q", g, s.Current().Synced, tc.want)
			}
		})
	}
}

// TestSourceKeptRun: Run with the API server down runs the kept pods
// (not synced: nothing of the source is pruned); once the API answers,
// its list wins: the same pod is the same (no replace), a pod deleted
// meanwhile is no longer wanted and its kept copy is forgotten, a new one
// is kept. A re-read with nothing changed writes nothing.
func TestSourceKeptRun(t *testing.T) {
	dir := t.TempDir()
	k := openKept(t, dir, testCluster)
	objects := &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}}
	a, gone := webPod(t, "a", nil), webPod(t, "gone", nil)
	for _, p := range []*corev1.Pod{a, gone} {
		if err := k.Save(kept.New(p, objects)); err != nil {
			t.Fatal(err)
		}
	}
	k = openKept(t, dir, testCluster) // a reboot
	fresh := webPod(t, "new", nil)
	cs := tokenIssuing(a, fresh, rootCA())
	var mu sync.Mutex
	down := true
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return true, nil, errors.New("dial tcp 192.0.2.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	s := NewSource(cs, "vm", manifest.Options{}, clk, quiet())
	s.Kept = k
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	wait := func(what string, ok func(Wanted) bool) Wanted {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			select {
			case <-s.Changed():
			case <-time.After(100 * time.Millisecond):
			}
			if w := s.Current(); ok(w) {
				return w
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: wanted %s (synced %v)", what, podKeys(w), w.Synced)
			}
		}
	}
	before := wait("the kept pods", func(w Wanted) bool { return len(w.Pods) == 2 })
	if before.Synced || !strings.HasPrefix(podKeys(before), "default/web-a uid-a") {
		t.Errorf("from the kept state: %s, synced %v", podKeys(before), before.Synced)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	after := wait("the API's list", func(w Wanted) bool { return w.Synced })
	if len(after.Pods) != 2 || after.Pods[0].UID != before.Pods[0].UID || after.Pods[0].Hash != before.Pods[0].Hash ||
		after.Pods[1].Key() != "default/web-new" {
		t.Errorf("after the list: %s; before: %s (web-a must be the same pod)", podKeys(after), podKeys(before))
	}
	if g := keptKeys(t, k); g != "default/web-a Pending, default/web-new Pending" {
		t.Errorf("kept %q, want web-a and web-new (web-gone forgotten)", g)
	}
	saves := k.count()
	if saves != 1 {
		t.Errorf("%d saves after the list, want 1 (web-new; web-a is kept as it is)", saves)
	}
	// A status-only change of web-a (another resourceVersion) is no write.
	p, _ := cs.CoreV1().Pods("default").Get(ctx, "web-a", metav1.GetOptions{})
	p.Status.Phase = corev1.PodRunning
	p.ResourceVersion = "900"
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("the status change read", func(Wanted) bool {
		for _, q := range s.Current().API {
			if q.Name == "web-a" && q.Status.Phase == corev1.PodRunning {
				return true
			}
		}
		return false
	})
	clk.Step(reread) // read again; and once more
	clk.Step(reread)
	time.Sleep(200 * time.Millisecond)
	if g := keptKeys(t, k); g != "default/web-a Running, default/web-new Pending" {
		t.Errorf("kept %q: the phase is kept", g)
	}
}

// TestKeepPhases: a pod that finished on the node while the API server
// did not have it is kept finished (not run after a reboot), and a read of
// the API's older phase does not undo it; a pod whose object the writer
// deleted is forgotten; a read unchanged is no Save.
func TestKeepPhases(t *testing.T) {
	k := openKept(t, t.TempDir(), testCluster)
	a, b := webPod(t, "a", nil), webPod(t, "b", nil)
	cs := tokenIssuing(rootCA())
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	s.Kept = k
	s.read(context.Background(), []*corev1.Pod{a, b})
	s.read(context.Background(), []*corev1.Pod{a, b})
	if n := k.count(); n != 2 {
		t.Errorf("%d saves for two pods read twice, want 2", n)
	}
	s.Finished(map[types.UID]*corev1.PodStatus{"uid-a": {Phase: corev1.PodSucceeded}, "uid-b": {Phase: corev1.PodRunning}, "uid-c": nil})
	s.Finished(map[types.UID]*corev1.PodStatus{"uid-a": {Phase: corev1.PodSucceeded}})
	if n := k.count(); n != 3 {
		t.Errorf("%d saves, want 3 (one for the phase)", n)
	}
	a2 := a.DeepCopy()
	a2.ResourceVersion = "813" // the API still has it Pending
	s.read(context.Background(), []*corev1.Pod{a2, b})
	if g := keptKeys(t, k); g != "default/web-a Succeeded, default/web-b Pending" {
		t.Errorf("kept %q, want web-a Succeeded", g)
	}
	// After a reboot, the finished pod is not started again, from the
	// kept state nor from the API's list that does not have its phase.
	pods, _, _ := k.Load()
	s2 := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	s2.Kept = k
	for _, p := range pods {
		s2.kept[p.Pod.UID] = p
	}
	if g := podKeys(s2.fromKept(context.Background(), pods)); !strings.HasPrefix(g, "default/web-b ") || strings.Contains(g, ",") {
		t.Errorf("after a reboot: %s, want web-b alone", g)
	}
	if g := podKeys(s2.read(context.Background(), []*corev1.Pod{a2, b})); !strings.HasPrefix(g, "default/web-b ") || strings.Contains(g, ",") {
		t.Errorf("after a reboot, the API's list: %s, want web-b alone", g)
	}
	// The writer deleted b's object: b is forgotten.
	s.Forget("uid-b")
	if g := keptKeys(t, k); g != "default/web-a Succeeded" {
		t.Errorf("kept %q after forgetting web-b", g)
	}
}

// TestWriterKeepsPhases: the writer keeps the phase a pod finished in on
// the node (KeepFinished) even before the API's first list (after a
// reboot without the API server), writes it once the API answers though
// nothing of the pod is left, and forgets a pod whose object it deleted.
func TestWriterKeepsPhases(t *testing.T) {
	k := openKept(t, t.TempDir(), testCluster)
	a := webPod(t, "a", nil)
	if err := k.Save(kept.New(a, nil)); err != nil {
		t.Fatal(err)
	}
	pods, _, _ := k.Load()
	cs := tokenIssuing()
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	s.Kept = k
	s.kept[a.UID] = pods[0]
	s.wanted = Wanted{Pods: []*manifest.Pod{{Pod: a, UID: string(a.UID)}}}
	node := lister{{UID: "uid-a", Source: SourceName, Pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}}}
	clk := clocktesting.NewFakeClock(t0)
	w := &Writer{Client: cs, Source: s, Node: node, Clock: clk, Log: quiet()}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.KeepFinished(ctx)
	for deadline := time.Now().Add(10 * time.Second); !s.keptTerminal(a.UID); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the finished pod was not kept finished")
		}
		clk.Step(StatusPeriod)
	}
	cancel()
	if len(cs.Actions()) != 0 {
		t.Errorf("calls to the API before its list: %v", cs.Actions())
	}
	if g := keptKeys(t, k); g != "default/web-a Failed" {
		t.Errorf("kept %q, want web-a Failed", g)
	}
	// After a reboot, the API answers with the pod Running and nothing of
	// it on the node: the kept status is written.
	if err := cs.Tracker().Add(a); err != nil {
		t.Fatal(err)
	}
	s.wanted = Wanted{Synced: true, API: []*corev1.Pod{a}}
	w.Node = lister{}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-a", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodFailed {
		t.Errorf("the API's pod after the write: %v %v, want Failed", p.Status.Phase, err)
	}
	if err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "default", "web-a"); err != nil {
		t.Fatal(err)
	}
	// Listed, being deleted, nothing left on the node: deleted, forgotten.
	now := metav1.NewTime(t0)
	del := a.DeepCopy()
	del.DeletionTimestamp = &now
	if err := cs.Tracker().Add(del); err != nil {
		t.Fatal(err)
	}
	s.wanted = Wanted{Synced: true, API: []*corev1.Pod{del}}
	w.Node = lister{}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := keptKeys(t, k); g != "" {
		t.Errorf("kept %q after the writer deleted web-a", g)
	}
}

// TestStartKeptProblems: a kept file of another cluster is not run and is
// a problem shown with the source's pods, before and after the API's
// list; so is a kept state that could not be opened (KeptProblems).
func TestStartKeptProblems(t *testing.T) {
	dir := t.TempDir()
	other := openKept(t, dir, kept.NewCluster("https://198.51.100.7:6443", []byte("another CA"), "vm"))
	if err := other.Save(kept.New(webPod(t, "a", nil), nil)); err != nil {
		t.Fatal(err)
	}
	k := openKept(t, dir, testCluster)
	s := NewSource(tokenIssuing(rootCA()), "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	s.Kept = k
	s.keptProblems = []string{"opened elsewhere"}
	failed := make(chan struct{}, 1)
	failed <- struct{}{}
	s.startKept(context.Background(), make(chan struct{}), failed)
	w := s.Current()
	if len(w.Pods) != 0 || len(w.Problems) != 2 || w.Problems[0] != "opened elsewhere" ||
		!strings.Contains(w.Problems[1], "uid-a.json is of another cluster: kept for node \"vm\" of https://198.51.100.7:6443") ||
		!strings.Contains(w.Problems[1], "left in place until this cluster's API server answers") {
		t.Errorf("pods %s, problems %q", podKeys(w), w.Problems)
	}
	if got := entries(t, filepath.Join(dir, "aside")); len(got) != 0 {
		t.Errorf("before the API's list: aside/ holds %v", got)
	}
	// The API's list proves the cluster: the file is set aside.
	b := webPod(t, "b", nil)
	s.read(context.Background(), []*corev1.Pod{b})
	s.reconcile([]*corev1.Pod{b})
	api := s.read(context.Background(), []*corev1.Pod{b})
	if len(api.Problems) != 2 || podKeys(api) == "" || !strings.Contains(api.Problems[1], "uid-a.json is of another cluster") || !strings.Contains(api.Problems[1], "kept aside as ") {
		t.Errorf("after the list: pods %s, problems %q", podKeys(api), api.Problems)
	}
	if got := entries(t, filepath.Join(dir, "aside")); len(got) != 1 || !strings.HasPrefix(got[0], "uid-a.json.other-cluster.") {
		t.Errorf("after the list: aside/ holds %v", got)
	}
}

// entries are the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestNoKeptStateShown: without a kept state (its directory refused), the
// problem is shown from the start, before the API server answers, and
// nothing of the source runs.
func TestNoKeptStateShown(t *testing.T) {
	cs := tokenIssuing()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), quiet())
	s.KeptProblems = []string{"kept state: not trusted"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	select {
	case <-s.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("nothing published")
	}
	if w := s.Current(); w.Synced || len(w.Pods) != 0 || len(w.Problems) != 1 || w.Problems[0] != "kept state: not trusted" {
		t.Errorf("wanted %+v", w)
	}
}

// tokenIssuing is a fake clientset holding objs that issues the pods'
// service-account tokens (tokenReactor), as the API server does.
func tokenIssuing(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	(&tokenReactor{clk: clocktesting.NewFakeClock(t0)}).install(cs)
	return cs
}
