package e2e

// End-to-end tests of issue 4: `podrun daemon`, the static-pod directory.
// Files written into the watched directory (renamed in like an editor, or
// written in chunks), edits that replace exactly the changed pods, removal,
// bad content that never tears anything down, duplicate pods, kill -9 and
// adoption, a containerd outage, signals, --listen (health and metrics),
// sd_notify, --manifest-url and `down` of a daemon pod.
//
// Every test registers `podrun down` of its pods before it starts a daemon,
// and stops every daemon it starts by PID (SIGTERM, then SIGKILL), so that
// the daemon is gone before the pods are removed and the suite's leak check
// stays clean when a test fails. Helpers are prefixed dm, pods named dm-*.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
	corev1 "k8s.io/api/core/v1"
)

// ---- helpers ----

// daemonPod describes a test pod; its yaml is a one-container busybox pod.
type daemonPod struct {
	name      string
	value     string // the container's env VALUE: changing it changes the spec (and the UID)
	marker    string // when set, a hostPath dir where the app writes <name>.<value> on SIGTERM
	readyFile bool   // a readiness probe `cat /tmp/ready` (the app creates the file), every second
	never     bool   // a readiness probe `false`: the pod runs but is never Ready
	liveness  bool   // a liveness probe `true`, every second
	echo      string // printed by the app when it starts
}

