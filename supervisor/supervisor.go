// Package supervisor keeps one pod's containers running as the kubelet's
// pod workers do: one restart loop per container (init, native sidecar and
// app alike) with the kubelet's back-off on an injectable clock, postStart
// hooks, startup/liveness/readiness probes, and kills on probe failure. It
// is handed what it does to the pod (Pod) and never reaches back into
// whoever started it.
package supervisor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/backoff"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/status"
)

// Pod is what the supervisor does to one pod's containers; run implements
// it on the runtime.
type Pod interface {
	// ID is the container id of attempt n of container name.
	ID(name string, n int) string
	// Start creates and starts attempt n of c; kind is its labels' kind.
	Start(ctx context.Context, c *corev1.Container, kind string, n int) error
	// SetLabels records facts on a container.
	SetLabels(ctx context.Context, id string, l map[string]string) error
	// Finish records how attempt n of c ended and deletes its task.
	Finish(ctx context.Context, c *corev1.Container, n int, e engine.Exit) error
	// Kill stops attempt id of c the kubelet's way (preStop hook, stop
	// signal, grace, SIGKILL); one that is not running is done.
	Kill(ctx context.Context, c *corev1.Container, id string, grace time.Duration) error
	// SandboxAlive reports whether the pod's sandbox is still the one
	// supervised: containers are never restarted into another.
	SandboxAlive(ctx context.Context) bool
	// Prune removes the attempts of container name older than the one
	// before current.
	Prune(ctx context.Context, name string, current int)
	// Target is where c's probes and hooks go.
	Target(c *corev1.Container, id string) probes.Target
	// Grace is the pod's termination grace period, or a probe's override.
	Grace(p *corev1.Probe) time.Duration
	// Report says something about the pod on the progress stream.
	Report(msg string)
	// Lock takes the pod's lock, for as long as the supervisor changes the
	// pod (a restart, a kill); it never holds it while it only watches.
	Lock(ctx context.Context) (unlock func(), err error)
}

// Worker supervises one pod's long-running containers: it starts them,
// runs their postStart hooks and probes, and restarts them with the
// kubelet's back-off when they exit. Stopping it stops the supervision, not
// the containers.
type Worker struct {
	pod    Pod
	exits  *Exits
	policy corev1.RestartPolicy
	clock  clock.Clock
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	loops  []*Loop
	change chan struct{} // closed and replaced on every state change
}

// New returns the supervisor of a pod with restartPolicy policy; exits
// delivers its containers' exits.
func New(pod Pod, exits *Exits, clk clock.Clock, policy corev1.RestartPolicy) *Worker {
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{pod: pod, exits: exits, policy: policy, clock: clk, ctx: ctx, cancel: cancel, change: make(chan struct{})}
}

// Clock is the supervisor's clock.
func (w *Worker) Clock() clock.Clock { return w.clock }

// Go runs fn for as long as the supervision lasts (its ctx ends with it),
// on the worker's wait group: housekeeping that belongs to the pod.
func (w *Worker) Go(fn func(ctx context.Context)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		fn(w.ctx)
	}()
}

// Adopt supervises container c from its latest attempt in attempts (none:
// from a new first attempt).
func (w *Worker) Adopt(c *corev1.Container, role Role, attempts []engine.Container) {
	cur := status.Latest(attempts)
	if cur == nil {
		w.Start(c, role, 0, nil)
		return
	}
	w.Start(c, role, int(status.RestartCount(*cur)), cur)
}

// release gives up the pod's lock a restart took, if any.
func (l *Loop) release() {
	if l.unlock != nil {
		l.unlock()
		l.unlock = nil
	}
}

// Container is the container this loop supervises.
func (l *Loop) Container() *corev1.Container { return l.c }

// Role is what the container is to its pod.
func (l *Loop) Role() Role { return l.role }

// Finished is closed when the loop has returned.
func (l *Loop) Finished() <-chan struct{} { return l.finished }

func (w *Worker) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.change
}

func (w *Worker) notify() {
	w.mu.Lock()
	close(w.change)
	w.change = make(chan struct{})
	w.mu.Unlock()
}

