// Stage now, apply later: a changed pod that would replace a running one
// has its images pulled at once, and replaces it only when package
// updates' Decide says so: inside an update window (Options.UpdateWindows)
// and when the running pod does not hold its update lock (or has held it
// for Options.UpdateLockTimeout). Meanwhile the running pod stays as it
// is: the version kept in the history stands in for the file's (as a
// rollback's does), or, when it is not kept, its own record (standIn); with
// neither, the pod's worker only pulls.
// A new pod, a removal, a rollback's or an undo's version and the API
// server's pods are never held.

package daemon

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/updates"
	"github.com/podrun/podrun/volumes"
)

// lockPoll is how often a sync looks again at an update held by a lock.
const lockPoll = 2 * time.Second

// LockProbe reports whether the update lock in a pod's directory is held
// (updates.LockHeld).
type LockProbe func(dir string) (bool, error)

// Pending is a pod whose changed version waits to replace the running one,
// as `podrun ps`, `status` and `rollout status` show it.
type Pending struct {
	Pod    string `json:"pod"` // namespace/name
	Source string `json:"source"`
	// Reason is updates.ReasonWindow or updates.ReasonLock.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Since is when the update was first held.
	Since time.Time `json:"since"`
	// Staged: the changed version's images are present.
	Staged bool `json:"staged"`
}

// replaced is the pod on the node that p would replace, when it runs: a
// pod of p's name that the daemon's sources applied (owns), Running, and
// not p itself. nil when p is new, already there, or replaces nothing that
// runs (a pod refused, failed, finished or still Pending).
func replaced(p *manifest.Pod, node []*run.PodInfo, owns func(*run.PodInfo) bool) *run.PodInfo {
	var running *run.PodInfo
	for _, e := range node {
		switch {
		case e.Key() != p.Key():
		case e.UID == p.UID:
			return nil
		case running == nil && owns(e) && e.State != nil && !e.State.Refused && e.Pod != nil && e.Pod.Status.Phase == corev1.PodRunning:
			running = e
		}
	}
	return running
}

// lockDir is the directory of the update lock of pod e: the emptyDir
// volume its updates.LockVolumeAnnotation names; "" when it names none.
func lockDir(root string, e *run.PodInfo) string {
	name := e.Pod.Annotations[updates.LockVolumeAnnotation]
	if name == "" {
		return ""
	}
	i := slices.IndexFunc(e.Pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name && v.EmptyDir != nil })
	if i < 0 {
		return ""
	}
	return volumes.Layout{Root: root, UID: e.UID}.EmptyDir(name)
}

// heldUpdate is an update held back, as the syncs saw it.
type heldUpdate struct {
	uid       string // the changed version's
	source    string
	since     time.Time // first held
	lockSince time.Time // the lock first seen held in a window (zero: not held)
	verdict   updates.Verdict
}

// updateHolds are the updates held back: Run's goroutine decides them
// (holdUpdate), the workers stage their images, publish reads them.
type updateHolds struct {
	mu     sync.Mutex
	held   map[string]*heldUpdate // by namespace/name
	staged map[string]string      // the version whose images are present, by namespace/name
	next   time.Time              // when a sync should look at them again
}

// holdUpdate decides whether p, from source, replaces the running pod old
// now (updates.Decide on the facts gathered here) and records it; the
// verdict's changes are logged.
func (d *Daemon) holdUpdate(p *manifest.Pod, source string, old *run.PodInfo) updates.Verdict {
	now, key := d.clock.Now(), p.Key()
	u := &d.updates
	u.mu.Lock()
	defer u.mu.Unlock()
	h := u.held[key]
	if h == nil || h.uid != p.UID {
		h = &heldUpdate{uid: p.UID, source: source, since: now}
	}
	held := false
	if updates.Open(d.o.UpdateWindows, now) { // a lock matters only then
		held = d.lockHeld(key, old)
	}
	v := updates.Decide(now, d.o.UpdateWindows, held, h.lockSince, d.o.UpdateLockTimeout)
	switch {
	case v.Apply && v.Reason == updates.ReasonLockTimeout:
		d.log.Warn("update lock held too long: replacing the pod anyway", "pod", key, "message", v.Message)
	case v.Apply && h.verdict.Reason != "":
		d.log.Info("update no longer held: replacing the pod", "pod", key, "was", h.verdict.Reason)
	case !v.Apply && v.Reason != h.verdict.Reason:
		d.log.Info("update held", "pod", key, "reason", v.Reason, "message", v.Message)
	}
	if v.Apply {
		delete(u.held, key)
		return v
	}
	if v.Reason == updates.ReasonLock && h.lockSince.IsZero() {
		h.lockSince = now
	} else if v.Reason != updates.ReasonLock {
		h.lockSince = time.Time{}
	}
	h.verdict = v
	u.held[key] = h
	next := v.At
	if v.Reason == updates.ReasonLock && (next.IsZero() || now.Add(lockPoll).Before(next)) {
		next = now.Add(lockPoll)
	}
	if !next.IsZero() && (u.next.IsZero() || next.Before(u.next)) {
		u.next = next
	}
	return v
}

