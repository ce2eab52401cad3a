// The versions of each pod that became Ready (history.Store, under the
// state root): recorded when a pod is first seen Ready, forgotten when the
// pod is removed for good (its source gone, `podrun down`).

package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/manifest"
)

// readySettle is how long a version must stay Ready to be kept in the
// history, and a changed pod that may be rolled back to be counted up: a
// container that exits at once is Ready for a moment.
const readySettle = time.Second

// historyDir is where the versions are kept, under the state root.
const historyDir = "history"

func newHistory(root string) *history.Store {
	return &history.Store{Dir: filepath.Join(root, historyDir)}
}

// History is the versions of pod key that became Ready, oldest first.
func (h *Host) History(key string) ([]history.Revision, error) { return h.history.List(key) }

// recordReady records the pod, as applied, as its newest Ready version. A
// failure to record is reported, not the pod's failure.
func (r *podRun) recordReady() {
	r.objMu.Lock()
	rev := history.Revision{Hash: r.pod.Hash, UID: r.pod.UID, Source: r.source, Ready: r.h.clock.Now(), Pod: r.pod.Pod,
		ConfigMaps: maps.Clone(r.pod.ConfigMaps), Secrets: maps.Clone(r.pod.Secrets), PullSecrets: r.pod.PullSecrets}
	r.objMu.Unlock()
	if err := r.h.history.Record(r.key, rev); err != nil {
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

// Revision rebuilds a version kept in the history as a pod to apply.
func Revision(rev history.Revision) *manifest.Pod {
	src := manifest.Source{File: rev.Source}
	if rev.Source == "stdin" {
		src.File = "-"
	}
	return &manifest.Pod{Pod: rev.Pod.DeepCopy(), Source: src, Hash: rev.Hash, UID: rev.UID,
		ConfigMaps: rev.ConfigMaps, Secrets: rev.Secrets, PullSecrets: rev.PullSecrets}
}

// Overridden is what the node runs for p, the version its file asks for:
// p, or the version kept that stands in for it (a rollback's, an undo's)
// while the file asks for the version overridden (o, the override). Once
// the file asks for another version, the override is dropped.
func (h *Host) Overridden(p *manifest.Pod) (*manifest.Pod, *history.Override, error) {
	o, err := h.history.Override(p.Key())
	switch {
	case err != nil:
		return p, nil, err
	case o == nil:
		return p, nil, nil
	case o.Hash != p.Hash || o.To.Pod == nil:
		return p, nil, h.history.ClearOverride(p.Key())
	}
	return Revision(o.To), o, nil
}

// RollBack records that pod key's version bad has failed (reason, message)
// and that the newest other version that became Ready stands in for it
// until its file changes (Overridden); it returns that version.
func (h *Host) RollBack(key, bad, reason, message string) (history.Revision, error) {
	revs, err := h.history.List(key)
	if err != nil {
		return history.Revision{}, err
	}
	to, err := history.Find(revs, 0, bad)
	if err != nil {
		return history.Revision{}, err
	}
	o := history.Override{Hash: bad, To: to, Reason: reason, Message: message, At: h.clock.Now().UTC()}
	return to, h.history.SetOverride(key, o)
}

// ConditionProgressing is a Deployment's condition, shown on a pod whose
// new version was rolled back: False, with the failure's reason
// (ProgressDeadlineExceeded, CrashLoopBackOff, ...).
const ConditionProgressing corev1.PodConditionType = "Progressing"

// markRolledBack adds ConditionProgressing to a listed pod that runs, in
// place of its file's version, the version a rollback went back to.
func (h *Host) markRolledBack(p *PodInfo) {
	if p.Pod == nil {
		return
	}
	o, err := h.history.Override(p.Key())
	if err != nil || o == nil || o.Reason == "" || o.To.UID != p.UID {
		return
	}
	p.Pod.Status.Conditions = append(p.Pod.Status.Conditions, corev1.PodCondition{Type: ConditionProgressing, Status: corev1.ConditionFalse,
		Reason: o.Reason, LastTransitionTime: metav1.NewTime(o.At),
		Message: fmt.Sprintf("rolled back to revision %d: version %.12s failed: %s", o.To.Revision, o.Hash, o.Message)})
}

// RolledBack is the condition markRolledBack added to pod, nil if none.
func RolledBack(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == ConditionProgressing && c.Status == corev1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// rollBackNew replaces p, a changed pod that failed to come up (phase,
// failed), by its last version that became Ready, if one is kept; the
// failure is still returned, saying so.
func (h *Host) rollBackNew(ctx context.Context, p *manifest.Pod, o UpOptions, phase corev1.PodPhase, failed error) (corev1.PodPhase, error) {
	key := p.Key()
	revs, err := h.history.List(key)
	if err != nil {
		return phase, errors.Join(failed, err)
	}
	to, err := history.Find(revs, 0, p.Hash)
	if err != nil {
		return phase, failed // nothing to go back to
	}
	h.report(Event{Pod: key, Msg: fmt.Sprintf("the new version failed; rolling back to revision %d", to.Revision)})
	if err := h.downUID(ctx, p.UID, nil); err != nil {
		return phase, errors.Join(failed, fmt.Errorf("pod %s: removing the failed version: %w", key, err))
	}
	o.minReady = 0 // it was Ready before
	back, err := h.create(ctx, Revision(to), o)
	if err != nil {
		return back, errors.Join(failed, fmt.Errorf("pod %s: rolling back to revision %d: %w", key, to.Revision, err))
	}
	return back, fmt.Errorf("%w\npod %s: rolled back to revision %d, its last version that became Ready (%s)", failed, key, to.Revision, back)
}
