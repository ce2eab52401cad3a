package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/engine"
)

// fakeExec is an Execer whose commands do what the test says.
type fakeExec struct {
	mu    sync.Mutex
	calls []fakeCall
	run   func(ctx context.Context, args []string, out io.Writer) (int, error)
}

type fakeCall struct {
	id   string
	args []string
	ctx  context.Context
}

func (f *fakeExec) Exec(ctx context.Context, id string, args []string, out io.Writer) (int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{id, args, ctx})
	f.mu.Unlock()
	return f.run(ctx, args, out)
}

func (f *fakeExec) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

func execProbeSpec(cmd ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
}

func TestExecProbe(t *testing.T) {
	tests := []struct {
		name       string
		run        func(ctx context.Context, args []string, out io.Writer) (int, error)
		want       Result
		wantOutput string
	}{
		{
			name: "exit 0",
			run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
				io.WriteString(out, "ok\n")
				return 0, nil
			},
			want: Success, wantOutput: "ok",
		},
		{
			name: "exit 1 with output",
			run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
				io.WriteString(out, "  cat: /tmp/healthy: No such file or directory\n")
				return 1, nil
			},
			want: Failure, wantOutput: "cat: /tmp/healthy: No such file or directory",
		},
		{
			name: "exec machinery error",
			run: func(context.Context, []string, io.Writer) (int, error) {
				return -1, errors.New(`exec: "nope": executable file not found in $PATH`)
			},
			want: Unknown, wantOutput: `exec ["check"]: exec: "nope": executable file not found in $PATH`,
		},
		{
			name: "output held open by a process it left running",
			run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
				io.WriteString(out, "started\n")
				return 0, fmt.Errorf("exec in \"c1\" exited with code 0: %w: cut 2s after it exited", engine.ErrOutputHeld)
			},
			want: Failure, wantOutput: `exec ["check"]: exec in "c1" exited with code 0: output held open by a process the command left running: cut 2s after it exited`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := &fakeExec{run: tt.run}
			out := Probe(context.Background(), execProbeSpec("check"), Target{ContainerID: "c1", Exec: fe})
			if out.Result != tt.want || out.Output != tt.wantOutput {
				t.Errorf("got %v %q, want %v %q", out.Result, out.Output, tt.want, tt.wantOutput)
			}
			calls := fe.Calls()
			if len(calls) != 1 || calls[0].id != "c1" || strings.Join(calls[0].args, " ") != "check" {
				t.Errorf("calls = %+v", calls)
			}
		})
	}
}

func TestExecProbeTimeout(t *testing.T) {
	fe := &fakeExec{run: func(ctx context.Context, _ []string, out io.Writer) (int, error) {
		io.WriteString(out, "started")
		<-ctx.Done()
		return -1, ctx.Err()
	}}
	p := execProbeSpec("sleep", "100")
	p.TimeoutSeconds = 1
	out := Probe(context.Background(), p, Target{ContainerID: "c1", Exec: fe})
	if out.Result != Failure || !strings.Contains(out.Output, "timed out") {
		t.Fatalf("got %v %q, want a timeout failure", out.Result, out.Output)
	}
	if err := fe.Calls()[0].ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the command's ctx was not cancelled: %v", err)
	}
}

func TestExecProbeTimeoutExecerIgnoresContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	fe := &fakeExec{run: func(context.Context, []string, io.Writer) (int, error) {
		<-release
		return 0, nil
	}}
	out := Probe(context.Background(), execProbeSpec("hang"), Target{Exec: fe})
	if out.Result != Failure || !strings.Contains(out.Output, "timed out") {
		t.Fatalf("got %v %q, want a timeout failure", out.Result, out.Output)
	}
}

func TestExecProbeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fe := &fakeExec{run: func(ctx context.Context, _ []string, _ io.Writer) (int, error) {
		cancel()
		<-ctx.Done()
		return -1, ctx.Err()
	}}
	out := Probe(ctx, execProbeSpec("x"), Target{Exec: fe})
	if out.Result != Unknown {
		t.Fatalf("got %v %q, want unknown", out.Result, out.Output)
	}
}

