// One container's restart loop (Loop.run): an attempt, its hooks and probes,
// its exit, and whether the kubelet would restart it.

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
)

// shouldRestart applies the restart policy to an attempt that ended with
// code. A container killed for a failed probe restarts under any policy
// but Never, whatever its exit code (the kubelet's
// shouldRestartOnFailure); one killed for a failed postStart hook goes by
// its exit code, as the kubelet's next sync finds it exited
// (ShouldContainerBeRestarted); a native sidecar restarts on any exit, an
// init container on failure unless the policy is Never.
func (l *Loop) shouldRestart(code uint32) bool {
	killed := l.killed.Swap(false)
	if l.role == RoleSidecar {
		return true
	}
	// A container's own rules, then its own policy, override the pod's
	// (ContainerRestartRules): the first rule whose exit codes match
	// decides.
	if restart, matched := ruleFor(l.c.RestartPolicyRules, code); matched {
		return restart
	}
	policy := l.w.policy
	if l.c.RestartPolicy != nil {
		policy = corev1.RestartPolicy(*l.c.RestartPolicy)
	}
	if l.role == RoleInit {
		return code != 0 && policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return code != 0 || killed
	}
	return false
}

// ruleFor finds the first rule matching exit code; matched reports
// whether one did, restart what it says (Restart is the only action).
func ruleFor(rules []corev1.ContainerRestartRule, code uint32) (restart, matched bool) {
	for _, r := range rules {
		if r.ExitCodes == nil {
			continue
		}
		in := slices.Contains(r.ExitCodes.Values, int32(code))
		if in == (r.ExitCodes.Operator == corev1.ContainerRestartRuleOnExitCodesOpIn) {
			return r.Action == corev1.ContainerRestartRuleActionRestart, true
		}
	}
	return false, false
}

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
		if !l.shouldRestart(code) || !p.SandboxAlive(ctx) {
			l.update(func(s *State) { s.Done, s.ExitCode = true, code })
			return
		}
		window := l.backoff.Delay(ranFor) // the kubelet's: none after the first exit
		delay := window
		if resume >= 0 {
			delay = resume
		}
		st := l.State()
		until := l.w.clock.Now().Add(delay)
		waiting := map[string]string{labels.Waiting: "CrashLoopBackOff", labels.BackoffUntil: until.UTC().Format(time.RFC3339Nano),
			labels.Backoff:        window.String(),
			labels.WaitingMessage: ""} // an earlier CreateContainerConfigError's is stale
		var cfg *spec.ConfigError
		var serr *engine.StartError
		switch {
		case errors.As(err, &serr):
			// Made but not started: the kubelet shows the attempt's error
			// (RunContainerError) until a later sync finds it in back-off.
			waiting[labels.Waiting], waiting[labels.WaitingMessage] = status.ReasonRunContainerError, labels.Clip(serr.Error())
			_ = p.SetLabels(ctx, st.ID, waiting)
			p.Report(fmt.Sprintf("container %q: back-off %s before restart %d", l.c.Name, delay, st.Restarts+1))
		case hookErr != "":
			// The kubelet's next sync shows the hook's failure (its reason
			// cache) until a later one finds the container in back-off.
			waiting[labels.Waiting], waiting[labels.WaitingMessage] = status.ReasonPostStartHookError, labels.Clip(hookErr)
			_ = p.SetLabels(ctx, st.ID, waiting)
			p.Report(fmt.Sprintf("container %q: %s; back-off %s before restart %d", l.c.Name, hookErr, delay, st.Restarts+1))
		case errors.As(err, &cfg):
			// No container was made, so none counts as a restart (the
			// kubelet's restartCount counts containers) and the previous
			// attempt carries the reason, as the kubelet shows it over the
			// last container's status.
			waiting[labels.Waiting], waiting[labels.WaitingMessage] = spec.ReasonCreateContainerConfigError, labels.Clip(cfg.Msg)
			if st.Restarts > 0 {
				_ = p.SetLabels(ctx, p.ID(l.c.Name, st.Restarts-1), waiting)
			}
			p.Report(fmt.Sprintf("container %q: back-off %s before trying to create it again", l.c.Name, delay))
		case delay == 0:
			p.Report(fmt.Sprintf("container %q exited with code %d; restart %d", l.c.Name, code, st.Restarts+1))
		default:
			_ = p.SetLabels(ctx, st.ID, waiting)
			p.Report(fmt.Sprintf("container %q exited with code %d; back-off %s before restart %d", l.c.Name, code, delay, st.Restarts+1))
		}
		if !l.backOff(ctx, st.ID, delay, waiting[labels.Waiting]) {
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
		if cfg == nil {
			l.update(func(s *State) { s.Restarts++ })
		}
		p.Prune(ctx, l.c.Name, l.State().Restarts)
	}
}

// errorResync is when the kubelet syncs a pod again after a sync that
// failed (pod_workers.go's workerBackOffPeriod, jittered up to 15 s).
const errorResync = 10 * time.Second

// backOff waits out a back-off of delay before the next attempt; it
// reports false when ctx ended first. An attempt shown waiting in
// RunContainerError or PostStartHookError is shown in CrashLoopBackOff
// once the kubelet's next sync would have found it in back-off: the one
// after errorResync, or for a hook that failed the one that restarts it
// (whose status, taken before, is what shows while the next hook runs).
func (l *Loop) backOff(ctx context.Context, id string, delay time.Duration, reason string) bool {
	first := time.Duration(-1) // when the reason turns to CrashLoopBackOff
	switch {
	case reason == status.ReasonRunContainerError && delay > errorResync:
		first = errorResync
	case reason == status.ReasonPostStartHookError && delay > 0:
		first = min(delay, errorResync)
	}
	if first >= 0 {
		select {
		case <-l.w.clock.After(first):
		case <-ctx.Done():
			return false
		}
		delay -= first
		_ = l.w.pod.SetLabels(ctx, id, map[string]string{labels.Waiting: "CrashLoopBackOff", labels.WaitingMessage: ""})
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
