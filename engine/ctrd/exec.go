package ctrd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/containerd"
	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/typeurl/v2"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
)

// Exec runs a process in the container's task and waits for it, then for
// its output (drain); the exec is removed whatever happened.
func (e *Engine) Exec(ctx context.Context, id string, p engine.ExecSpec) (int, error) {
	ctx = e.ns(ctx)
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return -1, mapErr(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return -1, mapErr(err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return -1, fmt.Errorf("reading spec of %q: %w", id, err)
	}
	proc := *spec.Process
	proc.Args = p.Args
	proc.Terminal = p.TTY
	proc.Env = append(append([]string{}, proc.Env...), p.Env...)
	var out outputActivity
	stdout, stderr := out.watch(orDiscard(p.Stdout)), out.watch(orDiscard(p.Stderr))
	var stdin *stdinCloser
	if p.Stdin != nil {
		stdin = &stdinCloser{r: p.Stdin, started: make(chan struct{})}
	}
	opts := []cio.Opt{cio.WithStreams(stdin.reader(), stdout, stderr)}
	if p.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	defer stdin.start(context.TODO(), nil) // releases the stdin closer if the exec never starts
	execID := "exec-" + randomHex(6)
	// The exec and its I/O are cleaned up even when ctx has ended.
	cleanup := context.WithoutCancel(ctx)
	process, err := task.Exec(ctx, execID, &proc, cio.NewCreator(opts...))
	if err != nil {
		return -1, fmt.Errorf("exec in %q: %w", id, err)
	}
	defer removeExec(cleanup, process)
	statusC, err := process.Wait(ctx)
	if err != nil {
		return -1, err
	}
	if err := process.Start(ctx); err != nil {
		return -1, fmt.Errorf("starting exec in %q: %w", id, err)
	}
	stdin.start(cleanup, process)
	if p.TTY && p.Resize != nil {
		go resizeExec(ctx, process, p.Resize)
	}
	select {
	case st := <-statusC:
		code, _, err := st.Result()
		if err != nil {
			return -1, err
		}
		if err := drain(ctx, process.IO(), &out, drainTimeout); err != nil {
			return int(code), fmt.Errorf("exec in %q exited with code %d: %w", id, code, err)
		}
		return int(code), nil
	case <-ctx.Done():
		_ = process.Kill(cleanup, unix.SIGKILL)
		select {
		case <-statusC:
		case <-time.After(killWaitExec):
		}
		return -1, ctx.Err()
	}
}

// drainTimeout is how long an exec's output may stay open with nothing
// moving once the exec has exited: the output a command wrote before it
// exited is in the pipes by then, and what a process it left running (a
// daemon started in the background with the command's stdout) writes is
// no longer the command's. Time spent waiting on a slow reader of the
// output (a pager) does not count.
const drainTimeout = 2 * time.Second

// drain waits for the output of an exited exec process to end, as
// containerd's CRI does (drainExecSyncIO): a process the command left
// running holds the write end of its pipe, so the output may never end. It
// gives up with an error wrapping engine.ErrOutputHeld once the output has
// been open for timeout while nothing was being written to the caller's
// writers; removeExec then releases the I/O.
func drain(ctx context.Context, pio cio.IO, out *outputActivity, timeout time.Duration) error {
	done := make(chan struct{})
	go func() {
		pio.Wait() // returns once removeExec has cancelled the I/O, if not before
		close(done)
	}()
	const ticks = 40
	tick := time.NewTicker(timeout / ticks)
	defer tick.Stop()
	for idle := 0; idle < ticks; {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("draining its output: %w", ctx.Err())
		case <-tick.C:
			if !out.writing() {
				idle++
			}
		}
	}
	return fmt.Errorf("%w: cut %s after it exited", engine.ErrOutputHeld, timeout)
}

// outputActivity tells whether the exec's output is being handed to the
// caller's writers at the moment: a writer that blocks (a pager the user
// has not scrolled) keeps the drain going.
type outputActivity struct{ inWrite atomic.Int32 }

func (a *outputActivity) writing() bool { return a.inWrite.Load() > 0 }

func (a *outputActivity) watch(w io.Writer) io.Writer { return activeWriter{w: w, a: a} }

