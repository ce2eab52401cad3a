// The versions of each pod that became Ready (history.Store, under the
// state root): recorded when a pod is first seen Ready, forgotten when the
// pod is removed for good (its source gone, `podrun down`); the pod
// lifecycle tells them through History, its run.Versions.

package rollout

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// historyDir is where the versions are kept, under the state root.
const historyDir = "history"

// History keeps the versions of the node's pods that became Ready, and
// what stands in for a pod's file (a rollback's, an undo's version).
type History struct {
	store *history.Store
	clock clock.Clock
}

// History is the run.Versions the pod lifecycle records through.
var _ run.Versions = (*History)(nil)

var (
	openMu sync.Mutex
	opened = map[string]*History{}
)

// Open is the History under the state root root: one per directory in a
// process, so that its files have one writer in it.
func Open(root string) *History {
	dir := filepath.Join(root, historyDir)
	openMu.Lock()
	defer openMu.Unlock()
	if opened[dir] == nil {
		opened[dir] = &History{store: &history.Store{Dir: dir}, clock: clock.RealClock{}}
	}
	return opened[dir]
}

// List is the versions of pod key that became Ready, oldest first.
func (h *History) List(key string) ([]history.Revision, error) { return h.store.List(key) }

// Ready records p, as applied from source, as its newest version that
// became Ready, at at (run.Versions).
func (h *History) Ready(p *manifest.Pod, source string, at time.Time) error {
	rev := history.Revision{Hash: p.Hash, UID: p.UID, Source: source, Ready: at, Pod: p.Pod,
		ConfigMaps: p.ConfigMaps, Secrets: p.Secrets, PullSecrets: p.PullSecrets}
	return h.store.Record(p.Key(), rev)
}

// Forget drops the versions of pod key and what stands in for its file
// (run.Versions).
func (h *History) Forget(key string) error { return h.store.Remove(key) }

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
func (h *History) Overridden(p *manifest.Pod) (*manifest.Pod, *history.Override, error) {
	o, err := h.store.Override(p.Key())
	switch {
	case err != nil:
		return p, nil, err
	case o == nil:
		return p, nil, nil
	case o.Hash != p.Hash || o.To.Pod == nil:
		return p, nil, h.store.ClearOverride(p.Key())
	}
	return Revision(o.To), o, nil
}

// RollBack records that pod key's version bad has failed (reason, message)
// and that the newest other version that became Ready stands in for it
// until its file changes (Overridden); it returns that version.
func (h *History) RollBack(key, bad, reason, message string) (history.Revision, error) {
	revs, err := h.store.List(key)
	if err != nil {
		return history.Revision{}, err
	}
	to, err := history.Find(revs, 0, bad)
	if err != nil {
		return history.Revision{}, err
	}
	o := history.Override{Hash: bad, To: to, Reason: reason, Message: message, At: h.clock.Now().UTC()}
	return to, h.store.SetOverride(key, o)
}

// ConditionProgressing is a Deployment's condition, shown on a pod whose
// new version was rolled back: False, with the failure's reason
// (ProgressDeadlineExceeded, CrashLoopBackOff, ...).
const ConditionProgressing corev1.PodConditionType = "Progressing"

// Condition is ConditionProgressing, for a listed pod (key, uid) that
// runs, in place of its file's version, the version a rollback went back
// to; else nil (run.Versions).
func (h *History) Condition(key, uid string) *corev1.PodCondition {
	o, err := h.store.Override(key)
	if err != nil || o == nil || o.Reason == "" || o.To.UID != uid {
		return nil
	}
	return &corev1.PodCondition{Type: ConditionProgressing, Status: corev1.ConditionFalse,
		Reason: o.Reason, LastTransitionTime: metav1.NewTime(o.At),
		Message: fmt.Sprintf("rolled back to revision %d: version %.12s failed: %s", o.To.Revision, o.Hash, o.Message)}
}

// RolledBack is the condition Condition put on pod, nil if none.
func RolledBack(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == ConditionProgressing && c.Status == corev1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Before is the newest version of pod key that became Ready other than
// version hash, rebuilt to apply, and its revision; nil when none is kept
// (run.Versions: a changed pod that failed goes back to it).
func (h *History) Before(key, hash string) (*manifest.Pod, int, error) {
	revs, err := h.store.List(key)
	if err != nil {
		return nil, 0, err
	}
	to, err := history.Find(revs, 0, hash)
	if err != nil {
		return nil, 0, nil // nothing to go back to
	}
	return Revision(to), to.Revision, nil
}
