package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// syncLog is a log the keeper's goroutines and the test share.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *syncLog) count(s string) int { return strings.Count(l.String(), s) }

func theNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}}
}

// newTestKeeper is a keeper of node on a fake clientset holding objs, its
// informer synced.
func newTestKeeper(t *testing.T, objs ...runtime.Object) (*Keeper, *fake.Clientset, *syncLog, *clocktesting.FakeClock) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	inf := PodsOnNode(cs, node)
	log := &syncLog{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC))
	k, err := NewKeeper(cs, node, inf, clk, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer not synced")
	}
	return k, cs, log, clk
}

// calls are the fake's pod and node calls but the informer's list and
// watch, as "verb resource[/subresource] name".
func calls(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			s += " " + a.GetObject().(metav1.Object).GetName()
		case interface{ GetName() string }: // get, delete, patch
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

func TestKeeperCreatesMirrorPod(t *testing.T) {
	k, cs, log, _ := newTestKeeper(t, theNode())
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h1")}}})
	if k.reconcile(context.Background()) {
		t.Errorf("retry after a reconcile that succeeded; log:\n%s", log)
	}
	if got, want := strings.Join(calls(cs), ", "), "get nodes dev, create pods web-dev"; got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
	m, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations[Annotation] != "h1" || m.Annotations["kubernetes.io/config.hash"] != "h1" || m.Annotations["kubernetes.io/config.source"] != "file" || m.Annotations["kubernetes.io/config.seen"] == "" {
		t.Errorf("annotations %v", m.Annotations)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" || m.OwnerReferences[0].UID != "node-uid" || !*m.OwnerReferences[0].Controller {
		t.Errorf("owners %+v", m.OwnerReferences)
	}
	if m.Spec.NodeName != node {
		t.Errorf("nodeName %q", m.Spec.NodeName)
	}
	if log.count(`msg="mirror pod created" pod=default/web-dev hash=h1`) != 1 {
		t.Errorf("log:\n%s", log)
	}
}

func TestKeeperReplacesDeletesLeavesForeign(t *testing.T) {
	old := apiPod("web", "h1", node, "m1")
	orphan := apiPod("gone", "h1", node, "m2")
	foreign := apiPod("api", "", node, "p1")
	k, cs, log, _ := newTestKeeper(t, theNode(), old, orphan, foreign)
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h2")}, {Pod: static("api", "h3")}}})
	if k.reconcile(context.Background()) {
		t.Errorf("retry: a pod that is not a mirror pod is not retried; log:\n%s", log)
	}
	if got, want := strings.Join(calls(cs), ", "), "delete pods gone-dev, delete pods web-dev, get nodes dev, create pods web-dev"; got != want {
		t.Errorf("calls %s\nwant  %s (the non-mirror pod api-dev untouched)", got, want)
	}
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			o := d.GetDeleteOptions()
			want := map[string]types.UID{"gone-dev": "m2", "web-dev": "m1"}[d.GetName()]
			if o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != want || o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 {
				t.Errorf("delete %s with %+v: want the UID %s as precondition, grace 0", d.GetName(), o, want)
			}
		}
	}
	m, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-dev", metav1.GetOptions{})
	if err != nil || m.Annotations[Annotation] != "h2" {
		t.Errorf("web-dev after the replace: %v, %v", m, err)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "api-dev", metav1.GetOptions{}); err != nil {
		t.Errorf("the non-mirror pod: %v", err)
	}
	for _, s := range []string{
		`msg="mirror pod deleted" pod=default/gone-dev uid=m2 reason="its static pod is gone"`,
		`msg="mirror pod deleted" pod=default/web-dev uid=m1 reason="the mirror pod is of another version of the static pod"`,
		`problem="static pod default/api-dev has no mirror pod: a pod of its name exists that is not a mirror pod: it is left alone"`,
	} {
		if log.count(s) != 1 {
			t.Errorf("log has not once %s:\n%s", s, log)
		}
	}
	// Again: the same problem is not logged again.
	k.reconcile(context.Background())
	if n := log.count("not a mirror pod"); n != 1 {
		t.Errorf("the problem logged %d times, want once:\n%s", n, log)
	}
}

func TestKeeperWritesStatusOnce(t *testing.T) {
	m := apiPod("web", "h1", node, "m1")
	m.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: "example.com/gate", Status: corev1.ConditionTrue}}}
	k, cs, _, _ := newTestKeeper(t, theNode(), m)
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h1"), Status: &running}}})
	k.reconcile(context.Background())
	k.reconcile(context.Background()) // the same status: not sent again
	if got, want := strings.Join(calls(cs), ", "), "patch pods/status web-dev"; got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			var patch corev1.Pod
			if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
				t.Fatal(err)
			}
			if p.GetPatchType() != types.StrategicMergePatchType || patch.UID != "m1" || patch.Status.Phase != corev1.PodRunning {
				t.Errorf("patch %s %s: want a strategic merge patch with the UID m1 and phase Running", p.GetPatchType(), p.GetPatch())
			}
		}
	}
	got, _ := cs.CoreV1().Pods("default").Get(context.Background(), "web-dev", metav1.GetOptions{})
	if got.Status.Phase != corev1.PodRunning || len(got.Status.Conditions) != 2 {
		t.Errorf("status %+v: want Running, the gate kept beside Ready", got.Status)
	}
}

