package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// kubectlPod is nodeAPIPod bound to the node by the operator (spec.nodeName):
// app crashes once, then prints "second run", ticks and serves "pf-ok" on
// its loopback port 8080; term is a terminal on cat.
const kubectlPod = `apiVersion: v1
kind: Pod
metadata: {name: na-kubectl}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "if [ ! -f /data/once ]; then touch /data/once; echo first run; exit 1; fi; echo second run; mkdir -p /tmp/www; echo pf-ok > /tmp/www/index.html; httpd -p 127.0.0.1:8080 -h /tmp/www; trap 'exit 0' TERM; while true; do echo tick; sleep 1; done"]
    volumeMounts:
    - name: data
      mountPath: /data
  - name: term
    image: %[2]s
    command: ["cat"]
    stdin: true
    tty: true
  volumes:
  - name: data
    emptyDir: {}
`

// kubectlStatic is a static pod of the daemon's directory (its mirror pod
// is in the API).
const kubectlStatic = `apiVersion: v1
kind: Pod
metadata: {name: na-static}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo static says hello; trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// TestNodeAPIThroughAPIServer: as an operator, with kubectl and the
// admin's kubeconfig only, `kubectl logs` (also --previous, and of a
// mirror pod), `exec -- echo`, `exec -it` in a terminal, `attach` and
// `port-forward` reach a pod on the podrun node through the API server,
// which dials the node's InternalIP (--node-ip 127.0.0.1) with its kubelet
// client certificate (--client-ca-file: the cluster's CA). A user the
// cluster gives no rights is refused by the API server (Forbidden), and
// the node API itself serves nothing without a client certificate (401).
func TestNodeAPIThroughAPIServer(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/na-kubectl:1"})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "na-static.yaml"), fmt.Appendf(nil, kubectlStatic, image), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(cp.dir, "pki", "ca.crt")
	startDaemon(t, dir, nil, "--kubeconfig", kc, "--node-ip", "127.0.0.1", "--client-ca-file", ca,
		"--node-api-address", "127.0.0.1", "--node-api-port", nodeAPIPort, "--stop-pods-on-exit")
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	var n corev1.Node
	if err := cp.get(t, &n, "node", name); err != nil {
		t.Fatal(err)
	}
	var internal []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = append(internal, a.Address)
		}
	}
	if len(internal) != 1 || internal[0] != "127.0.0.1" {
		t.Fatalf("node addresses %+v: want the one InternalIP 127.0.0.1 (--node-ip)", n.Status.Addresses)
	}

	eventually(t, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	file := filepath.Join(t.TempDir(), "na-kubectl.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, kubectlPod, name, image), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.kubectl("", "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = cp.kubectl("", "delete", "--wait=false", "-f", file) })
	eventually(t, 120*time.Second, "na-kubectl Running, app restarted once", func() (bool, string) {
		var p corev1.Pod
		if err := cp.get(t, &p, "pod", "na-kubectl"); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				running++
			}
		}
		return p.Status.Phase == corev1.PodRunning && running == 2 && appRestarts(p) >= 1, fmt.Sprintf("%+v", p.Status)
	})

	timed := func(what string, f func()) {
		t.Helper()
		began := time.Now()
		f()
		t.Logf("%s: %v", what, time.Since(began).Round(time.Millisecond))
	}
	admin := filepath.Join(cp.dir, "admin.kubeconfig")

	// Logs, the previous run's, a mirror pod's.
	timed("kubectl logs", func() {
		eventually(t, 10*time.Second, "kubectl logs", func() (bool, string) {
			out, err := cp.kubectl("", "logs", "na-kubectl", "-c", "app")
			return err == nil && strings.HasPrefix(out, "second run\n") && strings.Contains(out, "tick\n"), fmt.Sprintf("%v %q", err, out)
		})
	})
	timed("kubectl logs --previous", func() {
		if out, err := cp.kubectl("", "logs", "--previous", "na-kubectl", "-c", "app"); err != nil || out != "first run\n" {
			t.Errorf("kubectl logs --previous: %v %q, want \"first run\\n\"", err, out)
		}
	})
	mirror := "na-static-" + name
	eventually(t, 60*time.Second, "the mirror pod "+mirror, func() (bool, string) {
		out, err := cp.kubectl("", "get", "pod", mirror)
		return err == nil, out
	})
	timed("kubectl logs of a mirror pod", func() {
		eventually(t, 10*time.Second, "kubectl logs "+mirror, func() (bool, string) {
			out, err := cp.kubectl("", "logs", mirror)
			return err == nil && out == "static says hello\n", fmt.Sprintf("%v %q", err, out)
		})
	})

	// Exec.
	timed("kubectl exec -- echo hi", func() {
		if out, err := cp.kubectl("", "exec", "na-kubectl", "-c", "app", "--", "echo", "hi"); err != nil || out != "hi\n" {
			t.Errorf("kubectl exec -- echo hi: %v %q", err, out)
		}
	})
	if out, err := cp.kubectl("", "exec", "na-kubectl", "-c", "app", "--", "sh", "-c", "exit 7"); err == nil || !strings.Contains(out, "exit code 7") {
		t.Errorf("kubectl exec -- sh -c 'exit 7': %v %q, want exit code 7", err, out)
	}
	timed("kubectl exec -i -- cat (stdin to its end)", func() {
		cmd := exec.Command(filepath.Join(anchorBin, "kubectl"), "--kubeconfig", admin, "exec", "-i", "na-kubectl", "-c", "app", "--", "cat")
		cmd.Stdin = strings.NewReader("via stdin")
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "via stdin" {
			t.Errorf("kubectl exec -i -- cat: %v %q, want \"via stdin\"", err, out)
		}
	})
	timed("kubectl exec -it (a terminal of 45x123) -- sleep 1; stty size", func() {
		out, err := kubectlInTerminal(t, admin, nil, 45, 123, "exec", "-it", "na-kubectl", "-c", "app", "--", "sh", "-c", "sleep 1; stty size; tty")
		if err != nil || !strings.Contains(out, "45 123") || !strings.Contains(out, "/dev/pts/") {
			t.Errorf("kubectl exec -it -- sleep 1; stty size; tty: %v %q, want \"45 123\" and a /dev/pts/N", err, out)
		}
	})

	// Attach: to app's output, and to term's terminal (cat echoes).
	timed("kubectl attach (app's output)", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out := &syncBuffer{}
		cmd := exec.CommandContext(ctx, filepath.Join(anchorBin, "kubectl"), "--kubeconfig", admin, "attach", "na-kubectl", "-c", "app")
		cmd.Stdout, cmd.Stderr = out, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "kubectl attach output", func() (bool, string) {
			return strings.Contains(out.String(), "tick\n"), out.String()
		})
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	timed("kubectl attach -it (term's terminal)", func() {
		out, err := kubectlInTerminal(t, admin, []string{"typed-in\r"}, 24, 80, "attach", "-it", "na-kubectl", "-c", "term")
		if !strings.Contains(out, "typed-in") {
			t.Errorf("kubectl attach -it: %v %q, want the typed line echoed", err, out)
		}
	})

	// Port-forward to app's loopback-only port.
	timed("kubectl port-forward and 2 GETs", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out := &syncBuffer{}
		cmd := exec.CommandContext(ctx, filepath.Join(anchorBin, "kubectl"), "--kubeconfig", admin, "port-forward", "--address", "127.0.0.1", "pod/na-kubectl", ":8080")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
		var port string
		eventually(t, 15*time.Second, "kubectl port-forward listening", func() (bool, string) {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				port = m[1]
			}
			return port != "", out.String()
		})
		c := &http.Client{Timeout: 10 * time.Second}
		for i := range 2 {
			resp, err := c.Get("http://127.0.0.1:" + port + "/")
			if err != nil {
				t.Errorf("GET through kubectl port-forward (%d): %v; kubectl: %s", i, err, out.String())
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "pf-ok\n" {
				t.Errorf("GET through kubectl port-forward (%d): %q, want pf-ok", i, b)
			}
		}
	})

	// How the API server carried kubectl's WebSockets: the Node declares
	// no ExtendWebSocketsToKubelet, so it translates them to SPDY.
	if out, err := cp.kubectl("", "get", "--raw", "/metrics"); err != nil {
		t.Logf("the API server's metrics: %v", err)
	} else {
		var lines []string
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "apiserver_websocket_streaming_requests_total") || strings.HasPrefix(l, "apiserver_stream_t") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		t.Logf("the API server's streaming metrics:\n%s", strings.Join(lines, "\n"))
	}

	// Refused: a user with no rights (a ServiceAccount's token, no RBAC).
	if out, err := cp.kubectl("", "create", "serviceaccount", "na-nobody"); err != nil {
		t.Fatalf("creating a service account: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = cp.kubectl("", "delete", "serviceaccount", "na-nobody") })
	token, err := cp.kubectl("", "create", "token", "na-nobody")
	if err != nil {
		t.Fatalf("kubectl create token: %v: %s", err, token)
	}
	nobody := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := os.WriteFile(nobody, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: anchor, cluster: {server: "https://127.0.0.1:6443", certificate-authority: %q}}]
users: [{name: nobody, user: {token: %q}}]
contexts: [{name: nobody, context: {cluster: anchor, user: nobody, namespace: default}}]
current-context: nobody
`, ca, strings.TrimSpace(token)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"logs", "na-kubectl", "-c", "app"},
		{"logs", "--previous", "na-kubectl", "-c", "app"},
		{"logs", mirror},
		{"exec", "na-kubectl", "-c", "app", "--", "echo", "hi"},
		{"attach", "na-kubectl", "-c", "app"},
		{"port-forward", "pod/na-kubectl", ":8080"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(anchorBin, "kubectl"), append([]string{"--kubeconfig", nobody}, args...)...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "Forbidden") && !strings.Contains(string(out), "forbidden") {
			t.Errorf("kubectl %s as na-nobody: %v %q, want Forbidden", strings.Join(args, " "), err, out)
		} else {
			t.Logf("kubectl %s as na-nobody: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
		}
	}
	// The node API itself: nothing without a client certificate.
	anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, path := range []string{"/containerLogs/default/na-kubectl/app", "/exec/default/na-kubectl/app?command=echo&output=1", "/attach/default/na-kubectl/app?output=1", "/portForward/default/na-kubectl"} {
		resp, err := anon.Get("https://127.0.0.1:" + nodeAPIPort + path)
		if err != nil {
			t.Errorf("GET %s without a certificate: %v", path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s on the node without a certificate: %d, want 401", path, resp.StatusCode)
		}
	}
}

