package kubenode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func testAgent(objs ...runtime.Object) (*Agent, *fake.Clientset, *clocktesting.FakeClock, *Health) {
	c := fake.NewClientset(objs...)
	clk := clocktesting.NewFakeClock(t0)
	h := &Health{}
	f := testFacts()
	a := &Agent{Client: c, Nodes: NodeInformer(c, "dev1"), Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Facts:  func(context.Context) (Facts, error) { return f, nil },
		Health: func(context.Context) Health { return *h }}
	return a, c, clk, h
}

// watched puts the fake's Node in the agent's informer, as its watch
// would: the informer is not run, so each test says when the watch caught up.
func watched(t *testing.T, a *Agent, c *fake.Clientset) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), "dev1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Nodes.GetIndexer().Update(n); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
}

// calls counts the client's calls of verb on nodes (status included).
func calls(c *fake.Clientset, verb string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}

// patches counts the node status patches the client sent.
func patches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestRegisterCreates(t *testing.T) {
	a, c, _, _ := testAgent()
	ctx := context.Background()
	name, err := a.Register(ctx)
	if err != nil || name != "dev1" {
		t.Fatalf("Register = %q, %v", name, err)
	}
	n, err := c.CoreV1().Nodes().Get(ctx, "dev1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond(&n.Status, corev1.NodeReady).Status != corev1.ConditionTrue || len(n.Spec.Taints) != 1 || n.Labels[corev1.LabelHostname] != "dev1" {
		t.Errorf("registered node: %+v", n)
	}
	// Created with its status: the first update within the report
	// frequency sends nothing, and reads the watch's Node.
	watched(t, a, c)
	if err := a.UpdateStatus(ctx, 0); err != nil || len(c.Actions()) != 0 {
		t.Errorf("UpdateStatus after create: %v, calls %v", err, c.Actions())
	}
}

func TestRegisterExisting(t *testing.T) {
	// A node registered before (an earlier run of podrun), since marked
	// NotReady by the node lifecycle controller and relabelled by hand.
	f := testFacts()
	old := Node(f, Health{}, t0.Add(-time.Hour))
	old.UID = "uid-1"
	old.Labels[corev1.LabelHostname] = "stale"
	old.Labels["team"] = "a"
	old.Spec.Taints = nil
	for i := range old.Status.Conditions {
		old.Status.Conditions[i].Status = corev1.ConditionUnknown
		old.Status.Conditions[i].Reason = "NodeStatusUnknown"
	}
	a, c, _, _ := testAgent(old)
	ctx := context.Background()
	if _, err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := c.CoreV1().Nodes().Get(ctx, "dev1", metav1.GetOptions{})
	r := cond(&n.Status, corev1.NodeReady)
	if r.Status != corev1.ConditionTrue || !r.LastTransitionTime.Time.Equal(t0) || n.Labels[corev1.LabelHostname] != "dev1" || n.Labels["team"] != "a" || n.UID != "uid-1" || len(n.Spec.Taints) != 0 {
		t.Errorf("re-registered node: labels %v taints %v ready %+v uid %s", n.Labels, n.Spec.Taints, r, n.UID)
	}
	if patches(c) != 1 {
		t.Errorf("%d status patches, want 1", patches(c))
	}
}

func TestRegisterRefused(t *testing.T) {
	a, c, _, _ := testAgent()
	c.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "dev1", errors.New("node dev2 may not create node dev1"))
	})
	if _, err := a.Register(context.Background()); !apierrors.IsForbidden(err) {
		t.Errorf("Register = %v, want the API's Forbidden", err)
	}
}

