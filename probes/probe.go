// Package probes runs a container's startup, liveness and readiness probes
// and its lifecycle hooks the way the kubelet's pkg/probe and
// pkg/kubelet/lifecycle do.
//
// httpGet, tcpSocket and grpc probes are made by podrun itself into the pod's
// network (the caller passes the pod IP, or the host IP for hostNetwork pods),
// so the image needs no tool for them; exec probes run inside the container
// through an Execer, with the probe's timeout enforced.
//
// Probe runs one attempt; a Worker schedules attempts for one probe of one
// container and applies the success and failure thresholds.
package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/engine"
)

// Execer runs a command inside a container, writing its stdout and stderr to
// output, until it exits or ctx ends (then the command is killed). A non-nil
// error means the command could not be run (or waited for), not that it
// exited non-zero. output may be written from several goroutines.
type Execer interface {
	Exec(ctx context.Context, containerID string, args []string, output io.Writer) (exitCode int, err error)
}

// Target is where a container's probes and hooks go.
type Target struct {
	ContainerID string
	// Host is the pod IP (or the host IP with hostNetwork); httpGet.host and
	// tcpSocket.host override it.
	Host string
	// Ports are the container's ports, for named ports.
	Ports []corev1.ContainerPort
	// Exec runs exec probes and hooks; nil makes them fail with Unknown.
	Exec Execer
	// Observe, when set, is told every probe attempt's outcome and duration (for metrics).
	Observe func(kind Kind, o Outcome, took time.Duration)
}

// Result is the result of a probe attempt, or a thresholded probe state.
type Result int

const (
	// Unknown: the probe could not be run (bad port, exec machinery error,
	// cancelled). Like the kubelet, a Worker discards such attempts: they
	// count neither as success nor as failure.
	Unknown Result = iota
	// Success: the probe passed.
	Success
	// Failure: the probe ran and failed (including a timeout).
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// Outcome is the outcome of one probe attempt.
type Outcome struct {
	Result Result
	// Output is trimmed and at most 1 KiB: a response body snippet, the exec
	// output, or an error text.
	Output string
}

// Probe defaults, as the kubelet's API defaulting sets them.
const (
	DefaultPeriodSeconds    = 10
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

const (
	// kubeVersion is the Kubernetes version podrun mimics in User-Agent
	// headers ("kube-probe/1.34", "kube-lifecycle/1.34").
	kubeVersion = "1.34"
	// maxOutput bounds Outcome.Output.
	maxOutput = 1 << 10
	// maxRead bounds how much of a response body or exec output is read,
	// like the kubelet (10 KiB).
	maxRead = 10 << 10
)

// Probe runs one probe attempt (exec, httpGet, tcpSocket or grpc), with the
// probe's timeoutSeconds (default 1) enforced.
func Probe(ctx context.Context, p *corev1.Probe, t Target) Outcome {
	if p == nil {
		return unknown("no probe")
	}
	timeout := seconds(p.TimeoutSeconds, DefaultTimeoutSeconds)
	var out Outcome
	switch h := p.ProbeHandler; {
	case h.Exec != nil:
		out = execProbe(ctx, h.Exec, t, timeout)
	case h.HTTPGet != nil:
		out = httpProbe(ctx, h.HTTPGet, t, timeout)
	case h.TCPSocket != nil:
		out = tcpProbe(ctx, h.TCPSocket, t, timeout)
	case h.GRPC != nil:
		out = grpcProbe(ctx, h.GRPC, t, timeout)
	default:
		return unknown("probe has no handler (exec, httpGet, tcpSocket or grpc)")
	}
	// A cancelled caller makes the attempt meaningless, whatever it saw.
	if err := ctx.Err(); err != nil && out.Result != Success {
		return unknown("probe cancelled: " + err.Error())
	}
	out.Output = clip(out.Output)
	return out
}

func execProbe(ctx context.Context, a *corev1.ExecAction, t Target, timeout time.Duration) Outcome {
	code, output, err := runExec(ctx, t, a.Command, timeout)
	switch {
	case errors.Is(err, errTimedOut):
		return Outcome{Result: Failure, Output: err.Error()}
	case errors.Is(err, engine.ErrOutputHeld):
		// The command never ends as far as its output goes: what the
		// kubelet sees of it on containerd's default (no drain timeout) is
		// a probe that times out.
		return Outcome{Result: Failure, Output: err.Error()}
	case err != nil:
		return unknown(err.Error())
	case code != 0:
		return Outcome{Result: Failure, Output: output}
	default:
		return Outcome{Result: Success, Output: output}
	}
}

var errTimedOut = errors.New("timed out")

// runExec runs a command in the target container through its Execer and
// returns its exit code and (at most maxRead bytes of) output. With timeout
// > 0 it returns an error wrapping errTimedOut once the timeout passes, even
// if the Execer does not return promptly (it is left to finish on its own
// with a cancelled context). An error means the command did not complete.
func runExec(ctx context.Context, t Target, cmd []string, timeout time.Duration) (int, string, error) {
	if len(cmd) == 0 {
		return -1, "", errors.New("exec: empty command")
	}
	if t.Exec == nil {
		return -1, "", errors.New("exec: no exec runner for the container")
	}
	execCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		execCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()

	var buf limitedBuffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	args := append([]string(nil), cmd...)
	go func() {
		code, err := t.Exec.Exec(execCtx, t.ContainerID, args, &buf)
		done <- result{code, err}
	}()

	var r result
	select {
	case r = <-done:
	case <-execCtx.Done():
		// Give an Execer that honours ctx the chance to report first; do not
		// wait for one that does not.
		select {
		case r = <-done:
		default:
			r = result{-1, execCtx.Err()}
		}
	}
	if ctx.Err() == nil && errors.Is(execCtx.Err(), context.DeadlineExceeded) {
		return -1, buf.String(), fmt.Errorf("command %q %w after %s", cmd, errTimedOut, timeout)
	}
	if r.err != nil {
		return -1, buf.String(), fmt.Errorf("exec %q: %w", cmd, r.err)
	}
	return r.code, buf.String(), nil
}

// limitedBuffer keeps the first maxRead bytes written to it and discards the
// rest without failing the writer; it is safe for concurrent use.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxRead - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// resolvePort turns a probe or hook port into a number: an int, a numeric
// string, or the name of one of the container's ports.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	var n int
	if port.Type == intstr.Int {
		n = port.IntValue()
	} else if v, err := strconv.Atoi(port.StrVal); err == nil {
		n = v
	} else {
		found := false
		for _, p := range ports {
			if p.Name != "" && p.Name == port.StrVal {
				n, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("named port %q not found among the container's ports %s", port.StrVal, portNames(ports))
		}
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}

func portNames(ports []corev1.ContainerPort) string {
	var names []string
	for _, p := range ports {
		if p.Name != "" {
			names = append(names, fmt.Sprintf("%s=%d", p.Name, p.ContainerPort))
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// hostOr returns override when set, else the target's host.
func hostOr(override string, t Target) (string, error) {
	if override != "" {
		return override, nil
	}
	if t.Host == "" {
		return "", errors.New("no host to probe: the pod has no IP")
	}
	return t.Host, nil
}

func unknown(msg string) Outcome { return Outcome{Result: Unknown, Output: clip(msg)} }

// clip trims s and cuts it to at most maxOutput bytes on a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxOutput {
		return s
	}
	cut := maxOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut])
}

func seconds(v int32, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}
