package e2e

// End-to-end tests of issue 3: readiness and liveness probes of every kind,
// restarts with the kubelet's back-off, lifecycle hooks, native sidecars,
// `up --wait` and `up -f`, and the status, logs and exec commands.
//
// Every test registers `podrun down` for what it creates before it runs
// `podrun up`, and stops every process it starts by PID, so that the suite's
// leak check stays clean when a test fails. Helpers are prefixed sv.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// sleepLoop is the tail of an app script: idle until SIGTERM, then exit 0
// (the trap runs once the current `sleep 0.1` returns).
const sleepLoop = `trap 'exit 0' TERM; while true; do sleep 0.1; done`

// ---- helpers ----

// runUpTimed writes yaml to a manifest, registers its down, and runs `podrun up
// extra... FILE`; it returns how long up took.
func runUpTimed(t *testing.T, name, yaml string, extra ...string) (file, stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	file = H.WriteManifest(t, name+".yaml", yaml)
	downOnCleanup(t, file)
	start := time.Now()
	stdout, stderr, code = H.Podrun(t, "", append(append([]string{"up"}, extra...), file)...)
	return file, stdout, stderr, code, time.Since(start)
}

// mustRunUpTimed is runUpTimed that fails the test unless up exits 0.
func mustRunUpTimed(t *testing.T, name, yaml string, extra ...string) (file, stdout string, took time.Duration) {
	t.Helper()
	file, stdout, stderr, code, took := runUpTimed(t, name, yaml, extra...)
	if code != 0 {
		t.Fatalf("podrun up %s: exit %d, want 0; stderr:\n%s", name, code, stderr)
	}
	return file, stdout, took
}

// podrunQuiet runs podrun without logging the call (for polling loops) and
// returns its stdout and exit code.
func podrunQuiet(t *testing.T, args ...string) (string, int) {
	t.Helper()
	H.require(t)
	stdout, _, code, _ := H.run(t, "", 30*time.Second, args...)
	return stdout, code
}

// podrunWithTimeout is H.Podrun with its own timeout: past it the process is killed by
// PID and timedOut is true (the test is not failed for it).
func podrunWithTimeout(t *testing.T, stdin string, timeout time.Duration, args ...string) (stdout, stderr string, code int, timedOut bool) {
	t.Helper()
	H.require(t)
	start := time.Now()
	stdout, stderr, code, timedOut = H.run(t, stdin, timeout, args...)
	t.Logf("$ podrun %s\n[exit %d after %v, timed out: %v]\n--- stdout:\n%s--- stderr:\n%s", strings.Join(args, " "),
		code, time.Since(start).Round(time.Millisecond), timedOut, e2eClip(stdout), e2eClip(stderr))
	return stdout, stderr, code, timedOut
}

// decodePod decodes `podrun status -o json` output.
func decodePod(t *testing.T, out string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(out), &pod); err != nil {
		t.Fatalf("decoding `podrun status -o json` output %q: %v", out, err)
	}
	if pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Errorf("podrun status -o json: kind %q apiVersion %q, want Pod v1", pod.Kind, pod.APIVersion)
	}
	return pod
}

// podStatus runs `podrun status NAME -o json` (logged) and decodes it.
func podStatus(t *testing.T, name string) corev1.Pod {
	t.Helper()
	stdout, stderr, code := H.Podrun(t, "", "status", name, "-o", "json")
	if code != 0 {
		t.Fatalf("podrun status %s -o json: exit %d; stderr:\n%s", name, code, stderr)
	}
	return decodePod(t, stdout)
}

// waitStatus polls `podrun status NAME -o json` (not logged) until cond
// holds for the pod and returns it; cond also says what it saw. Past timeout
// it fails the test with what.
func waitStatus(t *testing.T, name string, timeout time.Duration, what string, cond func(corev1.Pod) (bool, string)) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, timeout, what, func() (bool, string) {
		out, code := podrunQuiet(t, "status", name, "-o", "json")
		if code != 0 {
			return false, fmt.Sprintf("podrun status: exit %d", code)
		}
		pod = decodePod(t, out)
		return cond(pod)
	})
	return pod
}

// quietPsRow is psRow for polling (not logged): the fields of pod
// default/name's row in `podrun ps`, or nil.
func quietPsRow(t *testing.T, name string) []string {
	t.Helper()
	out, _ := podrunQuiet(t, "ps")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 7 && f[0] == "default" && (f[1] == name || f[1] == staticPodName(name)) {
			return f
		}
	}
	return nil
}

// execIn runs cmd in container (the first app container when "") of the
// running pod default/pod and returns its stdout; it fails the test unless
// the command exits 0.
func execIn(t *testing.T, pod, container string, cmd ...string) string {
	t.Helper()
	args := []string{"exec", pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	stdout, stderr, code := H.Podrun(t, "", append(append(args, "--"), cmd...)...)
	if code != 0 {
		t.Fatalf("podrun exec %s -c %q -- %v: exit %d; stderr:\n%s", pod, container, cmd, code, stderr)
	}
	return stdout
}

// podCondition returns the pod's condition of type ct, or nil.
func podCondition(pod corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// containerStatus returns the status of container name (app or init), or nil.
func containerStatus(pod corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// mustContainerStatus is containerStatus that fails the test when the container has no status.
func mustContainerStatus(t *testing.T, pod corev1.Pod, name string) *corev1.ContainerStatus {
	t.Helper()
	cs := containerStatus(pod, name)
	if cs == nil {
		t.Fatalf("status of pod %s has no status for container %q: %+v", pod.Name, name, pod.Status)
	}
	return cs
}

// eventually polls cond every 250 ms until it holds; past timeout it
// fails the test with what and cond's last description.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, seen)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// podrunProc is a podrun process running in the background.
type podrunProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
}

// startPodrun starts podrun in the background (H.Start); when the test ends the
// process is sent SIGTERM by PID (SIGKILL if it does not exit) and reaped.
func startPodrun(t *testing.T, args ...string) *podrunProc {
	t.Helper()
	// Registered after H.Start's cleanup, so trackProcess's runs before it.
	return trackProcess(t, H.Start(t, args...))
}

// trackProcess reaps the started cmd in the background; when the test ends the
// process is sent SIGTERM by PID (SIGKILL if it does not exit).
func trackProcess(t *testing.T, cmd *exec.Cmd) *podrunProc {
	p := &podrunProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t, 30*time.Second) })
	return p
}

