// The last step of Up: "wait: ready" (waitReady), "wait: completion"
// (waitCompletion) or "record" (recordRunning).

package run

import (
	"context"
	"fmt"
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
