// The hook through which the pod lifecycle tells the keeper of the pods'
// versions (package rollout) what it needs: a version that became Ready,
// a pod removed for good; and asks it, for a listed pod, the condition a
// rollback set and, for a changed pod that failed (UpOptions.Rollback),
// the version to go back to. The versions themselves, and the verbs on
// them (history, undo, status, the daemon's rollback), are rollout's.

package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// Versions keeps the versions of the node's pods that became Ready
// (rollout.History); nil in Deps keeps none.
type Versions interface {
	// Ready records p, as applied from source, as pod p's newest version
	// that became Ready, at at.
	Ready(p *manifest.Pod, source string, at time.Time) error
	// Forget drops what is kept of pod key (removed for good: its source
	// gone, `podrun down`); none kept is success.
	Forget(key string) error
	// Condition is the condition shown on the listed pod key of uid (a
	// rollback's Progressing=False), nil if none.
	Condition(key, uid string) *corev1.PodCondition
	// Before is the newest version of pod key that became Ready other than
	// version hash, with its revision; nil when none is kept.
	Before(key, hash string) (*manifest.Pod, int, error)
}

// noVersions keeps nothing.
type noVersions struct{}

func (noVersions) Ready(*manifest.Pod, string, time.Time) error      { return nil }
func (noVersions) Forget(string) error                               { return nil }
func (noVersions) Condition(string, string) *corev1.PodCondition     { return nil }
func (noVersions) Before(string, string) (*manifest.Pod, int, error) { return nil, 0, nil }

// readySettle is how long a version must stay Ready to be kept in the
// history, and a changed pod that may be rolled back to be counted up: a
// container that exits at once is Ready for a moment.
const readySettle = time.Second

// recordReady records the pod, as applied, as its newest Ready version. A
// failure to record is reported, not the pod's failure.
func (r *podRun) recordReady() {
	r.objMu.Lock()
	p := *r.pod
	p.ConfigMaps, p.Secrets = maps.Clone(r.pod.ConfigMaps), maps.Clone(r.pod.Secrets)
	r.objMu.Unlock()
	if err := r.h.history.Ready(&p, r.source, r.h.clock.Now()); err != nil {
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("not recorded in the pod's history: %v", err)})
	}
}

// watchReady records the pod's version once it is Ready (a supervised pod
// that was not waited for, `--wait running` or the daemon's), then ends.
func (r *podRun) watchReady(ctx context.Context) {
	loops := r.readyLoops()
	if len(loops) == 0 || r.pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return // a pod that runs to completion has no version to go back to
	}
	if r.stayReady(ctx, loops, readySettle) == nil {
		r.recordReady()
	}
}

// markRolledBack adds to a listed pod the condition Versions shows on it.
func (h *Host) markRolledBack(p *PodInfo) {
	if p.Pod == nil {
		return
	}
	if c := h.history.Condition(p.Key(), p.UID); c != nil {
		p.Pod.Status.Conditions = append(p.Pod.Status.Conditions, *c)
	}
}

// rollBackNew replaces p, a changed pod that failed to come up (phase,
// failed), by its last version that became Ready, if one is kept; the
// failure is still returned, saying so.
func (h *Host) rollBackNew(ctx context.Context, p *manifest.Pod, o UpOptions, phase corev1.PodPhase, failed error) (corev1.PodPhase, error) {
	key := p.Key()
	to, revision, err := h.history.Before(key, p.Hash)
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