func (p *podrunProc) stdout() string { return p.cmd.Stdout.(*CmdOutput).String() }
func (p *podrunProc) stderr() string { return p.cmd.Stderr.(*CmdOutput).String() }

func (p *podrunProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to exit.
func (p *podrunProc) wait(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop sends SIGTERM by PID and waits; past timeout it sends SIGKILL.
func (p *podrunProc) stop(t *testing.T, timeout time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if p.wait(timeout) {
		return
	}
	t.Errorf("podrun pid %d did not exit within %v of SIGTERM: killing it", p.cmd.Process.Pid, timeout)
	_ = p.cmd.Process.Kill()
	p.wait(15 * time.Second)
}

// terminate sends SIGTERM by PID and returns the exit code and how long
// the process took to exit (it fails the test past timeout).
func (p *podrunProc) terminate(t *testing.T, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("kill -TERM %d: %v", p.cmd.Process.Pid, err)
	}
	if !p.wait(timeout) {
		t.Fatalf("podrun pid %d did not exit within %v of SIGTERM; stderr:\n%s", p.cmd.Process.Pid, timeout, p.stderr())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
}

// upForeground writes yaml to a manifest, registers its down, starts
// `podrun up -f extra... FILE` and waits until it supervises.
func upForeground(t *testing.T, name, yaml string, extra ...string) (file string, p *podrunProc) {
	t.Helper()
	file = H.WriteManifest(t, name+".yaml", yaml)
	downOnCleanup(t, file)
	p = startPodrun(t, append(append([]string{"up", "--foreground"}, extra...), file)...)
	eventually(t, 90*time.Second, "podrun up -f supervising", func() (bool, string) {
		if p.exited() {
			t.Fatalf("podrun up -f exited (%v) before supervising; stdout:\n%s\nstderr:\n%s", p.cmd.ProcessState, p.stdout(), p.stderr())
		}
		return strings.Contains(p.stderr(), "supervising"), "stderr:\n" + p.stderr()
	})
	return file, p
}

// containerLogDir is the log directory of a container of pod.
func containerLogDir(pod corev1.Pod, container string) string {
	return filepath.Join(H.LogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
}

// firstLogTime returns the time of the first record of a CRI log file,
// and false while the file has no complete first line.
func firstLogTime(path string) (time.Time, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	line, _, ok := strings.Cut(string(b), "\n")
	if !ok {
		return time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, strings.Fields(line + " x")[0])
	return ts, err == nil
}

// checkPodGone checks that nothing of pod default/name is left: no containers, no
// network namespace, no pod directory, no row in `ps -a`.
func checkPodGone(t *testing.T, name, uid string) {
	t.Helper()
	if ctrs := podContainers(t, name); len(ctrs) != 0 {
		var ids []string
		for _, c := range ctrs {
			ids = append(ids, c.ID())
		}
		t.Errorf("containers of %s left: %v", name, ids)
	}
	if uid != "" {
		if listNetns(t)["podrun-"+uid] {
			t.Errorf("netns /run/netns/podrun-%s of %s left", uid, name)
		}
		if _, err := os.Lstat(filepath.Join(H.Root, "pods", uid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pod directory of %s left (err %v)", name, err)
		}
	}
	if row := psRow(t, name, "-a"); row != nil {
		t.Errorf("podrun ps -a still lists %s: %q", name, row)
	}
}

// lineWith returns the first line of s that contains sub, or "".
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// grpcHealthImage builds e2e/testdata/grpchealth and imports an image with it
// as /bin/grpchealth.
func grpcHealthImage(t *testing.T) string {
	t.Helper()
	H.require(t)
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "grpchealth")
	cmd := exec.Command(goBin, "build", "-o", bin, "./e2e/testdata/grpchealth")
	cmd.Dir = ".." // the module root (tests run in e2e/)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building grpchealth: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return H.ImportImage(t, testimage.Config{
		Ref:   "podrun.test/grpchealth:1",
		Files: []testimage.File{{Path: "/bin/grpchealth", Mode: 0o755, Data: data}},
	})
}

// ---- 1. an HTTP readiness probe on a port that opens after 2 s ----

func TestSuperviseReadinessHTTP(t *testing.T) {
	H.require(t)
	_, stdout, took := mustRunUpTimed(t, "ready-http", `apiVersion: v1
kind: Pod
metadata:
  name: sv-ready-http
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: `+H.Image+`
    ports:
    - {name: http, containerPort: 8080}
    command:
    - sh
    - -c
    - |
      trap 'exit 0' TERM
      mkdir -p /tmp/www; echo sv-ready > /tmp/www/index.html
      sleep 2
      httpd -f -p 8080 -h /tmp/www &
      wait
    readinessProbe:
      httpGet: {path: /index.html, port: http}
      periodSeconds: 1
`)
	if took < 1900*time.Millisecond {
		t.Errorf("up returned after %v, before the port opened (2 s after start): it did not wait for readiness", took)
	}
	if took > 20*time.Second {
		t.Errorf("up took %v with a 1 s readiness period and a port open after 2 s", took)
	}
	if !strings.Contains(stdout, "pod/default/sv-ready-http created (Running)") {
		t.Errorf("up stdout = %q, want pod/default/sv-ready-http created (Running)", stdout)
	}

	pod := podStatus(t, "sv-ready-http")
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %q, want Running", pod.Status.Phase)
	}
	sched, ready, cready := podCondition(pod, corev1.PodScheduled), podCondition(pod, corev1.PodReady), podCondition(pod, corev1.ContainersReady)
	if sched == nil || ready == nil || cready == nil {
		t.Fatalf("conditions %+v: want PodScheduled, Ready and ContainersReady", pod.Status.Conditions)
	}
	for _, c := range []*corev1.PodCondition{sched, ready, cready} {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s = %s (reason %q), want True", c.Type, c.Status, c.Reason)
		}
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
	// The times have a resolution of one second; readiness came >= 2 s after scheduling.
	for _, c := range []*corev1.PodCondition{ready, cready} {
		if d := c.LastTransitionTime.Sub(sched.LastTransitionTime.Time); d < time.Second {
			t.Errorf("condition %s lastTransitionTime %v is only %v after PodScheduled's %v; readiness came >= 2 s later",
				c.Type, c.LastTransitionTime, d, sched.LastTransitionTime)
		}
	}
	if !ready.LastTransitionTime.Equal(&cready.LastTransitionTime) {
		t.Errorf("Ready at %v, ContainersReady at %v: want the same time", ready.LastTransitionTime, cready.LastTransitionTime)
	}
	if pod.Status.StartTime == nil {
		t.Errorf("status.startTime not set")
	}
	cs := mustContainerStatus(t, pod, "web")
	if !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("container web: ready=%v started=%v, want both true", cs.Ready, cs.Started)
	}
	if cs.State.Running == nil {
		t.Errorf("container web state = %+v, want running", cs.State)
	} else if cs.State.Running.StartedAt.After(ready.LastTransitionTime.Time) {
		t.Errorf("container started at %v, after the pod became Ready at %v", cs.State.Running.StartedAt, ready.LastTransitionTime)
	}
	if cs.RestartCount != 0 || cs.ContainerID == "" || cs.ImageID == "" {
		t.Errorf("container web: restartCount %d, containerID %q, imageID %q; want 0 and both set", cs.RestartCount, cs.ContainerID, cs.ImageID)
	}
	row := psRow(t, "sv-ready-http")
	if row == nil || row[2] != "1/1" || row[3] != "Running" {
		t.Errorf("podrun ps row = %q, want READY 1/1 and STATUS Running", row)
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil {
		t.Fatalf("status.podIP = %q, not an IP", pod.Status.PodIP)
	}
	if body := httpGetRetry(t, "http://"+net.JoinHostPort(ip.String(), "8080")+"/index.html"); body != "sv-ready\n" {
		t.Errorf("GET of the probed page = %q, want %q", body, "sv-ready\n")
	}
}

