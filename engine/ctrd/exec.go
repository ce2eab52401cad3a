package ctrd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/containerd/containerd"
	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/typeurl/v2"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/engine"
)

// Exec runs a process in the container's task and waits for it.
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
	stdout, stderr := orDiscard(p.Stdout), orDiscard(p.Stderr)
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
	defer process.Delete(cleanup, containerd.WithProcessKill)
	statusC, err := process.Wait(ctx)
	if err != nil {
		return -1, err
	}
	if err := process.Start(ctx); err != nil {
		return -1, fmt.Errorf("starting exec in %q: %w", id, err)
	}
	stdin.start(cleanup, process)
	select {
	case st := <-statusC:
		process.IO().Wait()
		code, _, err := st.Result()
		return int(code), err
	case <-ctx.Done():
		_ = process.Kill(cleanup, unix.SIGKILL)
		select {
		case <-statusC:
		case <-time.After(killWaitExec):
		}
		return -1, ctx.Err()
	}
}

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
