package kubepods

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// FirstSyncWait is how long a read waits for the first list of an object
// it starts watching (the kubelet's watch-based manager polls its cache
// for a second): after it the pod is read with what was read of the
// object before, if anything, and read again once the list comes.
const FirstSyncWait = time.Second

// watchTimeout is the shortest a watch of an object lasts before it is
// made again (client-go's reflector makes it last up to twice that): the
// kubelet's 30 minutes, not the reflector's default 5.
const watchTimeout = 30 * time.Minute

// objectKey names a ConfigMap or Secret of a namespace.
type objectKey struct {
	kind      string // "ConfigMap" or "Secret"
	namespace string
	name      string
}

// objectWatches are the ConfigMaps and Secrets the node's pods name, each
// watched alone, as the kubelet's watch-based manager
// (pkg/kubelet/util/manager/watch_based_manager.go) watches them: a
// reflector per object, listing and watching its namespace with the field
// selector metadata.name=NAME, which the Node authorizer allows a node for
// the objects of the pods bound to it (and nothing else). A watch starts
// when a read first names its object, and stops when a read names it no
// more (only) or once the object is immutable (its last content stays).
// Every change a watch sees calls changed (the source reads its pods
// again). Its methods are for one goroutine (the source's Run); the
// reflectors run in their own.
type objectWatches struct {
	client  API
	clock   clock.WithTicker
	changed func()
	items   map[objectKey]*objectWatch
}

// objectWatch is one object's reflector and what it listed.
type objectWatch struct {
	store  *watchStore
	stop   context.CancelFunc // nil: stopped (immutable)
	waited bool               // a read waited for its first list already
}

func newObjectWatches(client API, clk clock.WithTicker, changed func()) *objectWatches {
	return &objectWatches{client: client, clock: clk, changed: changed, items: map[objectKey]*objectWatch{}}
}

// get is what the watch of k holds (a zero object: not found), starting it
// if k was not watched, and waiting up to FirstSyncWait for its first list
// once; synced is false while it has not listed (the API server away, or
// not yet allowing the node to read it).
func (ws *objectWatches) get(ctx context.Context, k objectKey) (o object, synced bool) {
	w := ws.items[k]
	if w == nil {
		w = ws.start(ctx, k)
		ws.items[k] = w
	}
	if !w.waited {
		w.waited = true
		t := ws.clock.NewTimer(FirstSyncWait)
		select {
		case <-w.store.synced:
		case <-t.C():
		case <-ctx.Done():
		}
		t.Stop()
	}
	select {
	case <-w.store.synced:
	default:
		return object{}, false
	}
	got, ok, err := w.store.GetByKey(k.namespace + "/" + k.name)
	if err != nil || !ok {
		return object{}, true
	}
	switch v := got.(type) {
	case *corev1.ConfigMap:
		o.cm = v
	case *corev1.Secret:
		o.sec = v
	}
	if immutable(o) && w.stop != nil {
		w.stop() // it can no longer change (nor be made mutable again)
		w.stop = nil
	}
	return o, true
}

// immutable tells whether o is marked immutable.
func immutable(o object) bool {
	switch {
	case o.cm != nil:
		return o.cm.Immutable != nil && *o.cm.Immutable
	case o.sec != nil:
		return o.sec.Immutable != nil && *o.sec.Immutable
	}
	return false
}

// only stops watching the objects not in keep.
func (ws *objectWatches) only(keep map[objectKey]bool) {
	for k, w := range ws.items {
		if keep[k] {
			continue
		}
		if w.stop != nil {
			w.stop()
		}
		delete(ws.items, k)
	}
}

// start runs a reflector of k until ctx ends or the watch is stopped.
func (ws *objectWatches) start(ctx context.Context, k objectKey) *objectWatch {
	sel := fields.OneTermEqualSelector("metadata.name", k.name).String()
	var expected runtime.Object
	lw := &cache.ListWatch{}
	switch k.kind {
	case "ConfigMap":
		expected = &corev1.ConfigMap{}
		lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return ws.client.CoreV1().ConfigMaps(k.namespace).List(ctx, o)
		}
		lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return ws.client.CoreV1().ConfigMaps(k.namespace).Watch(ctx, o)
		}
	default:
		expected = &corev1.Secret{}
		lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return ws.client.CoreV1().Secrets(k.namespace).List(ctx, o)
		}
		lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return ws.client.CoreV1().Secrets(k.namespace).Watch(ctx, o)
		}
	}
	store := &watchStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), synced: make(chan struct{}), changed: ws.changed}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, ws.client), expected, store, cache.ReflectorOptions{
		Name:            fmt.Sprintf("object-%q/%q", k.namespace, k.name), // the kubelet's
		MinWatchTimeout: watchTimeout,
		Clock:           ws.clock,
	})
	ctx, stop := context.WithCancel(ctx)
	go r.RunWithContext(ctx)
	return &objectWatch{store: store, stop: stop}
}

// watchStore is a reflector's store that tells of every change and of
// its first list (synced closed).
type watchStore struct {
	cache.Store
	once    sync.Once
	synced  chan struct{}
	changed func()
}

func (s *watchStore) Add(o any) error {
	err := s.Store.Add(o)
	s.changed()
	return err
}

func (s *watchStore) Update(o any) error {
	err := s.Store.Update(o)
	s.changed()
	return err
}

func (s *watchStore) Delete(o any) error {
	err := s.Store.Delete(o)
	s.changed()
	return err
}

func (s *watchStore) Replace(list []any, rv string) error {
	err := s.Store.Replace(list, rv)
	if err == nil {
		s.once.Do(func() { close(s.synced) })
	}
	s.changed()
	return err
}