// ---- 2. exec, httpGet, tcpSocket and grpc readiness probes pass and fail ----

// probePod is a pod whose container (named after the probe kind) has the
// given readinessProbe handler (YAML at 6 spaces) and command.
func probePod(name, container, image, command, ports, handler string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: ` + container + `
    image: ` + image + `
    command: ` + command + `
    ports: ` + ports + `
    readinessProbe:
` + handler + `      periodSeconds: 1
      failureThreshold: 1
`
}

func TestSuperviseProbeKinds(t *testing.T) {
	H.require(t)
	grpcImage := grpcHealthImage(t)
	httpd := `["sh", "-c", "trap 'exit 0' TERM; mkdir -p /tmp/www; echo sv-ok > /tmp/www/index.html; httpd -f -p 8080 -h /tmp/www & wait"]`
	touch := `["sh", "-c", "touch /tmp/ready; ` + sleepLoop + `"]`
	grpc := `["/bin/grpchealth", "-port", "50051", "-unhealthy", "down"]`
	web := `[{name: web, containerPort: 8080}]`
	type probeCase struct {
		kind, container, image, command, ports string
		pass, fail                             string // the probe handlers
		failOutput                             string // in up's error for the failing probe
	}
	cases := []probeCase{
		{kind: "exec", container: "exec-app", image: H.Image, command: touch, ports: "[]",
			pass:       "      exec: {command: [\"sh\", \"-c\", \"test -f /tmp/ready\"]}\n",
			fail:       "      exec: {command: [\"sh\", \"-c\", \"echo sv-exec-probe-says-no; exit 1\"]}\n",
			failOutput: "sv-exec-probe-says-no"},
		{kind: "http", container: "http-app", image: H.Image, command: httpd, ports: web,
			pass:       "      httpGet: {path: /index.html, port: web}\n",
			fail:       "      httpGet: {path: /sv-missing.html, port: 8080}\n",
			failOutput: "statuscode: 404"},
		{kind: "tcp", container: "tcp-app", image: H.Image, command: httpd, ports: web,
			pass:       "      tcpSocket: {port: 8080}\n",
			fail:       "      tcpSocket: {port: 8089}\n",
			failOutput: "connection refused"},
		{kind: "grpc", container: "grpc-app", image: grpcImage, command: grpc, ports: "[]",
			pass:       "      grpc: {port: 50051}\n",
			fail:       "      grpc: {port: 50051, service: down}\n",
			failOutput: "NOT_SERVING"},
	}

	t.Run("pass", func(t *testing.T) {
		var docs []string
		for _, c := range cases {
			docs = append(docs, probePod("sv-probe-"+c.kind+"-ok", c.container, c.image, c.command, c.ports, c.pass))
		}
		_, stdout, _ := mustRunUpTimed(t, "probes-ok", strings.Join(docs, "---\n"))
		for _, c := range cases {
			name := "sv-probe-" + c.kind + "-ok"
			if !strings.Contains(stdout, "pod/default/"+name+" created (Running)") {
				t.Errorf("up stdout = %q, want pod/default/%s created (Running)", stdout, name)
			}
			row := psRow(t, name)
			if row == nil || row[2] != "1/1" || row[3] != "Running" {
				t.Errorf("%s probe: podrun ps row = %q, want READY 1/1 and STATUS Running", c.kind, row)
			}
			pod := podStatus(t, name)
			if cs := mustContainerStatus(t, pod, c.container); !cs.Ready {
				t.Errorf("%s probe: container %s not ready: %+v", c.kind, c.container, cs)
			}
			if r := podCondition(pod, corev1.PodReady); r == nil || r.Status != corev1.ConditionTrue {
				t.Errorf("%s probe: Ready condition %+v, want True", c.kind, r)
			}
		}
	})

	t.Run("fail", func(t *testing.T) {
		before := captureHostState(t)
		var docs []string
		for _, c := range cases {
			// The delay lets the servers listen first: the failure is the probe's own.
			docs = append(docs, probePod("sv-probe-"+c.kind+"-bad", c.container, c.image, c.command, c.ports,
				c.fail+"      initialDelaySeconds: 2\n"))
		}
		_, stdout, stderr, code, took := runUpTimed(t, "probes-bad", strings.Join(docs, "---\n"), "--timeout", "8s")
		if code != 1 {
			t.Errorf("up --timeout 8s of pods whose readiness probes fail: exit %d, want 1", code)
		}
		if took < 7*time.Second {
			t.Errorf("up gave up after %v, before its 8 s timeout", took)
		}
		for _, c := range cases {
			name := "sv-probe-" + c.kind + "-bad"
			if strings.Contains(stdout, name+" created") {
				t.Errorf("up stdout = %q: a pod that never got ready reported as created", stdout)
			}
			if !strings.Contains(stderr, name) {
				t.Errorf("up stderr does not name the pod %s", name)
			}
			line := lineWith(stderr, fmt.Sprintf("container %q:", c.container))
			if line == "" {
				t.Errorf("%s probe: up stderr has no line naming container %q", c.kind, c.container)
				continue
			}
			if !strings.Contains(line, "readiness probe failed") || !strings.Contains(line, c.failOutput) {
				t.Errorf("%s probe: up stderr says %q, want it to say readiness probe failed with %q", c.kind, line, c.failOutput)
			}
			if ctrs := podContainers(t, name); len(ctrs) != 0 {
				t.Errorf("%d containers of %s left after the failed up (no rollback)", len(ctrs), name)
			}
			if row := psRow(t, name, "-a"); row != nil {
				t.Errorf("podrun ps -a lists the rolled-back pod: %q", row)
			}
		}
		checkNothingLeft(t, before, "the failed pods")
	})

	t.Run("the last failure's output is reported", func(t *testing.T) {
		// The first attempts find no server (connection refused); from 2 s on
		// every attempt gets a 404. Up's error must quote the probe's last output.
		_, _, stderr, code, _ := runUpTimed(t, "probe-last", probePod("sv-probe-last", "late-app", H.Image,
			`["sh", "-c", "trap 'exit 0' TERM; mkdir -p /tmp/www; sleep 2; httpd -f -p 8080 -h /tmp/www & wait"]`, "[]",
			"      httpGet: {path: /sv-missing.html, port: 8080}\n"), "--timeout", "7s")
		if code != 1 {
			t.Errorf("up --timeout 7s: exit %d, want 1", code)
		}
		line := lineWith(stderr, `container "late-app":`)
		if !strings.Contains(line, "readiness probe failed") || !strings.Contains(line, "statuscode: 404") {
			t.Errorf("up stderr says %q: want the last probe output (HTTP probe failed with statuscode: 404), "+
				"not the first failure's, which was stale for 4 s", line)
		}
		if ctrs := podContainers(t, "sv-probe-last"); len(ctrs) != 0 {
			t.Errorf("%d containers of sv-probe-last left after the failed up", len(ctrs))
		}
	})
}

// ---- 3. liveness failure under up -f, then SIGTERM ----

func TestSuperviseLivenessRestart(t *testing.T) {
	H.require(t)
	// Each instance counts itself in an emptyDir (kept across restarts); the
	// first one removes its liveness file after 2 s.
	_, up := upForeground(t, "liveness", `apiVersion: v1
kind: Pod
metadata:
  name: sv-liveness
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - {name: state, emptyDir: {}}
  containers:
  - name: app
    image: `+H.Image+`
    volumeMounts:
    - {name: state, mountPath: /state}
    command:
    - sh
    - -c
    - |
      n=$(( $(cat /state/n 2>/dev/null || echo 0) + 1 )); echo $n > /state/n
      trap "echo sv-instance-$n got TERM; exit 0" TERM
      touch /tmp/alive
      echo "sv-instance-$n started"
      if [ $n = 1 ]; then sleep 2; echo "sv-instance-$n drops its liveness file"; rm /tmp/alive; fi
      while true; do sleep 0.1; done
    livenessProbe:
      exec: {command: ["cat", "/tmp/alive"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
`)
	if out := up.stdout(); !strings.Contains(out, "pod/default/sv-liveness created (Running)") {
		t.Errorf("up -f stdout = %q, want created (Running)", out)
	}
	pod := podStatus(t, "sv-liveness")
	uid := string(pod.UID)
	if cs := mustContainerStatus(t, pod, "app"); cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("right after up: container app restartCount %d state %+v, want 0 and running", cs.RestartCount, cs.State)
	}

	// Killed at about 3 s, restarted at once (its first restart).
	eventually(t, 45*time.Second, "RESTARTS >= 1 in podrun ps", func() (bool, string) {
		row := quietPsRow(t, "sv-liveness")
		if len(row) < 5 {
			return false, fmt.Sprintf("row %q", row)
		}
		n, err := strconv.Atoi(row[4])
		return err == nil && n >= 1 && row[3] == "Running", fmt.Sprintf("row %q", row)
	})
	row := psRow(t, "sv-liveness")
	if row == nil || row[4] != "1" || row[3] != "Running" {
		t.Errorf("podrun ps row = %q, want STATUS Running and RESTARTS 1", row)
	}
	if !strings.Contains(up.stderr(), "liveness probe failed") {
		t.Errorf("up -f stderr does not report the liveness failure:\n%s", up.stderr())
	}
	// The second instance must have started (its log says so).
	eventually(t, 10*time.Second, "second instance's log", func() (bool, string) {
		out, _ := podrunQuiet(t, "logs", "sv-liveness")
		return strings.Contains(out, "sv-instance-2 started"), out
	})
	prev, stderr, code := H.Podrun(t, "", "logs", "sv-liveness", "--previous")
	if code != 0 {
		t.Fatalf("logs --previous: exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"sv-instance-1 started", "sv-instance-1 drops its liveness file", "sv-instance-1 got TERM"} {
		if !strings.Contains(prev, want) {
			t.Errorf("logs --previous = %q, want a line %q", prev, want)
		}
	}
	if strings.Contains(prev, "sv-instance-2") {
		t.Errorf("logs --previous = %q shows the current instance", prev)
	}
	cur, _, code := H.Podrun(t, "", "logs", "sv-liveness")
	if code != 0 || !strings.Contains(cur, "sv-instance-2 started") || strings.Contains(cur, "sv-instance-1") {
		t.Errorf("logs (exit %d) = %q, want only the second instance's output", code, cur)
	}
	pod = podStatus(t, "sv-liveness")
	cs := mustContainerStatus(t, pod, "app")
	if cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
		t.Errorf("container app: restartCount %d, state %+v, lastState %+v; want 1, running, terminated",
			cs.RestartCount, cs.State, cs.LastTerminationState)
	}

	// SIGTERM: the supervisor terminates the pod gracefully and exits 0.
	code, took := up.terminate(t, 30*time.Second)
	if code != 0 {
		t.Errorf("up -f after SIGTERM: exit %d, want 0; stderr:\n%s", code, up.stderr())
	}
	if took > 10*time.Second {
		t.Errorf("up -f took %v to stop a pod that exits on SIGTERM", took)
	}
	checkPodGone(t, "sv-liveness", uid)
	// Gracefully: the running instance got SIGTERM (its log is kept).
	log1 := strings.Join(containerLog(t, pod, "app", 1), "\n")
	if !strings.Contains(log1, "sv-instance-2 got TERM") {
		t.Errorf("the second instance's log %q does not show SIGTERM: not terminated gracefully", log1)
	}
}

// ---- 4. crash loop with back-off ----

func TestSuperviseCrashLoopBackOff(t *testing.T) {
	H.require(t)
	_, up := upForeground(t, "crash", `apiVersion: v1
kind: Pod
metadata:
  name: sv-crash
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "echo sv-crash-x; exit 1"]
`, "--wait=running")
	podStatus(t, "sv-crash")

	// The first exit restarts it at once; the second waits 10 s.
	eventually(t, 8*time.Second, "STATUS CrashLoopBackOff in podrun ps", func() (bool, string) {
		row := quietPsRow(t, "sv-crash")
		return len(row) > 3 && row[3] == "CrashLoopBackOff", fmt.Sprintf("row %q", row)
	})
	start := time.Now()
	row := psRow(t, "sv-crash")
	if row == nil || row[3] != "CrashLoopBackOff" || row[2] != "0/1" || row[4] != "1" {
		t.Errorf("podrun ps row = %q, want READY 0/1 STATUS CrashLoopBackOff RESTARTS 1", row)
	}
	pod := podStatus(t, "sv-crash")
	cs := mustContainerStatus(t, pod, "app")
	wantMsg := fmt.Sprintf("back-off 10s restarting failed container=app pod=sv-crash_default(%s)", pod.UID)
	if w := cs.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != wantMsg {
		t.Errorf("container app state = %+v, want waiting with reason CrashLoopBackOff and message %q", cs.State, wantMsg)
	}
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("container app lastState = %+v, want terminated with exitCode 1 and reason Error", cs.LastTerminationState)
	}
	if cs.Ready || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("ready %v, phase %q: want not ready, Running (restartPolicy Always restarts it)", cs.Ready, pod.Status.Phase)
	}
	if time.Since(start) > 8*time.Second {
		t.Fatalf("the checks of the first back-off took %v: too slow to be in it", time.Since(start))
	}

	// The fourth attempt starts at once + 10 s + 20 s after the first. Only
	// the previous attempt's log is kept, so each start is read as it comes.
	dir := containerLogDir(pod, "app")
	starts := make([]time.Time, 4)
	eventually(t, 50*time.Second, "the fourth attempt's log "+filepath.Join(dir, "3.log"), func() (bool, string) {
		for i := range starts {
			if ts, ok := firstLogTime(filepath.Join(dir, fmt.Sprintf("%d.log", i))); ok && starts[i].IsZero() {
				starts[i] = ts
				if got := containerLog(t, pod, "app", i); len(got) != 1 || got[0] != "sv-crash-x" {
					t.Errorf("attempt %d's log = %q, want one line sv-crash-x", i, got)
				}
			}
		}
		return !starts[3].IsZero(), fmt.Sprintf("starts %v", starts)
	})
	t.Logf("attempts started at %v", starts)
	gaps := []struct {
		from     int
		min, max time.Duration
		what     string
	}{{0, 0, 3 * time.Second, "at once"}, {1, 9 * time.Second, 16 * time.Second, "about 10 s"}, {2, 18 * time.Second, 30 * time.Second, "about 20 s"}}
	for _, g := range gaps {
		a, b := starts[g.from], starts[g.from+1]
		if a.IsZero() || b.IsZero() {
			t.Errorf("restart %d: the logs of attempts %d and %d are not both kept", g.from+1, g.from, g.from+1)
			continue
		}
		if d := b.Sub(a); d < g.min || d > g.max {
			t.Errorf("restart %d came %v after attempt %d started, want %s (%v-%v)", g.from+1, d, g.from, g.what, g.min, g.max)
		}
	}

	waitStatus(t, "sv-crash", 5*time.Second, "CrashLoopBackOff with 3 restarts", func(p corev1.Pod) (bool, string) {
		c := containerStatus(p, "app")
		return c != nil && c.RestartCount == 3 && c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff",
			fmt.Sprintf("%+v", c)
	})
	row = psRow(t, "sv-crash")
	if row == nil || row[3] != "CrashLoopBackOff" || row[4] != "3" {
		t.Errorf("podrun ps row = %q, want STATUS CrashLoopBackOff RESTARTS 3", row)
	}
	pod = podStatus(t, "sv-crash")
	if cs := mustContainerStatus(t, pod, "app"); cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 ||
		cs.State.Waiting == nil || !strings.HasPrefix(cs.State.Waiting.Message, "back-off 40s restarting failed container=app ") {
		t.Errorf("after 3 restarts: state %+v, lastState = %+v, want back-off 40s over a termination with exitCode 1", cs.State, cs.LastTerminationState)
	}
	if code, _ := up.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("up -f after SIGTERM: exit %d, want 0; stderr:\n%s", code, up.stderr())
	}
	checkPodGone(t, "sv-crash", string(pod.UID))
}

// ---- 5. lifecycle hooks ----

func TestSuperviseHooks(t *testing.T) {
	H.require(t)
	t.Run("postStart writes a file the app reads", func(t *testing.T) {
		mustRunUpTimed(t, "poststart", `apiVersion: v1
kind: Pod
metadata:
  name: sv-poststart
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command:
    - sh
    - -c
    - |
      trap 'exit 0' TERM
      while [ ! -f /tmp/poststart ]; do sleep 0.1; done
      echo "app read: $(cat /tmp/poststart)"
      while true; do sleep 0.1; done
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo sv-poststart-was-here > /tmp/poststart"]}
`)
		eventually(t, 10*time.Second, "the app's log line", func() (bool, string) {
			out, _ := podrunQuiet(t, "logs", "sv-poststart")
			return strings.Contains(out, "app read: sv-poststart-was-here"), out
		})
		pod := podStatus(t, "sv-poststart")
		if cs := mustContainerStatus(t, pod, "app"); cs.State.Running == nil || !cs.Ready || cs.RestartCount != 0 {
			t.Errorf("container app: %+v, want running, ready, no restart", cs)
		}
	})

	t.Run("a failing postStart kills the container", func(t *testing.T) {
		_, stdout, stderr, code, took := runUpTimed(t, "poststart-fail", `apiVersion: v1
kind: Pod
metadata:
  name: sv-poststart-fail
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 3' TERM; while true; do sleep 0.1; done"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo sv-hook-fails; exit 7"]}
`)
		if code != 1 {
			t.Errorf("up: exit %d, want 1", code)
		}
		if took > 20*time.Second {
			t.Errorf("up took %v", took)
		}
		if !strings.Contains(stderr, "postStart") || !strings.Contains(stderr, "sv-hook-fails") {
			t.Errorf("up stderr does not report the postStart failure and its output (sv-hook-fails)")
		}
		if strings.Contains(stdout, "created (Succeeded)") || strings.Contains(stdout, "created (Running)") {
			t.Errorf("up stdout = %q", stdout)
		}
		pod := podStatus(t, "sv-poststart-fail")
		if pod.Status.Phase != corev1.PodFailed {
			t.Errorf("phase = %q, want Failed", pod.Status.Phase)
		}
		cs := mustContainerStatus(t, pod, "app")
		if term := cs.State.Terminated; term == nil || term.ExitCode != 3 {
			t.Errorf("container app state = %+v, want terminated with the exit code of its SIGTERM trap (3)", cs.State)
		}
		if cs.RestartCount != 0 {
			t.Errorf("restartCount %d under restartPolicy Never", cs.RestartCount)
		}
	})

	t.Run("preStop exec runs before SIGTERM", func(t *testing.T) {
		host := t.TempDir()
		file, _, _ := mustRunUpTimed(t, "prestop-exec", `apiVersion: v1
kind: Pod
metadata:
  name: sv-prestop-exec
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - {name: host, hostPath: {path: `+host+`, type: Directory}}
  containers:
  - name: app
    image: `+H.Image+`
    volumeMounts:
    - {name: host, mountPath: /host}
    command: ["sh", "-c", "trap 'echo TERM >> /host/order; exit 0' TERM; while true; do sleep 0.1; done"]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo preStop >> /host/order"]}
`)
		if b, err := os.ReadFile(filepath.Join(host, "order")); err == nil {
			t.Fatalf("order file written before down: %q", b)
		}
		if d := timeDown(t, file); d > 4*time.Second {
			t.Errorf("down took %v for a pod that exits on SIGTERM", d)
		}
		b, err := os.ReadFile(filepath.Join(host, "order"))
		if err != nil {
			t.Fatalf("the hostPath file the hooks write: %v", err)
		}
		if string(b) != "preStop\nTERM\n" {
			t.Errorf("order file = %q, want the preStop line then the TERM line", b)
		}
	})

	t.Run("preStop sleep counts against the grace period", func(t *testing.T) {
		file, _, _ := mustRunUpTimed(t, "prestop-sleep", `apiVersion: v1
kind: Pod
metadata:
  name: sv-prestop-sleep
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
    lifecycle:
      preStop:
        sleep: {seconds: 3}
`)
		d := timeDown(t, file)
		// 3 s of sleep, then SIGTERM (ignored) and what is left of the 5 s: 2 s.
		if d < 4500*time.Millisecond || d >= 12*time.Second {
			t.Errorf("down took %v, want >= 4.5 s and < 12 s (3 s preStop sleep + the remaining 2 s of a 5 s grace period)", d)
		} else if d >= 7500*time.Millisecond {
			t.Errorf("down took %v, want about 5 s: the preStop sleep was not counted against the 5 s grace period (3 + 5 = 8 s)", d)
		}
		checkPodGone(t, "sv-prestop-sleep", "")
	})
}

// ---- 6. a native sidecar ----

func TestSuperviseNativeSidecar(t *testing.T) {
	H.require(t)
	host := t.TempDir()
	stopFile := filepath.Join(host, "stop")
	_, up := upForeground(t, "sidecar", `apiVersion: v1
kind: Pod
metadata:
  name: sv-sidecar
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: host, hostPath: {path: `+host+`, type: Directory}}
  initContainers:
  - name: sidecar
    image: `+H.Image+`
    restartPolicy: Always
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: host, mountPath: /host}
    command:
    - sh
    - -c
    - |
      trap 'echo sidecar stopping >> /host/stop; exit 0' TERM
      echo "sidecar started" >> /shared/sidecar
      while true; do sleep 0.1; done
    startupProbe:
      exec: {command: ["test", "-f", "/shared/sidecar"]}
      periodSeconds: 1
      failureThreshold: 10
  - name: check
    image: `+H.Image+`
    volumeMounts:
    - {name: shared, mountPath: /shared}
    command: ["sh", "-c", "echo \"check saw: $(cat /shared/sidecar)\"; test -f /shared/sidecar"]
  containers:
  - name: app
    image: `+H.Image+`
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: host, mountPath: /host}
    command:
    - sh
    - -c
    - |
      trap 'sleep 1; echo app stopping >> /host/stop; exit 0' TERM
      echo "app saw: $(cat /shared/sidecar)"
      while true; do sleep 0.1; done
