// kubectl's rollout verbs for one pod: its versions that became Ready
// (History.List, history.go), going back to one of them (Undo), and where
// its newest version stands (Progress).

package rollout

import (
	"context"
	"fmt"
	"time"

	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/rollout/progress"
	"github.com/podrun/podrun/run"
)

// Lifecycle is what the verbs need of the pod lifecycle (run.Host).
type Lifecycle interface {
	// Pod finds the pod t names.
	Pod(ctx context.Context, t run.Target) (*run.PodInfo, error)
	// Sync brings the node to what w asks.
	Sync(ctx context.Context, w run.Want, o run.UpOptions) []run.Result
}

// UndoOptions say how Undo goes back.
type UndoOptions struct {
	// Revision is the version to go back to; 0 the newest one that is not
	// the running version (kubectl's default).
	Revision int
	// Daemon: the pod is a running daemon's. The version is recorded to
	// stand in for its file's until the file changes, for the daemon to
	// apply; nothing is written into its directory, nothing applied here.
	Daemon bool
	// Up is how the version is applied (not Daemon).
	Up run.UpOptions
}

// Undo puts pod p back to a version kept in its history: it applies it
// (a replace, as up), or records it for the daemon (UndoOptions.Daemon).
// It returns the version and, when applied, the outcome.
func (h *History) Undo(ctx context.Context, l Lifecycle, p *run.PodInfo, o UndoOptions) (history.Revision, *run.Result, error) {
	key := p.Key()
	revs, err := h.store.List(key)
	if err != nil {
		return history.Revision{}, nil, err
	}
	running := ""
	if p.State != nil {
		running = p.State.Hash
	}
	to, err := history.Find(revs, o.Revision, running)
	if err != nil {
		return to, nil, fmt.Errorf("pod %s: %w", key, err)
	}
	if !o.Daemon {
		rs := l.Sync(ctx, run.Want{Pods: []*manifest.Pod{Revision(to)}}, o.Up)
		return to, &rs[0], rs[0].Err
	}
	// The version the file asks for: the one an override stands in for,
	// else the running one.
	file := running
	if ov, err := h.store.Override(key); err != nil {
		return to, nil, err
	} else if ov != nil {
		file = ov.Hash
	}
	if to.Hash == file {
		return to, nil, h.store.ClearOverride(key) // back to the file's own version
	}
	return to, nil, h.store.SetOverride(key, history.Override{Hash: file, To: to, At: h.clock.Now().UTC()})
}

// Progress is where pod p's version stands (progress.Decide) at its
// progress deadline (its annotation, else def), counted from its start;
// a pod that a rollback put back says so (Failed, with the reason).
func Progress(p *run.PodInfo, def time.Duration, now time.Time) (progress.Verdict, error) {
	if p.Pod == nil {
		return progress.Verdict{}, fmt.Errorf("pod %s: no record of its manifest", p.Key())
	}
	if c := RolledBack(p.Pod); c != nil {
		return progress.Verdict{Phase: progress.Failed, Reason: c.Reason, Message: c.Message}, nil
	}
	deadline, err := progress.Deadline(p.Pod, nil, def)
	if err != nil {
		return progress.Verdict{}, err
	}
	since := now
	if st := p.Pod.Status.StartTime; st != nil {
		since = st.Time
	}
	return progress.Decide(p.Pod, since, now, deadline), nil
}

// AwaitRollout follows pod t's version until progress says Ready or
// Failed (kubectl rollout status), looking every second while watch, and
// tells waiting once each time the pod is not there yet; it returns the
// last verdict and the pod's name.
func (h *History) AwaitRollout(ctx context.Context, l Lifecycle, t run.Target, def time.Duration, watch bool, waiting func(name string)) (progress.Verdict, string, error) {
	for {
		p, err := l.Pod(ctx, t)
		if err != nil {
			return progress.Verdict{}, t.Name, err
		}
		v, err := Progress(p, def, h.clock.Now())
		if err != nil || v.Phase != progress.Progressing {
			return v, p.Name, err
		}
		waiting(p.Name)
		if !watch {
			return v, p.Name, nil
		}
		select {
		case <-ctx.Done():
			return v, p.Name, fmt.Errorf("timed out waiting for pod %q: %w", p.Name, ctx.Err())
		case <-h.clock.After(time.Second):
		}
	}
}

// Outcome is what `rollout status` says of pod name at verdict v: the line
// it prints once Ready, the error it exits with once failed; nothing while
// the pod is progressing.
func Outcome(v progress.Verdict, name string) (string, error) {
	switch {
	case v.Phase == progress.Ready:
		return fmt.Sprintf("pod %q successfully rolled out", name), nil
	case v.Reason == progress.ReasonDeadlineExceeded:
		return "", fmt.Errorf("pod %q exceeded its progress deadline: %s", name, v.Message)
	case v.Phase == progress.Failed:
		return "", fmt.Errorf("pod %q failed (%s): %s", name, v.Reason, v.Message)
	}
	return "", nil
}
