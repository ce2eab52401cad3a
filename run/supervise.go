package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/backoff"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
)

// podWorker supervises one pod's long-running containers: it starts them,
// runs their postStart hooks and probes, and restarts them with the
// kubelet's back-off when they exit. Stopping it stops the supervision, not
// the containers.
type podWorker struct {
	r      *podRun
	clock  probes.Clock
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	loops  []*ctrLoop
	change chan struct{} // closed and replaced on every state change
}

func newPodWorker(r *podRun, clock probes.Clock) *podWorker {
	ctx, cancel := context.WithCancel(context.Background())
	return &podWorker{r: r, clock: clock, ctx: ctx, cancel: cancel, change: make(chan struct{})}
}

func (w *podWorker) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.change
}

func (w *podWorker) notify() {
	w.mu.Lock()
	close(w.change)
	w.change = make(chan struct{})
	w.mu.Unlock()
}

// waitFor blocks until cond holds, cond fails, or ctx ends.
func (w *podWorker) waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		ch := w.changed()
		if ok, err := cond(); ok || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitAll blocks until every loop's state satisfies ok, or ctx ends.
func (w *podWorker) waitAll(ctx context.Context, loops []*ctrLoop, ok func(loopState) bool) error {
	return w.waitFor(ctx, func() (bool, error) {
		for _, l := range loops {
			if !ok(l.state()) {
				return false, nil
			}
		}
		return true, nil
	})
}

// stop ends supervision and waits for the loops to return.
func (w *podWorker) stop() {
	w.cancel()
	w.wg.Wait()
}

// supervise keeps w running after Up, for Supervise.
func (h *Host) supervise(w *podWorker) {
	h.mu.Lock()
	old := h.workers[w.r.pod.UID]
	h.workers[w.r.pod.UID] = w
	h.mu.Unlock()
	if old != nil && old != w {
		old.stop()
	}
	if old != w && w.r.state.Ended == nil {
		vols := sizeLimited(w.r.pod.Pod)
		if len(vols) > 0 || w.r.pod.Spec.ActiveDeadlineSeconds != nil {
			w.wg.Add(1)
			go w.housekeep(vols) // emptyDir sizeLimit, active deadline (evict.go)
		}
	}
}

// unsupervise stops supervising a pod (not its containers).
func (h *Host) unsupervise(uid string) {
	h.mu.Lock()
	w := h.workers[uid]
	delete(h.workers, uid)
	h.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// Supervised reports whether this process supervises the pod.
func (h *Host) Supervised(uid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.workers[uid] != nil
}

// supervisedUIDs lists the pods this process supervises.
func (h *Host) supervisedUIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var uids []string
	for uid := range h.workers {
		uids = append(uids, uid)
	}
	return uids
}

// Supervise keeps supervising the pods Up brought up in the foreground
// until ctx ends, then terminates them gracefully (the kubelet's order).
func (h *Host) Supervise(ctx context.Context) error {
	<-ctx.Done()
	return h.TerminateAll(context.Background())
}

// TerminateAll stops every supervised pod gracefully and removes it.
func (h *Host) TerminateAll(ctx context.Context) error {
	uids := h.supervisedUIDs()
	errs := make([]error, len(uids))
	var wg sync.WaitGroup
	for i, uid := range uids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.downUID(ctx, uid, nil)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopSupervising ends supervision without touching the containers.
func (h *Host) StopSupervising() {
	for _, uid := range h.supervisedUIDs() {
		h.unsupervise(uid)
	}
}

// loopState is what a container loop knows of its container.
type loopState struct {
	id       string
	restarts int
	running  bool // started, postStart done
	ranOnce  bool // running at least once
	started  bool // running and startup probe passed
	ready    bool
	done     bool // exited and will not restart
	exitCode uint32
	exited   bool   // an attempt has exited (lastCode is its code)
	lastCode uint32 // the last exited attempt's code
	oomKill  bool   // the last attempt was OOM-killed (an OOM event came before its exit)
	startErr error  // the last attempt's failure to start
	lastFail string // the last probe or hook failure
}

// ctrLoop supervises one container.
type ctrLoop struct {
	w        *podWorker
	ctx      context.Context
	cancel   context.CancelFunc
	finished chan struct{} // closed when run returns
	c        *corev1.Container
	role     role
	backoff  backoff.Backoff
	adopted  *engine.Container // an existing attempt to take over instead of starting one
	killed   atomic.Bool       // the current attempt was killed by a probe or hook failure

	mu sync.Mutex
	st loopState
}

func (l *ctrLoop) state() loopState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

func (l *ctrLoop) update(fn func(*loopState)) {
	l.mu.Lock()
	fn(&l.st)
	l.mu.Unlock()
	l.w.notify()
}

// role is what a container is to its pod; it decides when the container is
// restarted and whether it is probed.
type role int

const (
	roleApp     role = iota // restarted per the pod's policy; probed
	roleSidecar             // a native sidecar: restarted on any exit; probed
	roleInit                // runs to completion: restarted on failure unless the policy is Never
)

// kind is the label value of the role.
func (r role) kind() string {
	if r == roleApp {
		return labels.KindApp
	}
	return labels.KindInit
}

// startLoop begins supervising container c from attempt restart; when
// adopted is set, that existing attempt is taken over, not started.
func (w *podWorker) startLoop(c *corev1.Container, role role, restart int, adopted *engine.Container) *ctrLoop {
	l := &ctrLoop{w: w, c: c, role: role, st: loopState{restarts: restart}, adopted: adopted}
	l.ctx, l.cancel = context.WithCancel(w.ctx)
	l.finished = make(chan struct{})
	w.mu.Lock()
	w.loops = append(w.loops, l)
	w.mu.Unlock()
	w.wg.Add(1)
	go l.run()
	return l
}

// all returns the loops started so far.
func (w *podWorker) all() []*ctrLoop {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*ctrLoop(nil), w.loops...)
}

