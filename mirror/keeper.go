package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// The back-off of a reconcile that failed (the API server refused or did
// not answer): from the kubelet's 100 ms of fastStaticPodsRegistration,
// doubling, to about its pod resync period.
const (
	minBackoff = 200 * time.Millisecond
	maxBackoff = time.Minute
)

// Keeper keeps the API's mirror pods of the node's static pods: it
// reconciles (Decide, then the API calls) whenever the node's static pods
// change (Observe) or the API's pods on the node do (its informer), and
// again after a back-off while a call fails. A problem is logged when it
// starts or changes, not at every retry. The static pods never wait on it.
type Keeper struct {
	node   string
	api    client
	status statusWriter
	pods   func() ([]*corev1.Pod, error) // the API's pods bound to the node
	clock  clock.Clock
	log    *slog.Logger

	mu   sync.Mutex
	snap *Snapshot // the latest observed; nil before the first
	kick chan struct{}
	// logged are the problems of the last reconcile, logged once each.
	logged map[string]bool
	// held are the static pods refused a mirror pod, by namespace/name.
	held map[string]hold
}

// hold is a static pod whose mirror pod could not be created: it is not
// tried again before until (a back-off of its own, doubling to
// maxBackoff, as often as the kubelet's pod resync at most), however often
// the keeper reconciles, unless its hash changes.
type hold struct {
	hash  string
	err   error
	wait  time.Duration
	until time.Time
}

// NewKeeper returns the keeper of node's mirror pods, calling api with the
// node's credentials and seeing the API's pods through pods (an informer
// of the pods bound to the node: kubepods.Source's).
func NewKeeper(api API, node string, pods cache.SharedIndexInformer, clk clock.Clock, log *slog.Logger) (*Keeper, error) {
	k := &Keeper{node: node, api: client{api: api, node: node}, status: statusWriter{api: api, sent: map[types.UID]*corev1.PodStatus{}},
		clock: clk, log: log, kick: make(chan struct{}, 1), held: map[string]hold{}}
	k.pods = func() ([]*corev1.Pod, error) {
		if !pods.HasSynced() {
			return nil, errors.New("the pods bound to the node are not listed yet")
		}
		var out []*corev1.Pod
		for _, o := range pods.GetStore().List() {
			if p, ok := o.(*corev1.Pod); ok {
				out = append(out, p)
			}
		}
		return out, nil
	}
	changed := func(any) { k.poke() }
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, DeleteFunc: changed, UpdateFunc: func(_, o any) { changed(o) },
	}); err != nil {
		return nil, fmt.Errorf("watching the pods bound to the node: %w", err)
	}
	return k, nil
}

// Observe hands the keeper what the node runs of its own now; it returns
// at once (the reconcile is Run's).
func (k *Keeper) Observe(s Snapshot) {
	k.mu.Lock()
	k.snap = &s
	k.mu.Unlock()
	k.poke()
}

func (k *Keeper) poke() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *Keeper) latest() *Snapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap
}

// Run reconciles at every change, and after a back-off while it fails,
// until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	backoff := minBackoff
	var retry clock.Timer
	var retryC <-chan time.Time // nil while no retry is due
	for {
		select {
		case <-ctx.Done():
			if retry != nil {
				retry.Stop()
			}
			return
		case <-k.kick:
		case <-retryC:
		}
		if retry != nil {
			retry.Stop()
			retry, retryC = nil, nil
		}
		if !k.reconcile(ctx) || ctx.Err() != nil {
			backoff = minBackoff
			continue
		}
		retry = k.clock.NewTimer(backoff)
		retryC = retry.C()
		backoff = min(2*backoff, maxBackoff)
	}
}

// reconcile makes the API's mirror pods match the static pods last
// observed once; it returns true when it should be tried again (a call
// failed). Nothing is done before the node's static pods are first
// observed: a mirror pod is never taken for an orphan before.
func (k *Keeper) reconcile(ctx context.Context) (retry bool) {
	snap := k.latest()
	if snap == nil {
		return false
	}
	var problems []string
	defer func() { k.report(problems) }()
	api, err := k.pods()
	if err != nil {
		return true // not listed yet: tried again soon, nothing to say
	}
	var node *Node
	nodeRef := func() (Node, error) {
		if node != nil {
			return *node, nil
		}
		n, err := k.api.nodeRef(ctx)
		if err == nil {
			node = &n
		}
		return n, err
	}
	mirrors := map[types.UID]bool{}
	for _, a := range Decide(k.node, *snap, api) {
		if a.Existing != nil {
			mirrors[a.Existing.UID] = true
		}
		if err := k.do(ctx, a, nodeRef); err != nil {
			problems = append(problems, err.Error())
			retry = retry || !errors.Is(err, errForeign)
		}
	}
	k.status.keep(mirrors)
	for key := range k.held {
		if !slices.ContainsFunc(snap.Static, func(s Static) bool { return s.Pod.Namespace+"/"+s.Pod.Name == key }) {
			delete(k.held, key)
		}
	}
	return retry
}

// errForeign is a pod of a static pod's name that is not a mirror pod: the
// static pod has no mirror pod while it is there; trying again changes
// nothing.
var errForeign = errors.New("a pod of its name exists that is not a mirror pod: it is left alone")

// do makes the API call of one action.
func (k *Keeper) do(ctx context.Context, a Action, nodeRef func() (Node, error)) error {
	create := func() error {
		key, h := a.key(), hash(a.Static.Pod)
		held, ok := k.held[key]
		if ok && held.hash == h && k.clock.Now().Before(held.until) {
			return held.err
		}
		n, err := nodeRef()
		if err != nil {
			return fmt.Errorf("mirror pod %s: %w", key, err)
		}
		created, err := k.api.create(ctx, a.Static.Pod, n)
		if err != nil {
			wait := minBackoff
			if ok && held.hash == h {
				wait = min(2*held.wait, maxBackoff)
			}
			k.held[key] = hold{hash: h, err: err, wait: wait, until: k.clock.Now().Add(wait)}
			return err
		}
		delete(k.held, key)
		if created {
			k.log.Info("mirror pod created", "pod", key, "hash", h)
		}
		return nil
	}
	switch a.Kind {
	case Create:
		return create()
	case Replace, Delete:
		deleted, err := k.api.remove(ctx, a.Existing)
		if err != nil {
			return err
		}
		if deleted {
			k.log.Info("mirror pod deleted", "pod", a.key(), "uid", a.Existing.UID, "reason", a.Reason)
		}
		if a.Kind == Replace && deleted {
			return create()
		}
	case Foreign:
		return fmt.Errorf("static pod %s has no mirror pod: %w", a.key(), errForeign)
	case Status:
		_, err := k.status.write(ctx, a.Existing, a.Static.Status)
		return err
	}
	return nil
}

// report logs each problem of a reconcile that was not a problem of the
// last one, and once that there are none left.
func (k *Keeper) report(problems []string) {
	now := map[string]bool{}
	for _, p := range problems {
		if !k.logged[p] && !now[p] {
			k.log.Warn("mirror pods: retrying; the static pods run as they are", "problem", p)
		}
		now[p] = true
	}
	if len(now) == 0 && len(k.logged) > 0 {
		k.log.Info("mirror pods in sync with the static pods again")
	}
	k.logged = now
}
