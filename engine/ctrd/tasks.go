// Tasks: Start, Wait, Kill, Resize, DeleteTask, Task, and how a task is
// created when a shim may die under it.

package ctrd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/keeper"
)

// Start creates and starts the task. Its streams go to the node's stream
// keeper, which writes its log (as containerd's CRI does in containerd).
func (e *Engine) Start(ctx context.Context, id, logPath string) (uint32, error) {
	ctx = e.ns(ctx)
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, mapErr(err)
	}
	streams := ""
	if logPath != "" {
		info, err := ctr.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			return 0, mapErr(err)
		}
		streams = info.Labels[streamsKey]
	}
	t0 := time.Now()
	var task containerd.Task
	for attempt := 0; ; attempt++ {
		task, err = e.createTask(ctx, ctr, streams, logPath)
		if errdefs.IsAlreadyExists(err) && attempt == 0 {
			// A task of this id that its shim no longer knows (its delete
			// cut off by a killed podrun): it goes, and the create is done
			// again.
			if rerr := e.removeStaleTask(ctx, id); rerr != nil {
				return 0, startError(ctx, fmt.Errorf("failed to create containerd task: %w", errors.Join(err, rerr)))
			}
			continue
		}
		// Pods share shims (run's shim pool): a create that reached a shim
		// exiting with its last other task failed with the connection, and
		// containerd removed what it made. Again, on a shim started anew.
		if err == nil || attempt == 2 || !shimGone(err) || !taskGone(ctx, ctr) {
			break
		}
		slog.Debug("task create reached an exiting shim: again", "id", id, "err", err)
	}
	if err != nil {
		// Containerd's CRI words (container_start.go), the message the
		// kubelet shows.
		return 0, startError(ctx, fmt.Errorf("failed to create containerd task: %w", err))
	}
	t1 := time.Now()
	defer func() { slog.Debug("task started", "id", id, "create", t1.Sub(t0), "start", time.Since(t1)) }()
	if err := task.Start(ctx); err != nil {
		if _, derr := task.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill); derr != nil && !errdefs.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("deleting failed task: %w", derr))
		}
		return 0, startError(ctx, fmt.Errorf("failed to start containerd task %q: %w", id, err))
	}
	return task.Pid(), nil
}

// startError is err as Start returns it: an engine.StartError, unless ctx
// ended (a start cut off is no failure of the container).
func startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return &engine.StartError{Err: err}
}

// Resize sets the size of the task's terminal.
func (e *Engine) Resize(ctx context.Context, id string, width, height uint32) error {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return err
	}
	return mapErr(task.Resize(ctx, width, height))
}

// Wait blocks until the task exits or ctx is done.
func (e *Engine) Wait(ctx context.Context, id string) (engine.Exit, error) {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return engine.Exit{}, err
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return engine.Exit{}, mapErr(err)
	}
	select {
	case st := <-ch:
		code, at, err := st.Result()
		if err != nil {
			return engine.Exit{}, mapErr(err)
		}
		return engine.Exit{Code: code, ExitedAt: at}, nil
	case <-ctx.Done():
		return engine.Exit{}, ctx.Err()
	}
}

func (e *Engine) task(ctx context.Context, id string) (containerd.Task, error) {
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, mapErr(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return nil, mapErr(err)
	}
	return task, nil
}

// Kill signals the task; a missing or finished task is not an error.
func (e *Engine) Kill(ctx context.Context, id string, sig syscall.Signal) error {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) && !isFinished(err) {
		return fmt.Errorf("signalling %q: %w", id, err)
	}
	return nil
}

func isFinished(err error) bool {
	return errdefs.IsFailedPrecondition(err) || strings.Contains(err.Error(), "process already finished")
}

// createTask creates ctr's task, its streams (with logPath) kept by the
// stream keeper; a failed create lets them go.
func (e *Engine) createTask(ctx context.Context, ctr containerd.Container, streams, logPath string) (containerd.Task, error) {
	if logPath == "" {
		return ctr.NewTask(ctx, cio.NullIO)
	}
	s, err := e.keepStreams(ctx, ctr.ID(), streams, logPath)
	if err != nil {
		return nil, err
	}
	release := keeper.Hold(s)
	defer release()
	task, err := ctr.NewTask(ctx, keptIO(s).new)
	if err != nil {
		return nil, errors.Join(err, e.streams.Remove(context.WithoutCancel(ctx), ctr.ID(), 0))
	}
	// The task holds its streams: their end is the end of its output.
	if err := e.streams.Commit(ctx, ctr.ID()); err != nil {
		slog.Debug("stream keeper: commit", "id", ctr.ID(), "err", err) // a keeper taking over reads the record
	}
	return task, nil
}

// removeStaleTask removes from containerd's task list a task of id that
// ctr.Task does not find (containerd asks the shim for its state, and the
// shim has no such task): a delete whose podrun was killed after the shim
// had deleted the task but before containerd heard back leaves that entry,
// its bundle and its shim, and every later create of id fails with "already
// exists". The task service's delete goes by containerd's list alone, and
// a shim that answers NotFound has the entry removed. Nothing to do is
// success. A create in flight is deleted once made: its creator is gone.
func (e *Engine) removeStaleTask(ctx context.Context, id string) error {
	_, err := e.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id})
	if err = errdefs.FromGRPC(err); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing the stale task of %q: %w", id, err)
	}
	if err == nil {
		slog.Debug("stale task removed", "id", id)
	}
	return nil
}

