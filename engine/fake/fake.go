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
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/registry"
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
	images map[string]engine.Image // local store, by normalized ref
	remote map[string]engine.Image // what Pull can fetch, by normalized ref
	auth   map[string][2]string    // credentials Pull needs for a remote image, by normalized ref
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

// Image returns a local image.
func (e *Engine) Image(ctx context.Context, ref string) (engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Image", ref); err != nil {
		return engine.Image{}, err
	}
	img, ok := e.images[Normalize(ref)]
	if !ok {
		return engine.Image{}, notFound("image", ref)
	}
	img.Size = 0 // set by Images only
	return img, nil
}

// Pull copies an image added with AddRemote into the local store. An image
// added with RequireAuth is refused (ErrUnauthorized) unless o.Auth answers
// its registry's host with the right credentials. A reference that does not
// parse fails with ErrInvalidImageName.
func (e *Engine) Pull(ctx context.Context, ref string, o engine.PullOptions) (engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Pull", ref); err != nil {
		return engine.Image{}, err
	}
	domain, err := registry.Domain(ref)
	if err != nil {
		return engine.Image{}, fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	img, ok := e.remote[Normalize(ref)]
	if !ok {
		return engine.Image{}, fmt.Errorf("pulling %q: %w", ref, engine.ErrNotFound)
	}
	if want, ok := e.auth[img.Ref]; ok {
		var got [2]string
		if o.Auth != nil {
			got[0], got[1] = o.Auth(registry.APIHost(domain))
		}
		if got != want {
			return engine.Image{}, fmt.Errorf("pulling %q: 401 Unauthorized: %w", ref, engine.ErrUnauthorized)
		}
	}
	if o.Progress != nil {
		o.Progress(img.Size/2, img.Size)
		o.Progress(img.Size, img.Size)
	}
	e.images[img.Ref] = img
	img.Size = 0
	return img, nil
}

// Import adds the images ImportFunc finds in r.
func (e *Engine) Import(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	e.mu.Lock()
	err := e.begin(ctx, "Import")
	fn := e.ImportFunc
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("fake: Import needs ImportFunc")
	}
	imgs, err := fn(r)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]engine.Image, 0, len(imgs))
	for _, img := range imgs {
		img.Ref = Normalize(img.Ref)
		e.images[img.Ref] = img
		img.Size = 0
		out = append(out, img)
	}
	return out, nil
}

// Images lists the local images by reference.
func (e *Engine) Images(ctx context.Context) ([]engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Images"); err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(e.images))
	slices.SortFunc(out, func(a, b engine.Image) int { return strings.Compare(a.Ref, b.Ref) })
	return out, nil
}

// ImageFS is the test machine's temp dir.
func (e *Engine) ImageFS(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "ImageFS"); err != nil {
		return "", err
	}
	return os.TempDir(), nil
}

// RemoveImage removes a local image; a missing one is no error.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "RemoveImage", ref); err != nil {
		return err
	}
	delete(e.images, Normalize(ref))
	return nil
}

// Create creates a container; its image, when set, must be local.
func (e *Engine) Create(ctx context.Context, c engine.ContainerSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Create", c.ID); err != nil {
		return err
	}
	if c.ID == "" {
		return errors.New("creating container: empty id")
	}
	if _, ok := e.ctrs[c.ID]; ok {
		return fmt.Errorf("creating container %q: already exists", c.ID)
	}
	delete(e.orphan, c.ID) // as containerd's: a cut-off create's snapshot goes first
	var image string
	if c.Image != "" {
		img, ok := e.images[Normalize(c.Image)]
		if !ok {
			return notFound("image", c.Image)
		}
		image = img.Ref
		if c.ImageGroups && c.Spec != nil && c.Spec.Process != nil {
			u := &c.Spec.Process.User
			u.AdditionalGids = append(u.AdditionalGids, e.ImageGroups[image]...)
			slices.Sort(u.AdditionalGids)
			u.AdditionalGids = slices.Compact(u.AdditionalGids)
		}
	}
	c.Labels = maps.Clone(c.Labels)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	e.ctrs[c.ID] = &container{spec: c, image: image, created: e.now()}
	return nil
}

