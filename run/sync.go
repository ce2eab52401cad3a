package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/supervisor"
)

// Action is what Sync did with a pod.
type Action string

// Actions.
const (
	Created   Action = "created"
	Unchanged Action = "unchanged"
	Replaced  Action = "replaced"
	Removed   Action = "removed"
	// Refused: the node refused the pod at admission and recorded it
	// Failed (UpOptions.RecordRefusals).
	Refused Action = "refused"
)

// Result is one pod's outcome of Sync.
type Result struct {
	Pod    string // namespace/name
	UID    string
	Action Action
	Phase  corev1.PodPhase
	Err    error
	// Refusal is why the node refused the pod (Refused, or Err).
	Refusal *admission.Refusal
}

// Want is what a caller asks of the node.
type Want struct {
	Pods []*manifest.Pod
	// Owns tells which pods on the node the caller's sources applied
	// (nil: none). With Prune, those no wanted pod names are removed;
	// those of a Broken source are kept as they are.
	Owns   func(p *PodInfo) bool
	Broken map[string]bool
	Prune  bool
	// Yield tells which pods on the node belong to another owner (a
	// running daemon's sources): one of them is never replaced by a wanted
	// pod from elsewhere, which is rejected instead.
	Yield func(source string) bool
	// Grace is the grace period of a pod removed, by UID, in place of its
	// terminationGracePeriodSeconds (a deleted API pod's
	// deletionGracePeriodSeconds).
	Grace map[string]time.Duration
}

// Up runs the pods of set, concurrently, and returns one Result per pod;
// it never removes other pods.
func (h *Host) Up(ctx context.Context, set *manifest.Set, o UpOptions) []Result {
	return h.Sync(ctx, Want{Pods: set.Pods}, o)
}

// Sync brings the node to what w asks. Each pod is handled under its lock
// (lockPod: one owner per pod across processes), taken before anything is
// decided: the node is observed, every action decided (plan.Decide) and
// the pod's own action carried out, then the lock is released. A command
// that waited for another one's lock so decides on what that one left: the
// same manifest applied twice is replaced once and unchanged once. Pods no
// longer wanted go first, then the wanted ones, concurrently; no goroutine
// holds more than one pod's lock, so commands cannot deadlock. The results
// come removals first, then one per wanted pod in order, then the
// adoptions of pods of broken sources.
func (h *Host) Sync(ctx context.Context, w Want, o UpOptions) []Result {
	// One listing for the whole call: the other pods this call may act on
	// (prune, adopt), found without a lock and decided under theirs, and the
	// host ports the node's pods hold. Each pod's own are listed again
	// under its lock.
	snapshot, err := h.Pods(ctx)
	if err != nil {
		return failAll(w.Pods, err)
	}
	return h.SyncBeside(ctx, w, o, snapshot, nil, nil)
}

// SyncBeside is Sync on snapshot, the node listed before, but the pods
// that aside names (wanted, or to remove) are left to a controller that
// acts on them in its own order (waves.Sync: a workload's rollout in
// waves): apart runs once the other pods to remove are gone, beside the
// other wanted pods' syncs, and records its pods' results.
func (h *Host) SyncBeside(ctx context.Context, w Want, o UpOptions, snapshot []*PodInfo, aside map[string]bool, apart func(record func(key string, rs []Result))) []Result {
	var mu sync.Mutex
	byKey := map[string][]Result{}
	record := func(key string, rs []Result) {
		mu.Lock()
		byKey[key] = append(byKey[key], rs...)
		mu.Unlock()
	}
	var others []string
	for _, k := range w.Others(snapshot) {
		if !aside[k] {
			others = append(others, k)
		}
	}
	h.eachKey(others, func(key string) { record(key, h.SyncPod(ctx, key, w, o, snapshot)) })
	keys := make([]string, len(w.Pods))
	var plain []string
	for i, p := range w.Pods {
		keys[i] = p.Key()
		if !aside[keys[i]] {
			plain = append(plain, keys[i])
		}
	}
	var wg sync.WaitGroup
	if apart != nil {
		wg.Go(func() { apart(record) })
	}
	h.eachKey(plain, func(key string) { record(key, h.SyncPod(ctx, key, w, o, snapshot)) })
	wg.Wait()
	var removed, adopted []Result
	for _, k := range w.Others(snapshot) {
		for _, r := range byKey[k] {
			if r.Action == Removed {
				removed = append(removed, r)
			} else {
				adopted = append(adopted, r)
			}
		}
	}
	out := removed
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, byKey[k]...)
		}
	}
	return append(out, adopted...)
}