func (p daemonPod) yaml() string {
	value := p.value
	if value == "" {
		value = "v1"
	}
	script := ""
	if p.readyFile {
		script += "touch /tmp/ready; "
	}
	if p.echo != "" {
		script += "echo " + p.echo + "; "
	}
	if p.marker != "" {
		script += "trap 'echo TERM > /marker/" + p.name + "." + value + "; exit 0' TERM; "
	} else {
		script += "trap 'exit 0' TERM; "
	}
	script += "while true; do sleep 0.1; done"
	cmd, _ := json.Marshal([]string{"sh", "-c", script})
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    command: %s
    env:
    - name: VALUE
      value: %q
`, p.name, H.Image, cmd, value)
	if p.marker != "" {
		b.WriteString("    volumeMounts:\n    - name: marker\n      mountPath: /marker\n")
	}
	if p.readyFile {
		b.WriteString("    readinessProbe:\n      exec:\n        command: [\"cat\", \"/tmp/ready\"]\n      periodSeconds: 1\n      failureThreshold: 1\n")
	}
	if p.never {
		b.WriteString("    readinessProbe:\n      exec:\n        command: [\"false\"]\n      periodSeconds: 1\n")
	}
	if p.liveness {
		b.WriteString("    livenessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n      failureThreshold: 3\n")
	}
	if p.marker != "" {
		fmt.Fprintf(&b, "  volumes:\n  - name: marker\n    hostPath:\n      path: %s\n      type: Directory\n", p.marker)
	}
	return b.String()
}

// joinDocuments joins pods into one multi-document file.
func joinDocuments(pods ...daemonPod) string {
	var docs []string
	for _, p := range pods {
		docs = append(docs, p.yaml())
	}
	return strings.Join(docs, "---\n")
}

// writeByRename writes content to a dotfile in dir, then renames it to name, as
// an editor saves: the daemon sees the file appear whole.
func writeByRename(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".swp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace writes content to dir/name in place (truncate and write).
func writeInPlace(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startDaemon starts `podrun daemon --manifest-dir dir extra...` in the
// background with env added to the test's environment (systemd's variables
// removed unless given). When the test ends it gets SIGTERM by PID (SIGKILL
// after 30 s) and its log is printed.
func startDaemon(t *testing.T, dir string, env []string, extra ...string) *podrunProc {
	t.Helper()
	H.require(t)
	args := append([]string{"daemon", "--manifest-dir", dir}, extra...)
	cmd := exec.Command(H.Bin, append(H.globalArgs(), args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOTIFY_SOCKET=") && !strings.HasPrefix(kv, "WATCHDOG_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stdout, stderr := &CmdOutput{}, &CmdOutput{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting podrun %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ %s podrun %s &  [pid %d]", strings.Join(env, " "), strings.Join(args, " "), cmd.Process.Pid)
	// Registered before trackProcess's stop, so it runs after it.
	t.Cleanup(func() {
		t.Logf("daemon podrun %s [pid %d, %v]\n--- stdout:\n%s--- stderr:\n%s", strings.Join(args, " "),
			cmd.Process.Pid, cmd.ProcessState, e2eClip(stdout.String()), e2eClip(stderr.String()))
	})
	return trackProcess(t, cmd)
}

// daemonStatus is the daemon's status file, <root>/daemon.json.
type daemonStatus struct {
	PID         int       `json:"pid"`
	ManifestDir string    `json:"manifestDir"`
	URL         string    `json:"url"`
	Updated     time.Time `json:"updated"`
	Problems    []struct {
		Source  string `json:"source"`
		Message string `json:"message"`
	} `json:"problems"`
	RolledBack []map[string]any `json:"rolledBack"`
}

// readDaemonStatus reads the daemon's status file; false while there is
// none or it does not parse.
func readDaemonStatus() (daemonStatus, bool) {
	var st daemonStatus
	b, err := os.ReadFile(filepath.Join(H.Root, "daemon.json"))
	if err != nil || json.Unmarshal(b, &st) != nil {
		return daemonStatus{}, false
	}
	return st, true
}

// waitDaemonSynced waits until daemon d has finished a sync: its status file
// names its PID.
func waitDaemonSynced(t *testing.T, d *podrunProc, timeout time.Duration) daemonStatus {
	t.Helper()
	var st daemonStatus
	eventually(t, timeout, "the daemon's first sync (its PID in <root>/daemon.json)", func() (bool, string) {
		if d.exited() {
			t.Fatalf("the daemon exited (%v); stderr:\n%s", d.cmd.ProcessState, d.stderr())
		}
		var ok bool
		st, ok = readDaemonStatus()
		return ok && st.PID == d.cmd.Process.Pid, fmt.Sprintf("%+v", st)
	})
	return st
}

// waitDaemonSyncs waits until the daemon has written its status file n more times.
func waitDaemonSyncs(t *testing.T, d *podrunProc, n int, timeout time.Duration) {
	t.Helper()
	last := waitDaemonSynced(t, d, timeout).Updated
	seen := 0
	eventually(t, timeout, fmt.Sprintf("%d more syncs of the daemon", n), func() (bool, string) {
		if st, ok := readDaemonStatus(); ok && st.Updated.After(last) {
			last = st.Updated
			seen++
		}
		return seen >= n, fmt.Sprintf("%d syncs", seen)
	})
}

// staticPodName is the name of the daemon's pod that its file names name: the
// kubelet names a static pod <name>-<node>.
func staticPodName(name string) string { return name + "-" + H.Node }

// daemonLogLines returns the daemon's log lines with message msg about pod default/pod.
func daemonLogLines(log, msg, pod string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `msg="`+msg+`"`) {
			continue
		}
		// The daemon's pods are static pods, <name>-<node>.
		for _, name := range []string{pod, staticPodName(pod)} {
			if strings.Contains(l, " pod=default/"+name+" ") || strings.HasSuffix(l, " pod=default/"+name) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// waitDaemonLog waits until the daemon's stderr contains s.
func waitDaemonLog(t *testing.T, d *podrunProc, s string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("daemon log line %q", s), func() (bool, string) {
		return strings.Contains(d.stderr(), s), "not logged yet"
	})
}

// podsByName returns the pods of `podrun ps -a -o json` by name (namespace default).
func podsByName(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	out, code := podrunQuiet(t, "ps", "-a", "-o", "json")
	pods := map[string]corev1.Pod{}
	if code != 0 {
		return pods
	}
	var list corev1.PodList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("podrun ps -a -o json: decoding %q: %v", out, err)
	}
	for _, p := range list.Items {
		if p.Namespace == "default" {
			name := e2eFileName(p) // as the daemon's files name them
			if _, dup := pods[name]; dup {
				t.Errorf("podrun ps -a lists pod default/%s twice", p.Name)
			}
			pods[name] = p
		}
	}
	return pods
}

// allRunning reports whether a pod is Running with every container running.
func allRunning(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// waitPodsRunning waits until every named pod is Running (and cond holds for
// it when given) and returns them.
func waitPodsRunning(t *testing.T, timeout time.Duration, cond func(corev1.Pod) bool, names ...string) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	eventually(t, timeout, fmt.Sprintf("pods %v Running", names), func() (bool, string) {
		pods = podsByName(t)
		var missing []string
		for _, n := range names {
			p, ok := pods[n]
			if !ok || !allRunning(p) || (cond != nil && !cond(p)) {
				missing = append(missing, fmt.Sprintf("%s (listed %v, phase %q, uid %s)", n, ok, p.Status.Phase, p.UID))
			}
		}
		return len(missing) == 0, "not yet: " + strings.Join(missing, ", ")
	})
	return pods
}

// isReady reports whether a pod's Ready condition is True.
func isReady(p corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// valueEnv is the VALUE env of a pod's app container.
func valueEnv(p corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "VALUE" {
				return e.Value
			}
		}
	}
	return ""
}

// podTasks returns the task PIDs of pod default/name's containers by container
// ID (0 for a container without a task).
func podTasks(t *testing.T, name string) map[string]uint32 {
	t.Helper()
	return runningTaskPIDs(t, podContainers(t, name))
}

// checkSameTasks fails the test unless pod name has exactly the containers and
// task PIDs of before.
func checkSameTasks(t *testing.T, name string, before map[string]uint32) {
	t.Helper()
	now := podTasks(t, name)
	if fmt.Sprint(now) != fmt.Sprint(before) {
		t.Errorf("pod %s: containers and task PIDs changed:\n  before %v\n  now    %v", name, before, now)
	}
	for id, pid := range now {
		if pid == 0 && !strings.HasSuffix(id, "-pause") { // a plain pod's sandbox has no pause task
			t.Errorf("pod %s: container %s has no task", name, id)
		}
	}
}

// hasTask reports whether container id is among tasks (a plain pod's sandbox
// is there without a task: no pause runs).
func hasTask(tasks map[string]uint32, id string) bool {
	_, ok := tasks[id]
	return ok
}

// totalRestarts is the sum of a pod's containers' restart counts.
func totalRestarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		n += cs.RestartCount
	}
	return n
}

// waitPodsGone waits until pod default/name has no containers and is not listed.
func waitPodsGone(t *testing.T, timeout time.Duration, names ...string) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("pods %v gone", names), func() (bool, string) {
		pods := podsByName(t)
		for _, n := range names {
			if p, ok := pods[n]; ok {
				return false, fmt.Sprintf("%s still listed (phase %s)", n, p.Status.Phase)
			}
			if c := podContainers(t, n); len(c) > 0 {
				return false, fmt.Sprintf("%s still has %d containers", n, len(c))
			}
		}
		return true, ""
	})
}

// getWithTimeout GETs a URL with a short timeout.
func getWithTimeout(client *http.Client, url string) (int, string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metricValue returns the value of the sample `series` (name with labels, as
// printed) in a Prometheus text exposition, and whether it is there.
func metricValue(text, series string) (float64, bool) {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// ---- containerd stop and start (the suite's own, same config and socket) ----

// containerdPID finds the suite's containerd: a child of this test binary
// running `containerd --config <suite dir>/containerd.toml`.
func containerdPID(t *testing.T) int {
	t.Helper()
	config := filepath.Join(H.TmpDir, "containerd.toml")
	found := e2eProcs(func(pid int, argv []string) bool {
		if len(argv) != 3 || filepath.Base(argv[0]) != "containerd" || argv[1] != "--config" || argv[2] != config {
			return false
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "PPid:"); ok && strings.TrimSpace(v) == strconv.Itoa(os.Getpid()) {
				return true
			}
		}
		return false
	})
	if len(found) != 1 {
		t.Fatalf("looking for the suite's containerd (a child of pid %d with --config %s): found %v", os.Getpid(), config, found)
	}
	return found[0]
}

// stopContainerd stops the suite's containerd with SIGTERM (as systemctl
// stop does; shims and containers keep running) and waits until it is gone.
func stopContainerd(t *testing.T) {
	t.Helper()
	pid := containerdPID(t)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("kill -TERM %d (containerd): %v", pid, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("containerd pid %d ignored SIGTERM for 20 s: killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(10 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("stopped the suite's containerd (pid %d)", pid)
}

// restartContainerd starts containerd again with the suite's config (same
// root, state and socket), appending to the suite's containerd log. Like the
// harness, it forks from a goroutine that keeps its OS thread locked while
// containerd runs, with Pdeathsig, so containerd dies with the test binary.
// It serves the rest of the suite: the leak check reconnects to it through
// the same socket.
func restartContainerd(t *testing.T) {
	t.Helper()
	config := filepath.Join(H.TmpDir, "containerd.toml")
	logf, err := os.OpenFile(filepath.Join(H.TmpDir, "containerd.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer logf.Close()
		cmd := exec.Command("containerd", "--config", config)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		t.Fatalf("starting containerd again: %v", err)
	}
	eventually(t, 30*time.Second, "containerd answering after its restart", func() (bool, string) {
		c, err := containerd.New(H.Address, containerd.WithTimeout(time.Second))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = c.Version(ctx)
			cancel()
			_ = c.Close()
		}
		return err == nil, fmt.Sprintf("%v; log:\n%s", err, e2eTail(filepath.Join(H.TmpDir, "containerd.log"), 30))
	})
	t.Logf("containerd answers again on %s (pid %d)", H.Address, containerdPID(t))
}

// ---- 1. write, edit, delete ----

func TestDaemonDirectoryLifecycle(t *testing.T) {
	H.require(t)
	dir, marker := t.TempDir(), t.TempDir()
	downOnCleanup(t, "dm-one", "dm-pair-a", "dm-pair-b")
	// A re-scan only every minute: everything below must come from inotify.
	d := startDaemon(t, dir, nil, "--resync", "1m")
	waitDaemonSynced(t, d, 60*time.Second)

	// A dotfile (an editor's temporary file) is ignored.
	one := daemonPod{name: "dm-one"}
	tmp := filepath.Join(dir, ".dm-one.yaml.swp")
	if err := os.WriteFile(tmp, []byte(one.yaml()), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, ok := podsByName(t)["dm-one"]; ok {
		t.Errorf("the daemon started dm-one from the dotfile %s", tmp)
	}
	start := time.Now()
	if err := os.Rename(tmp, filepath.Join(dir, "dm-one.yaml")); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, 20*time.Second, nil, "dm-one")
	t.Logf("dm-one.yaml renamed into the directory -> pod Running (seen by ps polling) after %v", time.Since(start).Round(time.Millisecond))
	if row := psRow(t, "dm-one"); row == nil || row[len(row)-1] != filepath.Join(dir, "dm-one.yaml") {
		t.Errorf("podrun ps row of dm-one = %q, want SOURCE %s last", row, filepath.Join(dir, "dm-one.yaml"))
	}

	// A two-pod file; then one pod's spec is edited.
	a1, b1 := daemonPod{name: "dm-pair-a", value: "v1", marker: marker}, daemonPod{name: "dm-pair-b", value: "v1", marker: marker}
	writeByRename(t, dir, "dm-pair.yaml", joinDocuments(a1, b1))
	pods := waitPodsRunning(t, 30*time.Second, nil, "dm-pair-a", "dm-pair-b")
	uidA, uidB := pods["dm-pair-a"].UID, pods["dm-pair-b"].UID
	tasksA, tasksB := podTasks(t, "dm-pair-a"), podTasks(t, "dm-pair-b")
	t.Logf("dm-pair-a %s %v, dm-pair-b %s %v", uidA, tasksA, uidB, tasksB)

	b2 := b1
	b2.value = "v2"
	writeByRename(t, dir, "dm-pair.yaml", joinDocuments(a1, b2))
	start = time.Now()
	pods = waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return e2eFileName(p) != "dm-pair-b" || p.UID != uidB }, "dm-pair-a", "dm-pair-b")
	t.Logf("edited dm-pair-b -> replaced and Running after %v", time.Since(start).Round(time.Millisecond))
	if got := valueEnv(pods["dm-pair-b"]); got != "v2" {
		t.Errorf("dm-pair-b runs VALUE %q after the edit, want v2", got)
	}
	if pods["dm-pair-a"].UID != uidA {
		t.Errorf("dm-pair-a (unchanged) UID %s -> %s: it was replaced", uidA, pods["dm-pair-a"].UID)
	}
	checkSameTasks(t, "dm-pair-a", tasksA)
	if _, err := os.Stat(filepath.Join(marker, "dm-pair-b.v1")); err != nil {
		t.Errorf("the replaced dm-pair-b (v1) did not get SIGTERM (no marker): %v", err)
	}
	if _, err := os.Stat(filepath.Join(marker, "dm-pair-a.v1")); err == nil {
		t.Errorf("the unchanged dm-pair-a got SIGTERM (marker dm-pair-a.v1 written)")
	}
	// Its old containers are gone: only the new pod's are left.
	for id := range podTasks(t, "dm-pair-b") {
		if _, old := tasksB[id]; old {
			t.Errorf("container %s of the replaced dm-pair-b is still there", id)
		}
	}
	if listNetns(t)["podrun-"+string(uidB)] {
		t.Errorf("netns of the replaced dm-pair-b (%s) left", uidB)
	}

	// An in-place edit (truncate and write, as some editors save) of the other pod.
	a2 := a1
	a2.value = "v2"
	uidB2, tasksB2 := pods["dm-pair-b"].UID, podTasks(t, "dm-pair-b")
	writeInPlace(t, dir, "dm-pair.yaml", joinDocuments(a2, b2))
	pods = waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return e2eFileName(p) != "dm-pair-a" || p.UID != uidA }, "dm-pair-a", "dm-pair-b")
	if got := valueEnv(pods["dm-pair-a"]); got != "v2" {
		t.Errorf("dm-pair-a runs VALUE %q after the in-place edit, want v2", got)
	}
	if pods["dm-pair-b"].UID != uidB2 {
		t.Errorf("dm-pair-b (unchanged by the in-place edit) UID %s -> %s", uidB2, pods["dm-pair-b"].UID)
	}
	checkSameTasks(t, "dm-pair-b", tasksB2)

	// ps can see the new pod Running a moment before the daemon logs it.
	waitDaemonLog(t, d, `msg="pod replaced" pod=default/`+staticPodName("dm-pair-a")+" ", 5*time.Second)
	log := d.stderr()
	for pod, want := range map[string][2]int{"dm-one": {1, 0}, "dm-pair-a": {1, 1}, "dm-pair-b": {1, 1}} {
		if c, r := len(daemonLogLines(log, "pod created", pod)), len(daemonLogLines(log, "pod replaced", pod)); c != want[0] || r != want[1] {
			t.Errorf("daemon log: %s created %d times, replaced %d times; want %d and %d", pod, c, r, want[0], want[1])
		}
	}

	// Deleting the file stops both pods gracefully and cleans them up.
	uidA2 := pods["dm-pair-a"].UID
	if err := os.Remove(filepath.Join(dir, "dm-pair.yaml")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitPodsGone(t, 30*time.Second, "dm-pair-a", "dm-pair-b")
	t.Logf("dm-pair.yaml removed -> both pods gone after %v", time.Since(start).Round(time.Millisecond))
	for _, m := range []string{"dm-pair-a.v2", "dm-pair-b.v2"} {
		if b, err := os.ReadFile(filepath.Join(marker, m)); err != nil || strings.TrimSpace(string(b)) != "TERM" {
			t.Errorf("pod of marker %s was not terminated gracefully: marker %q, %v", m, b, err)
		}
	}
	checkPodGone(t, "dm-pair-a", string(uidA2))
	checkPodGone(t, "dm-pair-b", string(uidB2))
	for _, pod := range []string{"dm-pair-a", "dm-pair-b"} {
		if n := len(daemonLogLines(d.stderr(), "stopping pod: its manifest is gone", pod)); n != 1 {
			t.Errorf("daemon log: %d lines `stopping pod: its manifest is gone` for %s, want 1", n, pod)
		}
	}
	if _, ok := podsByName(t)["dm-one"]; !ok {
		t.Errorf("dm-one (another file) is gone too")
	}
	if err := os.Remove(filepath.Join(dir, "dm-one.yaml")); err != nil {
		t.Fatal(err)
	}
	waitPodsGone(t, 30*time.Second, "dm-one")
}

// ---- 2. bad content never tears anything down ----

func TestDaemonInvalidManifestKeepsPods(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "dm-bad.yaml")
	downOnCleanup(t, "dm-bad")
	writeByRename(t, dir, "dm-bad.yaml", daemonPod{name: "dm-bad"}.yaml())
	d := startDaemon(t, dir, nil, "--resync", "2s")
	pods := waitPodsRunning(t, 60*time.Second, nil, "dm-bad")
	uid, tasks := pods["dm-bad"].UID, podTasks(t, "dm-bad")

	check := func(what, wantInMsg string) {
		t.Helper()
		// The problem is published, then two more re-scans pass.
		eventually(t, 20*time.Second, "the daemon reports "+what, func() (bool, string) {
			st, _ := readDaemonStatus()
			for _, p := range st.Problems {
				if p.Source == file && strings.Contains(p.Message, wantInMsg) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", st.Problems)
		})
		waitDaemonSyncs(t, d, 2, 20*time.Second)
		p := podsByName(t)["dm-bad"]
		if p.UID != uid || !allRunning(p) {
			t.Errorf("%s: dm-bad is %s %s, want still Running as %s", what, p.UID, p.Status.Phase, uid)
		}
		checkSameTasks(t, "dm-bad", tasks)
		_, stderr, code := H.Podrun(t, "", "ps")
		if code != 0 || !strings.Contains(stderr, file+": ") || !strings.Contains(stderr, wantInMsg) {
			t.Errorf("%s: podrun ps (exit %d) stderr does not show the problem of %s (%q):\n%s", what, code, file, wantInMsg, stderr)
		}
		_, stderr, code = H.Podrun(t, "", "status", "dm-bad")
		if code != 0 || !strings.Contains(stderr, file) || !strings.Contains(stderr, wantInMsg) {
			t.Errorf("%s: podrun status dm-bad (exit %d) stderr does not show the problem of %s (%q):\n%s", what, code, file, wantInMsg, stderr)
		}
		if l := lineWith(d.stderr(), wantInMsg); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, file) {
			t.Errorf("%s: the daemon's log line about it (%q) is not an error naming %s", what, l, file)
		}
	}

	// Invalid YAML, written in place.
	writeInPlace(t, dir, "dm-bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
	check("invalid YAML", "line 3")
	// Valid YAML, an invalid field: the field path is shown.
	bad := strings.Replace(daemonPod{name: "dm-bad", value: "v2"}.yaml(), "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1)
	writeByRename(t, dir, "dm-bad.yaml", bad)
	check("an invalid field", "spec.restartPolicy")
	// An empty file (truncated).
	writeInPlace(t, dir, "dm-bad.yaml", "")
	check("an empty file", "no Kubernetes objects")

	// Fixed, with a changed spec: the pod is updated and the problem is gone.
	writeByRename(t, dir, "dm-bad.yaml", daemonPod{name: "dm-bad", value: "v3"}.yaml())
	pods = waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return p.UID != uid }, "dm-bad")
	if got := valueEnv(pods["dm-bad"]); got != "v3" {
		t.Errorf("dm-bad runs VALUE %q after the fix, want v3", got)
	}
	eventually(t, 10*time.Second, "the problem cleared from the status file", func() (bool, string) {
		st, _ := readDaemonStatus()
		return len(st.Problems) == 0, fmt.Sprintf("%+v", st.Problems)
	})
	if _, stderr, _ := H.Podrun(t, "", "ps"); strings.Contains(stderr, file) {
		t.Errorf("podrun ps still reports %s after the fix:\n%s", file, stderr)
	}
	if c, r := len(daemonLogLines(d.stderr(), "pod created", "dm-bad")), len(daemonLogLines(d.stderr(), "pod replaced", "dm-bad")); c != 1 || r != 1 {
		t.Errorf("daemon log: dm-bad created %d, replaced %d times; want 1 and 1", c, r)
	}
}

// ---- 3. a file written in chunks is read once ----

func TestDaemonChunkedWrite(t *testing.T) {
	H.require(t)
	// Every prefix of the file ending at a chunk boundary is a valid pod with
	// a different spec: reading it early would start a pod, then replace it.
	chunk1 := daemonPod{name: "dm-slow"}.yaml()
	chunk2 := "    - name: A\n      value: \"a\"\n"
	chunk3 := "    - name: B\n      value: \"b\"\n"

	run := func(t *testing.T, resync string, hup bool) {
		dir := t.TempDir()
		downOnCleanup(t, "dm-slow")
		d := startDaemon(t, dir, nil, "--resync", resync)
		waitDaemonSynced(t, d, 60*time.Second)

		// Watch every container containerd creates from now on.
		c, ctx := H.Client(t)
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		envs, errs := c.Subscribe(sctx, fmt.Sprintf(`namespace==%q,topic=="/containers/create"`, H.Namespace))
		var mu sync.Mutex
		var created []string
		go func() {
			for {
				select {
				case env := <-envs:
					if v, err := typeurl.UnmarshalAny(env.Event); err == nil {
						if cc, ok := v.(*eventtypes.ContainerCreate); ok {
							mu.Lock()
							created = append(created, cc.ID)
							mu.Unlock()
						}
					}
				case <-errs:
					return
				case <-sctx.Done():
					return
				}
			}
		}()
		time.Sleep(100 * time.Millisecond) // the subscription is in place

		f, err := os.OpenFile(filepath.Join(dir, "dm-slow.yaml"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i, chunk := range []string{chunk1, chunk2, chunk3} {
			if i == 1 && hup {
				// A re-scan forced between the first and second chunks.
				time.Sleep(100 * time.Millisecond)
				if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			} else if i > 0 {
				time.Sleep(200 * time.Millisecond)
			}
			if _, err := f.WriteString(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote dm-slow.yaml in 3 chunks over %v", time.Since(start).Round(time.Millisecond))
		pods := waitPodsRunning(t, 30*time.Second, nil, "dm-slow")
		t.Logf("dm-slow Running %v after the first chunk", time.Since(start).Round(time.Millisecond))
		// Leave time for a late replacement to show (the file is whole by
		// now: any later read sees the same content).
		time.Sleep(1500 * time.Millisecond)

		pod := podsByName(t)["dm-slow"]
		var env []string
		for _, e := range pod.Spec.Containers[0].Env {
			env = append(env, e.Name+"="+e.Value)
		}
		if strings.Join(env, " ") != "VALUE=v1 A=a B=b" {
			t.Errorf("dm-slow runs env %v, want the whole file's [VALUE=v1 A=a B=b]", env)
		}
		if pod.UID != pods["dm-slow"].UID {
			t.Errorf("dm-slow UID changed after it was Running: %s -> %s", pods["dm-slow"].UID, pod.UID)
		}
		cancel()
		mu.Lock()
		ids := append([]string(nil), created...)
		mu.Unlock()
		short := strings.ReplaceAll(string(pod.UID), "-", "")[:12]
		want := []string{short + "-pause", short + "-app-0"}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("containers created while and after the file was written: %v, want exactly %v (one start)", ids, want)
		}
		log := d.stderr()
		if c, r := daemonLogLines(log, "pod created", "dm-slow"), daemonLogLines(log, "pod replaced", "dm-slow"); len(c) != 1 || len(r) != 0 {
			t.Errorf("daemon log: dm-slow created %d times, replaced %d times; want exactly one start:\n%s", len(c), len(r), strings.Join(append(c, r...), "\n"))
		}
		if l := lineWith(log, "not applied"); l != "" {
			t.Logf("note: the daemon reported a problem while the file was written: %s", l)
		}
	}
	t.Run("default resync", func(t *testing.T) { run(t, "10s", false) })
	// A periodic re-scan certainly falls while the file is being written
	// (the write lasts 400 ms): the backstop must respect --settle too.
	t.Run("resync during the write", func(t *testing.T) { run(t, "300ms", false) })
	// The same with the default period and a SIGHUP (systemctl reload)
	// between the chunks.
	t.Run("SIGHUP during the write", func(t *testing.T) { run(t, "10s", true) })
}

// ---- 4. duplicate pods: the first file by name wins, no flapping ----

func TestDaemonDuplicatePod(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	fileA, fileB := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	downOnCleanup(t, "dm-dup", "dm-dup-other")
	// b.yaml also has a pod of its own, which must run.
	writeInPlace(t, dir, "b.yaml", joinDocuments(daemonPod{name: "dm-dup", value: "from-b"}, daemonPod{name: "dm-dup-other"}))
	writeInPlace(t, dir, "a.yaml", daemonPod{name: "dm-dup", value: "from-a"}.yaml())
	d := startDaemon(t, dir, nil, "--resync", "1s")
	pods := waitPodsRunning(t, 60*time.Second, nil, "dm-dup", "dm-dup-other")
	uid, tasks := pods["dm-dup"].UID, podTasks(t, "dm-dup")
	if got := valueEnv(pods["dm-dup"]); got != "from-a" {
		t.Errorf("dm-dup runs VALUE %q, want from-a (a.yaml comes first)", got)
	}
	row := psRow(t, "dm-dup", "-o", "wide")
	if len(row) < 9 || row[7] != fileA || row[8] != string(uid) {
		t.Errorf("podrun ps -o wide row of dm-dup = %q, want SOURCE %s and UID %s", row, fileA, uid)
	}
	if row := psRow(t, "dm-dup-other"); len(row) < 8 || row[7] != fileB {
		t.Errorf("podrun ps row of dm-dup-other = %q, want SOURCE %s", row, fileB)
	}
	wantMsg := "pod default/" + staticPodName("dm-dup") + " is also defined in " + fileA + ", which comes first and wins"
	_, stderr, _ := H.Podrun(t, "", "ps")
	if !strings.Contains(stderr, fileB+": "+wantMsg) {
		t.Errorf("podrun ps stderr does not report the duplicate in b.yaml (want %q):\n%s", fileB+": "+wantMsg, stderr)
	}
	if strings.Contains(stderr, fileA+":") {
		t.Errorf("podrun ps reports a problem with a.yaml, which is fine:\n%s", stderr)
	}

	// Several re-scans, a rewrite of b.yaml and a SIGHUP: nothing flaps.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if p := podsByName(t)["dm-dup"]; p.UID != uid {
			t.Fatalf("dm-dup flapped: UID %s -> %s (VALUE %s)", uid, p.UID, valueEnv(p))
		}
		time.Sleep(300 * time.Millisecond)
	}
	writeByRename(t, dir, "b.yaml", joinDocuments(daemonPod{name: "dm-dup", value: "from-b"}, daemonPod{name: "dm-dup-other"}))
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitDaemonLog(t, d, "SIGHUP: re-scanning", 5*time.Second)
	waitDaemonSyncs(t, d, 3, 20*time.Second)
	if p := podsByName(t)["dm-dup"]; p.UID != uid {
		t.Fatalf("dm-dup flapped after b.yaml was rewritten: UID %s -> %s (VALUE %s)", uid, p.UID, valueEnv(p))
	}
	checkSameTasks(t, "dm-dup", tasks)
	log := d.stderr()
	if c, r := len(daemonLogLines(log, "pod created", "dm-dup")), len(daemonLogLines(log, "pod replaced", "dm-dup")); c != 1 || r != 0 {
		t.Errorf("daemon log: dm-dup created %d, replaced %d times; want 1 and 0", c, r)
	}

	// a.yaml removed: b.yaml's definition is now the only one and takes over.
	if err := os.Remove(fileA); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return e2eFileName(p) != "dm-dup" || valueEnv(p) == "from-b" }, "dm-dup", "dm-dup-other")
	if row := psRow(t, "dm-dup"); len(row) < 8 || row[7] != fileB {
		t.Errorf("after a.yaml is removed, podrun ps row of dm-dup = %q, want SOURCE %s", row, fileB)
	}
	eventually(t, 10*time.Second, "the duplicate no longer reported", func() (bool, string) {
		st, _ := readDaemonStatus()
		return len(st.Problems) == 0, fmt.Sprintf("%+v", st.Problems)
	})
}

// ---- 5. kill -9 and restart: adoption without a restart ----

func TestDaemonKill9Adopts(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	var names []string
	for i := 0; i < 10; i++ {
		names = append(names, fmt.Sprintf("dm-k%d", i))
	}
	downOnCleanup(t, append(append([]string{}, names...), "dm-kgone")...)
	for i, n := range names {
		writeInPlace(t, dir, n+".yaml", daemonPod{name: n, readyFile: i == 0}.yaml())
	}
	writeInPlace(t, dir, "dm-kgone.yaml", daemonPod{name: "dm-kgone"}.yaml())
	d1 := startDaemon(t, dir, nil, "--resync", "2s")
	start := time.Now()
	before := waitPodsRunning(t, 120*time.Second, isReady,
		append(append([]string{}, names...), "dm-kgone")...)
	t.Logf("11 pods Running and Ready %v after the daemon started", time.Since(start).Round(time.Millisecond))
	tasks := map[string]map[string]uint32{}
	for _, n := range names {
		tasks[n] = podTasks(t, n)
		if len(tasks[n]) != 2 {
			t.Errorf("pod %s has containers %v, want a sandbox and one app container", n, tasks[n])
		}
	}

	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", d1.cmd.Process.Pid, err)
	}
	if !d1.wait(10 * time.Second) {
		t.Fatalf("the daemon did not die of kill -9")
	}
	// While no daemon runs, one file is removed.
	if err := os.Remove(filepath.Join(dir, "dm-kgone.yaml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)

	d2 := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonSynced(t, d2, 60*time.Second)
	for _, n := range names {
		waitDaemonLog(t, d2, "default/"+staticPodName(n)+" unchanged; supervising it", 30*time.Second)
	}
	waitPodsGone(t, 30*time.Second, "dm-kgone")
	if n := len(daemonLogLines(d2.stderr(), "stopping pod: its manifest is gone", "dm-kgone")); n != 1 {
		t.Errorf("restarted daemon: %d lines `stopping pod: its manifest is gone` for dm-kgone, want 1", n)
	}
	waitDaemonSyncs(t, d2, 2, 20*time.Second)
	after := podsByName(t)
	for _, n := range names {
		p := after[n]
		if p.UID != before[n].UID || !allRunning(p) {
			t.Errorf("pod %s after the restart: UID %s phase %s, want still Running as %s", n, p.UID, p.Status.Phase, before[n].UID)
		}
		if r := totalRestarts(p); r != 0 {
			t.Errorf("pod %s: %d container restarts after the daemon's restart, want 0", n, r)
		}
		checkSameTasks(t, n, tasks[n])
	}
	log := d2.stderr()
	for _, n := range names {
		if c, r := daemonLogLines(log, "pod created", n), daemonLogLines(log, "pod replaced", n); len(c)+len(r) != 0 {
			t.Errorf("restarted daemon started %s again: %q", n, append(c, r...))
		}
	}

	// Probes resumed: the readiness of dm-k0 follows its file again.
	row := func() string {
		if r := quietPsRow(t, "dm-k0"); r != nil {
			return r[2]
		}
		return "(not listed)"
	}
	if got := row(); got != "1/1" {
		t.Errorf("dm-k0 READY %s after adoption, want 1/1", got)
	}
	execIn(t, "dm-k0", "", "rm", "/tmp/ready")
	start = time.Now()
	eventually(t, 8*time.Second, "dm-k0 READY 0/1 after its ready file was removed", func() (bool, string) {
		r := row()
		return r == "0/1", r
	})
	t.Logf("dm-k0 not ready %v after its file was removed", time.Since(start).Round(time.Millisecond))
	execIn(t, "dm-k0", "", "touch", "/tmp/ready")
	eventually(t, 8*time.Second, "dm-k0 READY 1/1 after its ready file was recreated", func() (bool, string) {
		r := row()
		return r == "1/1", r
	})
	checkSameTasks(t, "dm-k0", tasks["dm-k0"])
}

// TestDaemonKill9HalfMade kills the daemon while it starts a pod (its init
// container runs): the restarted daemon replaces the half-made pod with a
// whole one and nothing of the first attempt is left.
func TestDaemonKill9HalfMade(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "dm-half")
	yaml := strings.Replace(daemonPod{name: "dm-half"}.yaml(), "  containers:\n",
		"  initContainers:\n  - name: slow\n    image: "+H.Image+"\n    command: [\"sleep\", \"3\"]\n  containers:\n", 1)
	d1 := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonSynced(t, d1, 60*time.Second)
	writeByRename(t, dir, "dm-half.yaml", yaml)

	// Wait until the init container's task runs: the pod is half made.
	var uid string
	eventually(t, 30*time.Second, "dm-half's init container running", func() (bool, string) {
		uid = initRunningUID(t, "dm-half")
		return uid != "", "not yet"
	})
	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !d1.wait(10 * time.Second) {
		t.Fatal("the daemon did not die of kill -9")
	}
	if strings.Contains(d1.stderr(), `msg="pod created"`) {
		t.Fatalf("the pod was complete before the kill: the test did not kill the daemon mid-creation")
	}
	var first []string
	for _, ctr := range podContainers(t, "dm-half") {
		first = append(first, ctr.ID())
	}
	t.Logf("killed the daemon with dm-half (%s) half made: containers %v", uid, first)

	d2 := startDaemon(t, dir, nil, "--resync", "2s")
	waitPodsRunning(t, 60*time.Second, nil, "dm-half")
	waitDaemonSyncs(t, d2, 2, 20*time.Second)
	p := podsByName(t)["dm-half"]
	if string(p.UID) != uid || !allRunning(p) || totalRestarts(p) != 0 {
		t.Errorf("dm-half after the restart: UID %s phase %s restarts %d; want Running as %s with 0 restarts", p.UID, p.Status.Phase, totalRestarts(p), uid)
	}
	if len(p.Status.InitContainerStatuses) != 1 || p.Status.InitContainerStatuses[0].State.Terminated == nil ||
		p.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 {
		t.Errorf("dm-half's init container status: %+v, want terminated with exit code 0", p.Status.InitContainerStatuses)
	}
	short := strings.ReplaceAll(uid, "-", "")[:12]
	tasks := podTasks(t, "dm-half")
	want := map[string]bool{short + "-pause": true, short + "-slow-0": true, short + "-app-0": true}
	for id := range tasks {
		if !want[id] {
			t.Errorf("unexpected container %s of dm-half (all: %v)", id, tasks)
		}
	}
	if len(tasks) != len(want) || !hasTask(tasks, short+"-pause") || tasks[short+"-app-0"] == 0 {
		t.Errorf("dm-half containers %v, want %v with the sandbox and app running", tasks, want)
	}
	if !listNetns(t)["podrun-"+uid] {
		t.Errorf("netns podrun-%s of the running dm-half missing", uid)
	}
	log := d2.stderr()
	if n := len(daemonLogLines(log, "pod created", "dm-half")) + len(daemonLogLines(log, "pod replaced", "dm-half")); n != 1 {
		t.Errorf("restarted daemon: dm-half started %d times, want once", n)
	}
}

// ---- 6. containerd goes away and comes back ----

func TestDaemonContainerdOutage(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	names := []string{"dm-out-a", "dm-out-b"}
	downOnCleanup(t, names...)
	writeInPlace(t, dir, "dm-out.yaml", joinDocuments(daemonPod{name: "dm-out-a", readyFile: true, liveness: true}, daemonPod{name: "dm-out-b"}))
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	d := startDaemon(t, dir, nil, "--resync", "2s", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	before := waitPodsRunning(t, 60*time.Second, isReady, names...)
	client := &http.Client{Timeout: 2 * time.Second}
	eventually(t, 10*time.Second, "/readyz 200", func() (bool, string) {
		code, body, err := getWithTimeout(client, base+"/readyz")
		return code == 200, fmt.Sprintf("%d %q %v", code, body, err)
	})
	tasks := map[string]map[string]uint32{}
	for _, n := range names {
		tasks[n] = podTasks(t, n)
	}
	logBefore := len(d.stderr())

	restarted := false
	t.Cleanup(func() {
		if !restarted {
			restartContainerd(t) // the rest of the suite needs it
		}
	})
	stopContainerd(t)
	outage := time.Now()
	var readyz []string
	saw503 := false
	for time.Since(outage) < 6*time.Second {
		code, body, err := getWithTimeout(client, base+"/readyz")
		if code == http.StatusServiceUnavailable {
			saw503 = true
		}
		if len(readyz) == 0 || !strings.HasPrefix(readyz[len(readyz)-1], fmt.Sprint(code)) {
			readyz = append(readyz, fmt.Sprintf("%d %q %v (at %v)", code, strings.TrimSpace(body), err, time.Since(outage).Round(time.Millisecond)))
		}
		if code, _, _ := getWithTimeout(client, base+"/healthz"); code != 200 {
			t.Errorf("/healthz answered %d during the outage, want 200 (the daemon is alive)", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("/readyz during the outage: %q", readyz)
	if !saw503 {
		t.Errorf("/readyz never answered 503 during a 6 s containerd outage")
	}
	if l := lineWith(d.stderr()[logBefore:], "container runtime unavailable"); !strings.Contains(l, "level=ERROR") {
		t.Errorf("the daemon did not log the outage (want an error `container runtime unavailable`); log since:\n%s", d.stderr()[logBefore:])
	}
	if d.exited() {
		t.Fatalf("the daemon exited during the outage (%v)", d.cmd.ProcessState)
	}

	restartContainerd(t)
	restarted = true
	back := time.Now()
	eventually(t, 40*time.Second, "/readyz 200 again after containerd came back", func() (bool, string) {
		code, body, err := getWithTimeout(client, base+"/readyz")
		return code == 200, fmt.Sprintf("%d %q %v", code, body, err)
	})
	t.Logf("daemon ready %v after containerd came back", time.Since(back).Round(time.Millisecond))
	waitDaemonSyncs(t, d, 3, 30*time.Second)
	after := waitPodsRunning(t, 20*time.Second, isReady, names...)
	for _, n := range names {
		if after[n].UID != before[n].UID {
			t.Errorf("pod %s: UID %s -> %s across the outage", n, before[n].UID, after[n].UID)
		}
		if r := totalRestarts(after[n]); r != 0 {
			t.Errorf("pod %s: %d container restarts across the outage, want 0", n, r)
		}
		checkSameTasks(t, n, tasks[n])
	}
	log := d.stderr()[logBefore:]
	for _, n := range names {
		if c, r := daemonLogLines(log, "pod created", n), daemonLogLines(log, "pod replaced", n); len(c)+len(r) != 0 {
			t.Errorf("the daemon started %s again after the outage: %q", n, append(c, r...))
		}
	}
	// Exactly the expected containers, nothing duplicated.
	c, ctx := H.Client(t)
	all, err := c.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, ctr := range all {
		if l, err := ctr.Labels(ctx); err == nil && strings.HasPrefix(l[labelPodName], "dm-out-") {
			ours = append(ours, ctr.ID())
		}
	}
	if len(ours) != 4 {
		t.Errorf("containers of the dm-out pods after the outage: %v, want 4 (2 sandboxes, 2 apps)", ours)
	}
	_, body, _ := getWithTimeout(client, base+"/metrics")
	if v, ok := metricValue(body, "podrun_sync_failures_total"); !ok || v < 1 {
		t.Errorf("podrun_sync_failures_total = %v (present %v) after the outage, want >= 1", v, ok)
	}
}

// ---- 7. signals ----

func TestDaemonSignals(t *testing.T) {
	H.require(t)
	// terminate sends the daemon SIGTERM and checks that it exits 0 within
	// timeout with line in its log.
	terminate := func(t *testing.T, d *podrunProc, timeout time.Duration, line string) {
		t.Helper()
		code, took := d.terminate(t, timeout)
		t.Logf("daemon exited %d after %v", code, took.Round(time.Millisecond))
		if code != 0 {
			t.Errorf("daemon exit code %d on SIGTERM, want 0", code)
		}
		if !strings.Contains(d.stderr(), line) {
			t.Errorf("daemon log lacks `%s`", line)
		}
	}
	t.Run("SIGTERM leaves pods running", func(t *testing.T) {
		dir := t.TempDir()
		downOnCleanup(t, "dm-sig")
		writeInPlace(t, dir, "dm-sig.yaml", daemonPod{name: "dm-sig"}.yaml())
		d := startDaemon(t, dir, nil, "--resync", "2s")
		pods := waitPodsRunning(t, 60*time.Second, nil, "dm-sig")
		tasks := podTasks(t, "dm-sig")
		terminate(t, d, 20*time.Second, "exiting; pods keep running")
		if _, err := os.Stat(filepath.Join(H.Root, "daemon.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the daemon's status file is left after it exited (err %v)", err)
		}
		time.Sleep(time.Second)
		p := podsByName(t)["dm-sig"]
		if p.UID != pods["dm-sig"].UID || !allRunning(p) {
			t.Errorf("dm-sig after the daemon's SIGTERM: UID %s phase %s, want still Running", p.UID, p.Status.Phase)
		}
		checkSameTasks(t, "dm-sig", tasks)
	})
	t.Run("--stop-pods-on-exit", func(t *testing.T) {
		dir, marker := t.TempDir(), t.TempDir()
		downOnCleanup(t, "dm-sig-stop")
		writeInPlace(t, dir, "dm-sig-stop.yaml", daemonPod{name: "dm-sig-stop", marker: marker}.yaml())
		d := startDaemon(t, dir, nil, "--resync", "2s", "--stop-pods-on-exit")
		pods := waitPodsRunning(t, 60*time.Second, nil, "dm-sig-stop")
		terminate(t, d, 30*time.Second, "stopping pods before exit")
		if b, err := os.ReadFile(filepath.Join(marker, "dm-sig-stop.v1")); err != nil || strings.TrimSpace(string(b)) != "TERM" {
			t.Errorf("dm-sig-stop was not terminated gracefully: marker %q, %v", b, err)
		}
		checkPodGone(t, "dm-sig-stop", string(pods["dm-sig-stop"].UID))
	})
	t.Run("SIGHUP re-scans", func(t *testing.T) {
		// The file in the directory is a hard link to one outside it: a write
		// through the outside name raises no inotify event in the directory,
		// so only a re-scan (no periodic one within the test) can see it.
		dir, outside := t.TempDir(), t.TempDir()
		downOnCleanup(t, "dm-hup")
		src := filepath.Join(outside, "dm-hup.yaml")
		if err := os.WriteFile(src, []byte(daemonPod{name: "dm-hup", value: "v1"}.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, dir, nil, "--resync", "1h")
		waitDaemonSynced(t, d, 60*time.Second)
		if err := os.Link(src, filepath.Join(dir, "dm-hup.yaml")); err != nil {
			t.Fatal(err)
		}
		pods := waitPodsRunning(t, 30*time.Second, nil, "dm-hup")
		uid := pods["dm-hup"].UID
		if err := os.WriteFile(src, []byte(daemonPod{name: "dm-hup", value: "v2"}.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if p := podsByName(t)["dm-hup"]; p.UID != uid {
			t.Logf("note: the daemon saw the write through the other link without SIGHUP (UID %s -> %s); the SIGHUP check below proves less", uid, p.UID)
		}
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitDaemonLog(t, d, "SIGHUP: re-scanning", 5*time.Second)
		pods = waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v2" }, "dm-hup")
		if pods["dm-hup"].UID == uid {
			t.Errorf("dm-hup runs v2 with the UID of v1")
		}
		if d.exited() {
			t.Errorf("the daemon exited on SIGHUP (%v)", d.cmd.ProcessState)
		}
	})
}

// ---- 8. --listen: health and metrics ----

func TestDaemonListen(t *testing.T) {
	H.require(t)
	t.Run("loopback", func(t *testing.T) {
		dir := t.TempDir()
		downOnCleanup(t, "dm-met-a", "dm-met-b")
		writeInPlace(t, dir, "dm-met.yaml", joinDocuments(daemonPod{name: "dm-met-a", readyFile: true}, daemonPod{name: "dm-met-b"}))
		port := freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		d := startDaemon(t, dir, nil, "--resync", "2s", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
		client := &http.Client{Timeout: 2 * time.Second}
		eventually(t, 30*time.Second, "/healthz 200", func() (bool, string) {
			code, body, err := getWithTimeout(client, base+"/healthz")
			return code == 200, fmt.Sprintf("%d %q %v", code, body, err)
		})
		eventually(t, 60*time.Second, "/readyz 200 (after the first sync)", func() (bool, string) {
			code, body, err := getWithTimeout(client, base+"/readyz")
			return code == 200, fmt.Sprintf("%d %q %v", code, body, err)
		})
		if st, ok := readDaemonStatus(); !ok || st.PID != d.cmd.Process.Pid {
			t.Errorf("/readyz answered 200 before the first sync was published (status file %+v)", st)
		}
		waitPodsRunning(t, 30*time.Second, nil, "dm-met-a", "dm-met-b")
		var body string
		eventually(t, 15*time.Second, `/metrics: podrun_pods{phase="Running"} 2 and readiness probe successes`, func() (bool, string) {
			var code int
			code, body, _ = getWithTimeout(client, base+"/metrics")
			running, _ := metricValue(body, `podrun_pods{phase="Running"}`)
			probes, _ := metricValue(body, `podrun_probe_results_total{probe="readiness",result="success"}`)
			return code == 200 && running == 2 && probes >= 1, fmt.Sprintf("code %d, running %v, readiness successes %v", code, running, probes)
		})
		for _, series := range []string{
			`podrun_pods{phase="Pending"} 0`,
			`podrun_container_restarts{container="app",namespace="default",pod="` + staticPodName("dm-met-a") + `"} 0`,
			`podrun_probe_duration_seconds_count{probe="readiness"}`,
			`podrun_sync_duration_seconds_count`,
			`podrun_sync_failures_total 0`,
		} {
			if !strings.Contains(body, series) {
				t.Errorf("/metrics lacks %q", series)
			}
		}
		if t.Failed() {
			t.Logf("/metrics:\n%s", body)
		}
	})
	t.Run("unix socket", func(t *testing.T) {
		dir := t.TempDir()
		sock := filepath.Join(t.TempDir(), "podrun.sock")
		d := startDaemon(t, dir, nil, "--listen", "unix:"+sock)
		waitDaemonSynced(t, d, 60*time.Second)
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			},
		}}
		eventually(t, 10*time.Second, "/readyz 200 on the unix socket", func() (bool, string) {
			code, body, err := getWithTimeout(client, "http://podrun/readyz")
			return code == 200, fmt.Sprintf("%d %q %v", code, body, err)
		})
		if code, _, err := getWithTimeout(client, "http://podrun/healthz"); code != 200 {
			t.Errorf("/healthz on the unix socket: %d %v", code, err)
		}
	})
	t.Run("non-loopback refused", func(t *testing.T) {
		dir := t.TempDir()
		downOnCleanup(t, "dm-met-refused")
		writeInPlace(t, dir, "dm-met-refused.yaml", daemonPod{name: "dm-met-refused"}.yaml())
		for _, addr := range []string{"0.0.0.0:1", "[::]:1", "192.0.2.1:1"} {
			d := startDaemon(t, dir, nil, "--listen", addr)
			if !d.wait(30 * time.Second) {
				t.Fatalf("daemon --listen %s still running after 30 s, want exit 2", addr)
			}
			if code := d.cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("daemon --listen %s: exit %d, want 2", addr, code)
			}
			if !strings.Contains(d.stderr(), "loopback") {
				t.Errorf("daemon --listen %s: stderr does not say why:\n%s", addr, d.stderr())
			}
		}
		if _, ok := podsByName(t)["dm-met-refused"]; ok {
			t.Errorf("a daemon refused for its --listen address started pods")
		}
	})
}

// ---- 9. sd_notify ----

func TestDaemonSdNotify(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	type datagram struct {
		msg string
		at  time.Time
	}
	msgs := make(chan datagram, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			msgs <- datagram{string(buf[:n]), time.Now()}
		}
	}()
	downOnCleanup(t, "dm-notify-a", "dm-notify-b")
	writeInPlace(t, dir, "dm-notify.yaml", joinDocuments(daemonPod{name: "dm-notify-a"}, daemonPod{name: "dm-notify-b"}))
	start := time.Now()
	d := startDaemon(t, dir, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"}, "--resync", "2s")

	var ready time.Time
	timeout := time.After(60 * time.Second)
	for ready.IsZero() {
		select {
		case m := <-msgs:
			t.Logf("sd_notify %q at %v", m.msg, m.at.Sub(start).Round(time.Millisecond))
			if strings.Contains(m.msg, "READY=1") {
				ready = m.at
				// The first sync is done: its status file is published and the pods run.
				if st, ok := readDaemonStatus(); !ok || st.PID != d.cmd.Process.Pid {
					t.Errorf("READY=1 before the first sync published its status (status file %+v)", st)
				}
				for _, n := range []string{"dm-notify-a", "dm-notify-b"} {
					running := 0
					for id, pid := range podTasks(t, n) {
						if pid != 0 && strings.HasSuffix(id, "-app-0") {
							running++
						}
					}
					if running != 1 {
						t.Errorf("READY=1 arrived before pod %s's app container ran", n)
					}
				}
			} else if strings.Contains(m.msg, "WATCHDOG=1") {
				t.Errorf("WATCHDOG=1 before READY=1")
			}
		case <-timeout:
			t.Fatalf("no READY=1 on NOTIFY_SOCKET within 60 s; daemon stderr:\n%s", d.stderr())
		}
	}
	t.Logf("READY=1 %v after the daemon started", ready.Sub(start).Round(time.Millisecond))
	// The watchdog: WATCHDOG_USEC=400000 means a ping every 200 ms or so.
	watchdog, readies := 0, 0
	end := time.After(2 * time.Second)
loop:
	for {
		select {
		case m := <-msgs:
			if strings.Contains(m.msg, "WATCHDOG=1") {
				watchdog++
			}
			if strings.Contains(m.msg, "READY=1") {
				readies++
			}
		case <-end:
			break loop
		}
	}
	if watchdog < 5 {
		t.Errorf("%d WATCHDOG=1 pings in 2 s with WATCHDOG_USEC=400000, want >= 5", watchdog)
	}
	if readies != 0 {
		t.Errorf("READY=1 sent %d more times", readies)
	}
	if l := lineWith(d.stderr(), "sd_notify"); l != "" {
		t.Errorf("daemon log: %s", l)
	}
}

// ---- 10. --manifest-url ----

func TestDaemonManifestURL(t *testing.T) {
	H.require(t)
	var mu sync.Mutex
	code, body, requests := http.StatusOK, daemonPod{name: "dm-url", value: "v1"}.yaml(), 0
	serve := func(c int, b string) {
		mu.Lock()
		code, body = c, b
		mu.Unlock()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return requests
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		c, b := code, body
		requests++
		mu.Unlock()
		if r.URL.Path != "/pods.yaml" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(c)
		_, _ = io.WriteString(w, b)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/pods.yaml"
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", url)
	}
	dir := t.TempDir()
	downOnCleanup(t, "dm-url")
	if _, stderr, code := H.Podrun(t, "", "daemon", "--manifest-dir", dir, "--manifest-url", url); code != 2 || !strings.Contains(stderr, "plain http") {
		t.Errorf("daemon with a plain http URL: exit %d, stderr:\n%s\nwant exit 2 and a refusal", code, stderr)
	}
	d := startDaemon(t, dir, nil, "--resync", "1s", "--manifest-url", url, "--insecure-manifest-url")
	pods := waitPodsRunning(t, 60*time.Second, nil, "dm-url")
	uid, tasks := pods["dm-url"].UID, podTasks(t, "dm-url")
	if row := psRow(t, "dm-url"); len(row) < 8 || row[7] != url {
		t.Errorf("podrun ps row of dm-url = %q, want SOURCE %s", row, url)
	}

	for _, bad := range []struct {
		what, body, want string
		code             int
	}{
		{"garbage", "this: is: [not yaml\n", "line", http.StatusOK},
		{"an HTTP 500", "oops", "500", http.StatusInternalServerError},
		{"a 20 MiB body", strings.Repeat("# padding\n", 2<<20), "larger than the limit of 10 MiB", http.StatusOK},
		{"an invalid pod", strings.Replace(daemonPod{name: "dm-url", value: "v2"}.yaml(), "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1), "spec.restartPolicy", http.StatusOK},
	} {
		serve(bad.code, bad.body)
		n := count()
		eventually(t, 15*time.Second, "the daemon reports "+bad.what, func() (bool, string) {
			st, _ := readDaemonStatus()
			for _, p := range st.Problems {
				if p.Source == url && strings.Contains(p.Message, bad.want) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", st.Problems)
		})
		eventually(t, 15*time.Second, "3 more polls", func() (bool, string) { return count() >= n+3, fmt.Sprint(count() - n) })
		p := podsByName(t)["dm-url"]
		if p.UID != uid || !allRunning(p) {
			t.Errorf("serving %s: dm-url is %s %s, want still Running as %s", bad.what, p.UID, p.Status.Phase, uid)
		}
		checkSameTasks(t, "dm-url", tasks)
		if _, stderr, _ := H.Podrun(t, "", "ps"); !strings.Contains(stderr, url+": ") {
			t.Errorf("serving %s: podrun ps stderr does not report %s:\n%s", bad.what, url, stderr)
		}
	}

	// Served valid again, changed: the pod is updated.
	serve(http.StatusOK, daemonPod{name: "dm-url", value: "v3"}.yaml())
	pods = waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v3" }, "dm-url")
	if pods["dm-url"].UID == uid {
		t.Errorf("dm-url runs v3 with v1's UID")
	}
	// ps can see the new pod Running a moment before the daemon logs it.
	waitDaemonLog(t, d, `msg="pod replaced" pod=default/`+staticPodName("dm-url")+" ", 5*time.Second)
	if c, r := len(daemonLogLines(d.stderr(), "pod created", "dm-url")), len(daemonLogLines(d.stderr(), "pod replaced", "dm-url")); c != 1 || r != 1 {
		t.Errorf("daemon log: dm-url created %d, replaced %d times; want 1 and 1", c, r)
	}
}

// ---- 11. down of a daemon pod ----

func TestDaemonDownNote(t *testing.T) {
	H.require(t)
	t.Run("note and start again", downNoteAndStartAgain)
	t.Run("stale supervisor", downStaleSupervisor)
}

func downNoteAndStartAgain(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dm-x.yaml")
	downOnCleanup(t, "dm-x")
	writeInPlace(t, dir, "dm-x.yaml", daemonPod{name: "dm-x", echo: "hello-from-dm-x"}.yaml())
	d := startDaemon(t, dir, nil, "--resync", "2s")
	pods := waitPodsRunning(t, 60*time.Second, nil, "dm-x")
	uid, tasks := pods["dm-x"].UID, podTasks(t, "dm-x")

	// logs and status work on a daemon pod.
	if stdout, stderr, code := H.Podrun(t, "", "logs", "dm-x"); code != 0 || !strings.Contains(stdout, "hello-from-dm-x") {
		t.Errorf("podrun logs dm-x: exit %d, stdout %q, want hello-from-dm-x; stderr:\n%s", code, stdout, stderr)
	}
	if p := podStatus(t, "dm-x"); p.UID != uid || p.Status.Phase != corev1.PodRunning {
		t.Errorf("podrun status dm-x: UID %s phase %s", p.UID, p.Status.Phase)
	}

	stdout, stderr, code := H.Podrun(t, "", "down", "dm-x")
	if code != 0 || !strings.Contains(stdout, "pod/default/"+staticPodName("dm-x")+" deleted") {
		t.Errorf("podrun down dm-x: exit %d, stdout %q", code, stdout)
	}
	want := "note: pod default/" + staticPodName("dm-x") + " comes from " + file + ": the running podrun daemon will start it again while that file exists"
	if !strings.Contains(stderr, want) {
		t.Errorf("podrun down dm-x stderr lacks %q:\n%s", want, stderr)
	}

	// The daemon starts it again, once, clean: exactly a sandbox and one app container.
	waitPodsRunning(t, 30*time.Second, nil, "dm-x")
	waitDaemonSyncs(t, d, 3, 20*time.Second)
	now := podTasks(t, "dm-x")
	p := podsByName(t)["dm-x"]
	if p.UID != uid || !allRunning(p) || totalRestarts(p) != 0 {
		t.Errorf("dm-x after down: UID %s phase %s restarts %d; want Running again as %s with 0 restarts", p.UID, p.Status.Phase, totalRestarts(p), uid)
	}
	short := strings.ReplaceAll(string(uid), "-", "")[:12]
	if len(now) != 2 || !hasTask(now, short+"-pause") || now[short+"-app-0"] == 0 {
		t.Errorf("dm-x started again with containers %v, want exactly %s-pause and %s-app-0 running", now, short, short)
	}
	if fmt.Sprint(now) == fmt.Sprint(tasks) {
		t.Errorf("dm-x has the same task PIDs as before down: it was not stopped")
	}
	if n := len(daemonLogLines(d.stderr(), "pod created", "dm-x")); n != 2 {
		t.Errorf("daemon log: dm-x created %d times, want 2 (first, then after down)", n)
	}

	// A pod that is not the daemon's: no note.
	other := daemonPod{name: "dm-x-cli"}.yaml()
	mustRunUp(t, "dm-x-cli", other, "--wait", "running")
	if _, stderr, code := H.Podrun(t, "", "down", "dm-x-cli"); code != 0 || strings.Contains(stderr, "note:") {
		t.Errorf("podrun down dm-x-cli (not a daemon pod): exit %d, stderr:\n%s", code, stderr)
	}
}

// downStaleSupervisor: after `podrun down` of a daemon pod, the daemon's
// supervisor of that pod sees its container exit and restarts it (at once:
// its first restart). When that comes before the daemon's next re-scan, it must
// not start a container in a pod that is gone; the re-scan then starts the
// pod again, whole and clean.
func downStaleSupervisor(t *testing.T) {
	dir := t.TempDir()
	downOnCleanup(t, "dm-x2")
	writeInPlace(t, dir, "dm-x2.yaml", daemonPod{name: "dm-x2"}.yaml())
	// No periodic re-scan within the test: the re-scan comes from SIGHUP.
	d := startDaemon(t, dir, nil, "--resync", "1h")
	pods := waitPodsRunning(t, 60*time.Second, nil, "dm-x2")
	uid := pods["dm-x2"].UID
	short := strings.ReplaceAll(string(uid), "-", "")[:12]
	if _, stderr, code := H.Podrun(t, "", "down", "dm-x2"); code != 0 {
		t.Fatalf("podrun down dm-x2: exit %d; stderr:\n%s", code, stderr)
	}
	// Past the restart (at once) and a 10 s back-off, before any re-scan.
	var seen []string
	deadline := time.Now().Add(13 * time.Second)
	for time.Now().Before(deadline) {
		// Starting the whole pod again at once would be fine; anything
		// else (a later attempt of a container of the removed pod) is not.
		for id, pid := range podTasks(t, "dm-x2") {
			s := fmt.Sprintf("%s (pid %d)", id, pid)
			if id != short+"-pause" && id != short+"-app-0" && !containsLine(seen, s) {
				seen = append(seen, s)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(seen) > 0 {
		t.Errorf("before any re-scan, containers of the removed dm-x2 appeared: %v (the daemon's supervisor restarted a container into a pod that is gone)", seen)
	}
	for _, l := range strings.Split(d.stderr(), "\n") {
		if strings.Contains(l, "default/"+staticPodName("dm-x2")) && (strings.Contains(l, "failed to start") || strings.Contains(l, "restart 1")) {
			t.Logf("daemon log: %s", l)
		}
	}
	if l := lineWith(d.stderr(), "default/"+staticPodName("dm-x2")+` container "app" failed to start`); l != "" {
		t.Errorf("the daemon's stale supervisor tried to start a container of the removed pod: %s", l)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitDaemonLog(t, d, "SIGHUP: re-scanning", 5*time.Second)
	waitPodsRunning(t, 30*time.Second, nil, "dm-x2")
	time.Sleep(2 * time.Second)
	p := podsByName(t)["dm-x2"]
	now := podTasks(t, "dm-x2")
	if p.UID != uid || !allRunning(p) || totalRestarts(p) != 0 {
		t.Errorf("dm-x2 after down and a re-scan: UID %s phase %s restarts %d; want Running again as %s with 0 restarts", p.UID, p.Status.Phase, totalRestarts(p), uid)
	}
	if len(now) != 2 || !hasTask(now, short+"-pause") || now[short+"-app-0"] == 0 {
		t.Errorf("dm-x2 started again with containers %v, want exactly %s-pause and %s-app-0 running", now, short, short)
	}
}

// TestDaemonStaticPodNames: the daemon's pods are static pods as the
// kubelet names them: <name>-<node>, which their containers see as their
// name (downward API) and hostname; annotated with config.source file,
// config.hash (the UID, changed by an edit) and config.seen; and still
// found by the name their file gives them (logs, status, exec).
func TestDaemonStaticPodNames(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "sp-web")
	pod := func(value string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: sp-web
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "echo name=$POD_NAME host=$(hostname); trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    env:
    - {name: VALUE, value: "` + value + `"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
`
	}
	writeByRename(t, dir, "sp-web.yaml", pod("v1"))
	d := startDaemon(t, dir, nil)
	waitDaemonSynced(t, d, 60*time.Second)
	p := waitPodsRunning(t, 30*time.Second, nil, "sp-web")["sp-web"]
	full := "sp-web-" + H.Node
	if p.Name != full || p.Spec.NodeName != H.Node {
		t.Errorf("the daemon's pod is %q on node %q, want %q on %q", p.Name, p.Spec.NodeName, full, H.Node)
	}
	a := p.Annotations
	if a["kubernetes.io/config.source"] != "file" || a["kubernetes.io/config.hash"] != string(p.UID) || len(p.UID) != 32 {
		t.Errorf("annotations %v, UID %s: want config.source file and config.hash the UID (32 hex digits)", a, p.UID)
	}
	if _, err := time.Parse(time.RFC3339Nano, a["kubernetes.io/config.seen"]); err != nil {
		t.Errorf("config.seen %q: %v", a["kubernetes.io/config.seen"], err)
	}
	if row := psRow(t, full); row == nil {
		t.Errorf("podrun ps does not list %s", full)
	}
	host := full
	if len(host) > 63 {
		host = strings.TrimRight(host[:63], "-.")
	}
	want := "name=" + full + " host=" + host
	eventually(t, 20*time.Second, "the container's first line", func() (bool, string) {
		out, _ := podrunQuiet(t, "logs", "sp-web")
		return strings.Contains(out, want), out
	})
	if out, _, code := H.Podrun(t, "", "exec", "sp-web", "--", "hostname"); code != 0 || strings.TrimSpace(out) != host {
		t.Errorf("exec sp-web -- hostname: %q (exit %d), want %s", out, code, host)
	}
	if st := podStatus(t, "sp-web"); st.Name != full {
		t.Errorf("status sp-web: name %q, want %q", st.Name, full)
	}

	// An edit: another pod (UID), another config.hash.
	writeByRename(t, dir, "sp-web.yaml", pod("v2"))
	p2 := waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v2" }, "sp-web")["sp-web"]
	if p2.UID == p.UID || p2.Annotations["kubernetes.io/config.hash"] == a["kubernetes.io/config.hash"] ||
		p2.Annotations["kubernetes.io/config.hash"] != string(p2.UID) {
		t.Errorf("after an edit: UID %s -> %s, config.hash %s -> %s: want both changed, equal",
			p.UID, p2.UID, a["kubernetes.io/config.hash"], p2.Annotations["kubernetes.io/config.hash"])
	}
}
