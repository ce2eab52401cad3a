package kubepods

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

type lister []*run.PodInfo

func (l lister) Pods(context.Context) ([]*run.PodInfo, error) { return l, nil }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestWriter: against the API (client-go's fake clientset), the running
// pod's status is patched once with its UID as precondition, the deleted
// pod with nothing left is deleted at once with its UID as precondition,
// a static pod's status is not the writer's, and an unchanged status is
// not written again.
func TestWriter(t *testing.T) {
	now := metav1.NewTime(t0)
	a := boundPod("a", func(p *corev1.Pod) { p.Generation = 3 })
	gone := boundPod("gone", func(p *corev1.Pod) { p.DeletionTimestamp = &now })
	cs := fake.NewClientset(a, gone)
	src := &Source{wanted: Wanted{Synced: true, API: []*corev1.Pod{a, gone}}}
	node := lister{
		{UID: "a", Namespace: "default", Name: a.Name, Source: SourceName, Pod: &corev1.Pod{Status: *running(corev1.ConditionTrue)}},
		{UID: "static", Namespace: "default", Name: "s-vm", Source: "/etc/podrun/manifests/s.yaml", Pod: &corev1.Pod{Status: *running(corev1.ConditionTrue)}},
	}
	clk := clocktesting.NewFakeClock(t0)
	w := &Writer{Client: cs, Source: src, Node: node, Clock: clk, Log: quiet()}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, act := range cs.Actions() {
		switch act := act.(type) {
		case k8stesting.PatchAction:
			got = append(got, "patch "+act.GetName()+"/"+act.GetSubresource())
			if !strings.Contains(string(act.GetPatch()), `"uid":"a"`) {
				t.Errorf("patch %s without the uid precondition", act.GetPatch())
			}
		case k8stesting.DeleteAction:
			o := act.GetDeleteOptions()
			got = append(got, "delete "+act.GetName())
			if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || *o.Preconditions.UID != "gone" {
				t.Errorf("delete options %+v", o)
			}
		}
	}
	if g := strings.Join(got, ", "); g != "patch web-a/status, delete web-gone" {
		t.Errorf("writes: %s", g)
	}
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), a.Name, metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "10.88.0.5" || p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Fatalf("patched pod %+v, %v", p.Status, err)
	}
	if p.Status.ObservedGeneration != 3 || p.Status.Conditions[1].Type != corev1.PodReady || p.Status.Conditions[1].ObservedGeneration != 3 {
		t.Errorf("observed generation %d, conditions %+v; want 3", p.Status.ObservedGeneration, p.Status.Conditions)
	}
	// The watch has not brought the new status back: not written again.
	cs.ClearActions()
	src.wanted.API = []*corev1.Pod{a}
	if err := w.Sync(context.Background()); err != nil || len(cs.Actions()) != 0 {
		t.Errorf("second sync: %v, %v", cs.Actions(), err)
	}
	// After sentFor it is compared again: read, found written, not
	// written again.
	clk.Step(sentFor)
	if err := w.Sync(context.Background()); err != nil || len(cs.Actions()) != 1 || cs.Actions()[0].GetVerb() != "get" {
		t.Errorf("after %v: %v, %v; want one get", sentFor, cs.Actions(), err)
	}
	// Up to date in the API: nothing written.
	cs.ClearActions()
	src.wanted.API = []*corev1.Pod{p}
	clk.Step(sentFor)
	if err := w.Sync(context.Background()); err != nil || len(cs.Actions()) != 0 {
		t.Errorf("up to date: %v, %v", cs.Actions(), err)
	}
}

// TestWriterUnreachable: an API server that does not answer ends the round
// with an error (tried again at the next); one that refuses one pod does
// not.
func TestWriterUnreachable(t *testing.T) {
	a, b := boundPod("a", nil), boundPod("b", nil)
	for _, tc := range []struct {
		name    string
		err     error
		patches int
		fails   bool
	}{
		{"unreachable", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), 2, true}, // get, patch
		{"forbidden", errForbidden, 4, false},
	} {
		cs := fake.NewClientset(a, b)
		cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
		node := lister{
			{UID: "a", Source: SourceName, Pod: &corev1.Pod{Status: *running(corev1.ConditionTrue)}},
			{UID: "b", Source: SourceName, Pod: &corev1.Pod{Status: *running(corev1.ConditionTrue)}},
		}
		w := &Writer{Client: cs, Source: &Source{wanted: Wanted{Synced: true, API: []*corev1.Pod{a, b}}}, Node: node,
			Clock: clocktesting.NewFakeClock(t0), Log: quiet()}
		err := w.Sync(context.Background())
		if (err != nil) != tc.fails || len(cs.Actions()) != tc.patches {
			t.Errorf("%s: %v, %d calls; want failed %t, %d calls", tc.name, err, len(cs.Actions()), tc.fails, tc.patches)
		}
	}
}