// Others are the pods of snapshot that w may act on besides the wanted
// ones: those its sources own that no wanted pod names (to remove, or to
// adopt when their source is broken), by namespace/name, sorted.
func (w Want) Others(snapshot []*PodInfo) []string {
	if w.Owns == nil {
		return nil
	}
	seen := map[string]bool{}
	var others []string
	for _, p := range snapshot {
		key := p.Key()
		if w.Owns(p) && !wants(w, key) && !seen[key] {
			seen[key] = true
			others = append(others, key)
		}
	}
	sort.Strings(others)
	return others
}

// eachKey runs fn for each distinct key, concurrently, and waits.
func (h *Host) eachKey(keys []string, fn func(key string)) {
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(k)
		}()
	}
	wg.Wait()
}

// SyncPod is Sync for one pod, key: under the pod's lock, its pods on the
// node are listed again, every action is decided (the rest of the node
// from snapshot, a listing taken before) and the pod's own carried out.
func (h *Host) SyncPod(ctx context.Context, key string, w Want, o UpOptions, snapshot []*PodInfo) []Result {
	fail := func(err error) []Result {
		return []Result{{Pod: key, UID: wantedUID(w, key), Err: err}}
	}
	unlock, err := h.lockPod(ctx, key, o.Timeout)
	if err != nil {
		return fail(err)
	}
	in, adoptable, err := h.observe(ctx, w, o, key, snapshot)
	if err != nil {
		unlock(false)
		return fail(err)
	}
	var rs []Result
	for _, a := range plan.Decide(in) {
		if a.Key == key {
			rs = append(rs, h.act(ctx, a, o, adoptable[a.UID], graceOf(w, a.UID)))
		}
	}
	unlock(h.goneAfter(ctx, key, w, in, rs))
	return rs
}

// goneAfter reports whether no pod named key is left on the node after
// SyncPod acted on them (rs): none of the actions left one there, and a
// listing finds none (of their containers, and of the records of the pods
// seen before and of the one wanted).
func (h *Host) goneAfter(ctx context.Context, key string, w Want, in plan.Input, rs []Result) bool {
	for _, r := range rs {
		if r.Err == nil && r.Action != Removed {
			return false
		}
	}
	var uids []string
	if uid := wantedUID(w, key); uid != "" {
		uids = append(uids, uid)
	}
	for _, e := range in.Node {
		if e.Key() == key {
			uids = append(uids, e.UID)
		}
	}
	return h.podGone(ctx, key, uids)
}

// yields reports whether the wanted pod key comes from a source that Yield
// names (applying the owner's own file is the owner's change).
func yields(w Want, key string) bool {
	for _, p := range w.Pods {
		if p.Key() == key && w.Yield(p.Source.Origin()) {
			return true
		}
	}
	return false
}

func failAll(pods []*manifest.Pod, err error) []Result {
	results := make([]Result, len(pods))
	for i, p := range pods {
		results[i] = Result{Pod: p.Key(), UID: p.UID, Err: err}
	}
	return results
}

// observe gathers what plan.Decide looks at: the pods on the node (those
// named key listed now, the others from snapshot), which of them this
// process supervises and, for pod key, whether the ones there can be
// adopted (those that can, rebuilt, by UID, for act) and whether the
// wanted one waits for an image's back-off.
func (h *Host) observe(ctx context.Context, w Want, o UpOptions, key string, snapshot []*PodInfo) (plan.Input, map[string]*podRun, error) {
	in := plan.Input{Broken: w.Broken, Supervise: o.Foreground, Prune: w.Prune, PullFirst: o.PullBackOff}
	adoptable := map[string]*podRun{}
	node, err := h.nodeFor(ctx, key, snapshot)
	if err != nil {
		return in, nil, err
	}
	if in.Admit, err = h.admitTo(); err != nil {
		return in, nil, fmt.Errorf("reading the node's labels and resources: %w", err)
	}
	for _, p := range w.Pods {
		d := plan.Desired{Pod: p}
		if o.PullBackOff && p.Key() == key {
			if perr := h.images.Waiting(ctx, p); perr != nil {
				d.ImageWait = perr
			}
		}
		in.Desired = append(in.Desired, d)
	}
	for _, p := range node {
		e, r, err := h.existing(ctx, p, w, o, key)
		if err != nil {
			return in, nil, err
		}
		if r != nil {
			adoptable[p.UID] = r
		}
		in.Node = append(in.Node, e)
	}
	return in, adoptable, nil
}

