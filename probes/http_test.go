package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostPort splits an httptest server's URL into the probe's host and port.
func hostPort(t *testing.T, srv *httptest.Server) (string, int) {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

func httpProbeSpec(port intstr.IntOrString, path string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path}}}
}

func TestHTTPProbeStatusCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		fmt.Fprintf(w, "body of %d\n", code)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)

	tests := []struct {
		code       int
		want       Result
		wantOutput string
	}{
		{200, Success, "body of 200"},
		{204, Success, ""},
		{399, Success, "Probe terminated redirects (status 399), Response body: body of 399"},
		{400, Failure, "HTTP probe failed with statuscode: 400"},
		{500, Failure, "HTTP probe failed with statuscode: 500"},
	}
	for _, tt := range tests {
		out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(port), "/"+strconv.Itoa(tt.code)), Target{Host: host})
		if out.Result != tt.want || out.Output != tt.wantOutput {
			t.Errorf("%d: got %v %q, want %v %q", tt.code, out.Result, out.Output, tt.want, tt.wantOutput)
		}
	}
}

func TestHTTPProbeRequest(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background())
		mu.Unlock()
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)

	last := func() *http.Request { mu.Lock(); defer mu.Unlock(); return got }

	// Defaults: path "/", User-Agent, Accept.
	if out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(port), ""), Target{Host: host}); out.Result != Success {
		t.Fatalf("got %v %q", out.Result, out.Output)
	}
	r := last()
	if r.URL.Path != "/" || r.Method != http.MethodGet {
		t.Errorf("request %s %s", r.Method, r.URL)
	}
	if ua := r.Header.Get("User-Agent"); ua != "kube-probe/"+kubeVersion {
		t.Errorf("User-Agent = %q", ua)
	}
	if a := r.Header.Get("Accept"); a != "*/*" {
		t.Errorf("Accept = %q", a)
	}
	if r.Host != net.JoinHostPort(host, strconv.Itoa(port)) {
		t.Errorf("Host = %q", r.Host)
	}

	// Custom headers, Host override, User-Agent override, empty Accept, query.
	p := httpProbeSpec(intstr.FromInt(port), "/healthz?full=1")
	p.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{
		{Name: "x-custom", Value: "a"},
		{Name: "X-Custom", Value: "b"},
		{Name: "Host", Value: "example.com"},
		{Name: "User-Agent", Value: "mine"},
		{Name: "Accept", Value: ""},
	}
	if out := Probe(context.Background(), p, Target{Host: host}); out.Result != Success {
		t.Fatalf("got %v %q", out.Result, out.Output)
	}
	r = last()
	if r.URL.Path != "/healthz" || r.URL.RawQuery != "full=1" {
		t.Errorf("URL = %s", r.URL)
	}
	if v := r.Header.Values("X-Custom"); strings.Join(v, ",") != "a,b" {
		t.Errorf("X-Custom = %q", v)
	}
	if r.Host != "example.com" {
		t.Errorf("Host = %q, want the override", r.Host)
	}
	if ua := r.Header.Get("User-Agent"); ua != "mine" {
		t.Errorf("User-Agent = %q", ua)
	}
	if _, ok := r.Header["Accept"]; ok {
		t.Errorf("Accept sent: %q", r.Header.Get("Accept"))
	}

	// httpGet.host overrides the target's host.
	p = httpProbeSpec(intstr.FromInt(port), "/")
	p.HTTPGet.Host = host
	if out := Probe(context.Background(), p, Target{Host: "192.0.2.1"}); out.Result != Success {
		t.Errorf("host override: got %v %q", out.Result, out.Output)
	}
}

func TestHTTPProbeHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure")
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	p := httpProbeSpec(intstr.FromInt(port), "/")
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	if out := Probe(context.Background(), p, Target{Host: host}); out.Result != Success || out.Output != "secure" {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
	// Plain HTTP against the TLS server fails.
	p.HTTPGet.Scheme = corev1.URISchemeHTTP
	if out := Probe(context.Background(), p, Target{Host: host}); out.Result != Failure {
		t.Errorf("http to https server: got %v %q", out.Result, out.Output)
	}
}

func TestHTTPProbeRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/local", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "arrived") })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/fail", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := hostPort(t, srv)

	tests := []struct {
		path       string
		want       Result
		wantOutput string
	}{
		{"/local", Success, "arrived"},
		{"/broken", Failure, "HTTP probe failed with statuscode: 500"},
		{"/away", Success, "Probe terminated redirects (status 302)"},
		{"/loop", Failure, "stopped after 10 redirects"},
	}
	for _, tt := range tests {
		out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(port), tt.path), Target{Host: host})
		if out.Result != tt.want || !strings.Contains(out.Output, tt.wantOutput) {
			t.Errorf("%s: got %v %q, want %v %q", tt.path, out.Result, out.Output, tt.want, tt.wantOutput)
		}
	}
}

func TestHTTPProbeNamedPort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	tgt := Target{Host: host, Ports: []corev1.ContainerPort{
		{Name: "metrics", ContainerPort: 1},
		{Name: "http", ContainerPort: int32(port)},
	}}
	if out := Probe(context.Background(), httpProbeSpec(intstr.FromString("http"), "/"), tgt); out.Result != Success {
		t.Errorf("named port: got %v %q", out.Result, out.Output)
	}
	out := Probe(context.Background(), httpProbeSpec(intstr.FromString("web"), "/"), tgt)
	if out.Result != Unknown || !strings.Contains(out.Output, `named port "web" not found`) {
		t.Errorf("unknown named port: got %v %q", out.Result, out.Output)
	}
}

func TestHTTPProbeTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	p := httpProbeSpec(intstr.FromInt(port), "/")
	p.TimeoutSeconds = 1
	out := Probe(context.Background(), p, Target{Host: host})
	if out.Result != Failure || !strings.Contains(out.Output, "Timeout") {
		t.Errorf("got %v %q, want a timeout failure", out.Result, out.Output)
	}
}

func TestHTTPProbeBodyLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 1<<20))
	}))
	defer srv.Close()
	host, port := hostPort(t, srv)
	out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(port), "/"), Target{Host: host})
	if out.Result != Success || len(out.Output) != maxOutput {
		t.Errorf("got %v, %d bytes", out.Result, len(out.Output))
	}
}

func TestHTTPProbeClosedPortAndIPv6URL(t *testing.T) {
	port := closedPort(t)
	out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(port), "/"), Target{Host: "127.0.0.1"})
	if out.Result != Failure || !strings.Contains(out.Output, "refused") {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
	req, err := newHTTPRequest(context.Background(), &corev1.HTTPGetAction{Port: intstr.FromInt(8080), Path: "/h"}, Target{Host: "fd00::5"}, "probe")
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "http://[fd00::5]:8080/h" {
		t.Errorf("URL = %s", req.URL)
	}
}

func TestHTTPProbeNoHost(t *testing.T) {
	out := Probe(context.Background(), httpProbeSpec(intstr.FromInt(80), "/"), Target{})
	if out.Result != Unknown {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
}