func TestExecProbeOutputLimits(t *testing.T) {
	fe := &fakeExec{run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
		for range 100 {
			io.WriteString(out, strings.Repeat("é", 300)) // 600 bytes a write
		}
		return 1, nil
	}}
	out := Probe(context.Background(), execProbeSpec("x"), Target{Exec: fe})
	if len(out.Output) > maxOutput || len(out.Output) < maxOutput-1 {
		t.Errorf("output length %d, want about %d", len(out.Output), maxOutput)
	}
	if !strings.HasPrefix(out.Output, "éé") || strings.ContainsRune(out.Output, '\uFFFD') {
		t.Errorf("output cut inside a rune")
	}
}

func TestExecProbeNoExecer(t *testing.T) {
	out := Probe(context.Background(), execProbeSpec("x"), Target{})
	if out.Result != Unknown {
		t.Fatalf("got %v", out.Result)
	}
}

func TestNoHandler(t *testing.T) {
	if out := Probe(context.Background(), &corev1.Probe{}, Target{}); out.Result != Unknown {
		t.Fatalf("got %v", out.Result)
	}
}

func tcpProbeSpec(port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	tgt := Target{Host: "127.0.0.1", Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(port)}}}
	if out := Probe(context.Background(), tcpProbeSpec(intstr.FromInt(port)), tgt); out.Result != Success {
		t.Errorf("listening port: got %v %q", out.Result, out.Output)
	}
	if out := Probe(context.Background(), tcpProbeSpec(intstr.FromString("db")), tgt); out.Result != Success {
		t.Errorf("named port: got %v %q", out.Result, out.Output)
	}
	if out := Probe(context.Background(), tcpProbeSpec(intstr.FromString(strconv.Itoa(port))), tgt); out.Result != Success {
		t.Errorf("numeric string port: got %v %q", out.Result, out.Output)
	}
	p := tcpProbeSpec(intstr.FromInt(port))
	p.TCPSocket.Host = "127.0.0.1"
	if out := Probe(context.Background(), p, Target{Host: "192.0.2.1"}); out.Result != Success {
		t.Errorf("host override: got %v %q", out.Result, out.Output)
	}
}

func TestTCPProbeClosedPort(t *testing.T) {
	port := closedPort(t)
	out := Probe(context.Background(), tcpProbeSpec(intstr.FromInt(port)), Target{Host: "127.0.0.1"})
	if out.Result != Failure || !strings.Contains(out.Output, "refused") {
		t.Errorf("got %v %q, want a failure", out.Result, out.Output)
	}
}

func TestTCPProbeIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if out := Probe(context.Background(), tcpProbeSpec(intstr.FromInt(port)), Target{Host: "::1"}); out.Result != Success {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
}

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestResolvePort(t *testing.T) {
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {ContainerPort: 9090}}
	tests := []struct {
		port    intstr.IntOrString
		want    int
		wantErr string
	}{
		{intstr.FromInt(80), 80, ""},
		{intstr.FromString("81"), 81, ""},
		{intstr.FromString("http"), 8080, ""},
		{intstr.FromString("web"), 0, `named port "web" not found among the container's ports [http=8080]`},
		{intstr.FromString(""), 0, `named port "" not found`},
		{intstr.FromInt(0), 0, "invalid port number 0"},
		{intstr.FromInt(70000), 0, "invalid port number 70000"},
	}
	for _, tt := range tests {
		got, err := resolvePort(tt.port, ports)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.port.String(), err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: got %d, %v; want %d", tt.port.String(), got, err, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := clip("  hi \n"); got != "hi" {
		t.Errorf("clip = %q", got)
	}
	long := strings.Repeat("a", 5000)
	if got := clip(long); len(got) != maxOutput {
		t.Errorf("len = %d", len(got))
	}
}
