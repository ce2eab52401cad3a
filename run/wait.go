// The last step of Up: "wait: ready" (waitReady), "wait: completion"
// (waitCompletion) or "record" (recordRunning); and the phase a pod's run
// ended in (outcome, result).

package run

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/supervisor"
)

func (r *podRun) recordRunning(context.Context) error {
	r.state.Complete = true
	return r.h.saveState(r.state)
}

// waitReady waits until the pod is Ready (every app container and sidecar
// ready), or has finished first (a run-to-completion pod whose app
// containers are all done, which is then completed), or its active deadline
// ends it (end.go): `kubectl wait --for=condition=Ready`, which never
// kills a healthy pod for not finishing.
func (r *podRun) waitReady(ctx context.Context) error {
	loops := r.readyLoops()
	dctx, passed, cancel := r.untilDeadline(ctx)
	defer cancel()
	err := r.stayReady(dctx, loops, r.minReady)
	switch {
	case err != nil && passed():
		return r.failDeadline(ctx)
	case err != nil:
		return r.notReady(err, loops)
	case r.appsDone():
		return r.complete(ctx)
	}
	r.recordReady()
	return r.recordRunning(ctx)
}

// readyLoops are the loops of the containers the pod's Ready condition
// counts: its app containers and sidecars (init containers are done
// before any app starts).
func (r *podRun) readyLoops() []*supervisor.Loop {
	var loops []*supervisor.Loop
	for _, l := range r.w.Loops() {
		if l.Role() != supervisor.RoleInit {
			loops = append(loops, l)
		}
	}
	return loops
}

// stayReady waits until the pod is Ready and has stayed so for settle (a
// container that exits at once is Ready for a moment; 0: once Ready),
// waiting for Ready again each time it is not; a pod that finishes
// meanwhile is done.
func (r *podRun) stayReady(ctx context.Context, loops []*supervisor.Loop, settle time.Duration) error {
	for {
		if err := r.w.WaitFor(ctx, func() (bool, error) { return r.allReady(loops) || r.appsDone(), nil }); err != nil || r.appsDone() || settle <= 0 {
			return err // a pod that has finished is done with
		}
		sctx, cancel := context.WithTimeout(ctx, settle)
		err := r.w.WaitFor(sctx, func() (bool, error) { return !r.allReady(loops), nil })
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil: // settle passed, Ready all along
			return nil
		}
	}
}

func (r *podRun) allReady(loops []*supervisor.Loop) bool {
	for _, l := range loops {
		if !l.State().Ready {
			return false
		}
	}
	return true
}

// appsDone reports whether a run-to-completion pod's app containers have
// all exited for good (Succeeded or Failed).
func (r *podRun) appsDone() bool {
	if r.pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || r.w == nil {
		return false
	}
	for _, l := range r.w.Loops() {
		if l.Role() == supervisor.RoleApp && !l.State().Done {
			return false
		}
	}
	return true
}

// notReady explains a wait that ended: for each container that is not
// ready, its state, its last probe or hook failure and its last log lines.
func (r *podRun) notReady(cause error, loops []*supervisor.Loop) error {
	var b strings.Builder
	for _, l := range loops {
		st := l.State()
		if st.Ready {
			continue
		}
		fmt.Fprintf(&b, "\n  container %q: %s", l.Container().Name, st.Describe())
		if st.LastFail != "" {
			fmt.Fprintf(&b, "; %s", st.LastFail)
		}
		logPath := r.logPath(l.Container().Name, st.Restarts)
		if tail := readTail(logPath); tail != "" {
			fmt.Fprintf(&b, "; last log lines:\n%s", tail)
		}
	}
	return fmt.Errorf("not ready: %w%s", cause, b.String())
}

// waitCompletion waits for a Never/OnFailure pod's app containers to finish
// (their loops restart failures under OnFailure), then stops its sidecars,
// sandbox and network (killPod): a finished pod keeps its containers and directory
// for status and logs until `down`, and nothing of it keeps running.
func (r *podRun) waitCompletion(ctx context.Context) error {
	var apps []*supervisor.Loop
	for _, l := range r.w.Loops() {
		if l.Role() == supervisor.RoleApp {
			apps = append(apps, l)
		}
	}
	dctx, passed, cancel := r.untilDeadline(ctx) // end.go
	defer cancel()
	if err := r.w.WaitAll(dctx, apps, func(s supervisor.State) bool { return s.Done }); err != nil {
		if passed() {
			return r.failDeadline(ctx)
		}
		return r.notReady(err, apps)
	}
	return r.complete(ctx)
}

// complete ends a pod that has finished: its sidecars and sandbox end
// (killPod), nothing of it runs any more; its containers and directory
// stay for status and logs until `down`.
func (r *podRun) complete(ctx context.Context) error {
	if err := r.h.killPod(ctx, r.teardown(teardown{sandbox: true})); err != nil {
		return err
	}
	r.state.Complete = true
	return r.h.saveState(r.state)
}

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
	if err := r.h.versions.Ready(&p, r.source, r.h.clock.Now()); err != nil {
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

// outcome is the phase of a pod whose pipeline has run, from what the node
// says: Failed when the node ended it (its deadline), Succeeded or Failed
// when it ran to completion (with its app containers' failures), else
// Running. A Failed pod's error is a *PodFailedError.
func (r *podRun) outcome() (corev1.PodPhase, error) {
	if r.state.Ended == nil && (r.wait == WaitRunning || !r.appsDone()) {
		return corev1.PodRunning, nil
	}
	return r.result()
}

// result is the phase of a pod that has ended: Failed when the node ended
// it, else Succeeded, or Failed with its app containers' failures.
func (r *podRun) result() (corev1.PodPhase, error) {
	key := r.pod.Key()
	if e := r.state.Ended; e != nil {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: e.Reason + ": " + e.Message}
	}
	var failures []string
	for _, l := range r.w.Loops() {
		if st := l.State(); l.Role() == supervisor.RoleApp && st.ExitCode != 0 {
			logPath := r.logPath(l.Container().Name, st.Restarts)
			failures = append(failures, (&ExitError{Container: l.Container().Name, Code: st.ExitCode, OOMKilled: st.OOMKilled, Tail: readTail(logPath)}).Error())
		}
	}
	if len(failures) > 0 {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: strings.Join(failures, "; ")}
	}
	return corev1.PodSucceeded, nil
}