// kubectlInTerminal runs kubectl (kubeconfig, args) with a terminal of
// rows x cols as its stdin, stdout and stderr (kubectl's -t needs one),
// types each of input once the output shows the session is up, and
// returns what the terminal showed when kubectl ended (or after 20 s,
// when it is killed).
func kubectlInTerminal(t *testing.T, kubeconfig string, input []string, rows, cols uint16, args ...string) (string, error) {
	t.Helper()
	ptm, pts, err := openPTY(rows, cols)
	if err != nil {
		t.Fatalf("a terminal: %v", err)
	}
	defer ptm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(anchorBin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		pts.Close()
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	pts.Close() // kubectl's now: the terminal ends with it
	out := &syncBuffer{}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, ptm) // until EIO: no process holds the terminal
		close(copied)
	}()
	if len(input) > 0 {
		// kubectl attach -it says "If you don't see a command prompt, try
		// pressing enter." once the streams are up.
		eventually(t, 15*time.Second, "kubectl's session up", func() (bool, string) {
			return strings.Contains(out.String(), "press"), out.String()
		})
		for _, in := range input {
			if _, err := ptm.Write([]byte(in)); err != nil {
				t.Errorf("typing %q: %v", in, err)
			}
		}
		eventually(t, 10*time.Second, "the terminal's echo", func() (bool, string) {
			return strings.Count(out.String(), strings.TrimSpace(input[len(input)-1])) >= 2, out.String() // the terminal's echo and cat's
		})
		_ = cmd.Process.Kill()
	}
	err = cmd.Wait()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("killed after 20 s: %w", err)
	}
	return out.String(), err
}

// openPTY opens a pseudo-terminal pair of rows x cols (/dev/ptmx, as
// posix_openpt, grantpt and unlockpt do).
func openPTY(rows, cols uint16) (ptm, pts *os.File, err error) {
	ptm, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("ptsname: %w", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		ptm.Close()
		return nil, nil, err
	}
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		ptm.Close()
		pts.Close()
		return nil, nil, fmt.Errorf("setting the terminal's size: %w", err)
	}
	return ptm, pts, nil
}