`)
	pod := podStatus(t, "sv-sidecar")
	uid := string(pod.UID)
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %q, want Running", pod.Status.Phase)
	}
	if len(pod.Status.InitContainerStatuses) != 2 {
		t.Fatalf("initContainerStatuses = %+v, want sidecar and check", pod.Status.InitContainerStatuses)
	}
	side := mustContainerStatus(t, pod, "sidecar")
	if side.State.Running == nil || side.Started == nil || !*side.Started || side.RestartCount != 0 {
		t.Errorf("sidecar status %+v, want running, started, restartCount 0", side)
	}
	if check := mustContainerStatus(t, pod, "check"); check.State.Terminated == nil || check.State.Terminated.ExitCode != 0 {
		t.Errorf("init container check status %+v, want terminated with exit code 0", check.State)
	}
	if app := mustContainerStatus(t, pod, "app"); app.State.Running == nil || !app.Ready {
		t.Errorf("app status %+v, want running and ready", app)
	}
	if c := podCondition(pod, corev1.PodInitialized); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized condition %+v, want True", c)
	}
	// It started before what follows it: the init container and the app saw its file.
	if out, _, _ := H.Podrun(t, "", "logs", "sv-sidecar", "-c", "check"); !strings.Contains(out, "check saw: sidecar started") {
		t.Errorf("init container check's log = %q, want it to have seen the sidecar's file", out)
	}
	eventually(t, 5*time.Second, "the app's first log line", func() (bool, string) {
		out, _ := podrunQuiet(t, "logs", "sv-sidecar", "-c", "app")
		return strings.Contains(out, "app saw: sidecar started"), out
	})
	if row := psRow(t, "sv-sidecar"); row == nil || row[2] != "1/1" || row[3] != "Running" {
		t.Errorf("podrun ps row = %q, want READY 1/1 STATUS Running", row)
	}

	// Killed, it is restarted (at once: its first restart).
	execIn(t, "sv-sidecar", "sidecar", "kill", "1")
	waitStatus(t, "sv-sidecar", 30*time.Second, "the sidecar restarted", func(p corev1.Pod) (bool, string) {
		c := containerStatus(p, "sidecar")
		return c != nil && c.RestartCount == 1 && c.State.Running != nil, fmt.Sprintf("%+v", c)
	})
	pod = podStatus(t, "sv-sidecar")
	side = mustContainerStatus(t, pod, "sidecar")
	if side.RestartCount != 1 || side.State.Running == nil || side.LastTerminationState.Terminated == nil {
		t.Errorf("sidecar after kill: %+v, want restartCount 1, running, lastState terminated", side)
	}
	if app := mustContainerStatus(t, pod, "app"); app.RestartCount != 0 || app.State.Running == nil {
		t.Errorf("the app was disturbed by the sidecar's restart: %+v", app)
	}
	if out, _, code := H.Podrun(t, "", "exec", "sv-sidecar", "--", "cat", "/shared/sidecar"); code != 0 || out != "sidecar started\nsidecar started\n" {
		t.Errorf("exec cat /shared/sidecar (exit %d) = %q, want two starts", code, out)
	}
	if b, _ := os.ReadFile(stopFile); string(b) != "sidecar stopping\n" {
		t.Errorf("stop file after the kill = %q, want the sidecar's TERM line", b)
	}
	if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// SIGTERM: the app stops first (its TERM handler takes 1 s), then the sidecar.
	code, _ := up.terminate(t, 40*time.Second)
	if code != 0 {
		t.Errorf("up -f after SIGTERM: exit %d, want 0; stderr:\n%s", code, up.stderr())
	}
	b, err := os.ReadFile(stopFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "app stopping\nsidecar stopping\n" {
		t.Errorf("stop file = %q, want the app's line then the sidecar's: the sidecar must stop after the app", b)
	}
	checkPodGone(t, "sv-sidecar", uid)
}

// ---- 7. exec and logs -f ----

func TestSuperviseExecAndLogs(t *testing.T) {
	H.require(t)
	mustRunUpTimed(t, "exec", `apiVersion: v1
