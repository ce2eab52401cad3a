// Package fake is an in-memory engine.Engine for unit tests. It imports
// nothing from containerd: images, containers and tasks are plain maps, task
// exits are driven by the test (Exit, Kill) and every call is recorded (Calls).
//
// The fake follows the engine's contract as engine/ctrd implements it:
// removals of missing things succeed, lookups of missing things return errors
// wrapping engine.ErrNotFound, a call on a cancelled context fails with the
// context's error (so cleanup that wrongly reuses a cancelled context shows up
// in tests), and a task must be deleted before the container can start again.
//
// Set the hook fields (Clock, ExecFunc, ImportFunc, KillBehaviour, OnCall) before the
// engine is shared between goroutines.
package fake

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
)

// Exit codes of a task ended by a signal, as a shell reports them.
const (
	CodeKilled     = 137 // 128 + SIGKILL
	CodeTerminated = 143 // 128 + SIGTERM
)

// firstPID is the pid of the first task started.
const firstPID = 1000

// Engine is an in-memory engine.Engine. Use New.
type Engine struct {
	// Clock stamps container creation and task exits. Default time.Now.
	Clock func() time.Time
	// ExecFunc runs an Exec; it may write to p.Stdout/p.Stderr. If it blocks
	// past ctx, Exec returns ctx's error (the hook is left to finish on its
	// own). nil: every exec exits 0.
	ExecFunc func(id string, p engine.ExecSpec) (int, error)
	// ImportFunc parses an archive for Import; the images it returns are
	// added to the store. nil: Import fails.
	ImportFunc func(r io.Reader) ([]engine.Image, error)
	// KillBehaviour decides what a signal does to a live task: whether the
	// task exits and with which code. nil: DefaultKill.
	KillBehaviour func(id string, sig syscall.Signal, ignoresSignals bool) (exits bool, code uint32)
	// OnCall is told of every call ("Start <id>") before it is made, with
	// the engine locked (it must not call the engine): tests record the
	// order of side effects across seams, or cancel a context there.
	OnCall func(call string)
	// ImageGroups are the groups an image's /etc/group gives its users, by
	// normalized ref: a Create that asks for them adds them to the spec.
	ImageGroups map[string][]uint32

	mu     sync.Mutex
	images map[string]engine.Image      // local store, by normalized ref
	remote map[string]engine.Image      // what Pull can fetch, by normalized ref
	auth   map[string][2]string         // credentials Pull needs for a remote image, by normalized ref
	attach map[string]engine.Attachment // what FetchAttachment returns, by image digest
	ctrs   map[string]*container
	ignore map[string]bool // ids whose task only dies of SIGKILL
	orphan map[string]bool // snapshots of creates cut off, by key (the container id)
	fail   map[string][]error
	calls  []string
	subs   map[*subscriber]struct{}
	pid    uint32
}

type container struct {
	spec    engine.ContainerSpec
	image   string
	created time.Time
	logPath string
	task    *task // nil: no task
}

type task struct {
	state    engine.TaskState
	pid      uint32
	code     uint32
	exitedAt time.Time
	done     chan struct{} // closed when the task has exited
}

func (t *task) live() bool {
	switch t.state {
	case engine.TaskCreated, engine.TaskRunning, engine.TaskPaused, engine.TaskUnknown:
		return true
	}
	return false
}

func (t *task) exit() engine.Exit { return engine.Exit{Code: t.code, ExitedAt: t.exitedAt} }

// New returns an empty engine.
func New() *Engine {
	return &Engine{
		Clock:  time.Now,
		images: map[string]engine.Image{},
		remote: map[string]engine.Image{},
		auth:   map[string][2]string{},
		attach: map[string]engine.Attachment{},
		ctrs:   map[string]*container{},
		ignore: map[string]bool{},
		orphan: map[string]bool{},
		fail:   map[string][]error{},
		subs:   map[*subscriber]struct{}{},
		pid:    firstPID,
	}
}

var _ engine.Engine = (*Engine)(nil)

// DefaultKill is the default KillBehaviour: SIGKILL ends a task with 137;
// any other signal (but 0) ends it with 143 unless it ignores signals.
func DefaultKill(_ string, sig syscall.Signal, ignoresSignals bool) (bool, uint32) {
	switch {
	case sig == syscall.SIGKILL:
		return true, CodeKilled
	case sig == 0 || ignoresSignals:
		return false, 0
	default:
		return true, CodeTerminated
	}
}

// ---- test controls ----

// AddImage puts an image in the local store (its Ref is normalized, as the
// runtime reports it: busybox -> docker.io/library/busybox:latest).
func (e *Engine) AddImage(img engine.Image) {
	e.mu.Lock()
	defer e.mu.Unlock()
	img.Ref = Normalize(img.Ref)
	e.images[img.Ref] = img
}

