package kubepods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/kubenode/kept"
	"github.com/podrun/podrun/manifest"
)

// API is the part of client-go's clientset this package calls (core/v1:
// the pods bound to the node, the ConfigMaps and Secrets they name, and the pods' status); a clientset, its fake and kubenode.Client
// have it.
type API interface {
	CoreV1() corev1client.CoreV1Interface
}

// Source is the pods the API server bound to this node, as the daemon's
// third source (daemon.Cluster): an informer on the pods with
// spec.nodeName = Node (the kubelet's config.NewSourceApiserver), each pod
// read by Convert with the objects it names, each of them watched
// (objects.go), so that a changed object reaches the pods' volumes at
// once. It keeps running what it last
// knew while the API server does not answer: the informer's store keeps
// its pods, a pod whose objects cannot be read keeps its last good form.
type Source struct {
	Client    API
	Node      string
	Admission manifest.Options // of the daemon; StaticNode is not applied
	Clock     clock.WithTicker
	Log       *slog.Logger
	// Kept is the node's kept state (nil: none): the pods read are saved
	// in it, and at start they stand for the API's until it answers
	// (keep.go).
	Kept Keeper
	// KeptProblems are problems of the kept state to show with the pods'
	// (a kept directory that could not be opened); Run adds those of its
	// Load.
	KeptProblems []string
	// Explain says what a failed list or watch means of the node's input
	// (kubenode.Creds.Explain); nil: the error as it is.
	Explain func(error) string

	informer cache.SharedIndexInformer
	poke     chan struct{} // the informer saw a change (capacity 1)
	changed  chan struct{} // to the daemon (capacity 1)

	mu     sync.Mutex
	wanted Wanted
	print  string // of wanted, to tell a change

	// Run's goroutine alone: the objects' watches, the objects as last
	// read (kept ones until their watch lists), and the last good form
	// of each pod.
	watches      *objectWatches
	objects      map[objectKey]object
	named        map[objectKey]bool       // the objects named by the pods of the read under way
	good         map[string]*manifest.Pod // by UID
	keptProblems []string                 // KeptProblems and those of the kept state's Load
	failed       bool                     // an object could not be read at the last read

	keptMu  sync.Mutex
	kept    map[types.UID]kept.Pod // as last saved or loaded
	keptAs  map[types.UID]string   // versions of each as last saved
	keptErr map[types.UID]string   // the last error saving each, logged

	tokens *Tokens // the projected service account tokens (tokens.go)

	listMu sync.Mutex
	lists  kubenode.Streak // of the informer's lists and watches
}

// object is a ConfigMap or Secret as read (nil: not found).
type object struct {
	cm  *corev1.ConfigMap
	sec *corev1.Secret
}

// Wanted is what the source asks of the node now.
type Wanted struct {
	Synced bool                     // the API server answered the first list
	Pods   []*manifest.Pod          // to run
	Grace  map[string]time.Duration // of the pods being deleted, by UID
	// Problems are the pods bound to the node that cannot run.
	Problems []string
	// Rejected are the pods the node refuses as they are written (never
	// run here), by UID: the status writer writes them Failed.
	Rejected map[types.UID]*admission.Refusal
	// API are the pods bound to the node as the API server last said,
	// for the status writer.
	API []*corev1.Pod
}

// NewSource returns the source of node's pods; Run starts it.
func NewSource(client API, node string, admission manifest.Options, clk clock.WithTicker, log *slog.Logger) *Source {
	onNode := fields.OneTermEqualSelector("spec.nodeName", node).String()
	var s *Source
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = onNode
			l, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			if err == nil {
				s.listed()
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = onNode
			w, err := client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
			if err == nil {
				s.listed() // a watch-list (client-go's default with a real API server) is a watch
			}
			return w, err
		},
	}
	s = &Source{Client: client, Node: node, Admission: admission, Clock: clk, Log: log,
		// As client-go's generated informers: a client without watch-list
		// semantics (a fake) is listed.
		informer: cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Pod{}, 0, cache.Indexers{}),
		tokens:   NewTokens(client, clk),
		poke:     make(chan struct{}, 1), changed: make(chan struct{}, 1),
		objects: map[objectKey]object{}, good: map[string]*manifest.Pod{},
		kept: map[types.UID]kept.Pod{}, keptAs: map[types.UID]string{}, keptErr: map[types.UID]string{}}
	s.watches = newObjectWatches(client, clk, func() { poke(s.poke) })
	return s
}

// Informer is the source's informer of the pods bound to the node, for
// whoever else watches them (the mirror keeper): one watch of the node's
// pods, as the kubelet has. Run runs it.
func (s *Source) Informer() cache.SharedIndexInformer { return s.informer }

// Source is the source label of the pods (daemon.Cluster).
func (s *Source) Source() string { return SourceName }

