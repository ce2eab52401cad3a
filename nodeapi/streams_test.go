package nodeapi

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/run"
)

// fakeEngine runs "echo ARGS", "exit N", "cat" (stdin to stdout) and
// "size" (waits for a terminal size and prints it).
type fakeEngine struct {
	mu       sync.Mutex
	execs    []string // container ids
	resized  []string
	resizedC chan struct{} // a send for each resize, when set
}

func (e *fakeEngine) Exec(_ context.Context, id string, p engine.ExecSpec) (int, error) {
	e.mu.Lock()
	e.execs = append(e.execs, id)
	e.mu.Unlock()
	switch p.Args[0] {
	case "echo":
		fmt.Fprintln(p.Stdout, strings.Join(p.Args[1:], " "))
	case "exit":
		fmt.Fprintln(p.Stderr, "exiting")
		return strconv.Atoi(p.Args[1])
	case "cat":
		_, err := io.Copy(p.Stdout, p.Stdin)
		return 0, err
	case "size":
		sz := <-p.Resize
		fmt.Fprintf(p.Stdout, "%dx%d tty=%v\n", sz.Width, sz.Height, p.TTY)
	}
	return 0, nil
}

func (e *fakeEngine) Resize(_ context.Context, id string, w, h uint32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resized = append(e.resized, fmt.Sprintf("%s %dx%d", id, w, h))
	if e.resizedC != nil {
		e.resizedC <- struct{}{}
	}
	return nil
}

// streamServer is a node API over TLS whose pods are fakePods', run by
// fakeEngine, attached by attachFn, dialled by dial; the rest.Config
// carries the API server's client certificate.
func streamServer(t *testing.T, e *fakeEngine, attachFn func(context.Context, string, attach.Options) error, dial Dialer) (*httptest.Server, *rest.Config) {
	t.Helper()
	ca := newTestCA(t, "cluster-ca")
	s, _ := authServer(t, ca, allowMasters, Config{Pods: newFakePods(t), Engine: e, Attach: attachFn, Dial: dial})
	serving, err := ServingCertificate("", "", t.TempDir(), "127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.TLS = TLSConfig(serving, ca.pool)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := ca.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		Insecure: true, // as the API server without --kubelet-certificate-authority
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}}
	return srv, cfg
}

