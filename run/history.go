// The versions of each pod that became Ready (history.Store, under the
// state root): recorded when a pod is first seen Ready, forgotten when the
// pod is removed for good (its source gone, `podrun down`).

package run

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/supervisor"
)

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
	var loops []*supervisor.Loop
	for _, l := range r.w.Loops() {
		if l.Role() != supervisor.RoleInit {
			loops = append(loops, l)
		}
	}
	if len(loops) == 0 || r.pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return // a pod that runs to completion has no version to go back to
	}
	if r.w.WaitFor(ctx, func() (bool, error) { return r.allReady(loops), nil }) == nil {
		r.recordReady()
	}
}