// WaitFor blocks until cond holds, cond fails, or ctx ends.
func (w *Worker) WaitFor(ctx context.Context, cond func() (bool, error)) error {
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

// WaitAll blocks until every loop's state satisfies ok, or ctx ends.
func (w *Worker) WaitAll(ctx context.Context, loops []*Loop, ok func(State) bool) error {
	return w.WaitFor(ctx, func() (bool, error) {
		for _, l := range loops {
			if !ok(l.State()) {
				return false, nil
			}
		}
		return true, nil
	})
}

// Stop ends supervision and waits for the loops to return.
func (w *Worker) Stop() {
	w.cancel()
	w.wg.Wait()
}

// State is what a container loop knows of its container.
type State struct {
	ID       string
	Restarts int
	Running  bool // started, postStart done
	RanOnce  bool // running at least once
	// Tried: the first attempt's start has returned, as the kubelet's
	// start of a container does: it runs (postStart hook done), it could
	// not start, or it was killed for its postStart hook.
	Tried     bool
	Started   bool // running and startup probe passed
	Ready     bool
	Done      bool // exited and will not restart
	ExitCode  uint32
	Exited    bool   // an attempt has exited (lastCode is its code)
	LastCode  uint32 // the last exited attempt's code
	OOMKilled bool   // the last attempt was OOM-killed (an OOM event came before its exit)
	StartErr  error  // the last attempt's failure to start
	FirstErr  error  // the first attempt's failure to start, kept after the restart that follows at once
	LastFail  string // the last probe or hook failure
}

// Loop supervises one container.
type Loop struct {
	w        *Worker
	ctx      context.Context
	cancel   context.CancelFunc
	finished chan struct{} // closed when run returns
	c        *corev1.Container
	role     Role
	backoff  backoff.Backoff
	adopted  *engine.Container // an existing attempt to take over instead of starting one
	killed   atomic.Bool       // the current attempt was killed by a probe failure
	hookErr  string            // the current attempt's postStart hook failure (the loop's own)
	unlock   func()            // the pod's lock, held from a restart's decision until its start

	mu sync.Mutex
	st State
}

func (l *Loop) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

func (l *Loop) update(fn func(*State)) {
	l.mu.Lock()
	fn(&l.st)
	l.mu.Unlock()
	l.w.notify()
}

// Role is what a container is to its pod; it decides when the container is
// restarted and whether it is probed.
type Role int

const (
	RoleApp     Role = iota // restarted per the pod's policy; probed
	RoleSidecar             // a native sidecar: restarted on any exit; probed
	RoleInit                // runs to completion: restarted on failure unless the policy is Never
)

// Kind is the label value of the role.
func (r Role) Kind() string {
	if r == RoleApp {
		return labels.KindApp
	}
	return labels.KindInit
}

// Start begins supervising container c from attempt restart; when
// adopted is set, that existing attempt is taken over, not started.
func (w *Worker) Start(c *corev1.Container, role Role, restart int, adopted *engine.Container) *Loop {
	l := &Loop{w: w, c: c, role: role, st: State{Restarts: restart}, adopted: adopted,
		backoff: backoff.Backoff{FirstAtOnce: true}}
	l.ctx, l.cancel = context.WithCancel(w.ctx)
	l.finished = make(chan struct{})
	w.mu.Lock()
	w.loops = append(w.loops, l)
	w.mu.Unlock()
	w.wg.Add(1)
	go l.run()
	return l
}

// Loops returns the loops started so far.
func (w *Worker) Loops() []*Loop {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*Loop(nil), w.loops...)
}

// Failed is a failure to start that a step waiting for the container
// fails with: the first attempt's, or the last attempt's.
func (s State) Failed() error {
	if s.FirstErr != nil {
		return s.FirstErr
	}
	return s.StartErr
}

// Describe is a short account of the container's state.
func (s State) Describe() string {
	switch {
	case s.Done:
		if s.OOMKilled {
			return fmt.Sprintf("exited with code %d (%s)", s.ExitCode, status.ReasonOOMKilled)
		}
		return fmt.Sprintf("exited with code %d", s.ExitCode)
	case s.StartErr != nil:
		return fmt.Sprintf("failed to start: %v", s.StartErr)
	case s.Ready:
		return "ready"
	case s.Started:
		return "running, not ready"
	case s.Running:
		return "running, startup probe not passed"
	case s.Restarts > 0:
		return fmt.Sprintf("waiting to restart (CrashLoopBackOff, %d restarts)", s.Restarts)
	}
	return "starting"
}

// Stop ends this container's supervision (not the container) and waits for it.
func (l *Loop) Stop() {
	l.cancel()
	<-l.finished
}
