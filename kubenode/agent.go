package kubenode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/apimachinery/lease"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/utils/clock"
)

// Agent is this machine as a Node of the cluster its client talks to.
type Agent struct {
	Client Client
	// Nodes is the node's own Node as a watch keeps it (NodeInformer):
	// the status update reads it there and GETs it only to retry, as the
	// kubelet's nodeLister. Run runs it.
	Nodes cache.SharedIndexInformer
	Clock clock.WithTicker
	Log   *slog.Logger
	// Facts are read at each status update (the machine may change:
	// addresses, the runtime's version); Health likewise.
	Facts  func(ctx context.Context) (Facts, error)
	Health func(ctx context.Context) Health
	// Explain says what a failed call means of the node's input
	// (Creds.Explain); nil: the error as it is.
	Explain func(error) string

	lastSent time.Time // when this process last sent the node's status

	mu   sync.Mutex
	node *corev1.Node // the Node as last read or sent (the kubelet's node lister's)
}

// Node is the Node as the agent last read or sent it; nil until then
// (the kubelet's GetNode, from its node lister).
func (a *Agent) Node() *corev1.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.node
}

// seen records n as the Node last read or sent.
func (a *Agent) seen(n *corev1.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.node = n
}

// Run registers the node, then renews its Lease and keeps its status until
// ctx ends; what fails is logged and tried again, as the kubelet does.
func (a *Agent) Run(ctx context.Context) {
	// The watch fails when the API server does: register and the status
	// loop say that once per streak; client-go's default handler would log
	// each retry of the watch.
	if err := a.Nodes.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		a.Log.Debug("watching the node's Node", "err", err)
	}); err != nil {
		a.Log.Error("watching the node's Node", "err", err) // started before: the default handler stays
	}
	go a.Nodes.RunWithContext(ctx)
	name, ok := a.register(ctx)
	if !ok {
		return // ctx ended before the node was registered
	}
	leases := lease.NewController(a.Clock, leaseClientset{client: a.Client}, name, LeaseDurationSeconds, func() {},
		LeaseDurationSeconds*time.Second/4, name, corev1.NamespaceNodeLease, a.setOwner(ctx, name))
	go leases.Run(ctx)
	t := a.Clock.NewTicker(StatusUpdateFrequency)
	defer t.Stop()
	var streak Streak
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			err := a.updateStatus(ctx)
			switch {
			case err == nil && streak.Succeeded():
				a.Log.Info("the node's status is written again", "node", name)
			case err != nil && streak.Failed(err):
				a.Log.Error("updating the node's status; retrying (said again when the failure changes)", "node", name, "err", a.explain(err))
			}
		}
	}
}

// explain is err in Explain's words.
func (a *Agent) explain(err error) string {
	if a.Explain == nil {
		return err.Error()
	}
	return a.Explain(err)
}

// register retries Register as the kubelet's registerWithAPIServer does
// (100 ms, doubling, at most 7 s) until it succeeds (ok) or ctx ends. A
// failure is said once, and again when it changes, not at each retry.
func (a *Agent) register(ctx context.Context) (name string, ok bool) {
	step := 100 * time.Millisecond
	var streak Streak
	for {
		name, err := a.Register(ctx)
		if err == nil {
			a.Log.Info("node registered", "node", name)
			return name, true
		}
		if streak.Failed(err) {
			a.Log.Error("registering the node; retrying (said again when the failure changes)", "err", a.explain(err))
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-a.Clock.After(step):
		}
		step = min(2*step, 7*time.Second)
	}
}

// Register creates the Node, or, when it exists (a restart), brings its
// labels, capacity and status to the machine's (the kubelet's
// tryRegisterWithAPIServer). It returns the node's name.
func (a *Agent) Register(ctx context.Context) (string, error) {
	f, err := a.Facts(ctx)
	if err != nil {
		return "", fmt.Errorf("the node's facts: %w", err)
	}
	now := a.Clock.Now()
	created, err := a.Client.CoreV1().Nodes().Create(ctx, Node(f, a.Health(ctx), now), metav1.CreateOptions{})
	if err == nil {
		a.lastSent = now
		a.seen(created)
		return f.Name, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating node %s: %w", f.Name, err)
	}
	old, err := a.Client.CoreV1().Nodes().Get(ctx, f.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading node %s: %w", f.Name, err)
	}
	n := old.DeepCopy()
	Reconcile(n, f)
	n.Status = Status(f, a.Health(ctx), old.Status.Conditions, now)
	if err := a.patchStatus(old, n); err != nil {
		return "", err
	}
	return f.Name, nil
}