type activeWriter struct {
	w io.Writer
	a *outputActivity
}

func (w activeWriter) Write(b []byte) (int, error) {
	w.a.inWrite.Add(1)
	defer w.a.inWrite.Add(-1)
	return w.w.Write(b)
}

// removeExec deletes the exec process from its shim (killing it if it
// still runs), which releases its FIFOs and its output copies, within
// execCleanupTimeout; when the shim does not answer, podrun's side of the
// I/O is released all the same.
func removeExec(ctx context.Context, p containerd.Process) {
	ctx, cancel := context.WithTimeout(ctx, execCleanupTimeout)
	defer cancel()
	if _, err := p.Delete(ctx, containerd.WithProcessKill); err != nil && p.IO() != nil {
		slog.Debug("deleting exec process", "id", p.ID(), "err", err)
		p.IO().Cancel()
		_ = p.IO().Close()
	}
}

// execCleanupTimeout bounds the removal of an exec process.
const execCleanupTimeout = 10 * time.Second

// stdinCloser closes the process's stdin once the caller's stdin is
// drained: closing the FIFO alone does not reach the process (nerdctl does
// the same).
type stdinCloser struct {
	r       io.Reader
	started chan struct{} // closed once process is set (nil if it never started)
	process containerd.Process
	ctx     context.Context
	once    sync.Once // closes stdin once
	done    sync.Once // closes started once
}

// reader is what cio copies from; nil without stdin.
func (s *stdinCloser) reader() io.Reader {
	if s == nil {
		return nil
	}
	return s
}

func (s *stdinCloser) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if err == io.EOF {
		s.once.Do(func() {
			go func() {
				<-s.started
				if s.process != nil {
					_ = s.process.CloseIO(s.ctx, containerd.WithStdinCloser)
				}
			}()
		})
	}
	return n, err
}

// start hands over the started process; with a nil process (the exec
// failed) nothing is closed.
func (s *stdinCloser) start(ctx context.Context, p containerd.Process) {
	if s == nil {
		return
	}
	s.done.Do(func() {
		s.ctx, s.process = ctx, p
		close(s.started)
	})
}

// killWaitExec bounds the wait for an exec process after SIGKILL.
const killWaitExec = 5 * time.Second

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Exits streams the task exit events of main processes and the OOM events
// in podrun's namespace, on one subscription so that their order is kept.
func (e *Engine) Exits(ctx context.Context) (<-chan engine.TaskExit, <-chan error) {
	ctx = e.ns(ctx)
	out := make(chan engine.TaskExit, 64)
	errc := make(chan error, 1)
	envs, errs := e.client.Subscribe(ctx, // filters are alternatives
		fmt.Sprintf(`namespace==%q,topic=="/tasks/exit"`, e.namespace),
		fmt.Sprintf(`namespace==%q,topic=="/tasks/oom"`, e.namespace))
	go func() {
		defer close(out)
		for {
			select {
			case env, ok := <-envs:
				if !ok {
					return
				}
				v, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					continue
				}
				var exit engine.TaskExit
				switch ev := v.(type) {
				case *eventtypes.TaskOOM:
					exit = engine.TaskExit{ContainerID: ev.ContainerID, OOM: true}
				case *eventtypes.TaskExit:
					if ev.ID != ev.ContainerID { // an exec process, not the container
						continue
					}
					exit = engine.TaskExit{ContainerID: ev.ContainerID, Code: ev.ExitStatus}
					if ev.ExitedAt != nil {
						exit.ExitedAt = ev.ExitedAt.AsTime()
					}
				default:
					continue
				}
				select {
				case out <- exit:
				case <-ctx.Done():
					return
				}
			case err := <-errs:
				if err != nil && ctx.Err() == nil {
					errc <- err
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

// resizeExec sets the exec's terminal to each size until sizes closes or
// ctx ends; a lost resize leaves the old size.
func resizeExec(ctx context.Context, process containerd.Process, sizes <-chan engine.TerminalSize) {
	for {
		select {
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			_ = process.Resize(ctx, sz.Width, sz.Height)
		case <-ctx.Done():
			return
		}
	}
}