kind: Pod
metadata:
  name: sv-exec
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo sv-tick $i; sleep 0.3; done"]
`)
	// stdin reaches the command (head exits after one line, whatever EOF does).
	stdout, stderr, code, timedOut := podrunWithTimeout(t, "hello\nworld\n", 20*time.Second, "exec", "sv-exec", "-i", "--", "head", "-n", "1")
	if code != 0 || timedOut || stdout != "hello\n" {
		t.Errorf("printf 'hello\\nworld\\n' | exec -i -- head -n 1: exit %d (timed out: %v), stdout %q, want 0 and %q; stderr:\n%s",
			code, timedOut, stdout, "hello\n", stderr)
	}
	// The end of stdin reaches it too: cat exits.
	stdout, stderr, code, timedOut = podrunWithTimeout(t, "hello\n", 15*time.Second, "exec", "sv-exec", "-i", "--", "cat")
	if code != 0 || timedOut || stdout != "hello\n" {
		t.Errorf("echo hello | exec -i -- cat: exit %d (timed out and killed: %v), stdout %q; want exit 0 and %q: "+
			"the end of podrun's stdin must close the command's stdin, as kubectl exec -i does; stderr:\n%s",
			code, timedOut, stdout, "hello\n", stderr)
	}
	if _, _, code := H.Podrun(t, "", "exec", "sv-exec", "--", "sh", "-c", "exit 5"); code != 5 {
		t.Errorf("exec -- sh -c 'exit 5': exit %d, want 5", code)
	}
	stdout, stderr, code = H.Podrun(t, "", "exec", "sv-exec", "-c", "app", "--", "sh", "-c", "echo to-out; echo to-err >&2")
	if code != 0 || stdout != "to-out\n" || !strings.Contains(stderr, "to-err") || strings.Contains(stdout, "to-err") {
		t.Errorf("exec with both streams: exit %d, stdout %q, stderr %q; want to-out on stdout and to-err on stderr", code, stdout, stderr)
	}
	if _, _, code := H.Podrun(t, "", "exec", "sv-exec", "-c", "nosuch", "--", "true"); code != 2 {
		t.Errorf("exec -c nosuch: exit %d, want 2 (usage)", code)
	}

	logs := startPodrun(t, "logs", "-f", "sv-exec")
	ticks := func() []int {
		var out []int
		for _, l := range strings.Split(logs.stdout(), "\n") {
			if n, ok := strings.CutPrefix(l, "sv-tick "); ok {
				if i, err := strconv.Atoi(n); err == nil {
					out = append(out, i)
				}
			}
		}
		return out
	}
	eventually(t, 10*time.Second, "logs -f prints the ticks so far", func() (bool, string) {
		return len(ticks()) > 0, logs.stdout()
	})
	first := ticks()
	eventually(t, 10*time.Second, "logs -f follows: 4 more ticks", func() (bool, string) {
		return len(ticks()) >= len(first)+4, logs.stdout()
	})
	if logs.exited() {
		t.Errorf("logs -f exited on its own: %v", logs.cmd.ProcessState)
	}
	got := ticks()
	for i, n := range got {
		if n != i+1 {
			t.Errorf("logs -f printed ticks %v: want 1, 2, 3 ... without gaps or repeats", got)
			break
		}
	}
	if code, _ := logs.terminate(t, 10*time.Second); code != 0 {
		t.Errorf("logs -f after SIGTERM: exit %d, want 0", code)
	}

	stdout, _, code = H.Podrun(t, "", "logs", "sv-exec", "--tail", "2", "--timestamps")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("logs --tail 2 --timestamps: exit %d, %d lines %q, want 2", code, len(lines), lines)
	}
	for _, l := range lines {
		ts, text, _ := strings.Cut(l, " ")
		if !validRFC3339Nano(ts) || !strings.HasPrefix(text, "sv-tick ") {
			t.Errorf("logs --timestamps line %q, want <RFC 3339 time> sv-tick N", l)
		}
	}
}

// ---- 8. up --wait ----

func TestSuperviseWaitModes(t *testing.T) {
	H.require(t)
	t.Run("running returns before a slow readiness probe passes", func(t *testing.T) {
		_, stdout, took := mustRunUpTimed(t, "wait-running", `apiVersion: v1