// shimGone reports whether err is a shim's connection lost or refused.
func shimGone(err error) bool {
	for _, s := range []string{"ttrpc: closed", "connection refused", "connection reset by peer", "broken pipe"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// taskGone reports whether ctr has no task any more: a delete whose shim
// closed its connection meanwhile (it exits with its last task) fails with
// "ttrpc: closed", yet containerd has removed the task and the shim.
func taskGone(ctx context.Context, ctr containerd.Container) bool {
	_, err := ctr.Task(ctx, nil)
	return errdefs.IsNotFound(err)
}

// settleWait bounds the wait for a task create in flight, and settlePoll
// is how often it looks.
const (
	settleWait = 30 * time.Second
	settlePoll = 20 * time.Millisecond
)

// settleCreate waits while a create of ctr's task is in flight in
// containerd: from its start, containerd's runtime keeps a work directory
// for the task (<runtime root>/<namespace>/<id>), removed when the create
// fails; the task is returned when it is made, an error wrapping NotFound
// when none is. Without the runtime's root (an older containerd), nothing
// is waited for. A work directory last changed before containerd started
// is no create in flight (none outlives containerd): after a reboot that
// emptied /run, containerd removes the work directories of the tasks in its
// state, and the state is gone, so theirs stay.
func (e *Engine) settleCreate(ctx context.Context, ctr containerd.Container) (containerd.Task, error) {
	root := e.taskRoot(ctx)
	if root == "" {
		return nil, errdefs.ErrNotFound
	}
	work := filepath.Join(root, e.namespace, ctr.ID())
	deadline := time.Now().Add(settleWait)
	for {
		task, err := ctr.Task(ctx, nil)
		if !errdefs.IsNotFound(err) {
			return task, err
		}
		st, serr := os.Lstat(work)
		if errors.Is(serr, os.ErrNotExist) || time.Now().After(deadline) || e.beforeServer(st) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}

// beforeServer reports whether a file last changed before containerd
// started: before its socket was made (containerd makes it anew at each
// start). Unknown (no file, a socket that cannot be looked at) is false.
func (e *Engine) beforeServer(fi os.FileInfo) bool {
	if fi == nil {
		return false
	}
	sock, err := os.Stat(strings.TrimPrefix(e.address, "unix://"))
	return err == nil && fi.ModTime().Before(sock.ModTime())
}

// taskRoot is the root of containerd's runtime v2 task plugin, as its
// introspection reports it (containerd 1.7), or else beside the
// snapshotter's (every plugin's root is <containerd root>/<plugin>); ""
// when neither is there. Looked up once.
func (e *Engine) taskRoot(ctx context.Context) string {
	e.rootMu.Lock()
	defer e.rootMu.Unlock()
	if e.rootKnown {
		return e.runtimeRoot
	}
	resp, err := e.client.IntrospectionService().Plugins(ctx, []string{`type=="io.containerd.runtime.v2",id=="task"`})
	if err != nil {
		return "" // asked again next time
	}
	var root string
	for _, p := range resp.Plugins {
		root = p.Exports["root"]
	}
	if root == "" {
		fs, err := e.ImageFS(ctx)
		if err != nil {
			return ""
		}
		root = filepath.Join(filepath.Dir(fs), "io.containerd.runtime.v2.task")
	}
	e.rootKnown = true
	if st, err := os.Stat(root); err == nil && st.IsDir() && filepath.IsAbs(root) {
		e.runtimeRoot = root
	}
	return e.runtimeRoot
}

// DeleteTask removes the task and returns its exit; a missing task returns
// an error wrapping engine.ErrNotFound.
func (e *Engine) DeleteTask(ctx context.Context, id string) (engine.Exit, error) {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return engine.Exit{}, err
	}
	st, err := task.Delete(ctx, containerd.WithProcessKill)
	if err != nil {
		return engine.Exit{}, mapErr(err)
	}
	// The shim has closed the task's streams: the keeper writes what was
	// left in them (a last line without a newline too) before the exit is
	// reported, so whoever reads the log next sees all of it.
	if err := e.streams.Commit(ctx, id); err == nil {
		e.streams.WaitDrained(ctx, id, drainWait)
	}
	return engine.Exit{Code: st.ExitCode(), ExitedAt: st.ExitTime()}, nil
}

// Task returns the state of the container's task.
func (e *Engine) Task(ctx context.Context, id string) (engine.Task, error) {
	ctx = e.ns(ctx)
	c, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return engine.Task{}, mapErr(err)
	}
	return e.taskOf(ctx, c), nil
}

func (e *Engine) taskOf(ctx context.Context, c containerd.Container) engine.Task {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return engine.Task{}
	}
	st, err := task.Status(ctx)
	if err != nil {
		return engine.Task{State: engine.TaskUnknown, PID: task.Pid()}
	}
	return engine.Task{
		State:    engine.TaskState(st.Status),
		PID:      task.Pid(),
		ExitCode: st.ExitStatus,
		ExitedAt: st.ExitTime,
	}
}