func TestKeeperWaitsForTheFirstSnapshot(t *testing.T) {
	k, cs, _, _ := newTestKeeper(t, theNode(), apiPod("web", "h1", node, "m1"))
	if k.reconcile(context.Background()) || len(calls(cs)) != 0 {
		t.Errorf("before the static pods are known: calls %v; the mirror pod must not be taken for an orphan", calls(cs))
	}
}

// A failing API (no Node yet, then a create refused) is retried after a
// back-off, each problem logged once; the keeper logs when it is over.
func TestKeeperRetriesAndLogsOnce(t *testing.T) {
	k, cs, log, clk := newTestKeeper(t)
	refuse := true
	var mu sync.Mutex
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-dev", errors.New(`node "dev" can not create pods that reference secrets`))
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h1")}}})
	// Each round fails and sets the back-off timer: 200 ms, 400 ms, 800 ms.
	step := minBackoff
	for i := 0; i < 3; i++ {
		waitFor(t, clk.HasWaiters, "the retry timer")
		if i == 1 {
			if _, err := cs.CoreV1().Nodes().Create(ctx, theNode(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Step(step)
		step *= 2
	}
	waitFor(t, clk.HasWaiters, "the retry timer")
	if n := log.count("reading node dev"); n != 1 {
		t.Errorf("no Node: logged %d times, want 1:\n%s", n, log)
	}
	if n := log.count("can not create pods that reference secrets"); n != 1 {
		t.Errorf("the refusal logged %d times, want 1:\n%s", n, log)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	clk.Step(step)
	waitFor(t, func() bool { return log.count("mirror pods in sync with the static pods again") == 1 }, "in sync")
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "web-dev", metav1.GetOptions{}); err != nil {
		t.Errorf("the mirror pod after the retries: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A static pod refused a mirror pod is not tried again at every reconcile
// (every kick of the daemon or the informer) but after its own back-off,
// doubling; at once when its hash changes.
func TestKeeperHoldsRefusedCreates(t *testing.T) {
	k, cs, log, clk := newTestKeeper(t, theNode())
	var mu sync.Mutex
	creates := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		creates++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-dev", errors.New(`node "dev" can not create pods that reference configmaps`))
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return creates }
	ctx := context.Background()
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h1")}}})
	for i, step := range []struct {
		advance time.Duration
		creates int
	}{
		{0, 1}, {0, 1}, {minBackoff / 2, 1}, // held 200 ms
		{minBackoff / 2, 2}, {0, 2}, {minBackoff, 2}, // then 400 ms
		{minBackoff, 3},
	} {
		clk.Step(step.advance)
		if !k.reconcile(ctx) {
			t.Errorf("round %d: no retry while refused", i)
		}
		if got := count(); got != step.creates {
			t.Errorf("round %d (+%v): %d creates, want %d", i, step.advance, got, step.creates)
		}
	}
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h2")}}})
	k.reconcile(ctx)
	if got := count(); got != 4 {
		t.Errorf("a new version: %d creates, want 4 (tried at once)", got)
	}
	if n := log.count("can not create pods that reference configmaps"); n != 1 {
		t.Errorf("the refusal logged %d times, want once:\n%s", n, log)
	}
}

// A create that finds the static pod's mirror pod made already (by a round
// the informer had not shown yet) is success, and not logged as a create.
func TestKeeperCreateFindsItsMirrorPod(t *testing.T) {
	k, cs, log, _ := newTestKeeper(t, theNode())
	// Made since the informer listed: the API says it exists, and shows it.
	made := Of(static("web", "h1"), Node{Name: node, UID: "node-uid"})
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("pods"), made.Name)
	})
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, made, nil })
	k.Observe(Snapshot{Static: []Static{{Pod: static("web", "h1")}}})
	if k.reconcile(context.Background()) {
		t.Errorf("retry; log:\n%s", log)
	}
	if got, want := strings.Join(calls(cs), ", "), "get nodes dev, create pods web-dev, get pods web-dev"; got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
	if log.count("mirror pod created") != 0 || log.count("problem") != 0 {
		t.Errorf("log:\n%s", log)
	}
}

// PodsOnNode is an informer of the pods the API binds to node, over the
// typed client (which the fake clientset serves; kubepods.Source's is over
// the REST client, as the kubelet's). Run it with its Run.
func PodsOnNode(api API, node string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return api.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	// As client-go's generated pod informer, without its factory (which
	// links in every group's informers).
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, api), &corev1.Pod{}, 0, cache.Indexers{})
}