// describe is a short account of the container's state.
func (s loopState) describe() string {
	switch {
	case s.done:
		if s.oomKill {
			return fmt.Sprintf("exited with code %d (%s)", s.exitCode, status.ReasonOOMKilled)
		}
		return fmt.Sprintf("exited with code %d", s.exitCode)
	case s.startErr != nil:
		return fmt.Sprintf("failed to start: %v", s.startErr)
	case s.ready:
		return "ready"
	case s.started:
		return "running, not ready"
	case s.running:
		return "running, startup probe not passed"
	case s.restarts > 0:
		return fmt.Sprintf("waiting to restart (CrashLoopBackOff, %d restarts)", s.restarts)
	}
	return "starting"
}

// stop ends this container's supervision (not the container) and waits for it.
func (l *ctrLoop) stop() {
	l.cancel()
	<-l.finished
}

// shouldRestart applies the restart policy to an attempt that ended with
// code. A container killed for a failed probe or hook restarts under any
// policy but Never, whatever its exit code (the kubelet's
// shouldRestartOnFailure); a native sidecar restarts on any exit, an init
// container on failure unless the policy is Never.
func (l *ctrLoop) shouldRestart(code uint32) bool {
	killed := l.killed.Swap(false)
	switch {
	case l.role == roleSidecar:
		return true
	case l.role == roleInit:
		return code != 0 && l.w.r.pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	}
	switch l.w.r.pod.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return code != 0 || killed
	}
	return false
}

func (l *ctrLoop) run() {
	defer l.w.wg.Done()
	defer close(l.finished)
	ctx := l.ctx
	r := l.w.r
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
		if err != nil {
			code = 128 // a container that could not start counts as failed
			l.update(func(s *loopState) { s.startErr, s.running, s.started, s.ready = err, false, false, false })
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("container %q failed to start: %v", l.c.Name, err)})
		}
		if !l.shouldRestart(code) || !r.sandboxAlive(ctx) {
			l.update(func(s *loopState) { s.done, s.exitCode = true, code })
			return
		}
		delay := l.backoff.Delay(ranFor)
		if resume >= 0 {
			delay = resume
		}
		st := l.state()
		until := l.w.clock.Now().Add(delay)
		waiting := map[string]string{labels.Waiting: "CrashLoopBackOff", labels.BackoffUntil: until.UTC().Format(time.RFC3339Nano),
			labels.WaitingMessage: ""} // an earlier CreateContainerConfigError's is stale
		var cfg *spec.ConfigError
		if errors.As(err, &cfg) {
			// No container was made, so none counts as a restart (the
			// kubelet's restartCount counts containers) and the previous
			// attempt carries the reason, as the kubelet shows it over the
			// last container's status.
			waiting[labels.Waiting], waiting[labels.WaitingMessage] = spec.ReasonCreateContainerConfigError, clip(cfg.Msg, 512)
			if st.restarts > 0 {
				_ = r.h.engine.SetLabels(ctx, ContainerID(r.pod.UID, l.c.Name, st.restarts-1), waiting)
			}
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("container %q: back-off %s before trying to create it again", l.c.Name, delay)})
		} else {
			_ = r.h.engine.SetLabels(ctx, st.id, waiting)
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("container %q exited with code %d; back-off %s before restart %d", l.c.Name, code, delay, st.restarts+1)})
		}
		select {
		case <-l.w.clock.After(delay):
		case <-ctx.Done():
			return
		}
		if !r.sandboxAlive(ctx) {
			// The pod was taken down (or replaced) by someone else meanwhile.
			l.update(func(s *loopState) { s.done, s.exitCode = true, code })
			return
		}
		if cfg == nil {
			l.update(func(s *loopState) { s.restarts++ })
		}
		r.pruneAttempts(ctx, l.c.Name, l.state().restarts)
	}
}