// StatusUpdateRetry is how many times a status update is tried before
// the next tick (the kubelet's nodeStatusUpdateRetry).
const StatusUpdateRetry = 5

// updateStatus is the kubelet's updateNodeStatus: UpdateStatus tried
// StatusUpdateRetry times, the first from the watch's Node, the others from
// a GET.
func (a *Agent) updateStatus(ctx context.Context) error {
	var errs []error
	for try := range StatusUpdateRetry {
		err := a.UpdateStatus(ctx, try)
		if err == nil {
			return nil
		}
		a.Log.Debug("updating the node's status, will retry", "try", try, "err", err)
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("updating the node's status failed %d times: %w", len(errs), errors.Join(errs...))
}

// UpdateStatus computes the node's status and sends it when it changed or
// the report frequency passed (the kubelet's tryUpdateNodeStatus). The
// first try (0) reads the Node from the watch (Nodes), a retry GETs it: at
// steady state a node's status costs the API server no request but the
// watch's and a patch when something changed.
func (a *Agent) UpdateStatus(ctx context.Context, try int) error {
	f, err := a.Facts(ctx)
	if err != nil {
		return fmt.Errorf("the node's facts: %w", err)
	}
	old, err := a.readNode(ctx, f.Name, try)
	if err != nil {
		return err
	}
	now := a.Clock.Now()
	n := old.DeepCopy()
	labels := Reconcile(n, f)
	n.Status = Status(f, a.Health(ctx), old.Status.Conditions, now)
	if !ShouldSend(labels || Changed(old.Status, n.Status), a.lastSent, now) {
		a.seen(old)
		return nil
	}
	return a.patchStatus(old, n)
}

// readNode is the Node named name: the watch's copy on the first try (not
// to be changed), else the API server's.
func (a *Agent) readNode(ctx context.Context, name string, try int) (*corev1.Node, error) {
	if try > 0 {
		n, err := a.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		return n, nil
	}
	o, ok, err := a.Nodes.GetIndexer().GetByKey(name)
	if err != nil {
		return nil, fmt.Errorf("reading node %s from its watch: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("node %s: %w", name, apierrors.NewNotFound(corev1.Resource("nodes"), name))
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("node %s: the watch holds a %T", name, o)
	}
	return n, nil
}

// NodeInformer is the kubelet's informer of its own Node: nodes listed and
// watched with fieldSelector metadata.name=name (the only Node the Node
// authorizer lets a node read). client must not cut watches (no client
// timeout).
func NodeInformer(client Client, name string) cache.SharedIndexInformer {
	only := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = only
			return client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = only
			return client.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	// As client-go's generated informers: a client without watch-list
	// semantics (a fake) is listed.
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Node{}, 0, cache.Indexers{})
}

// patchStatus sends the difference of n from old as a strategic merge
// patch of the node's status, with the kubelet's own nodeutil.PatchNodeStatus:
// only what changed, with no resourceVersion, so that what others changed
// meanwhile is kept; changed addresses are replaced whole (their patch
// strategy merges by type: two InternalIPs of a dual-stack node would
// become one). Its call is bounded by the client's timeout (the heartbeat
// client's, StatusUpdateFrequency), not by ctx.
func (a *Agent) patchStatus(old, n *corev1.Node) error {
	sent, _, err := nodeutil.PatchNodeStatus(a.Client.CoreV1(), types.NodeName(n.Name), old, n)
	if err != nil {
		return fmt.Errorf("patching node %s's status: %w", n.Name, err)
	}
	a.lastSent = a.Clock.Now()
	a.seen(sent)
	return nil
}

// setOwner makes the Node the owner of its Lease, so that the Lease goes
// with the Node (the kubelet's SetNodeOwnerFunc).
func (a *Agent) setOwner(ctx context.Context, name string) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		n, err := a.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading node %s for its lease's owner: %w", name, err)
		}
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}
		return nil
	}
}