kind: Pod
metadata:
  name: sv-wait-running
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 6; touch /tmp/ready; while true; do sleep 0.1; done"]
    readinessProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 1
`, "--wait=running")
		if took >= 5*time.Second {
			t.Errorf("up --wait=running took %v: it waited for the readiness probe (which passes after 6 s)", took)
		}
		if !strings.Contains(stdout, "pod/default/sv-wait-running created (Running)") {
			t.Errorf("up stdout = %q, want created (Running)", stdout)
		}
		if _, _, code := H.Podrun(t, "", "exec", "sv-wait-running", "--", "test", "-f", "/tmp/ready"); code != 1 {
			t.Errorf("exec test -f /tmp/ready: exit %d, want 1 (the probe cannot have passed yet)", code)
		}
		pod := podStatus(t, "sv-wait-running")
		cs := mustContainerStatus(t, pod, "app")
		if cs.Ready || cs.State.Running == nil || cs.Started == nil || !*cs.Started {
			t.Errorf("container app: ready %v, started %v, state %+v; want running, started, not ready", cs.Ready, cs.Started, cs.State)
		}
		if c := podCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
			t.Errorf("Ready condition %+v, want False", c)
		}
		if row := psRow(t, "sv-wait-running"); row == nil || row[2] != "0/1" || row[3] != "Running" {
			t.Errorf("podrun ps row = %q, want READY 0/1 STATUS Running", row)
		}
	})
	t.Run("none is accepted", func(t *testing.T) {
		_, stdout, _ := mustRunUpTimed(t, "wait-none", `apiVersion: v1