// attempt runs one attempt of the container until it exits; err reports a
// failure to start it.
func (l *ctrLoop) attempt(ctx context.Context) (ranFor time.Duration, code uint32, err error) {
	r := l.w.r
	restarts := l.state().restarts
	id := ContainerID(r.pod.UID, l.c.Name, restarts)
	exitC := r.h.exits.register(id)
	defer r.h.exits.unregister(id)
	l.update(func(s *loopState) { s.id = id })
	start := l.w.clock.Now()
	adopted := l.adopted
	l.adopted = nil
	if adopted == nil {
		if _, err := r.startContainer(ctx, l.c, l.role.kind(), restarts); err != nil {
			return 0, 0, err
		}
	} else if t, err := time.Parse(time.RFC3339Nano, adopted.Labels[labels.StartedAt]); err == nil {
		start = t
	}
	r.h.exits.check(ctx, id)
	target := r.target(l.c, id)
	observe := target.Observe
	target.Observe = func(kind probes.Kind, o probes.Outcome, took time.Duration) {
		if o.Result == probes.Failure { // errors report the latest failure, not the first
			l.update(func(s *loopState) { s.lastFail = fmt.Sprintf("%s probe failed: %s", kind, o.Output) })
		}
		if observe != nil {
			observe(kind, o, took)
		}
	}
	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	updates := make(chan probes.Update, 8)
	if post := l.c.Lifecycle; adopted == nil && post != nil && post.PostStart != nil {
		if err := probes.Hook(ctx, post.PostStart, target); err != nil {
			msg := fmt.Sprintf("postStart hook failed: %v", err)
			l.update(func(s *loopState) { s.lastFail = msg })
			r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("container %q: %s; killing it", l.c.Name, msg)})
			go l.kill(ctx, id, target, r.grace(nil))
			return l.waitExit(ctx, probeCtx, id, exitC, nil, start, target)
		}
	}
	l.update(func(s *loopState) { s.running, s.ranOnce, s.startErr = true, true, nil })
	switch {
	case l.role == roleInit:
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
func (l *ctrLoop) adoptExited(ctx context.Context, a engine.Container) (ranFor time.Duration, code uint32, resume time.Duration) {
	r := l.w.r
	l.update(func(s *loopState) { s.id, s.oomKill = a.ID, a.Labels[labels.Reason] == status.ReasonOOMKilled })
	code = a.Task.ExitCode
	if a.Task.State == engine.TaskStopped {
		_ = r.h.finish(ctx, a.ID, engine.Exit{Code: a.Task.ExitCode, ExitedAt: a.Task.ExitedAt})
	} else if n, err := strconv.Atoi(a.Labels[labels.ExitCode]); err == nil {
		code = uint32(n)
	}
	started, _ := time.Parse(time.RFC3339Nano, a.Labels[labels.StartedAt])
	finished, _ := time.Parse(time.RFC3339Nano, a.Labels[labels.FinishedAt])
	if a.Task.State == engine.TaskStopped {
		finished = a.Task.ExitedAt
	}
	ranFor = finished.Sub(started)
	l.backoff.Resume(l.state().restarts)
	resume = -1
	if until, err := time.Parse(time.RFC3339Nano, a.Labels[labels.BackoffUntil]); err == nil {
		resume = max(until.Sub(l.w.clock.Now()), 0)
	}
	return ranFor, code, resume
}

// waitExit waits for the attempt's exit, handling probe updates meanwhile.
// Probe workers run on probeCtx, which ends with the attempt.
func (l *ctrLoop) waitExit(ctx, probeCtx context.Context, id string, exitC <-chan engine.Exit, updates chan probes.Update, start time.Time, target probes.Target) (time.Duration, uint32, error) {
	r := l.w.r
	for {
		select {
		case e := <-exitC:
			l.update(func(s *loopState) {
				s.running, s.started, s.ready, s.oomKill, s.lastCode, s.exited = false, false, false, e.OOMKilled, e.Code, true
			})
			fctx := context.WithoutCancel(ctx)
			if err := r.h.finish(fctx, id, e); err != nil {
				r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("recording the exit of %s: %v", id, err)})
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
func (l *ctrLoop) onStarted(ctx context.Context, id string, target probes.Target, updates chan probes.Update) {
	r := l.w.r
	_ = r.h.engine.SetLabels(ctx, id, map[string]string{labels.Started: "true"})
	l.update(func(s *loopState) { s.started = true })
	if l.c.LivenessProbe != nil {
		go probes.NewWorker(probes.Liveness, l.c.LivenessProbe, target, l.w.clock, updates).Run(ctx)
	}
	if l.c.ReadinessProbe != nil {
		go probes.NewWorker(probes.Readiness, l.c.ReadinessProbe, target, l.w.clock, updates).Run(ctx)
	} else {
		l.setReady(ctx, id, true)
	}
}

func (l *ctrLoop) setReady(ctx context.Context, id string, ready bool) {
	if l.state().ready == ready && ready {
		return
	}
	_ = l.w.r.h.engine.SetLabels(ctx, id, map[string]string{
		labels.Ready: strconv.FormatBool(ready), labels.ReadyAt: l.w.clock.Now().UTC().Format(time.RFC3339Nano),
	})
	l.update(func(s *loopState) { s.ready = ready })
}

func (l *ctrLoop) onProbe(ctx context.Context, id string, target probes.Target, u probes.Update, updates chan probes.Update) {
	r := l.w.r
	if u.Result == probes.Failure {
		msg := fmt.Sprintf("%s probe failed: %s", u.Kind, u.Outcome.Output)
		l.update(func(s *loopState) { s.lastFail = msg })
		_ = r.h.engine.SetLabels(ctx, id, map[string]string{labels.LastProbe: clip(msg, 512)})
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
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("container %q: %s; killing it", l.c.Name, l.state().lastFail)})
		go l.kill(ctx, id, target, r.grace(probe))
	}
}

// kill stops the attempt the kubelet's way (preStop, stop signal, grace)
// because a probe or hook failed; its exit then arrives as an event.
func (l *ctrLoop) kill(ctx context.Context, id string, target probes.Target, grace time.Duration) {
	l.killed.Store(true)
	r := l.w.r
	t, err := r.h.engine.Task(ctx, id)
	if err != nil {
		return
	}
	c := engine.Container{ID: id, Task: t, Labels: r.labels(l.c.Name, l.role.kind(), 0, r.images[l.c.Image].Config.StopSignal)}
	if err := r.h.stop(ctx, c, l.c, target, grace); err != nil && ctx.Err() == nil {
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("stopping %s: %v", id, err)})
	}
}