// nodeFor is the pods of snapshot, with those named key listed again now.
func (h *Host) nodeFor(ctx context.Context, key string, snapshot []*PodInfo) ([]*PodInfo, error) {
	var uids []string
	var node []*PodInfo
	for _, p := range snapshot {
		if p.Key() == key {
			uids = append(uids, p.UID)
		} else {
			node = append(node, p)
		}
	}
	mine, err := h.podsNamed(ctx, key, uids)
	return append(node, mine...), err
}

// existing is what plan.Decide knows of a pod on the node; for a pod named
// key that this process would supervise, whether it can be adopted (r, its
// rebuilt pipeline context, when it can).
func (h *Host) existing(ctx context.Context, p *PodInfo, w Want, o UpOptions, key string) (e plan.Existing, r *podRun, err error) {
	e = plan.Existing{UID: p.UID, Namespace: p.Namespace, Name: p.Name, Source: p.Source, Pod: p.Pod,
		Complete: p.State != nil && p.State.Complete, Supervised: h.Supervised(p.UID),
		Owned: w.Owns != nil && w.Owns(p), Refused: p.State != nil && p.State.Refused}
	e.Yield = w.Yield != nil && w.Yield(p.Source) && !yields(w, e.Key())
	if !o.Foreground || e.Key() != key || !e.Complete || e.Supervised || e.Refused || (!e.Owned && !wants(w, key)) {
		return e, nil, nil // nothing to adopt (a refused pod has nothing running)
	}
	r, err = h.rebuild(ctx, p.UID)
	if errors.Is(err, ErrNotAdoptable) {
		e.NotAdoptable = err.Error()
		return e, nil, nil
	}
	return e, r, err
}

// wants reports whether w wants a pod named key.
func wants(w Want, key string) bool {
	return slices.ContainsFunc(w.Pods, func(p *manifest.Pod) bool { return p.Key() == key })
}

// wantedUID is the UID of the pod w wants under key.
func wantedUID(w Want, key string) string {
	for _, p := range w.Pods {
		if p.Key() == key {
			return p.UID
		}
	}
	return ""
}

// graceOf is the grace period w gives pod uid when it is removed (nil:
// its own).
func graceOf(w Want, uid string) *time.Duration {
	if g, ok := w.Grace[uid]; ok {
		return &g
	}
	return nil
}

// act carries out one action; r is the pod to adopt, rebuilt by observe;
// grace, when set, is the grace period of a pod removed.
func (h *Host) act(ctx context.Context, a plan.Action, o UpOptions, r *podRun, grace *time.Duration) Result {
	res := Result{Pod: a.Key, UID: a.UID, Phase: a.Phase}
	switch a.Op {
	case plan.Reject:
		res.Err, res.Refusal = a.Err, a.Refusal
		if a.Refusal != nil && o.RecordRefusals {
			// The kubelet's rejected pod: Failed with the reason and message.
			res.Action, res.Phase = Refused, corev1.PodFailed
			res.Err = h.recordRefusal(a.Pod, a.Refusal)
		}
	case plan.Remove:
		res.Action = Removed
		if res.Err = h.downUID(ctx, a.UID, grace); res.Err == nil {
			res.Err = h.versions.Forget(a.Key) // its source is gone
		}
	case plan.Keep, plan.Adopt:
		res.Action = Unchanged
		if a.Pod != nil {
			// A changed ConfigMap or Secret is written into the running pod.
			if res.Err = h.UpdateConfigVolumes(a.Pod); res.Err != nil {
				return res
			}
		}
		if a.Op == plan.Adopt {
			if r != nil {
				res.Err = h.adopt(ctx, r, a.Pod)
			} else { // not rebuilt by observe: rebuild it now
				res.Err = h.Adopt(ctx, a.UID, a.Pod)
			}
			if res.Err == nil && a.Pod != nil {
				h.report(Event{Pod: a.Key, Msg: "unchanged; supervising it"})
			}
		}
	case plan.Wait:
		// Its image is in back-off: the pod stays Pending as it is (imagepull.go).
		res.Action, res.Phase, res.Err = Created, corev1.PodPending, a.Err
		if perr := (*images.PullError)(nil); errors.As(a.Err, &perr) {
			if err := h.keepPending(a.Pod, a.Pod.Source.Origin(), perr); err != nil {
				res.Err = errors.Join(a.Err, err)
			}
		}
	case plan.Replace:
		res.Action = Replaced
		// The new pod's images stay held from before they are made present
		// until its containers use them: no image collection removes them
		// meanwhile (nor after the old pod, which used them, is gone).
		release, err := h.holdImages(ctx, a.Pod)
		if err != nil {
			res.Phase, res.Err = corev1.PodRunning, err
			return res
		}
		defer release()
		if a.PullFirst {
			// Pull before kill: while the new pod's images cannot be made
			// present, the running pod keeps running (and is retried).
			if err := h.images.Prefetch(ctx, a.Pod); err != nil {
				h.report(Event{Pod: a.Key, Msg: fmt.Sprintf("keeping the running pod until the new one's image is present: %v", err)})
				res.Phase, res.Err = corev1.PodRunning, err
				return res
			}
		}
		uids := append([]string(nil), a.Remove...)
		sort.Strings(uids)
		for _, uid := range uids {
			h.report(Event{Pod: a.Key, Msg: fmt.Sprintf("replacing pod %s (%s)", uid, a.Why[uid])})
			if err := h.downUID(ctx, uid, nil); err != nil {
				res.Err = fmt.Errorf("pod %s: removing the previous pod: %w", a.Key, err)
				return res
			}
		}
		if o.Rollback {
			o.minReady = readySettle
		}
		res.Phase, res.Err = h.create(ctx, a.Pod, o)
		if res.Err != nil && o.Rollback {
			res.Phase, res.Err = h.rollBackNew(ctx, a.Pod, o, res.Phase, res.Err)
		}
	case plan.Create:
		res.Action = Created
		release, err := h.holdImages(ctx, a.Pod)
		if err != nil {
			res.Phase, res.Err = corev1.PodPending, err
			return res
		}
		defer release()
		res.Phase, res.Err = h.create(ctx, a.Pod, o)
	}
	return res
}

