package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/run"
)

// The kubelet's streaming timeouts (KubeletConfiguration
// streamingConnectionIdleTimeout; the CRI streaming server's stream
// creation timeout).
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// exec serves /exec/{namespace}/{pod}[/{uid}]/{container}?command=...: the
// command run in the container, its streams over SPDY (remotecommand
// v1–v4) or WebSocket (v1–v5), its exit code in the status.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := s.pod(w, r, r.PathValue("namespace"), r.PathValue("pod"))
	if !ok || !uidMatches(w, r, p) {
		return
	}
	id, ok := s.runningContainer(w, p, r.PathValue("container"))
	if !ok {
		return
	}
	x, cmd := streamer{s: s, pod: p}, r.URL.Query()["command"]
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		s.serveV5(w, r, opts, func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
			return x.ExecInContainer(ctx, p.Name, p.UID, id, cmd, in, out, errw, tty, resize, 0)
		})
		return
	}
	remotecommand.ServeExec(w, r, x, p.Name, p.UID, id, cmd, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// attachTo serves /attach/{namespace}/{pod}[/{uid}]/{container}: the
// container's own streams (its stream keeper), or, for a container with
// neither stdin nor a terminal, its output from now on (its log).
func (s *Server) attachTo(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := s.pod(w, r, r.PathValue("namespace"), r.PathValue("pod"))
	if !ok || !uidMatches(w, r, p) {
		return
	}
	id, ok := s.runningContainer(w, p, r.PathValue("container"))
	if !ok {
		return
	}
	x := streamer{s: s, pod: p, container: r.PathValue("container")}
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		s.serveV5(w, r, opts, func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
			return x.AttachContainer(ctx, p.Name, p.UID, id, in, out, errw, tty, resize)
		})
		return
	}
	remotecommand.ServeAttach(w, r, x, p.Name, p.UID, id, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// portForward serves /portForward/{namespace}/{pod}[/{uid}]: each stream a
// connection to localhost:port in the pod's network namespace (SPDY
// portforward.k8s.io, or the WebSocket protocol with ?port=).
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := s.pod(w, r, r.PathValue("namespace"), r.PathValue("pod"))
	if !ok || !uidMatches(w, r, p) {
		return
	}
	portforward.ServePortForward(w, r, streamer{s: s, pod: p}, p.Name, p.UID, opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// uidMatches: a path that names the pod's uid names this pod (else 404).
func uidMatches(w http.ResponseWriter, r *http.Request, p *run.PodInfo) bool {
	if uid := r.PathValue("uid"); uid != "" && uid != p.UID {
		http.Error(w, "pod not found", http.StatusNotFound)
		return false
	}
	return true
}

// runningContainer is the runtime id of p's container name, running now;
// else the reply was written (404 for a container the pod does not have,
// 400 for one that does not run, the runtime's refusal through the
// kubelet).
func (s *Server) runningContainer(w http.ResponseWriter, p *run.PodInfo, name string) (string, bool) {
	if attach.ContainerSpec(p.Pod, name) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", name, p.Name), http.StatusNotFound)
		return "", false
	}
	cur := p.Current(name)
	if cur == nil || cur.Task.State != engine.TaskRunning {
		http.Error(w, fmt.Sprintf("container %q in pod %q is not running", name, p.Name), http.StatusBadRequest)
		return "", false
	}
	return cur.ID, true
}

// streamer runs the streams of one request in pod's containers: the
// remotecommand Executor and Attacher, and the portforward PortForwarder.
type streamer struct {
	s         *Server
	pod       *run.PodInfo
	container string // attach: the container's name (its spec, its log)
}

// ExecInContainer runs cmd in container id; a non-zero exit is an
// ExitError, which the status carries as the command's exit code.
func (x streamer) ExecInContainer(ctx context.Context, _, _ string, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	spec := engine.ExecSpec{Args: cmd, TTY: tty}
	if in != nil {
		spec.Stdin = in
	}
	if out != nil {
		spec.Stdout = out
	}
	if errw != nil {
		spec.Stderr = errw
	}
	if resize != nil {
		spec.Resize = sizes(ctx, resize)
	}
	code, err := x.s.engine.Exec(ctx, id, spec)
	if err != nil && !errors.Is(err, engine.ErrOutputHeld) {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// sizes passes a client's terminal sizes on in the engine's terms until
// ctx ends.
func sizes(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan engine.TerminalSize {
	out := make(chan engine.TerminalSize)
	go func() {
		defer close(out)
		for {
			select {
			case sz, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- engine.TerminalSize{Width: uint32(sz.Width), Height: uint32(sz.Height)}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// AttachContainer connects to container id's stream keeper (its stdin
// when the container has one, the terminal's size with tty), or follows
// the log of a container that has none, until the client goes or the
// container's output ends.
func (x streamer) AttachContainer(ctx context.Context, _, _ string, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	spec := attach.ContainerSpec(x.pod.Pod, x.container)
	m, err := attach.ModeOf(spec, in != nil, tty)
	if err != nil && !errors.Is(err, attach.ErrNoStdin) {
		return err
	}
	// A write to the client that fails is the client gone (kubectl
	// attach ended): the attach's end, not an error.
	var gone atomic.Bool
	stdout, stderr := clientWriter{orDiscard(out), &gone}, clientWriter{orDiscard(errw), &gone}
	if m.Log {
		dir := x.s.pods.LogDir(x.pod, x.container)
		restart, err := logs.Latest(dir)
		if err != nil {
			return fmt.Errorf("container %q has no log yet: %w", x.container, err)
		}
		if out == nil {
			stdout = stderr
		}
		if err := logs.Copy(ctx, stdout, dir, restart, logs.Options{Tail: 0, Follow: true}); err != nil && !gone.Load() {
			return err
		}
		return nil
	}
	o := attach.Options{Stdout: stdout, Stderr: stderr}
	if m.Stdin && in != nil && !errors.Is(err, attach.ErrNoStdin) {
		o.Stdin = in
	}
	if m.TTY && resize != nil {
		go func() {
			for sz := range sizes(ctx, resize) {
				_ = x.s.engine.Resize(ctx, id, sz.Width, sz.Height) // a lost resize leaves the old size
			}
		}()
	}
	if err := x.s.attach(ctx, id, o); err != nil && !gone.Load() {
		return err
	}
	return nil
}

// clientWriter writes to a client's stream and records a write that
// failed in gone.
type clientWriter struct {
	w    io.Writer
	gone *atomic.Bool
}

func (c clientWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.gone.Store(true)
	}
	return n, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// PortForward copies between stream and localhost:port in the pod's
// network namespace, as containerd's CRI does.
func (x streamer) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	conn, err := x.s.dial(ctx, x.pod, port)
	if err != nil {
		return fmt.Errorf("port forward to port %d of pod %s: %w", port, x.pod.Key(), err)
	}
	defer conn.Close()
	// The client's side ending half-closes the pod's; the pod's ending
	// (it answered all it will) ends the stream.
	go func() {
		_, _ = io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dialer connects to a port of a pod from inside its network namespace.
type Dialer func(ctx context.Context, pod *run.PodInfo, port int32) (net.Conn, error)
