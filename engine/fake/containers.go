// The fake's containers and tasks: Create, Start, Wait, Kill, Delete, Exec,
// List and the rest of engine.Engine but images and exits.

package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"

	"github.com/podrun/podrun/engine"
)

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
		return 0, &engine.StartError{Err: fmt.Errorf("failed to create containerd task: task %q: already exists", id)}
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