// create runs a pod's pipeline; its steps are undone if one fails.
func (h *Host) create(ctx context.Context, p *manifest.Pod, o UpOptions) (corev1.PodPhase, error) {
	key := p.Key()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	r := &podRun{h: h, pod: p, key: key, layout: h.layout(p.UID), wait: o.Wait, source: p.Source.Origin(), pullBackOff: o.PullBackOff, keepFailed: o.RecordFailures, retryStarts: o.RetryStartErrors,
		pinned: pinnedSandbox(p.Pod, h.cfg.PauseImage), pins: h.pinsOf(p.UID, p.Pod), minReady: o.minReady}
	r.w = supervisor.New(r, h.exits, h.clock, p.Spec.RestartPolicy)
	err := Execute(ctx, h.clock, key, r.plan(), o.KeepOnFailure, h.report)
	if err != nil || !o.Foreground {
		r.w.Stop() // the pod keeps running; nobody supervises it any more
	} else {
		h.supervise(r)
	}
	if err != nil {
		if perr := (*images.PullError)(nil); o.PullBackOff && errors.As(err, &perr) {
			// Listed as Pending with the image's reason (imagepull.go).
			if kerr := h.keepPending(p, r.source, perr); kerr != nil {
				err = errors.Join(err, kerr)
			}
			return corev1.PodPending, err
		}
		if r.final != nil {
			// Failed for good, as the kubelet keeps it (keepFailed).
			if kerr := h.keepFailed(p, r.source, r.final); kerr != nil {
				return corev1.PodFailed, errors.Join(err, kerr)
			}
			return corev1.PodFailed, fmt.Errorf("%w (%w)", err, ErrKeptFailed)
		}
		if cerr := (*spec.ConfigError)(nil); o.RecordConfigErrors && errors.As(err, &cerr) {
			if kerr := h.keepConfigWaiting(p, r.source, cerr); kerr != nil {
				err = errors.Join(err, kerr)
			}
			return corev1.PodPending, err
		}
		return corev1.PodFailed, err
	}
	return r.outcome()
}

// rollBackNew replaces p, a changed pod that failed to come up (phase,
// failed), by its last version that became Ready, if one is kept; the
// failure is still returned, saying so.
func (h *Host) rollBackNew(ctx context.Context, p *manifest.Pod, o UpOptions, phase corev1.PodPhase, failed error) (corev1.PodPhase, error) {
	key := p.Key()
	to, revision, err := h.versions.Before(key, p.Hash)
	if err != nil {
		return phase, errors.Join(failed, err)
	}
	if to == nil {
		return phase, failed // nothing to go back to
	}
	h.report(Event{Pod: key, Msg: fmt.Sprintf("the new version failed; rolling back to revision %d", revision)})
	if err := h.downUID(ctx, p.UID, nil); err != nil {
		return phase, errors.Join(failed, fmt.Errorf("pod %s: removing the failed version: %w", key, err))
	}
	o.minReady = 0 // it was Ready before
	back, err := h.create(ctx, to, o)
	if err != nil {
		return back, errors.Join(failed, fmt.Errorf("pod %s: rolling back to revision %d: %w", key, revision, err))
	}
	return back, fmt.Errorf("%w\npod %s: rolled back to revision %d, its last version that became Ready (%s)", failed, key, revision, back)
}
