package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/engine"
)

func TestHookExec(t *testing.T) {
	ok := &fakeExec{run: func(context.Context, []string, io.Writer) (int, error) { return 0, nil }}
	h := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo bye"}}}
	if err := Hook(context.Background(), h, Target{ContainerID: "c1", Exec: ok}); err != nil {
		t.Errorf("exit 0: %v", err)
	}
	if c := ok.Calls(); len(c) != 1 || c[0].id != "c1" || strings.Join(c[0].args, " ") != "sh -c echo bye" {
		t.Errorf("calls = %+v", c)
	}

	bad := &fakeExec{run: func(_ context.Context, _ []string, out io.Writer) (int, error) {
		io.WriteString(out, "no such file\n")
		return 2, nil
	}}
	err := Hook(context.Background(), h, Target{Exec: bad})
	if err == nil || !strings.Contains(err.Error(), "exited with code 2: no such file") {
		t.Errorf("exit 2: %v", err)
	}

	held := &fakeExec{run: func(context.Context, []string, io.Writer) (int, error) {
		return 0, fmt.Errorf("exec in \"c1\" exited with code 0: %w", engine.ErrOutputHeld)
	}}
	if err := Hook(context.Background(), h, Target{Exec: held}); !errors.Is(err, engine.ErrOutputHeld) || !strings.Contains(err.Error(), ">/dev/null 2>&1 &") {
		t.Errorf("output held: %v, want ErrOutputHeld and how to redirect", err)
	}

	broken := &fakeExec{run: func(context.Context, []string, io.Writer) (int, error) { return -1, errors.New("boom") }}
	if err := Hook(context.Background(), h, Target{Exec: broken}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("exec error: %v", err)
	}
}

func TestHookExecCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fe := &fakeExec{run: func(ctx context.Context, _ []string, _ io.Writer) (int, error) {
		cancel()
		<-ctx.Done()
		return -1, ctx.Err()
	}}
	h := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "100"}}}
	err := Hook(ctx, h, Target{Exec: fe})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestHookHTTP(t *testing.T) {
	var calls atomic.Int32
	var ua atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		ua.Store(r.Header.Get("User-Agent"))
		if r.URL.Path == "/shutdown" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)

	h := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/shutdown", Port: intstr.FromString("http")}}
	tgt := Target{Host: host, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	if err := Hook(context.Background(), h, tgt); err != nil {
		t.Errorf("200: %v", err)
	}
	if got := ua.Load(); got != "kube-lifecycle/"+kubeVersion {
		t.Errorf("User-Agent = %v", got)
	}
	// Like the kubelet, a hook's status code is not checked.
	h.HTTPGet.Path = "/other"
	if err := Hook(context.Background(), h, tgt); err != nil {
		t.Errorf("500: %v", err)
	}
	if calls.Load() != 2 {
		t.Errorf("calls = %d", calls.Load())
	}

	h.HTTPGet.Port = intstr.FromInt(closedPort(t))
	if err := Hook(context.Background(), h, Target{Host: "127.0.0.1"}); err == nil {
		t.Error("closed port: no error")
	}
	h.HTTPGet.Port = intstr.FromString("web")
	if err := Hook(context.Background(), h, tgt); err == nil || !strings.Contains(err.Error(), `named port "web"`) {
		t.Errorf("unknown port: %v", err)
	}
}

func TestHookHTTPSFallsBackToHTTP(t *testing.T) {
	var auth atomic.Value
	auth.Store("unset")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	h := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/", Port: intstr.FromInt(port), Scheme: corev1.URISchemeHTTPS,
		HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}},
	}}
	if err := Hook(context.Background(), h, Target{Host: host}); err != nil {
		t.Fatalf("err = %v", err)
	}
	if got := auth.Load(); got != "" {
		t.Errorf("Authorization = %q, want it dropped on the HTTP retry", got)
	}
}

func TestHookSleep(t *testing.T) {
	if err := Hook(context.Background(), &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}, Target{}); err != nil {
		t.Errorf("sleep 0: %v", err)
	}
	if err := Hook(context.Background(), &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}, Target{}); err != nil {
		t.Errorf("sleep 1: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Hook(ctx, &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3600}}, Target{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before sleep hook finished") {
		t.Errorf("cancelled sleep: %v", err)
	}
}

func TestHookUnsupported(t *testing.T) {
	tcp := &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(80)}}
	if err := Hook(context.Background(), tcp, Target{Host: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "tcpSocket") {
		t.Errorf("tcpSocket: %v", err)
	}
	if err := Hook(context.Background(), &corev1.LifecycleHandler{}, Target{}); err == nil {
		t.Error("empty handler: no error")
	}
	if err := Hook(context.Background(), nil, Target{}); err == nil {
		t.Error("nil handler: no error")
	}
}