// sandboxAlive reports whether the pod's sandbox is still the one this
// supervisor started or adopted: after a `podrun down` from another process,
// or a replacement, its containers must not be restarted into it.
func (r *podRun) sandboxAlive(ctx context.Context) bool {
	t, err := r.h.engine.Task(ctx, r.sandboxID)
	return err == nil && t.State == engine.TaskRunning && t.PID == r.pausePID
}

// grace is the pod's termination grace period, or a probe's override.
func (r *podRun) grace(p *corev1.Probe) time.Duration {
	if p != nil && p.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	return podGrace(r.pod.Pod)
}

func podGrace(p *corev1.Pod) time.Duration {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return defaultGrace
}

// target is where container c's probes and hooks go.
func (r *podRun) target(c *corev1.Container, id string) probes.Target {
	var ips []string
	if r.state != nil {
		ips = r.state.PodIPs
	}
	return r.h.target(c, id, ips)
}

// execer adapts the engine to probes.Execer.
type execer struct{ e engine.Engine }

func (x execer) Exec(ctx context.Context, id string, args []string, out io.Writer) (int, error) {
	return x.e.Exec(ctx, id, engine.ExecSpec{Args: args, Stdout: out, Stderr: out})
}

// pruneAttempts removes attempts older than the previous one, as the
// kubelet's garbage collector keeps only the last dead container.
func (r *podRun) pruneAttempts(ctx context.Context, name string, current int) {
	for n := current - 2; n >= 0; n-- {
		if err := r.h.engine.Delete(ctx, ContainerID(r.pod.UID, name, n)); err != nil {
			return
		}
	}
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n]
	}
	return s
}
