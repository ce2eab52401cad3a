package await

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// TestMet: kubectl wait's conditions on what the node says of a pod.
func TestMet(t *testing.T) {
	h := run.NewHost(run.Config{Root: t.TempDir(), LogDir: t.TempDir()}, run.Deps{Engine: fake.New()}, nil, nil)
	defer h.Close()
	target := run.Target{Namespace: "default", Name: "web"}
	pod := func(phase corev1.PodPhase, ready corev1.ConditionStatus) *run.PodInfo {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		return &run.PodInfo{Namespace: "default", Name: "web", Pod: p}
	}
	running, ready := pod(corev1.PodRunning, corev1.ConditionFalse), pod(corev1.PodRunning, corev1.ConditionTrue)
	succeeded, failed := pod(corev1.PodSucceeded, corev1.ConditionFalse), pod(corev1.PodFailed, corev1.ConditionFalse)
	failed.Pod.Status.Reason, failed.Pod.Status.Message = "DeadlineExceeded", "too long"
	for _, tt := range []struct {
		name    string
		p       *run.PodInfo
		err     error
		cond    Condition
		msg     string
		done    bool
		wantErr string
	}{
		{name: "ready: not yet", p: running, cond: ForReady},
		{name: "ready", p: ready, cond: ForReady, msg: "condition met", done: true},
		{name: "ready: finished first", p: succeeded, cond: ForReady, msg: "condition met (Succeeded)", done: true},
		{name: "completion: ready is not enough", p: ready, cond: ForCompletion},
		{name: "completion", p: succeeded, cond: ForCompletion, msg: "condition met (Succeeded)", done: true},
		{name: "completion: failed", p: failed, cond: ForCompletion, done: true, wantErr: "pod default/web failed: DeadlineExceeded: too long"},
		{name: "ready: failed", p: failed, cond: ForReady, done: true, wantErr: "DeadlineExceeded"},
		{name: "ready: no such pod", err: run.ErrNoPod, cond: ForReady, done: true, wantErr: "pod default/web: pod not found"},
		{name: "delete: still there, finished or not", p: succeeded, cond: ForDelete},
		{name: "delete", err: run.ErrNoPod, cond: ForDelete, msg: "deleted", done: true},
		{name: "delete: listing failed", err: errors.New("boom"), cond: ForDelete, done: true, wantErr: "boom"},
	} {
		msg, done, err := met(h, tt.p, tt.err, target, tt.cond)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if msg != tt.msg || done != tt.done || (tt.wantErr == "") != (err == nil) || !strings.Contains(gotErr, tt.wantErr) {
			t.Errorf("%s: met = %q, %v, %v; want %q, %v, error containing %q", tt.name, msg, done, err, tt.msg, tt.done, tt.wantErr)
		}
	}
}
