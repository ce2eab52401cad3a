// Rollback: a new version of a pod that does not become Ready within its
// progress deadline, or that fails for certain first (progress.Decide), is
// replaced by the last version that became Ready (rollout.History.RollBack
// records it; the next sync applies it as any replace, also after a
// restart), and that version stays until the pod's file changes again.

package daemon

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout/progress"
)

// overridden is what the node runs for p (rollout.History.Overridden): p
// itself when no versions are kept.
func (d *Daemon) overridden(p *manifest.Pod) (*manifest.Pod, *history.Override, error) {
	if d.o.History == nil {
		return p, nil, nil
	}
	return d.o.History.Overridden(p)
}

// progressPoll is how often a new version's progress is looked at; it
// counts as Ready once seen Ready at two looks in a row (a container that
// exits at once is Ready for a moment).
const progressPoll = time.Second

// Rollback is a pod of the sources that runs, in place of its file's
// version, the version a rollback went back to.
type Rollback struct {
	Pod      string `json:"pod"` // namespace/name
	Source   string `json:"source"`
	Revision int    `json:"revision"` // the version it runs (rollout history)
	Reason   string `json:"reason"`
	Message  string `json:"message"`
}

// watchProgress watches pod p, new on the node, until it is Ready or has
// failed, and then rolls it back; each pod once (d.watches), so that the
// syncs that find it unchanged cost nothing. Nothing is watched when
// rollback is off (ProgressDeadline 0, or no History), nor a pod with no
// other version that became Ready to go back to, nor one that is Ready
// already (its version is in the history).
func (d *Daemon) watchProgress(ctx context.Context, p *manifest.Pod, workload *int32) {
	if d.o.ProgressDeadline <= 0 || d.o.History == nil {
		return
	}
	key := p.Key()
	if !d.watches.start(key, p.UID) {
		return // watched now, or settled
	}
	revs, err := d.o.History.List(key)
	if err != nil {
		d.watches.forget(key, p.UID) // looked at again at the next sync
		return
	}
	if len(revs) == 0 || slices.ContainsFunc(revs, func(r history.Revision) bool { return r.Hash == p.Hash }) {
		return
	}
	deadline, err := progress.Deadline(p.Pod, workload, d.o.ProgressDeadline)
	if err != nil {
		d.log.Warn("pod's progress deadline not read; the daemon's is used", "pod", key, "err", err)
		deadline = d.o.ProgressDeadline
	}
	go func() {
		if !d.awaitProgress(ctx, p, d.clock.Now(), deadline) {
			d.watches.forget(key, p.UID) // watched again if it comes back
		}
	}()
}

// watches are, by namespace/name, the uid of the pod whose progress is
// watched or was found settled: the workers start watches (watchProgress),
// the watches' goroutines forget them, the sync drops the pods of no
// source. The zero value watches nothing.
type watches struct {
	mu   sync.Mutex
	uids map[string]string
}

// start records pod uid of key as watched; false when it is already
// (watched now, or settled).
func (w *watches) start(key, uid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uids == nil {
		w.uids = map[string]string{}
	}
	seen := w.uids[key] == uid
	w.uids[key] = uid
	return !seen
}

// forget lets pod uid of key be watched again; another uid of key stays.
func (w *watches) forget(key, uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.uids[key] == uid {
		delete(w.uids, key)
	}
}

// keep forgets the pods whose key wanted refuses.
func (w *watches) keep(wanted func(key string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	maps.DeleteFunc(w.uids, func(k, _ string) bool { return !wanted(k) })
}

// awaitProgress looks at p every progressPoll until progress.Decide says
// Ready (true) or Failed (rolled back), or p is no longer on the node.
func (d *Daemon) awaitProgress(ctx context.Context, p *manifest.Pod, since time.Time, deadline time.Duration) bool {
	wasReady := false
	for {
		select {
		case <-ctx.Done():
			return false
		case <-d.clock.After(progressPoll):
		}
		info, err := d.h.PodOf(ctx, p.Key(), p.UID)
		switch {
		case err != nil:
			continue
		case info == nil:
			return false // replaced or removed meanwhile
		}
		v := progress.Decide(info.Pod, since, d.clock.Now(), deadline)
		switch {
		case v.Phase == progress.Ready && wasReady:
			return true
		case v.Phase == progress.Failed:
			d.rollBack(p, v)
			return false
		}
		wasReady = v.Phase == progress.Ready
	}
}

// rollBack records p's failure and the version that replaces it, and
// has the next sync carry it out.
func (d *Daemon) rollBack(p *manifest.Pod, v progress.Verdict) {
	to, err := d.o.History.RollBack(p.Key(), p.Hash, v.Reason, v.Message)
	if err != nil {
		d.log.Error("new version failed; not rolled back", "pod", p.Key(), "reason", v.Reason, "message", v.Message, "err", err)
		return
	}
	d.log.Warn("new version failed; rolling back until its file changes", "pod", p.Key(), "reason", v.Reason,
		"message", v.Message, "revision", to.Revision)
	d.metrics.rollbacks.WithLabelValues(v.Reason).Inc()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}