// kubectlExecutor is kubectl's: WebSocket (v5) first, SPDY when the
// upgrade is refused.
func kubectlExecutor(t *testing.T, cfg *rest.Config, u *url.URL) remotecommand.Executor {
	t.Helper()
	ex, err := remotecommand.NewFallbackExecutor(executor(t, "websocket", cfg, u), executor(t, "spdy", cfg, u), func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// executor speaks one protocol: "websocket" (v5, the API server's to a
// node that declares ExtendWebSocketsToKubelet) or "spdy" (v4, the API
// server's to other nodes).
func executor(t *testing.T, protocol string, cfg *rest.Config, u *url.URL) remotecommand.Executor {
	t.Helper()
	var ex remotecommand.Executor
	var err error
	if protocol == "websocket" {
		ex, err = remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	} else {
		ex, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

type sizeQueue struct {
	sizes chan remotecommand.TerminalSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := <-q.sizes
	if !ok {
		return nil
	}
	return &sz
}

func TestExec(t *testing.T) {
	e := &fakeEngine{}
	srv, cfg := streamServer(t, e, nil, nil)
	execURL := func(path string, q string) *url.URL {
		u, err := url.Parse(srv.URL + path + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		name, path, query string
		stdin             string
		tty               bool
		stdout, stderr    string
		code              int // the exit code in the error; -1: another error
	}{
		{name: "echo", path: "/exec/default/web/app", query: "command=echo&command=hello&output=1&error=1", stdout: "hello\n"},
		{name: "with the pod's uid", path: "/exec/default/web/u1/app", query: "command=echo&command=hi&output=1", stdout: "hi\n"},
		{name: "an exit code", path: "/exec/default/web/app", query: "command=exit&command=3&output=1&error=1", stderr: "exiting\n", code: 3},
		{name: "stdin", path: "/exec/default/web/app", query: "command=cat&input=1&output=1", stdin: "from stdin", stdout: "from stdin"},
		{name: "a terminal's size", path: "/exec/default/web/app", query: "command=size&input=1&output=1&tty=1", tty: true, stdin: "", stdout: "80x24 tty=true\n"},
		{name: "another pod uid", path: "/exec/default/web/u2/app", query: "command=echo&output=1", code: -1},
		{name: "a container that does not run", path: "/exec/default/web/sidecar", query: "command=echo&output=1", code: -1},
		{name: "no such container", path: "/exec/default/web/nope", query: "command=echo&output=1", code: -1},
		{name: "no such pod", path: "/exec/default/nope/app", query: "command=echo&output=1", code: -1},
		{name: "no stream", path: "/exec/default/web/app", query: "command=echo", code: -1},
	} {
		var stdout, stderr bytes.Buffer
		opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
		if strings.Contains(tc.query, "error=1") {
			opts.Stderr = &stderr
		}
		for _, protocol := range []string{"websocket", "spdy"} {
			stdout.Reset()
			stderr.Reset()
			if strings.Contains(tc.query, "input=1") {
				opts.Stdin = strings.NewReader(tc.stdin)
			}
			if tc.tty {
				q := sizeQueue{sizes: make(chan remotecommand.TerminalSize, 1)}
				q.sizes <- remotecommand.TerminalSize{Width: 80, Height: 24}
				close(q.sizes)
				opts.TerminalSizeQueue = q
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := executor(t, protocol, cfg, execURL(tc.path, tc.query)).StreamWithContext(ctx, opts)
			cancel()
			var exit exec.CodeExitError
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("%s over %s: %v", tc.name, protocol, err)
			case tc.code > 0 && (!errors.As(err, &exit) || exit.Code != tc.code):
				t.Errorf("%s over %s: got %v, want exit code %d", tc.name, protocol, err, tc.code)
			case tc.code < 0 && (err == nil || errors.As(err, &exit)):
				t.Errorf("%s over %s: got %v, want a refusal", tc.name, protocol, err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("%s over %s: stdout %q, stderr %q; want %q, %q", tc.name, protocol, stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range e.execs {
		if id != "app-1" {
			t.Errorf("exec in %q, want only the running attempt app-1", id)
		}
	}
}

func TestAttach(t *testing.T) {
	e := &fakeEngine{resizedC: make(chan struct{}, 1)}
	var mu sync.Mutex
	var got []string
	attachFn := func(_ context.Context, id string, o attach.Options) error {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s stdin=%v", id, o.Stdin != nil))
		mu.Unlock()
		fmt.Fprint(o.Stdout, "attached\n")
		if o.Stdin != nil { // a terminal: its size comes first
			select {
			case <-e.resizedC:
			case <-time.After(10 * time.Second):
			}
			_, err := io.Copy(o.Stdout, o.Stdin)
			return err
		}
		return nil
	}
	srv, cfg := streamServer(t, e, attachFn, nil)
	for _, tc := range []struct {
		name, protocol, path, query, stdin, stdout string
		tty                                        bool
		attached                                   string
	}{
		{name: "the keeper, with stdin and a terminal", protocol: "websocket", path: "/attach/default/web/app", query: "input=1&output=1&tty=1", stdin: "typed", tty: true, stdout: "attached\ntyped", attached: "app-1 stdin=true"},
		{name: "the keeper, with stdin and a terminal", protocol: "spdy", path: "/attach/default/web/app", query: "input=1&output=1&tty=1", stdin: "typed", tty: true, stdout: "attached\ntyped", attached: "app-1 stdin=true"},
		{name: "output only", protocol: "websocket", path: "/attach/default/web/app", query: "output=1&error=1", stdout: "attached\n", attached: "app-1 stdin=false"},
		{name: "output only", protocol: "spdy", path: "/attach/default/web/app", query: "output=1&error=1", stdout: "attached\n", attached: "app-1 stdin=false"},
	} {
		u, err := url.Parse(srv.URL + tc.path + "?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
		if tc.stdin != "" {
			opts.Stdin = strings.NewReader(tc.stdin)
		}
		if !tc.tty {
			opts.Stderr = io.Discard
		}
		if tc.tty {
			q := sizeQueue{sizes: make(chan remotecommand.TerminalSize, 1)}
			q.sizes <- remotecommand.TerminalSize{Width: 100, Height: 30}
			close(q.sizes)
			opts.TerminalSizeQueue = q
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = executor(t, tc.protocol, cfg, u).StreamWithContext(ctx, opts)
		cancel()
		if err != nil || stdout.String() != tc.stdout {
			t.Errorf("%s over %s: %v, stdout %q; want %q", tc.name, tc.protocol, err, stdout.String(), tc.stdout)
		}
		mu.Lock()
		if len(got) == 0 || got[len(got)-1] != tc.attached {
			t.Errorf("%s: attached %v, want %q last", tc.name, got, tc.attached)
		}
		mu.Unlock()
	}
	// The quiet container has neither stdin nor a terminal: its log, from now on.
	u, _ := url.Parse(srv.URL + "/attach/default/web/quiet?output=1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var stdout bytes.Buffer
	err := kubectlExecutor(t, cfg, u).StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout})
	if stdout.Len() != 0 || (err != nil && ctx.Err() == nil) {
		t.Errorf("attach to a container without stdin: %v, %q; want nothing until the client goes", err, stdout.String())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.resized) != 2 || e.resized[0] != "app-1 100x30" || e.resized[1] != "app-1 100x30" {
		t.Errorf("resized %v, want [app-1 100x30] for each protocol", e.resized)
	}
}

// TestPortForward: each forwarded connection reaches the pod's port
// through Dial (kubectl's SPDY protocol).
func TestPortForward(t *testing.T) {
	var mu sync.Mutex
	var dialled []string
	dial := func(_ context.Context, p *run.PodInfo, port int32) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, fmt.Sprintf("%s:%d", p.Key(), port))
		mu.Unlock()
		if port != 8080 {
			return nil, errors.New("connection refused")
		}
		client, pod := net.Pipe()
		go func() { // the pod answers one line, upper-cased
			defer pod.Close()
			buf := make([]byte, 64)
			n, _ := pod.Read(buf)
			_, _ = pod.Write(bytes.ToUpper(buf[:n]))
		}()
		return client, nil
	}
	srv, cfg := streamServer(t, &fakeEngine{}, nil, dial)
	u, err := url.Parse(srv.URL + "/portForward/default/web")
	if err != nil {
		t.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatal(err)
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || string(got) != "PING" {
			t.Fatalf("connection %d: %q, %v; want PING", i, got, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialled) != 2 || dialled[0] != "default/web:8080" {
		t.Errorf("dialled %v, want default/web:8080 twice", dialled)
	}
}

// closedStream is a client's stream after the client went.
type closedStream struct{}

func (closedStream) Write([]byte) (int, error) { return 0, io.EOF }
func (closedStream) Close() error              { return nil }

// TestAttachClientGone: an attach ends without an error when the client
// goes (its stream refuses a write), whether it followed the container's
// log or its stream keeper; an error of the keeper itself is still one.
func TestAttachClientGone(t *testing.T) {
	pods := newFakePods(t)
	keeperErr := errors.New("the keeper's socket broke")
	for _, tc := range []struct {
		name      string
		container string
		attach    func(context.Context, string, attach.Options) error
		want      error
	}{
		{"the keeper's output to a client gone", "app", func(_ context.Context, _ string, o attach.Options) error {
			_, err := o.Stdout.Write([]byte("late line\n"))
			return err
		}, nil},
		{"the keeper fails", "app", func(context.Context, string, attach.Options) error { return keeperErr }, keeperErr},
		{"the log followed to a client gone", "quiet", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := streamer{s: &Server{pods: pods, attach: tc.attach}, pod: pods.pod, container: tc.container}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.container == "quiet" {
				go func() { // a line written after the attach began
					time.Sleep(200 * time.Millisecond)
					f, err := os.OpenFile(filepath.Join(pods.dir, "quiet", "0.log"), os.O_APPEND|os.O_WRONLY, 0)
					if err == nil {
						_, _ = f.WriteString("2026-11-29T12:00:00Z stdout F later\n")
						f.Close()
					}
				}()
			}
			err := x.AttachContainer(ctx, "web", "u1", tc.container+"-0", nil, closedStream{}, closedStream{}, false, nil)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("AttachContainer = %v, want %v", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Errorf("AttachContainer ended only with its context")
			}
		})
	}
}