// Changed receives when Wanted changed (daemon.Cluster).
func (s *Source) Changed() <-chan struct{} { return s.changed }

// Wanted is daemon.Cluster's: the last pods read, never waiting.
func (s *Source) Wanted() (pods []*manifest.Pod, grace map[string]time.Duration, problems []string, synced bool) {
	w := s.Current()
	return w.Pods, w.Grace, w.Problems, w.Synced
}

// Current is what the source asks now.
func (s *Source) Current() Wanted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wanted
}

// reread is how often the pods are read again without a change of theirs
// or of their objects: a token may be due for renewal.
const reread = 10 * time.Second

// objectRetry is the first wait before an object that could not be read
// is read again (doubled at each failure, up to reread).
const objectRetry = time.Second

// Run watches the pods until ctx ends, reading them again at each change
// and every reread. With a kept state, the kept pods stand for the API's
// from start until its first list (startKept), and every read is kept.
func (s *Source) Run(ctx context.Context) {
	listFailed := make(chan struct{}, 1)
	if err := s.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		poke(listFailed)
		s.watchFailed(err)
	}); err != nil {
		s.Log.Error("watching the pods bound to the node", "err", err)
		return
	}
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke(s.poke) },
		UpdateFunc: func(any, any) { poke(s.poke) },
		DeleteFunc: func(any) { poke(s.poke) },
	}); err != nil {
		s.Log.Error("watching the pods bound to the node", "err", err)
		return
	}
	go s.informer.RunWithContext(ctx)
	synced := make(chan struct{})
	go func() {
		// The first list may bring no pod, hence no event.
		if cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
			close(synced)
			poke(s.poke)
		}
	}()
	s.keptProblems = slices.Clone(s.KeptProblems)
	switch {
	case s.Kept != nil:
		s.startKept(ctx, synced, listFailed)
	case len(s.keptProblems) > 0:
		s.publish(Wanted{Problems: slices.Clone(s.keptProblems)}) // shown before the API answers
	}
	next := s.Clock.NewTimer(reread)
	defer next.Stop()
	listed := false
	var backoff time.Duration // of a read again after an object could not be read
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.poke:
		case <-next.C():
		}
		if !listed && s.informer.HasSynced() {
			listed = true
			s.Log.Info("listed the pods bound to the node", "node", s.Node)
		}
		wait := reread
		if listed {
			var api []*corev1.Pod
			for _, o := range s.informer.GetStore().List() {
				api = append(api, o.(*corev1.Pod))
			}
			s.failed = false
			s.publish(s.read(ctx, api))
			s.reconcile(api)
			if s.failed {
				// Read again soon: the Node authorizer allows an object a
				// moment after the pod naming it is bound.
				backoff = min(max(2*backoff, objectRetry), reread)
				wait = backoff
			} else {
				backoff = 0
			}
		}
		next.Stop()
		next.Reset(wait)
	}
}

// watchFailed says why a list or watch of the node's pods failed, once
// per streak of such failures (client-go's default handler logs each
// retry); a watch that ended (EOF, its resource version expired) is no
// failure.
func (s *Source) watchFailed(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	s.listMu.Lock()
	tell := s.lists.Failed(err)
	s.listMu.Unlock()
	if !tell {
		return
	}
	msg := err.Error()
	if s.Explain != nil {
		msg = s.Explain(err)
	}
	s.Log.Error("listing the pods bound to the node; retrying (said again when the failure changes), the pods on the node run on as they are", "err", msg)
}

// listed is a list or watch of the node's pods that the API server
// accepted: a streak of failures ends.
func (s *Source) listed() {
	s.listMu.Lock()
	ended := s.lists.Succeeded()
	s.listMu.Unlock()
	if ended {
		s.Log.Info("the API server lists the pods bound to the node again", "node", s.Node)
	}
}

// read turns the API's pods into what the node runs, and keeps them; the
// objects no pod read names any more are no longer watched (the kubelet's
// UnregisterPod), nor their last read kept.
func (s *Source) read(ctx context.Context, api []*corev1.Pod) Wanted {
	s.named = map[objectKey]bool{}
	w := s.convert(ctx, api, func(pod *corev1.Pod) *manifest.Set { return s.fetch(ctx, pod) }, true)
	s.watches.only(s.named)
	for k := range s.objects {
		if !s.named[k] {
			delete(s.objects, k)
		}
	}
	return w
}