// Start starts a task (straight to running) and returns its pid.
func (e *Engine) Start(ctx context.Context, id, logPath string) (uint32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Start", id); err != nil {
		return 0, err
	}
	c := e.ctrs[id]
	if c == nil {
		return 0, notFound("container", id)
	}
	if c.task != nil {
		return 0, fmt.Errorf("creating task: task %q: already exists", id)
	}
	c.logPath = logPath
	c.task = &task{state: engine.TaskRunning, pid: e.nextPID(), done: make(chan struct{})}
	return c.task.pid, nil
}

// Wait blocks until the task exits or ctx is done.
func (e *Engine) Wait(ctx context.Context, id string) (engine.Exit, error) {
	e.mu.Lock()
	if err := e.begin(ctx, "Wait", id); err != nil {
		e.mu.Unlock()
		return engine.Exit{}, err
	}
	t, err := e.taskLocked(id)
	e.mu.Unlock()
	if err != nil {
		return engine.Exit{}, err
	}
	select {
	case <-t.done:
		e.mu.Lock()
		defer e.mu.Unlock()
		return t.exit(), nil
	case <-ctx.Done():
		return engine.Exit{}, ctx.Err()
	}
}

func (e *Engine) taskLocked(id string) (*task, error) {
	c := e.ctrs[id]
	if c == nil {
		return nil, notFound("container", id)
	}
	if c.task == nil {
		return nil, notFound("task", id)
	}
	return c.task, nil
}

// Task returns the state of the container's task (TaskNone without one).
func (e *Engine) Task(ctx context.Context, id string) (engine.Task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Task", id); err != nil {
		return engine.Task{}, err
	}
	c := e.ctrs[id]
	if c == nil {
		return engine.Task{}, notFound("container", id)
	}
	return c.taskInfo(), nil
}

func (c *container) taskInfo() engine.Task {
	t := c.task
	if t == nil {
		return engine.Task{}
	}
	return engine.Task{State: t.state, PID: t.pid, ExitCode: t.code, ExitedAt: t.exitedAt}
}

// Kill signals the task as KillBehaviour says; a missing or finished task
// is not an error.
func (e *Engine) Kill(ctx context.Context, id string, sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Kill", id, SignalName(sig)); err != nil {
		return err
	}
	t, err := e.taskLocked(id)
	if err != nil || !t.live() {
		return nil
	}
	behave := e.KillBehaviour
	if behave == nil {
		behave = DefaultKill
	}
	if exits, code := behave(id, sig, e.ignore[id]); exits {
		e.exitLocked(id, t, code)
	}
	return nil
}

// DeleteTask removes the task (SIGKILLing a live one) and returns its exit.
func (e *Engine) DeleteTask(ctx context.Context, id string) (engine.Exit, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "DeleteTask", id); err != nil {
		return engine.Exit{}, err
	}
	t, err := e.taskLocked(id)
	if err != nil {
		return engine.Exit{}, err
	}
	if t.live() {
		e.exitLocked(id, t, CodeKilled)
	}
	e.ctrs[id].task = nil
	return t.exit(), nil
}

// Delete removes the task (SIGKILLing a live one) and the container.
func (e *Engine) Delete(ctx context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Delete", id); err != nil {
		return err
	}
	c := e.ctrs[id]
	if c == nil {
		return nil
	}
	if c.task != nil && c.task.live() {
		e.exitLocked(id, c.task, CodeKilled)
	}
	delete(e.ctrs, id)
	delete(e.ignore, id)
	return nil
}

// CutOffCreate leaves what a create of container id killed between its
// snapshot and its container leaves: the snapshot alone.
func (e *Engine) CutOffCreate(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.orphan[id] = true
}

// Orphans lists the snapshots no container has.
func (e *Engine) Orphans() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.orphan))
}

// RemoveSnapshots removes the snapshots keyed with prefix that no container has.
func (e *Engine) RemoveSnapshots(ctx context.Context, prefix string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "RemoveSnapshots", prefix); err != nil {
		return err
	}
	for k := range e.orphan {
		if strings.HasPrefix(k, prefix) {
			delete(e.orphan, k)
		}
	}
	return nil
}

