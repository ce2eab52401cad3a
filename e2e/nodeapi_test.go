package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// nodeAPIPort is where the daemon serves the node API in these tests
// (loopback only).
const nodeAPIPort = "10250"

// nodeAPIPod runs app (crashes once, then prints "second run", ticks and
// serves "pf-ok" on its loopback port 8080) and term (a terminal on cat).
const nodeAPIPod = `apiVersion: v1
kind: Pod
metadata:
  name: na-web
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "if [ ! -f /data/once ]; then touch /data/once; echo first run; exit 1; fi; echo second run; echo to stderr >&2; mkdir -p /tmp/www; echo pf-ok > /tmp/www/index.html; httpd -p 127.0.0.1:8080 -h /tmp/www; trap 'exit 0' TERM; while true; do echo tick; sleep 1; done"]
    volumeMounts:
    - name: data
      mountPath: /data
  - name: term
    image: %s
    command: ["cat"]
    stdin: true
    tty: true
  volumes:
  - name: data
    emptyDir: {}
`

// syncBuffer is a bytes.Buffer written by streams while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNodeAPI: `podrun daemon --kubeconfig --client-ca-file` serves the
// kubelet's logs, exec, attach and port-forward paths to the API server's
// kubelet client certificate (cluster-anchor's apiserver-kubelet-client,
// O=system:masters), authorised by a SubjectAccessReview the node makes
// with its own credentials; without a certificate, with another CA's, or
// with a token of a user the cluster does not allow, nothing is served.
// It calls the node's HTTPS endpoint directly, as the API server does (the
// API's pod objects and kubectl through the API server need the API pod
// source).
func TestNodeAPI(t *testing.T) {
	cp := startControlPlane(t)
	kc := cp.nodeKubeconfig(t, H.Node)
	for _, res := range []string{"tokenreviews", "subjectaccessreviews"} {
		// kubectl warns that the resources are not namespaced, then answers.
		if out, err := cp.kubectl(kc, "auth", "can-i", "create", res); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "\nyes") {
			t.Fatalf("the node may not create %s: %q, %v", res, out, err)
		}
	}
	dir := t.TempDir()
	downOnCleanup(t, "na-web")
	if err := os.WriteFile(filepath.Join(dir, "na-web.yaml"), fmt.Appendf(nil, nodeAPIPod, H.Image, H.Image), 0o644); err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(cp.dir, "pki")
	startDaemon(t, dir, nil, "--kubeconfig", kc, "--client-ca-file", filepath.Join(pki, "ca.crt"),
		"--node-api-address", "127.0.0.1", "--node-api-port", nodeAPIPort)
	pod := waitPodsRunning(t, 90*time.Second, func(p corev1.Pod) bool { return appRestarts(p) >= 1 }, "na-web")["na-web"]
	ns, name := pod.Namespace, pod.Name
	base := "https://127.0.0.1:" + nodeAPIPort

	apiserver := &rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{
		Insecure: true, // as the API server (no --kubelet-certificate-authority)
		CertFile: filepath.Join(pki, "apiserver-kubelet-client.crt"), KeyFile: filepath.Join(pki, "apiserver-kubelet-client.key"),
	}}
	client, err := rest.HTTPClientFor(apiserver)
	if err != nil {
		t.Fatal(err)
	}
	get := func(c *http.Client, path string, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Logs.
	logs := "/containerLogs/" + ns + "/" + name + "/app"
	var whole string
	eventually(t, 10*time.Second, "the log", func() (bool, string) {
		code, body := get(client, logs, nil)
		whole = body
		// stdout and stderr come through two pipes: their lines'
		// order in the log is not the order they were written in.
		return code == 200 && strings.Contains(body, "second run\n") && strings.Contains(body, "to stderr\n") && strings.Contains(body, "tick\n") && !strings.Contains(body, "first run"), fmt.Sprintf("%d %q", code, body)
	})
	for _, tc := range []struct{ query, want string }{
		{"?previous=true", "first run\n"},
		{"?stream=Stderr", "to stderr\n"},
		// The log's first line is "second run" or "to stderr" (two pipes).
		{"?limitBytes=4", whole[:4]},
	} {
		if code, body := get(client, logs+tc.query, nil); code != 200 || body != tc.want {
			t.Errorf("GET %s%s: %d %q, want %q", logs, tc.query, code, body, tc.want)
		}
	}
	// stdout and stderr are read apart: the stderr line may come after a tick.
	eventually(t, 5*time.Second, "the last line", func() (bool, string) {
		code, body := get(client, logs+"?tailLines=1", nil)
		return code == 200 && body == "tick\n", fmt.Sprintf("%d %q", code, body)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+logs+"?follow=true&tailLines=0", nil)
	if resp, err := client.Do(req); err != nil {
		t.Errorf("logs -f: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body) // until the context ends
		resp.Body.Close()
		if !strings.HasPrefix(string(b), "tick\ntick\n") {
			t.Errorf("logs -f for 3 s: %q, want ticks as they come", b)
		}
	}
	cancel()

	// Exec, as kubectl (WebSocket v5 first, SPDY when refused).
	exe := func(container string, query string, o remotecommand.StreamOptions) error {
		u, err := url.Parse(base + "/exec/" + ns + "/" + name + "/" + container + "?" + query)
		if err != nil {
			t.Fatal(err)
		}
		spdyExec, err := remotecommand.NewSPDYExecutor(apiserver, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		wsExec, err := remotecommand.NewWebSocketExecutor(apiserver, "GET", u.String())
		if err != nil {
			t.Fatal(err)
		}
		ex, _ := remotecommand.NewFallbackExecutor(wsExec, spdyExec, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return ex.StreamWithContext(ctx, o)
	}
	var out, errOut bytes.Buffer
	if err := exe("app", "command=echo&command=exec-ok&output=1&error=1", remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil || out.String() != "exec-ok\n" {
		t.Errorf("exec echo: %v, %q %q", err, out.String(), errOut.String())
	}
	var exit exec.CodeExitError
	if err := exe("app", "command=sh&command=-c&command=exit+7&output=1&error=1", remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); !errors.As(err, &exit) || exit.Code != 7 {
		t.Errorf("exec exit 7: %v, want exit code 7", err)
	}
	out.Reset()
	if err := exe("app", "command=cat&input=1&output=1", remotecommand.StreamOptions{Stdin: strings.NewReader("via stdin"), Stdout: &out}); err != nil || out.String() != "via stdin" {
		t.Errorf("exec -i cat: %v, %q", err, out.String())
	}
	out.Reset()
	sizes := sizeQueue{make(chan remotecommand.TerminalSize, 1)}
	sizes.c <- remotecommand.TerminalSize{Width: 123, Height: 45}
	close(sizes.c)
	// A terminal's stdin stays open (its end hangs the terminal up).
	ttyIn, ttyInW := io.Pipe()
	if err := exe("app", "command=sh&command=-c&command=sleep+1%3Bstty+size&input=1&output=1&tty=1",
		remotecommand.StreamOptions{Stdin: ttyIn, Stdout: &out, Tty: true, TerminalSizeQueue: sizes}); err != nil || strings.TrimSpace(out.String()) != "45 123" {
		t.Errorf("exec -it stty size: %v, %q; want \"45 123\"", err, out.String())
	}
	ttyInW.Close()

	// Attach: the terminal's cat echoes what is typed; app's output from now on.
	attachTo := func(container, query string, o remotecommand.StreamOptions, want string) {
		t.Helper()
		u, _ := url.Parse(base + "/attach/" + ns + "/" + name + "/" + container + "?" + query)
		ex, err := remotecommand.NewSPDYExecutor(apiserver, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		buf := &syncBuffer{}
		o.Stdout = buf
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ex.StreamWithContext(ctx, o) }()
		eventually(t, 10*time.Second, "attach to "+container, func() (bool, string) {
			return strings.Contains(buf.String(), want), buf.String()
		})
		cancel()
		<-done
	}
	stdinR, stdinW := io.Pipe()
	go func() { _, _ = stdinW.Write([]byte("typed-in\n")) }()
	attachTo("term", "input=1&output=1&tty=1", remotecommand.StreamOptions{Stdin: stdinR, Tty: true}, "typed-in")
	stdinW.Close()
	attachTo("app", "output=1&error=1", remotecommand.StreamOptions{Stderr: io.Discard}, "tick\n")

	// Port-forward to the pod's loopback-only port.
	transport, upgrader, err := spdy.RoundTripperFor(apiserver)
	if err != nil {
		t.Fatal(err)
	}
	pfURL, _ := url.Parse(base + "/portForward/" + ns + "/" + name)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", pfURL),
		[]string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pfDone := make(chan error, 1)
	go func() { pfDone <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-pfDone:
		t.Fatalf("port-forward: %v", err)
	}
	ports, _ := pf.GetPorts()
	for i := range 2 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
		if err != nil {
			t.Fatalf("GET through the port-forward (%d): %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "pf-ok\n" {
			t.Errorf("GET through the port-forward (%d): %q, want pf-ok", i, b)
		}
	}
	close(stop)
	<-pfDone

	// Refused: no certificate, another CA's, a token of a user without rights.
	anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	foreign := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return foreignClientCert(t), nil
		},
	}}}
	if out, err := cp.kubectl("", "create", "serviceaccount", "na-nobody", "-n", "default"); err != nil {
		t.Fatalf("creating a service account: %v: %s", err, out)
	}
	token, err := cp.kubectl("", "create", "token", "na-nobody", "-n", "default")
	if err != nil {
		t.Fatalf("kubectl create token: %v: %s", err, token)
	}
	bearer := http.Header{"Authorization": {"Bearer " + strings.TrimSpace(token)}}
	for _, path := range []string{logs, "/exec/" + ns + "/" + name + "/app?command=true&output=1", "/portForward/" + ns + "/" + name, "/healthz", "/pods"} {
		if code, body := get(anon, path, nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a certificate: %d %q, want 401", path, code, body)
		}
		if code, body := get(foreign, path, nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s with another CA's certificate: %d %q, want 401", path, code, body)
		}
		if code, body := get(anon, path, bearer); code != http.StatusForbidden {
			t.Errorf("GET %s with na-nobody's token: %d %q, want 403", path, code, body)
		}
	}
	if code, body := get(client, "/healthz", nil); code != 200 || body != "ok" {
		t.Errorf("GET /healthz as the API server: %d %q", code, body)
	}
	exeNoCert := &rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	u, _ := url.Parse(base + "/exec/" + ns + "/" + name + "/app?command=true&output=1")
	if ex, err := remotecommand.NewSPDYExecutor(exeNoCert, "POST", u); err != nil {
		t.Fatal(err)
	} else if err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("exec without a certificate: %v, want Unauthorized", err)
	}
	_, _ = cp.kubectl("", "delete", "serviceaccount", "na-nobody", "-n", "default")
}

// appRestarts is the restart count of p's container app.
func appRestarts(p corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" {
			return s.RestartCount
		}
	}
	return 0
}

type sizeQueue struct {
	c chan remotecommand.TerminalSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := <-q.c
	if !ok {
		return nil
	}
	return &sz
}

// foreignClientCert is a client certificate for the API server's user
// (O=system:masters) signed by a CA the node does not trust.
func foreignClientCert(t *testing.T) *tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Error(err)
		return &tls.Certificate{}
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key) // self-signed: its own CA
	if err != nil {
		t.Error(err)
		return &tls.Certificate{}
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	c, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Error(err)
	}
	return &c
}
