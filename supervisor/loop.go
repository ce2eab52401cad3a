// One container's restart loop (Loop.run): an attempt, its hooks and probes,
// its exit, and the restart and back-off that decide.go decides on.

package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/status"
)

func (l *Loop) run() {
	defer l.w.wg.Done()
	defer close(l.finished)
	defer l.release()
	ctx := l.ctx
	p := l.w.pod
	for ctx.Err() == nil {
		var ranFor time.Duration
		var code uint32
		var err error
		resume := time.Duration(-1) // the rest of an adopted back-off
		if a := l.adopted; a != nil && a.Task.State != engine.TaskRunning {
			l.adopted = nil
			ranFor, code, resume = l.adoptExited(ctx, *a)
		} else {
			ranFor, code, err = l.attempt(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		hookErr := l.hookErr
		l.hookErr = ""
		l.update(func(s *State) { s.Tried = true })
		if err != nil {
			code = 128 // a container that could not start counts as failed
			l.update(func(s *State) {
				s.StartErr, s.Running, s.Started, s.Ready = err, false, false, false
				if s.Restarts == 0 && s.FirstErr == nil {
					s.FirstErr = err
				}
			})
			p.Report(fmt.Sprintf("container %q failed to start: %v", l.c.Name, err))
		}
		if !shouldRestart(l.role, l.c, l.w.policy, code, l.killed.Swap(false)) || !p.SandboxAlive(ctx) {
			l.update(func(s *State) { s.Done, s.ExitCode = true, code })
			return
		}
		st := l.State()
		wait := decideWait(ended{Name: l.c.Name, Restarts: st.Restarts, Code: code, Err: err, HookErr: hookErr,
			Window: l.backoff.Delay(ranFor), Resume: resume, Now: l.w.clock.Now()})
		switch wait.On {
		case onEnded:
			_ = p.SetLabels(ctx, st.ID, wait.Labels)
		case onPrevious:
			_ = p.SetLabels(ctx, p.ID(l.c.Name, st.Restarts-1), wait.Labels)
		}
		p.Report(wait.Report)
		if !l.backOff(ctx, st.ID, wait) {
			return
		}
		// A restart changes the pod: under its lock, held until the next
		// attempt has started (attempt releases it).
		unlock, err := p.Lock(ctx)
		if err != nil {
			return // the supervision ends
		}
		if !p.SandboxAlive(ctx) {
			// The pod was taken down (or replaced) by someone else meanwhile.
			unlock()
			l.update(func(s *State) { s.Done, s.ExitCode = true, code })
			return
		}
		l.unlock = unlock
		if wait.Counts {
			l.update(func(s *State) { s.Restarts++ })
		}
		p.Prune(ctx, l.c.Name, l.State().Restarts)
	}
}

// backOff waits out the back-off of w before the next attempt of the
// attempt id; it reports false when ctx ended first. At w.Turn, its
// waiting reason is turned to CrashLoopBackOff.
func (l *Loop) backOff(ctx context.Context, id string, w wait) bool {
	delay := w.Delay
	if w.Turn >= 0 {
		select {
		case <-l.w.clock.After(w.Turn):
		case <-ctx.Done():
			return false
		}
		delay -= w.Turn
		_ = l.w.pod.SetLabels(ctx, id, map[string]string{labels.Waiting: reasonCrashLoopBackOff, labels.WaitingMessage: ""})
	}
	if delay <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-l.w.clock.After(delay):
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt runs one attempt of the container until it exits; err reports a
// failure to start it.
func (l *Loop) attempt(ctx context.Context) (ranFor time.Duration, code uint32, err error) {
	p := l.w.pod
	restarts := l.State().Restarts
	id := p.ID(l.c.Name, restarts)
	exitC := l.w.exits.Register(id)
	defer l.w.exits.Unregister(id)
	l.update(func(s *State) { s.ID = id })
	start := l.w.clock.Now()
	adopted := l.adopted
	l.adopted = nil
	if adopted == nil {
		err := p.Start(ctx, l.c, l.role.Kind(), restarts)
		l.release()
		if err != nil {
			return 0, 0, err
		}
	} else if t, err := time.Parse(time.RFC3339Nano, adopted.Labels[labels.StartedAt]); err == nil {
		start = t
	}
	l.w.exits.Check(ctx, id)
	target := p.Target(l.c, id)
	observe := target.Observe
	target.Observe = func(kind probes.Kind, o probes.Outcome, took time.Duration) {
		if o.Result == probes.Failure { // errors report the latest failure, not the first
			l.update(func(s *State) { s.LastFail = fmt.Sprintf("%s probe failed: %s", kind, o.Output) })
		}
		if observe != nil {
			observe(kind, o, took)
		}
	}
	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	updates := make(chan probes.Update, 8)
	if post := l.c.Lifecycle; adopted == nil && post != nil && post.PostStart != nil {
		// Like the kubelet's startContainer: the start returns once the
		// hook has, and a hook that fails has the container killed.
		if err := probes.Hook(ctx, post.PostStart, target); err != nil {
			msg := fmt.Sprintf("postStart hook failed: %v", err)
			l.update(func(s *State) { s.LastFail = msg })
			l.hookErr = msg
			p.Report(fmt.Sprintf("container %q: %s; killing it", l.c.Name, msg))
			go l.kill(ctx, id, p.Grace(nil))
			return l.waitExit(ctx, probeCtx, id, exitC, nil, start, target)
		}
	}
	if post := l.c.Lifecycle; post != nil && post.PostStart != nil && (adopted == nil || adopted.Labels[labels.PostStart] != "") {
		// Running from now on, as status shows it. An adopted attempt whose
		// hook was cut off with the podrun that ran it is not hooked again
		// (nor is it by a kubelet restarted meanwhile).
		if err := p.SetLabels(ctx, id, map[string]string{labels.PostStart: ""}); err != nil {
			p.Report(fmt.Sprintf("recording the postStart hook of %s done: %v", id, err))
		}
	}
	l.update(func(s *State) { s.Running, s.RanOnce, s.StartErr, s.Tried = true, true, nil, true })
	switch {
	case l.role == RoleInit:
		// Runs to completion: never probed, never ready while it runs.
	case l.c.StartupProbe != nil && (adopted == nil || adopted.Labels[labels.Started] != "true"):
		go probes.NewWorker(probes.Startup, l.c.StartupProbe, target, l.w.clock, updates).Run(probeCtx)
	default:
		l.onStarted(probeCtx, id, target, updates)
	}
	return l.waitExit(ctx, probeCtx, id, exitC, updates, start, target)
}

// adoptExited takes over an attempt that exited while nobody supervised
// it: its exit is recorded, and the back-off resumes where its labels say
// (resume is -1 when none was pending).
func (l *Loop) adoptExited(ctx context.Context, a engine.Container) (ranFor time.Duration, code uint32, resume time.Duration) {
	p := l.w.pod
	l.update(func(s *State) { s.ID, s.OOMKilled = a.ID, a.Labels[labels.Reason] == status.ReasonOOMKilled })
	code = a.Task.ExitCode
	if a.Task.State == engine.TaskStopped {
		_ = p.Finish(ctx, l.c, l.State().Restarts, engine.Exit{Code: a.Task.ExitCode, ExitedAt: a.Task.ExitedAt})
	} else if n, err := strconv.Atoi(a.Labels[labels.ExitCode]); err == nil {
		code = uint32(n)
	}
	started, _ := time.Parse(time.RFC3339Nano, a.Labels[labels.StartedAt])
	finished, _ := time.Parse(time.RFC3339Nano, a.Labels[labels.FinishedAt])
	if a.Task.State == engine.TaskStopped {
		finished = a.Task.ExitedAt
	}
	if started.Unix() > 0 { // one that never ran (StartError: 1970, as CRI says) ran for no time
		ranFor = finished.Sub(started)
	}
	l.backoff.Resume(l.State().Restarts)
	resume = -1
	if until, err := time.Parse(time.RFC3339Nano, a.Labels[labels.BackoffUntil]); err == nil {
		resume = max(until.Sub(l.w.clock.Now()), 0)
	}
	return ranFor, code, resume
}

// waitExit waits for the attempt's exit, handling probe updates meanwhile.
// Probe workers run on probeCtx, which ends with the attempt.
func (l *Loop) waitExit(ctx, probeCtx context.Context, id string, exitC <-chan engine.Exit, updates chan probes.Update, start time.Time, target probes.Target) (time.Duration, uint32, error) {
	p := l.w.pod
	for {
		select {
		case e := <-exitC:
			l.update(func(s *State) {
				s.Running, s.Started, s.Ready, s.OOMKilled, s.LastCode, s.Exited = false, false, false, e.OOMKilled, e.Code, true
			})
			fctx := context.WithoutCancel(ctx)
			if err := p.Finish(fctx, l.c, l.State().Restarts, e); err != nil {
				p.Report(fmt.Sprintf("recording the exit of %s: %v", id, err))
			}
			return l.w.clock.Now().Sub(start), e.Code, nil
		case u := <-updates:
			l.onProbe(probeCtx, id, target, u, updates)
		case <-ctx.Done():
			return 0, 0, nil
		}
	}
}

// onStarted marks the container started and begins liveness and readiness.
func (l *Loop) onStarted(ctx context.Context, id string, target probes.Target, updates chan probes.Update) {
	p := l.w.pod
	_ = p.SetLabels(ctx, id, map[string]string{labels.Started: "true"})
	l.update(func(s *State) { s.Started = true })
	if l.c.LivenessProbe != nil {
		go probes.NewWorker(probes.Liveness, l.c.LivenessProbe, target, l.w.clock, updates).Run(ctx)
	}
	if l.c.ReadinessProbe != nil {
		go probes.NewWorker(probes.Readiness, l.c.ReadinessProbe, target, l.w.clock, updates).Run(ctx)
	} else {
		l.setReady(ctx, id, true)
	}
}

func (l *Loop) setReady(ctx context.Context, id string, ready bool) {
	if l.State().Ready == ready && ready {
		return
	}
	_ = l.w.pod.SetLabels(ctx, id, map[string]string{
		labels.Ready: strconv.FormatBool(ready), labels.ReadyAt: l.w.clock.Now().UTC().Format(time.RFC3339Nano),
	})
	l.update(func(s *State) { s.Ready = ready })
}

func (l *Loop) onProbe(ctx context.Context, id string, target probes.Target, u probes.Update, updates chan probes.Update) {
	p := l.w.pod
	if u.Result == probes.Failure {
		msg := fmt.Sprintf("%s probe failed: %s", u.Kind, u.Outcome.Output)
		l.update(func(s *State) { s.LastFail = msg })
		_ = p.SetLabels(ctx, id, map[string]string{labels.LastProbe: labels.Clip(msg)})
	}
	switch {
	case u.Kind == probes.Startup && u.Result == probes.Success:
		l.onStarted(ctx, id, target, updates)
	case u.Kind == probes.Readiness:
		l.setReady(ctx, id, u.Result == probes.Success)
	case u.Result == probes.Failure: // startup or liveness
		probe := l.c.LivenessProbe
		if u.Kind == probes.Startup {
			probe = l.c.StartupProbe
		}
		p.Report(fmt.Sprintf("container %q: %s; killing it", l.c.Name, l.State().LastFail))
		l.killed.Store(true)
		go l.kill(ctx, id, p.Grace(probe))
	}
}

// kill stops the attempt the kubelet's way (preStop, stop signal, grace)
// because a probe or hook failed; its exit then arrives as an event.
func (l *Loop) kill(ctx context.Context, id string, grace time.Duration) {
	unlock, err := l.w.pod.Lock(ctx)
	if err != nil {
		return // the supervision ends
	}
	defer unlock()
	if err := l.w.pod.Kill(ctx, l.c, id, grace); err != nil && ctx.Err() == nil {
		l.w.pod.Report(fmt.Sprintf("stopping %s: %v", id, err))
	}
}