// Exec runs ExecFunc for a live task.
func (e *Engine) Exec(ctx context.Context, id string, p engine.ExecSpec) (int, error) {
	e.mu.Lock()
	err := e.begin(ctx, "Exec", id)
	var t *task
	if err == nil {
		t, err = e.taskLocked(id)
	}
	if err == nil && t.state != engine.TaskRunning {
		err = fmt.Errorf("exec in %q: task is %s, not running", id, t.state)
	}
	fn := e.ExecFunc
	e.mu.Unlock()
	if err != nil {
		return -1, err
	}
	if fn == nil {
		return 0, nil
	}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := fn(id, p)
		done <- result{code, err}
	}()
	select {
	case r := <-done:
		return r.code, r.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Exits streams task exits from now until ctx ends or BreakExits.
func (e *Engine) Exits(ctx context.Context) (<-chan engine.TaskExit, <-chan error) {
	out := make(chan engine.TaskExit)
	errc := make(chan error, 1)
	e.mu.Lock()
	err := e.begin(ctx, "Exits")
	if err != nil {
		e.mu.Unlock()
		if ctx.Err() == nil {
			errc <- err
		}
		close(out)
		return out, errc
	}
	s := &subscriber{wake: make(chan struct{}, 1)}
	e.subs[s] = struct{}{}
	e.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			e.mu.Lock()
			delete(e.subs, s)
			e.mu.Unlock()
		}()
		for {
			ev, ok, brk := s.pop()
			if ok {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				continue
			}
			if brk != nil {
				errc <- brk
				return
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

// KeepStreams does nothing: the fake's output goes nowhere.
func (e *Engine) KeepStreams(context.Context) error { return nil }

// Resize resizes the terminal of a task: it must exist.
func (e *Engine) Resize(ctx context.Context, id string, width, height uint32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Resize", id); err != nil {
		return err
	}
	c := e.ctrs[id]
	if c == nil || c.task == nil {
		return notFound("task", id)
	}
	return nil
}

// SetLabels adds or replaces labels.
func (e *Engine) SetLabels(ctx context.Context, id string, labels map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "SetLabels", id); err != nil {
		return err
	}
	c := e.ctrs[id]
	if c == nil {
		return notFound("container", id)
	}
	maps.Copy(c.spec.Labels, labels)
	return nil
}

// List returns the containers carrying all labels in match, by id.
func (e *Engine) List(ctx context.Context, match map[string]string) ([]engine.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "List"); err != nil {
		return nil, err
	}
	out := []engine.Container{}
	for _, id := range slices.Sorted(maps.Keys(e.ctrs)) {
		c := e.ctrs[id]
		if !hasAll(c.spec.Labels, match) {
			continue
		}
		out = append(out, engine.Container{
			ID: id, Image: c.image, Labels: maps.Clone(c.spec.Labels), CreatedAt: c.created,
			Task: c.taskInfo(),
		})
	}
	return out, nil
}

func hasAll(labels, match map[string]string) bool {
	for k, v := range match {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// exitLocked ends a live task: waiters return, subscribers get an event.
func (e *Engine) exitLocked(id string, t *task, code uint32) {
	t.state = engine.TaskStopped
	t.code = code
	t.exitedAt = e.now()
	closeOnce(t)
	ev := engine.TaskExit{ContainerID: id, Code: code, ExitedAt: t.exitedAt}
	for s := range e.subs {
		s.push(&ev, nil)
	}
}

func closeOnce(t *task) {
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// subscriber queues events for one Exits stream so that producers never block.
type subscriber struct {
	mu     sync.Mutex
	queue  []engine.TaskExit
	broken error
	wake   chan struct{} // capacity 1
}

func (s *subscriber) push(ev *engine.TaskExit, broken error) {
	s.mu.Lock()
	if ev != nil {
		s.queue = append(s.queue, *ev)
	}
	if broken != nil {
		s.broken = broken
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) pop() (engine.TaskExit, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		ev := s.queue[0]
		s.queue = s.queue[1:]
		return ev, true, nil
	}
	return engine.TaskExit{}, false, s.broken
}

// SignalName is "SIGTERM" for syscall.SIGTERM, "signal 99" for unknown ones.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// Normalize completes a reference the way the runtime does for the common
// cases: busybox -> docker.io/library/busybox:latest, a tag added unless
// there is a tag or digest.
func Normalize(ref string) string {
	if ref == "" {
		return ""
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	last := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.Contains(last, ":") && !hasDigest {
		rest += ":latest"
	}
	out := domain + "/" + rest
	if hasDigest {
		out += "@" + digest
	}
	return out
}