// TestSourceRead: the pods bound to the node as the node runs them, their
// objects listed by name only.
func TestSourceRead(t *testing.T) {
	now := metav1.NewTime(t0)
	five := int64(5)
	web := decodePod(t, apiPod)
	deleting := boundPod("del", func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &five })
	mirror := boundPod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{MirrorAnnotation: "x"} })
	failed := boundPod("failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	missing := decodePod(t, strings.ReplaceAll(strings.ReplaceAll(apiPod, "kube-root-ca.crt", "absent"), "x2k4q", "y"))
	missing.UID = "missing"
	unsupported := decodePod(t, strings.ReplaceAll(strings.Replace(apiPod, `"priority": 0,`, `"priority": 0, "runtimeClassName": "gvisor",`, 1), "x2k4q", "z"))
	unsupported.UID = "unsupported"
	cs := fake.NewClientset(rootCA())
	clk := clocktesting.NewFakeClock(t0)
	(&tokenReactor{clk: clk}).install(cs)
	s := NewSource(cs, "vm", manifest.Options{}, clk, quiet())
	w := s.read(context.Background(), []*corev1.Pod{web, deleting, mirror, failed, missing, unsupported})
	var keys []string
	for _, p := range w.Pods {
		keys = append(keys, p.Key()+" "+p.UID)
	}
	if g := strings.Join(keys, ", "); g != "default/web-5d9c7b8f6-x2k4q "+string(web.UID) {
		t.Errorf("pods %s", g)
	}
	if len(w.Grace) != 1 || w.Grace["del"] != 5*time.Second {
		t.Errorf("grace %v", w.Grace)
	}
	// (The field path is the pod's as read: its token source set aside.)
	if len(w.Problems) != 2 || !strings.Contains(w.Problems[0], `bound to this node: spec.volumes[0].projected.sources[0].configMap.name: ConfigMap "absent" not found`) {
		t.Errorf("problems %q", w.Problems)
	}
	// Refused as written (for good); a missing ConfigMap may come.
	if r := w.Rejected["unsupported"]; len(w.Rejected) != 1 || r == nil || r.Reason != UnsupportedReason {
		t.Errorf("rejected %v", w.Rejected)
	}
	// Each ConfigMap listed alone (then watched): no GET.
	var calls []string
	for _, a := range cs.Actions() {
		what := a.GetVerb() + " " + a.GetResource().Resource
		switch a := a.(type) {
		case k8stesting.WatchAction:
			continue // may not have started yet
		case k8stesting.ListAction:
			what += " " + a.GetNamespace() + " " + a.GetListRestrictions().Fields.String()
		case k8stesting.CreateActionImpl:
			what += " " + a.Name + "/" + a.Subresource
		}
		calls = append(calls, what)
	}
	sort.Strings(calls)
	if g := strings.Join(calls, ", "); g != "create serviceaccounts default/token, list configmaps default metadata.name=absent, list configmaps default metadata.name=kube-root-ca.crt" {
		t.Errorf("calls %s", g)
	}
	if fingerprint(w) == fingerprint(Wanted{Synced: true}) {
		t.Error("fingerprint blind to the pods")
	}
}

var errForbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "b", errors.New("no"))

// countingLister fails the test if the node is listed.
type countingLister struct{ t *testing.T }

func (l countingLister) Pods(context.Context) ([]*run.PodInfo, error) {
	l.t.Error("the node was listed with no pod bound to it")
	return nil, nil
}

// TestWriterIdle: with no pod bound to the node (or before the first
// list), nothing is listed and nothing written.
func TestWriterIdle(t *testing.T) {
	cs := fake.NewClientset()
	for _, wanted := range []Wanted{{Synced: true}, {API: []*corev1.Pod{boundPod("a", nil)}}} {
		w := &Writer{Client: cs, Source: &Source{wanted: wanted}, Node: countingLister{t}, Clock: clocktesting.NewFakeClock(t0), Log: quiet()}
		if err := w.Sync(context.Background()); err != nil || len(cs.Actions()) != 0 {
			t.Errorf("%+v: %v %v", wanted, cs.Actions(), err)
		}
	}
}

// TestWriterStaleWatch: the patch is made from the pod as the API server
// has it now, not as the watch last brought it: a reason written a moment
// ago (Ready False, ContainersNotReady) does not stay once Ready is True.
func TestWriterStaleWatch(t *testing.T) {
	server := boundPod("a", func(p *corev1.Pod) {
		p.Status = Merge(p.Status, *running(corev1.ConditionFalse))
		p.Status.Conditions[1].Reason, p.Status.Conditions[1].Message = "ContainersNotReady", "containers with unready status: [web]"
	})
	cs := fake.NewClientset(server)
	stale := boundPod("a", nil) // Pending, as the watch last said
	node := lister{{UID: "a", Source: SourceName, Pod: &corev1.Pod{Status: *running(corev1.ConditionTrue)}}}
	w := &Writer{Client: cs, Source: &Source{wanted: Wanted{Synced: true, API: []*corev1.Pod{stale}}}, Node: node,
		Clock: clocktesting.NewFakeClock(t0), Log: quiet()}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(p.Status.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "" || c.Message != "" {
		t.Errorf("Ready %+v, want True with no reason", c)
	}
}

// TestSourceListFailuresSaidOnce: lists of the node's pods the API server
// refuses again and again are said once, in Explain's words, and their end
// once; a watch that merely ended is no failure.
func TestSourceListFailuresSaidOnce(t *testing.T) {
	cs := tokenIssuing()
	var mu sync.Mutex
	calls := 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 3 {
			return true, nil, apierrors.NewUnauthorized("Unauthorized")
		}
		return false, nil, nil
	})
	var log syncBuffer
	s := NewSource(cs, "vm", manifest.Options{}, clocktesting.NewFakeClock(t0), slog.New(slog.NewTextHandler(&log, nil)))
	s.Explain = func(err error) string { return "explained: " + err.Error() }
	s.watchFailed(io.EOF)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for !s.informer.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatalf("never listed:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	out := log.String()
	if strings.Count(out, "listing the pods bound to the node") != 1 || !strings.Contains(out, `err="explained: failed to list *v1.Pod: Unauthorized"`) ||
		strings.Count(out, "lists the pods bound to the node again") != 1 {
		t.Errorf("said:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