func TestUpdateStatusCadence(t *testing.T) {
	a, c, clk, h := testAgent()
	ctx := context.Background()
	if _, err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	gets, sent := 0, 0
	for _, step := range []struct {
		name    string
		advance time.Duration
		health  Health
		patches int
		ready   corev1.ConditionStatus
	}{
		{"unchanged: nothing sent", StatusUpdateFrequency, Health{}, 0, corev1.ConditionTrue},
		{"not ready: sent at once", StatusUpdateFrequency, Health{NotReady: "runtime down"}, 1, corev1.ConditionFalse},
		{"unchanged again", StatusUpdateFrequency, Health{NotReady: "runtime down"}, 1, corev1.ConditionFalse},
		{"report frequency passed: sent", StatusReportFrequency, Health{NotReady: "runtime down"}, 2, corev1.ConditionFalse},
		{"ready again", StatusUpdateFrequency, Health{}, 3, corev1.ConditionTrue},
	} {
		clk.Step(step.advance)
		*h = step.health
		watched(t, a, c)
		if err := a.updateStatus(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		gets += calls(c, "get")
		sent += patches(c) // watched cleared the actions
		n, _ := c.CoreV1().Nodes().Get(ctx, "dev1", metav1.GetOptions{})
		if got := sent; got != step.patches || cond(&n.Status, corev1.NodeReady).Status != step.ready {
			t.Errorf("%s: %d patches, ready %s; want %d, %s", step.name, got, cond(&n.Status, corev1.NodeReady).Status, step.patches, step.ready)
		}
	}
	// The kubelet's nodeLister: the Node is read from the watch, never
	// from the API server while the watch has it.
	if gets != 0 {
		t.Errorf("%d GETs of the node, want 0", gets)
	}
}

func TestUpdateStatusRetries(t *testing.T) {
	for _, tc := range []struct {
		name          string
		watched       bool
		failedPatches int // refused before one is accepted
		err           bool
		gets, patches int
	}{
		{"watched: no GET", true, 0, false, 0, 1},
		{"not watched yet: one GET", false, 0, false, 1, 1},
		{"a refused patch: retried from a GET", true, 1, false, 1, 2},
		{"refused every time: five tries, four GETs", true, StatusUpdateRetry, true, StatusUpdateRetry - 1, StatusUpdateRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, c, clk, h := testAgent()
			ctx := context.Background()
			if _, err := a.Register(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.watched {
				watched(t, a, c)
			}
			c.ClearActions()
			refused := 0
			c.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if refused < tc.failedPatches {
					refused++
					return true, nil, apierrors.NewConflict(corev1.Resource("nodes"), "dev1", errors.New("changed meanwhile"))
				}
				return false, nil, nil
			})
			clk.Step(StatusUpdateFrequency)
			*h = Health{NotReady: "runtime down"} // a change: sent
			err := a.updateStatus(ctx)
			if (err != nil) != tc.err || calls(c, "get") != tc.gets || patches(c) != tc.patches {
				t.Errorf("updateStatus = %v, %d GETs, %d patches; want error %v, %d, %d", err, calls(c, "get"), patches(c), tc.err, tc.gets, tc.patches)
			}
			// nodeutil.PatchNodeStatus formats the API's error (%v): its
			// text, not its type, comes through.
			if tc.err && !strings.Contains(err.Error(), "changed meanwhile") {
				t.Errorf("updateStatus = %v, want the API's Conflict", err)
			}
		})
	}
}

func TestNodeInformer(t *testing.T) {
	f := testFacts()
	c := fake.NewClientset(Node(f, Health{}, t0))
	inf := NodeInformer(c, "dev1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	var only []string
	for _, a := range c.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			only = append(only, a.GetVerb()+" "+l.GetListRestrictions().Fields.String())
		}
		if w, ok := a.(k8stesting.WatchAction); ok {
			only = append(only, a.GetVerb()+" "+w.GetWatchRestrictions().Fields.String())
		}
	}
	if want := []string{"list metadata.name=dev1", "watch metadata.name=dev1"}; !slices.Equal(only, want) {
		t.Errorf("informer's calls %q, want %q", only, want)
	}
	// A change of the Node comes by the watch.
	if _, err := c.CoreV1().Nodes().Patch(ctx, "dev1", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, ok, _ := inf.GetIndexer().GetByKey("dev1")
		if ok && o.(*corev1.Node).Labels["team"] == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not bring the change: %v", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunRenewsLease(t *testing.T) {
	a, c, _, _ := testAgent()
	a.Clock = clocktesting.NewFakeClock(time.Now()) // the lease controller's wait loop runs on real time
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "dev1", metav1.GetOptions{})
		if err == nil {
			if *l.Spec.HolderIdentity != "dev1" || *l.Spec.LeaseDurationSeconds != LeaseDurationSeconds || l.Spec.RenewTime == nil ||
				len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].Name != "dev1" {
				t.Errorf("lease %+v %+v", l.Spec, l.OwnerReferences)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done // Run ends with ctx
}

