package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/run"
)

// waitTimeout bounds every test's wait.
const waitTimeout = 20 * time.Second

// fakeNode is a Lifecycle whose pods live in memory. A pod SyncPod makes
// is Running until the test ends it (end), then Succeeded or Failed and
// still listed; SyncPod returns then, or at once with WaitRunning. A pod
// whose making is cancelled is undone (after undo, when set) and gone.
type fakeNode struct {
	undo func() // called before a cancelled pod is undone

	mu      sync.Mutex
	pods    map[string]*run.PodInfo // by UID; a stored PodInfo is never changed
	waiting map[string]chan uint32  // by UID: the SyncPods waiting for their pod's end
	made    []string                // the keys of the pods SyncPod made, in order
	down    []string                // the UIDs RemovePod (key/uid) and DownUID (uid) took down
	events  []string                // reported: "pod msg"
}

func newFakeNode() *fakeNode {
	return &fakeNode{pods: map[string]*run.PodInfo{}, waiting: map[string]chan uint32{}}
}

// Pods lists the pods, sorted by key.
func (n *fakeNode) Pods(context.Context) ([]*run.PodInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*run.PodInfo
	for _, p := range n.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *run.PodInfo) int { return strings.Compare(a.Key(), b.Key()) })
	return out, nil
}

// SyncPod makes w's one pod Running and, unless o.Wait is WaitRunning,
// waits for its end or for ctx's.
func (n *fakeNode) SyncPod(ctx context.Context, key string, w run.Want, o run.UpOptions, _ []*run.PodInfo) []run.Result {
	p := w.Pods[0]
	ended := make(chan uint32, 1)
	n.mu.Lock()
	n.made = append(n.made, key)
	n.pods[p.UID] = &run.PodInfo{UID: p.UID, Namespace: p.Namespace, Name: p.Name, Pod: withPhase(p.Pod, corev1.PodRunning)}
	if o.Wait != run.WaitRunning {
		n.waiting[p.UID] = ended
	}
	n.mu.Unlock()
	if o.Wait == run.WaitRunning {
		return []run.Result{{Pod: key, UID: p.UID, Action: run.Created, Phase: corev1.PodRunning}}
	}
	select {
	case code := <-ended:
		r := run.Result{Pod: key, UID: p.UID, Action: run.Created, Phase: corev1.PodSucceeded}
		if code != 0 {
			r.Phase = corev1.PodFailed
			r.Err = &run.PodFailedError{Pod: key, Reason: fmt.Sprintf("container %q exited with code %d", "work", code)}
		}
		return []run.Result{r}
	case <-ctx.Done():
		if n.undo != nil {
			n.undo()
		}
		n.mu.Lock()
		delete(n.pods, p.UID)
		delete(n.waiting, p.UID)
		n.mu.Unlock()
		return []run.Result{{Pod: key, UID: p.UID, Err: fmt.Errorf("pod %s: undone: %w", key, ctx.Err())}}
	}
}

// RemovePod takes pod uid down.
func (n *fakeNode) RemovePod(_ context.Context, key, uid string) error {
	return n.remove(key + "/" + uid)
}

// DownUID takes pod uid down.
func (n *fakeNode) DownUID(_ context.Context, uid string) error { return n.remove(uid) }

func (n *fakeNode) remove(what string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = append(n.down, what)
	uid := what[strings.LastIndex(what, "/")+1:]
	delete(n.pods, uid)
	return nil
}

// Report keeps the event.
func (n *fakeNode) Report(e run.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, e.Pod+" "+e.Msg)
}

// wentDown reports whether pod uid was taken down (DownUID).
func (n *fakeNode) wentDown(uid string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.down, uid)
}

// said reports whether event ("pod msg") was reported.
func (n *fakeNode) said(event string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.events, event)
}

// end ends pod uid's container with code: the pod is Succeeded (0) or
// Failed, and its SyncPod, if it waits, returns.
func (n *fakeNode) end(uid string, code uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	p := *n.pods[uid]
	p.Pod = withPhase(p.Pod, phase)
	n.pods[uid] = &p
	if w := n.waiting[uid]; w != nil {
		delete(n.waiting, uid)
		w <- code
	}
}

// running are the pods Running, sorted by key.
func (n *fakeNode) running() []*run.PodInfo {
	pods, _ := n.Pods(context.Background())
	return slices.DeleteFunc(pods, func(p *run.PodInfo) bool { return p.Pod.Status.Phase != corev1.PodRunning })
}

// endRunning ends the pods as they run, the k-th with codes[k], until
// every code is used; it returns their names.
func endRunning(ctx context.Context, t *testing.T, n *fakeNode, codes ...uint32) []string {
	t.Helper()
	var names []string
	for len(names) < len(codes) {
		if ctx.Err() != nil {
			t.Fatalf("%d pods ended, want %d: %v", len(names), len(codes), ctx.Err())
		}
		for _, p := range n.running() {
			if len(names) < len(codes) {
				n.end(p.UID, codes[len(names)])
				names = append(names, p.Name)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return names
}

// withPhase is a copy of pod in phase.
func withPhase(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.Phase = phase
	return p
}