// lockHeld probes the update lock of pod old (of key); a lock that cannot
// be probed is taken for not held, and said.
func (d *Daemon) lockHeld(key string, old *run.PodInfo) bool {
	dir := lockDir(d.o.Root, old)
	if dir == "" {
		return false
	}
	probe := d.o.LockProbe
	if probe == nil {
		probe = updates.LockHeld
	}
	held, err := probe(dir)
	if err != nil {
		d.log.Warn("the pod's update lock cannot be read; taken as not held", "pod", key, "err", err)
	}
	return held
}

// beginSync starts a sync's decisions: the time to look again is the
// earliest this sync asks for.
func (u *updateHolds) beginSync() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held == nil {
		u.held, u.staged = map[string]*heldUpdate{}, map[string]string{}
	}
	u.next = time.Time{}
}

// keep forgets the updates of the pods that held is false for (applied,
// removed, or no longer held).
func (u *updateHolds) keep(held func(key string) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k := range u.held {
		if !held(k) {
			delete(u.held, k)
		}
	}
	for k := range u.staged {
		if u.held[k] == nil || u.held[k].uid != u.staged[k] {
			delete(u.staged, k)
		}
	}
}

// nextSync is when a sync should look at the held updates again (zero:
// none is held).
func (u *updateHolds) nextSync() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.next
}

// isStaged reports whether version uid of key has its images present.
func (u *updateHolds) isStaged(key, uid string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.staged != nil && u.staged[key] == uid
}

func (u *updateHolds) setStaged(key, uid string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if h := u.held[key]; h != nil && h.uid == uid {
		u.staged[key] = uid
	}
}

// pending are the updates held, by pod.
func (u *updateHolds) pending() []Pending {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []Pending
	for k, h := range u.held {
		out = append(out, Pending{Pod: k, Source: h.source, Reason: h.verdict.Reason, Message: h.verdict.Message,
			Since: h.since.UTC(), Staged: u.staged[k] == h.uid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// standIn is the running version old of pod key, to apply in place of
// p, its held update, so that the pod stays supervised (also after a
// daemon restart): as kept in the history (it became Ready), else as its
// own record holds it (it never became Ready), with p's ConfigMaps and
// Secrets as they are now (what a container restarted reads, as on
// Kubernetes). nil when neither has it.
func (d *Daemon) standIn(key string, old *run.PodInfo, p *manifest.Pod) *manifest.Pod {
	if d.o.History != nil {
		if revs, err := d.o.History.List(key); err == nil {
			for _, r := range revs {
				if r.UID == old.UID && r.Pod != nil {
					return rollout.Revision(r)
				}
			}
		}
	}
	return recorded(old, p)
}

// recorded is the running version old rebuilt from its record, with p's
// objects; nil without a record.
func recorded(old *run.PodInfo, p *manifest.Pod) *manifest.Pod {
	if old.State == nil || old.State.Pod == nil || old.State.Hash == "" {
		return nil
	}
	pod := old.State.Pod.DeepCopy()
	pod.Status = corev1.PodStatus{}
	return &manifest.Pod{Pod: pod, Source: p.Source, Hash: old.State.Hash, UID: old.UID,
		ConfigMaps: p.ConfigMaps, Secrets: p.Secrets, PullSecrets: p.PullSecrets}
}

// stage pulls the images of p, an update held back, once: the results are
// nil when they are present, else the failed pull's (shown as the pod's
// waiting image, the running pod kept).
func (d *Daemon) stage(ctx context.Context, key string, p *manifest.Pod) []run.Result {
	if d.updates.isStaged(key, p.UID) {
		return nil
	}
	if err := d.h.Images().Prefetch(ctx, p); err != nil {
		if ctx.Err() == nil {
			perr := (*images.PullError)(nil)
			if errors.As(err, &perr) {
				d.log.Warn("staging the pod's update: its image is not pulled yet; retried", "pod", key, "reason", perr.Reason, "image", perr.Image, "message", perr.Err.Error())
			} else {
				d.log.Warn("staging the pod's update; retried", "pod", key, "err", err)
			}
		}
		return []run.Result{{Pod: key, UID: p.UID, Phase: corev1.PodRunning, Err: err}}
	}
	d.updates.setStaged(key, p.UID)
	d.log.Info("update staged: its images are present; the pod is replaced when the update is no longer held", "pod", key)
	return nil
}