// TestRegisterSaysOncePerStreak: a registration the API server refuses
// again and again is said once, in Explain's words, and again only when
// the failure changes.
func TestRegisterSaysOncePerStreak(t *testing.T) {
	a, c, clk, _ := testAgent()
	var log bytes.Buffer
	a.Log = slog.New(slog.NewTextHandler(&log, nil))
	a.Explain = func(err error) string { return "explained: " + err.Error() }
	calls := 0
	c.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		switch {
		case calls <= 4:
			return true, nil, apierrors.NewUnauthorized("Unauthorized")
		case calls <= 6:
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	done := make(chan string)
	go func() {
		name, _ := a.register(context.Background())
		done <- name
	}()
	for {
		select {
		case name := <-done:
			if name != "dev1" || calls != 7 {
				t.Errorf("registered %q after %d calls", name, calls)
			}
			out := log.String()
			if n := strings.Count(out, "registering the node"); n != 2 ||
				!strings.Contains(out, `err="explained: creating node dev1: Unauthorized"`) || !strings.Contains(out, "explained: creating node dev1: dial tcp") {
				t.Errorf("said %d times:\n%s", n, out)
			}
			return
		default:
		}
		if clk.HasWaiters() {
			clk.Step(7 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAgentNode: the Node the agent last read or sent, whose addresses
// are its pods' host IPs (the kubelet's node lister).
func TestAgentNode(t *testing.T) {
	a, c, clk, _ := testAgent()
	ctx := context.Background()
	if n := a.Node(); n != nil {
		t.Fatalf("Node before registration = %v, want nil", n)
	}
	if _, err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := HostIPs(a.Node()); err != nil || !slices.EqualFunc(got, ips("10.0.0.5", "fd00::5"), net.IP.Equal) {
		t.Fatalf("host IPs of the created Node = %v, %v", got, err)
	}
	// Someone annotates the Node: read at the next update, nothing sent.
	edit := func(fn func(n *corev1.Node)) {
		t.Helper()
		n, err := c.CoreV1().Nodes().Get(ctx, "dev1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fn(n)
		if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		watched(t, a, c)
	}
	edit(func(n *corev1.Node) { n.Annotations = map[string]string{"team": "a"} })
	clk.Step(StatusUpdateFrequency)
	if err := a.UpdateStatus(ctx, 0); err != nil || patches(c) != 0 {
		t.Fatalf("UpdateStatus: %v, %d patches", err, patches(c))
	}
	if got := a.Node().Annotations["team"]; got != "a" {
		t.Errorf("Node after an update that sent nothing: annotation %q, want the one read", got)
	}
	// Someone changes its addresses: the agent sends its own, and holds
	// the Node the API server answered.
	edit(func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.9"}}
	})
	clk.Step(StatusUpdateFrequency)
	if err := a.UpdateStatus(ctx, 0); err != nil || patches(c) != 1 {
		t.Fatalf("UpdateStatus: %v, %d patches", err, patches(c))
	}
	if got, err := HostIPs(a.Node()); err != nil || !slices.EqualFunc(got, ips("10.0.0.5", "fd00::5"), net.IP.Equal) || a.Node().Annotations["team"] != "a" {
		t.Errorf("host IPs of the sent Node = %v, %v (annotations %v)", got, err, a.Node().Annotations)
	}
}