kind: Pod
metadata:
  name: sv-wait-none
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
`, "--wait=none")
		if !strings.Contains(stdout, "pod/default/sv-wait-none created (Running)") {
			t.Errorf("up --wait=none stdout = %q, want created (Running)", stdout)
		}
		if row := psRow(t, "sv-wait-none"); row == nil || row[3] != "Running" {
			t.Errorf("podrun ps row = %q, want STATUS Running", row)
		}
	})
	t.Run("an unknown value is a usage error", func(t *testing.T) {
		_, _, stderr, code, _ := runUpTimed(t, "wait-bogus", `apiVersion: v1
kind: Pod
metadata:
  name: sv-wait-bogus
spec:
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
`, "--wait=bogus")
		if code != 2 || !strings.Contains(stderr, "--wait") {
			t.Errorf("up --wait=bogus: exit %d, stderr %q; want 2 and a message about --wait", code, stderr)
		}
		if row := psRow(t, "sv-wait-bogus", "-a"); row != nil {
			t.Errorf("up --wait=bogus created the pod: %q", row)
		}
	})
}

// TestSuperviseInitCrashLoopBackOff: a failing init container of a
// restartPolicy Always pod is restarted with the back-off by the same loop
// as app containers, so `ps` shows Init:CrashLoopBackOff and `status` its
// waiting reason and last exit; SIGTERM to the waiting `up -f` undoes the
// whole pod.
func TestSuperviseInitCrashLoopBackOff(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "initcrash.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: sv-initcrash
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: setup
    image: `+H.Image+`
    command: ["sh", "-c", "echo sv-initcrash-x; exit 3"]
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`)
	downOnCleanup(t, file)
	up := startPodrun(t, "up", "--foreground", "--timeout", "120s", file)
	eventually(t, 9*time.Second, "STATUS Init:CrashLoopBackOff in podrun ps", func() (bool, string) {
		row := quietPsRow(t, "sv-initcrash")
		return len(row) > 3 && row[3] == "Init:CrashLoopBackOff", fmt.Sprintf("row %q", row)
	})
	pod := podStatus(t, "sv-initcrash")
	uid := string(pod.UID)
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase %q, want Pending while an init container crash-loops", pod.Status.Phase)
	}
	cs := mustContainerStatus(t, pod, "setup")
	if w := cs.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" {
		t.Errorf("init container setup state = %+v, want waiting with reason CrashLoopBackOff", cs.State)
	}
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 3 {
		t.Errorf("init container setup lastState = %+v, want terminated with exitCode 3", cs.LastTerminationState)
	}
	// The crash loop: restarted at once, then after 10 s.
	eventually(t, 30*time.Second, "restart 1 of the init container", func() (bool, string) {
		p := podStatus(t, "sv-initcrash")
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name == "setup" && s.RestartCount >= 1 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status.InitContainerStatuses)
	})
	if code, _ := up.terminate(t, 30*time.Second); code == 0 {
		t.Errorf("up -f stopped while its pod never initialized: exit 0, want a failure; stderr:\n%s", up.stderr())
	}
	checkPodGone(t, "sv-initcrash", uid)
}
