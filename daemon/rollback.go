// Rollback: a new version of a pod that does not become Ready within its
// progress deadline, or that fails for certain first (progress.Decide), is
// replaced by the last version that became Ready (run.RollBack records
// it; the next sync applies it as any replace, also after a restart), and
// that version stays until the pod's file changes again.

package daemon

import (
	"context"
	"time"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/progress"
	"github.com/podrun/podrun/run"
)

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
// failed, and then rolls it back; one watch per pod at a time. Nothing is
// watched when rollback is off (ProgressDeadline 0), nor a pod with no
// other version that became Ready to go back to, nor one that is Ready
// already (its version is in the history).
func (d *Daemon) watchProgress(ctx context.Context, p *manifest.Pod, workload *int32) {
	if d.o.ProgressDeadline <= 0 {
		return
	}
	revs, err := d.h.History(p.Key())
	if err != nil || len(revs) == 0 {
		return
	}
	for _, r := range revs {
		if r.Hash == p.Hash {
			return
		}
	}
	deadline, err := progress.Deadline(p.Pod, workload, d.o.ProgressDeadline)
	if err != nil {
		d.log.Warn("pod's progress deadline not read; the daemon's is used", "pod", p.Key(), "err", err)
		deadline = d.o.ProgressDeadline
	}
	d.watchMu.Lock()
	if d.watching[p.Key()] == p.UID {
		d.watchMu.Unlock()
		return
	}
	d.watching[p.Key()] = p.UID
	d.watchMu.Unlock()
	go func() {
		defer func() {
			d.watchMu.Lock()
			if d.watching[p.Key()] == p.UID {
				delete(d.watching, p.Key())
			}
			d.watchMu.Unlock()
		}()
		d.awaitProgress(ctx, p, time.Now(), deadline)
	}()
}

// awaitProgress looks at p every progressPoll until progress.Decide says
// Ready (done) or Failed (rolled back), or p is no longer on the node.
func (d *Daemon) awaitProgress(ctx context.Context, p *manifest.Pod, since time.Time, deadline time.Duration) {
	wasReady := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(progressPoll):
		}
		pods, err := d.h.Pods(ctx)
		if err != nil {
			continue
		}
		var info *run.PodInfo
		for _, i := range pods {
			if i.UID == p.UID && i.Pod != nil {
				info = i
			}
		}
		if info == nil {
			return // replaced or removed meanwhile
		}
		v := progress.Decide(info.Pod, since, time.Now(), deadline)
		switch {
		case v.Phase == progress.Ready && wasReady:
			return
		case v.Phase == progress.Failed:
			d.rollBack(p, v)
			return
		}
		wasReady = v.Phase == progress.Ready
	}
}

// rollBack records p's failure and the version that replaces it, and
// has the next sync carry it out.
func (d *Daemon) rollBack(p *manifest.Pod, v progress.Verdict) {
	to, err := d.h.RollBack(p.Key(), p.Hash, v.Reason, v.Message)
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