// AddRemote makes an image available to Pull.
func (e *Engine) AddRemote(img engine.Image) {
	e.mu.Lock()
	defer e.mu.Unlock()
	img.Ref = Normalize(img.Ref)
	e.remote[img.Ref] = img
}

// AddAttachment makes FetchAttachment of an image at digest return a.
func (e *Engine) AddAttachment(digest string, a engine.Attachment) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.attach[digest] = a
}

// RequireAuth makes Pull of a remote image (added with AddRemote) require
// these credentials from PullOptions.Auth.
func (e *Engine) RequireAuth(ref, username, secret string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.auth[Normalize(ref)] = [2]string{username, secret}
}

// Exit makes the live task of container id exit with code: Wait returns and
// every Exits subscriber gets an event. It does nothing when there is no live task.
func (e *Engine) Exit(id string, code uint32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.ctrs[id]; c != nil && c.task != nil && c.task.live() {
		e.exitLocked(id, c.task, code)
	}
}

// OOMKill makes the kernel's OOM killer end the live task of container id:
// subscribers get an OOM event, then its exit with CodeKilled, as from
// containerd.
func (e *Engine) OOMKill(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.ctrs[id]
	if c == nil || c.task == nil || !c.task.live() {
		return
	}
	for s := range e.subs {
		s.push(&engine.TaskExit{ContainerID: id, OOM: true}, nil)
	}
	e.exitLocked(id, c.task, CodeKilled)
}

// IgnoreSignals makes the task of container id survive every signal but
// SIGKILL (under DefaultKill).
func (e *Engine) IgnoreSignals(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ignore[id] = true
}

// Fail makes the next call of method (e.g. "Start") return err without
// doing anything; method may also be a whole call ("Start <id>"), which
// fails only that call. Several Fails on one method are used up in order.
func (e *Engine) Fail(method string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail[method] = append(e.fail[method], err)
}

// BreakExits ends every current Exits stream with err on its error channel
// (after the events already queued), as when containerd restarts.
func (e *Engine) BreakExits(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for s := range e.subs {
		s.push(nil, err)
		delete(e.subs, s)
	}
}

// Calls returns the calls made so far, in order, e.g. "Create id",
// "Start id", "Kill id SIGTERM", "Delete id", "List", "Pull ref".
func (e *Engine) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// ResetCalls forgets the calls recorded so far.
func (e *Engine) ResetCalls() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = nil
}

// Spec returns the spec container id was created with (labels as they are now).
func (e *Engine) Spec(id string) (engine.ContainerSpec, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.ctrs[id]
	if c == nil {
		return engine.ContainerSpec{}, false
	}
	s := c.spec
	s.Labels = maps.Clone(s.Labels)
	return s, true
}

// LogPath returns the log path the task of container id was last started with.
func (e *Engine) LogPath(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.ctrs[id]; c != nil {
		return c.logPath
	}
	return ""
}

// SetTask forces the task of an existing container into t, e.g. to model
// containers found after a restart. State TaskNone removes the task; PID 0
// on a live state gets the next pid. Waiters on a live task are released
// when t is not live. It does not emit an exit event.
func (e *Engine) SetTask(id string, t engine.Task) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.ctrs[id]
	if c == nil {
		return
	}
	if t.State == engine.TaskNone {
		if c.task != nil {
			closeOnce(c.task)
		}
		c.task = nil
		return
	}
	if c.task == nil {
		c.task = &task{done: make(chan struct{})}
	}
	ct := c.task
	ct.state, ct.pid, ct.code, ct.exitedAt = t.State, t.PID, t.ExitCode, t.ExitedAt
	if !ct.live() {
		closeOnce(ct)
		return
	}
	if ct.pid == 0 {
		ct.pid = e.nextPID()
	}
	select {
	case <-ct.done: // was stopped: a fresh process to wait on
		ct.done = make(chan struct{})
	default:
	}
}

// ---- engine.Engine ----

// begin records a call and returns the error it must fail with, if any.
// Called with e.mu held.
func (e *Engine) begin(ctx context.Context, method string, args ...string) error {
	call := strings.Join(append([]string{method}, args...), " ")
	e.calls = append(e.calls, call)
	if e.OnCall != nil {
		e.OnCall(call)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, key := range []string{call, method} {
		if errs := e.fail[key]; len(errs) > 0 {
			e.fail[key] = errs[1:]
			return errs[0]
		}
	}
	return nil
}

func (e *Engine) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock()
}

func (e *Engine) nextPID() uint32 {
	e.pid++
	return e.pid
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, engine.ErrNotFound)
}

// SignalName is "SIGTERM" for syscall.SIGTERM, "signal 99" for unknown ones.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