// convert turns the pods bound to the node, each with the ConfigMaps and
// Secrets objects gives it, into what the node runs; fromAPI: they are the
// API's, to keep.
func (s *Source) convert(ctx context.Context, api []*corev1.Pod, objects func(*corev1.Pod) *manifest.Set, fromAPI bool) Wanted {
	sort.Slice(api, func(i, j int) bool { return key(api[i]) < key(api[j]) })
	w := Wanted{Synced: true, API: api, Grace: map[string]time.Duration{}, Rejected: map[types.UID]*admission.Refusal{},
		Problems: slices.Clone(s.keptProblems)}
	seen := map[string]bool{}
	for _, pod := range api {
		uid := string(pod.UID)
		seen[uid] = true
		switch {
		case isMirror(pod):
			continue // the static pod runs, from its file
		case pod.DeletionTimestamp != nil:
			w.Grace[uid] = deletionGrace(pod)
			if fromAPI {
				s.keep(pod, nil, nil) // not started again after a reboot
			}
			continue
		case terminal(pod.Status.Phase) || s.keptTerminal(pod.UID):
			// Finished (or rejected), as the API says or as the node kept
			// it: nothing of it is started again, as the kubelet never
			// restarts a terminal pod.
			if p := s.good[uid]; p != nil {
				w.Pods = append(w.Pods, p)
			}
			if fromAPI {
				s.keep(pod, nil, nil)
			}
			continue
		}
		set := objects(pod)
		p, err := Convert(s.Admission, pod, set)
		if err == nil {
			if fromAPI {
				err = s.withTokens(ctx, pod, p)
			} else {
				p.Tokens = s.keptTokens(pod.UID) // as last issued: the API is away
			}
		}
		if err != nil {
			w.Problems = append(w.Problems, oneLine(pod, pod.UID, err))
			if p = s.good[uid]; p == nil {
				if r := (*admission.Refusal)(nil); errors.As(err, &r) {
					w.Rejected[pod.UID] = r
				}
				continue
			}
		}
		if err == nil && fromAPI {
			s.keep(pod, set, p.Tokens)
		}
		s.good[uid] = p
		w.Pods = append(w.Pods, p)
	}
	for uid := range s.good {
		if !seen[uid] {
			delete(s.good, uid)
		}
	}
	s.forgetTokens(seen)
	return w
}

// deletionGrace is the grace period a deleted pod is stopped with: its
// deletionGracePeriodSeconds (the API server sets it with the stamp, from
// the request or the pod's terminationGracePeriodSeconds).
func deletionGrace(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// fetch gives the ConfigMaps and Secrets pod names as their watches hold
// them (objectWatches: each watched from the first read naming it); one
// not found is left out (Convert says so unless the pod marks it
// optional); one whose watch has not listed yet (the API server away, or
// not yet allowing the node to read it) is as last read, if it was (or
// kept), and the pods are read again soon.
func (s *Source) fetch(ctx context.Context, pod *corev1.Pod) *manifest.Set {
	cms, secrets := Refs(pod)
	set := &manifest.Set{}
	get := func(kind, name string) object {
		k := objectKey{kind: kind, namespace: pod.Namespace, name: name}
		s.named[k] = true
		o, synced := s.watches.get(ctx, k)
		if !synced {
			s.failed = true
			return s.objects[k]
		}
		s.objects[k] = o
		return o
	}
	for _, name := range cms {
		if o := get("ConfigMap", name); o.cm != nil {
			set.ConfigMaps = append(set.ConfigMaps, o.cm)
		}
	}
	for _, name := range secrets {
		if o := get("Secret", name); o.sec != nil {
			set.Secrets = append(set.Secrets, o.sec)
		}
	}
	return set
}

// publish makes w current, and tells the daemon when what it runs changed
// (not at every status the node writes back, which the watch sees too).
func (s *Source) publish(w Wanted) {
	print := fingerprint(w)
	s.mu.Lock()
	changed := print != s.print
	s.wanted, s.print = w, print
	s.mu.Unlock()
	if changed {
		poke(s.changed)
	}
}

// fingerprint is what the daemon acts on in w: each pod's UID and content
// hash with the versions of its objects, the pods being deleted, the
// problems.
func fingerprint(w Wanted) string {
	var b strings.Builder
	for _, p := range w.Pods {
		fmt.Fprintf(&b, "%s %s %s", p.Key(), p.UID, p.Hash)
		for _, name := range sortedKeys(keysOf(p.ConfigMaps)) {
			fmt.Fprintf(&b, " cm/%s@%s", name, p.ConfigMaps[name].ResourceVersion)
		}
		for _, name := range sortedKeys(keysOf(p.Secrets)) {
			fmt.Fprintf(&b, " secret/%s@%s", name, p.Secrets[name].ResourceVersion)
		}
		b.WriteString(tokensPrint(p))
		b.WriteByte('\n')
	}
	uids := make([]string, 0, len(w.Grace))
	for uid := range w.Grace {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		fmt.Fprintf(&b, "deleting %s %v\n", uid, w.Grace[uid])
	}
	fmt.Fprintf(&b, "%t %q", w.Synced, w.Problems) // the rejected pods are among the problems
	return b.String()
}

func keysOf[T any](m map[string]T) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// poke signals c unless it is signalled already.
func poke(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
