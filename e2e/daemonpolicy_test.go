package e2e

// End-to-end tests of the node's admission rules on `podrun daemon`:
// --policy restricted and --allowed-host-paths. A pod the policy refuses is
// its file's problem, like an invalid manifest: it is not started, the
// violation is published (status file, `podrun ps` and the daemon's log),
// the other files' pods run, and fixing the file starts it. Helpers are
// prefixed dp; the dm helpers of daemon_test.go are reused, pods are named
// dp-*.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// restrictedPod is a long-running pod that meets the restricted level.
func restrictedPod(name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: 5
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
`
}

// baselineOnlyPod is the same pod with no securityContext: it meets baseline only.
func baselineOnlyPod(name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`
}

// waitDaemonProblem waits until the daemon's status file holds a problem of
// file whose message contains every string of want, and returns it.
func waitDaemonProblem(t *testing.T, file string, want ...string) string {
	t.Helper()
	var msg string
	eventually(t, 30*time.Second, fmt.Sprintf("the daemon reports %s: %q", file, want), func() (bool, string) {
		st, _ := readDaemonStatus()
		for _, p := range st.Problems {
			if p.Source != file {
				continue
			}
			msg = p.Message
			for _, w := range want {
				if !strings.Contains(p.Message, w) {
					return false, fmt.Sprintf("%+v", st.Problems)
				}
			}
			return true, ""
		}
		return false, fmt.Sprintf("%+v", st.Problems)
	})
	return msg
}

// waitNoDaemonProblems waits until the daemon's status file lists no problem.
func waitNoDaemonProblems(t *testing.T) {
	t.Helper()
	eventually(t, 20*time.Second, "the problems cleared from the status file", func() (bool, string) {
		st, ok := readDaemonStatus()
		return ok && len(st.Problems) == 0, fmt.Sprintf("%+v", st.Problems)
	})
}

// checkRefusedShown checks that a refused pod is not on the node, that
// `podrun ps` shows its file's problem on stderr, and that the daemon
// logged it as an error naming the file.
func checkRefusedShown(t *testing.T, d *podrunProc, name, file, want string) {
	t.Helper()
	if p, ok := podsByName(t)[name]; ok {
		t.Errorf("%s was started (%s, %s) although the policy refuses it", name, p.UID, p.Status.Phase)
	}
	stdout, stderr, code := H.Podrun(t, "", "ps")
	if code != 0 || !strings.Contains(stderr, file+": ") || !strings.Contains(stderr, want) {
		t.Errorf("podrun ps (exit %d) stderr does not show the problem of %s (%q):\n%s", code, file, want, stderr)
	}
	if strings.Contains(stdout, name) {
		t.Errorf("podrun ps lists %s:\n%s", name, stdout)
	}
	quoted := strings.Trim(strconv.Quote(want), `"`) // as slog's text handler writes it
	logged := false
	for _, l := range strings.Split(d.stderr(), "\n") {
		logged = logged || (strings.Contains(l, quoted) && strings.Contains(l, "level=ERROR") && strings.Contains(l, file))
	}
	if !logged {
		t.Errorf("the daemon logged no error naming %s and %q; log:\n%s", file, want, d.stderr())
	}
}

// TestDaemonPolicyRestricted: a daemon run with --policy restricted starts
// the compliant pod of its directory and not the other, whose violations
// (PodSecurity's messages) are in the status file, `podrun ps` and the log;
// the compliant pod's `podrun status` names its file; fixing the other file
// starts its pod, as uid 1000, and clears the problem.
func TestDaemonPolicyRestricted(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	okFile, looseFile := filepath.Join(dir, "dp-ok.yaml"), filepath.Join(dir, "dp-loose.yaml")
	downOnCleanup(t, "dp-ok", "dp-loose")
	writeByRename(t, dir, "dp-ok.yaml", restrictedPod("dp-ok"))
	writeByRename(t, dir, "dp-loose.yaml", baselineOnlyPod("dp-loose"))
	d := startDaemon(t, dir, nil, "--policy", "restricted", "--resync", "2s")

	pods := waitPodsRunning(t, 60*time.Second, nil, "dp-ok")
	if src := pods["dp-ok"].Spec.Containers[0].SecurityContext; src == nil || src.AllowPrivilegeEscalation == nil || *src.AllowPrivilegeEscalation {
		t.Errorf("dp-ok runs with securityContext %+v, want the manifest's", src)
	}
	const violates = `violates PodSecurity "restricted:latest": `
	msg := waitDaemonProblem(t, looseFile, looseFile+" (document 1): "+violates+"runAsNonRoot != true",
		violates+"allowPrivilegeEscalation != false", violates+"unrestricted capabilities", violates+"seccompProfile")
	t.Logf("the daemon's problem for %s:\n%s", looseFile, msg)
	// Two more re-scans: the refused pod is still not started.
	waitDaemonSyncs(t, d, 2, 20*time.Second)
	checkRefusedShown(t, d, "dp-loose", looseFile, violates+"runAsNonRoot != true")

	// SOURCE of the running pod, in ps and in status.
	stdout, _, code := H.Podrun(t, "", "ps")
	if code != 0 || !strings.Contains(stdout, okFile) {
		t.Errorf("podrun ps (exit %d) does not show dp-ok's SOURCE %s:\n%s", code, okFile, stdout)
	}
	stdout, stderr, code := H.Podrun(t, "", "status", "dp-ok")
	if first, _, _ := strings.Cut(stdout, "\n"); code != 0 || first != "# source: "+okFile {
		t.Errorf("podrun status dp-ok (exit %d): first line %q, want %q; stderr:\n%s", code, first, "# source: "+okFile, stderr)
	}

	// Fixed: the pod starts, as the non-root user, and the problem clears.
	writeByRename(t, dir, "dp-loose.yaml", restrictedPod("dp-loose"))
	waitPodsRunning(t, 60*time.Second, nil, "dp-ok", "dp-loose")
	waitNoDaemonProblems(t)
	if out, stderr, code := H.Podrun(t, "", "exec", "dp-loose", "--", "id", "-u"); code != 0 || strings.TrimSpace(out) != "1000" {
		t.Errorf("id -u in the fixed pod: %q, exit %d, want 1000; stderr:\n%s", out, code, stderr)
	}
	if _, stderr, _ := H.Podrun(t, "", "ps"); strings.Contains(stderr, looseFile) {
		t.Errorf("podrun ps still reports %s after the fix:\n%s", looseFile, stderr)
	}
}

// TestDaemonAllowedHostPaths: a daemon run with --allowed-host-paths does
// not start a pod whose hostPath is outside the allowed prefixes and
// reports it by field path; once its file names a path under an allowed
// prefix the pod starts and its write reaches the host.
func TestDaemonAllowedHostPaths(t *testing.T) {
	H.require(t)
	dir, allowed := t.TempDir(), t.TempDir()
	data := filepath.Join(allowed, "data")
	file := filepath.Join(dir, "dp-host.yaml")
	pod := func(path string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: dp-host
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: host
    hostPath: {path: ` + path + `, type: DirectoryOrCreate}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "echo dp-written > /host/f; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: host, mountPath: /host}
`
	}
	downOnCleanup(t, "dp-host")
	writeByRename(t, dir, "dp-host.yaml", pod("/etc"))
	flag := "/srv/podrun-none," + allowed
	d := startDaemon(t, dir, nil, "--allowed-host-paths", flag, "--resync", "2s")

	want := `spec.volumes[0].hostPath.path: Invalid value: "/etc": is not under an allowed host path (--allowed-host-paths ` + flag + `)`
	waitDaemonProblem(t, file, file+" (document 1): ", want)
	waitDaemonSyncs(t, d, 2, 20*time.Second)
	checkRefusedShown(t, d, "dp-host", file, want)

	writeByRename(t, dir, "dp-host.yaml", pod(data))
	pods := waitPodsRunning(t, 60*time.Second, nil, "dp-host")
	if v := pods["dp-host"].Spec.Volumes; len(v) != 1 || v[0].HostPath == nil || v[0].HostPath.Path != data {
		t.Errorf("dp-host runs with volumes %+v, want hostPath %s", v, data)
	}
	waitNoDaemonProblems(t)
	eventually(t, 10*time.Second, "the container's write under the allowed path", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(data, "f"))
		return err == nil && string(b) == "dp-written\n", fmt.Sprintf("%q, %v", b, err)
	})
	if phase := podsByName(t)["dp-host"].Status.Phase; phase != corev1.PodRunning {
		t.Errorf("dp-host is %s, want Running", phase)
	}
}

// TestDaemonCreateContainerConfigError: a pod adopted from a broken source
// (a restarted daemon cannot read the file that held its ConfigMap) cannot
// restart its container, whose env reads that ConfigMap: `podrun ps` shows
// CreateContainerConfigError, `podrun status` the container Waiting with the
// reason and message over its last termination, no restart counted; the
// supervisor tries at once (the first restart), then with its back-off,
// and fixing the file lets the next try start the container.
func TestDaemonCreateContainerConfigError(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	good := `apiVersion: v1
kind: ConfigMap
metadata: {name: dp-cfg}
data: {k: from-the-configmap}
---
apiVersion: v1
kind: Pod
metadata:
  name: dp-cfg
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "echo V=$V; sleep 4; exit 1"]
    env:
    - name: V
      valueFrom: {configMapKeyRef: {name: dp-cfg, key: k}}
`
	downOnCleanup(t, "dp-cfg")
	writeByRename(t, dir, "dp-cfg.yaml", good)
	first := startDaemon(t, dir, nil, "--resync", "2s")
	uid := waitPodsRunning(t, 60*time.Second, nil, "dp-cfg")["dp-cfg"].UID
	first.stop(t, 30*time.Second) // the pod keeps running, unsupervised

	writeByRename(t, dir, "dp-cfg.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
	startDaemon(t, dir, nil, "--resync", "2s") // adopts the pod without its ConfigMap
	const msg = `env "V": configmap "dp-cfg" not found`
	var cs corev1.ContainerStatus
	eventually(t, 60*time.Second, "dp-cfg's container Waiting in CreateContainerConfigError", func() (bool, string) {
		p := podsByName(t)["dp-cfg"]
		if len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%+v", p.Status)
		}
		cs = p.Status.ContainerStatuses[0]
		w := cs.State.Waiting
		return p.UID == uid && w != nil && w.Reason == "CreateContainerConfigError", fmt.Sprintf("%s %+v", p.UID, cs.State)
	})
	if w := cs.State.Waiting; w.Message != msg {
		t.Errorf("waiting message %q, want %q", w.Message, msg)
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || cs.RestartCount != 0 {
		t.Errorf("last termination %+v, restartCount %d; want the exit 1 of the first run, 0 restarts", cs.LastTerminationState, cs.RestartCount)
	}
	checkPsStatus(t, "dp-cfg", "CreateContainerConfigError")
	stdout, _, code := H.Podrun(t, "", "status", "dp-cfg", "-o", "json")
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(stdout), &pod); code != 0 || err != nil || len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("podrun status dp-cfg -o json: exit %d, %v:\n%s", code, err, stdout)
	}
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || w.Message != msg {
		t.Errorf("podrun status dp-cfg: state %+v, want Waiting CreateContainerConfigError %q", pod.Status.ContainerStatuses[0].State, msg)
	}

	// Fixed: the next try reads the ConfigMap and starts the first restart.
	writeByRename(t, dir, "dp-cfg.yaml", good)
	waitPodsRunning(t, 90*time.Second, func(p corev1.Pod) bool {
		return p.UID == uid && p.Status.ContainerStatuses[0].RestartCount == 1
	}, "dp-cfg")
}

// TestDaemonConfigErrorAtStart: a static pod whose container cannot be
// created (runAsNonRoot, an image that runs as root) is not dropped: as the
// kubelet shows it, `podrun ps` lists it Pending with STATUS
// CreateContainerConfigError and `podrun status` the container Waiting with
// the kubelet's message, while the daemon tries it again at each re-scan;
// a fixed manifest runs.
func TestDaemonConfigErrorAtStart(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	pod := func(nonRoot string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: dp-nonroot}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sleep", "3600"]
    securityContext: {runAsNonRoot: ` + nonRoot + `}
`
	}
	downOnCleanup(t, "dp-nonroot")
	writeByRename(t, dir, "dp-nonroot.yaml", pod("true"))
	startDaemon(t, dir, nil, "--resync", "2s")
	var p corev1.Pod
	eventually(t, 60*time.Second, "dp-nonroot Pending, its container Waiting in CreateContainerConfigError", func() (bool, string) {
		p = podsByName(t)["dp-nonroot"]
		if len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%+v", p.Status)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return p.Status.Phase == corev1.PodPending && w != nil && w.Reason == "CreateContainerConfigError", fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses[0].State)
	})
	want := fmt.Sprintf(`container has runAsNonRoot and image will run as root (pod: "%s_default(%s)", container: app)`, p.Name, p.UID)
	if w := p.Status.ContainerStatuses[0].State.Waiting; w.Message != want {
		t.Errorf("waiting message %q, want %q", w.Message, want)
	}
	checkPsStatus(t, "dp-nonroot", "CreateContainerConfigError")

	writeByRename(t, dir, "dp-nonroot.yaml", pod("false"))
	waitPodsRunning(t, 60*time.Second, nil, "dp-nonroot")
}

// TestDaemonFailedInitStaysFailed: a static pod whose init container fails
// under restartPolicy Never stays listed Failed, as the kubelet keeps it:
// init states Completed and Error, Initialized False naming the failed
// one, not tried again at the re-scans; a changed file runs.
func TestDaemonFailedInitStaysFailed(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	pod := func(code string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: dp-initfail}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: first
    image: ` + H.Image + `
    command: ["true"]
  - name: setup
    image: ` + H.Image + `
    command: ["sh", "-c", "exit ` + code + `"]
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sleep", "3600"]
`
	}
	downOnCleanup(t, "dp-initfail")
	writeByRename(t, dir, "dp-initfail.yaml", pod("3"))
	d := startDaemon(t, dir, nil, "--resync", "2s")
	var p corev1.Pod
	eventually(t, 60*time.Second, "dp-initfail Failed", func() (bool, string) {
		p = podsByName(t)["dp-initfail"]
		return p.Status.Phase == corev1.PodFailed, fmt.Sprintf("%+v", p.Status)
	})
	check := func(when string, p corev1.Pod) {
		t.Helper()
		ics := p.Status.InitContainerStatuses
		if len(ics) != 2 || ics[0].State.Terminated == nil || ics[0].State.Terminated.Reason != "Completed" ||
			ics[1].State.Terminated == nil || ics[1].State.Terminated.Reason != "Error" || ics[1].State.Terminated.ExitCode != 3 || ics[1].RestartCount != 0 {
			t.Errorf("%s: init container statuses %+v, want Completed, then Error 3 not restarted", when, ics)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "setup")) {
				t.Errorf("%s: Initialized %+v, want False naming setup", when, c)
			}
		}
	}
	check("failed", p)
	time.Sleep(7 * time.Second) // three re-scans
	if again := podsByName(t)["dp-initfail"]; again.UID != p.UID || again.Status.Phase != corev1.PodFailed {
		t.Errorf("after re-scans: %s %s, want the same pod %s Failed", again.UID, again.Status.Phase, p.UID)
	} else {
		check("after re-scans", again)
	}
	if n := len(daemonLogLines(d.stderr(), "pod failed while starting; Failed until its manifest changes", "dp-initfail")); n != 1 {
		t.Errorf("logged the failure %d times, want once:\n%s", n, d.stderr())
	}

	writeByRename(t, dir, "dp-initfail.yaml", pod("0"))
	waitPodsRunning(t, 60*time.Second, nil, "dp-initfail")
}

// TestDaemonStartErrorKeepsRestarting: a static pod whose container's
// command does not exist stays up, as the kubelet keeps it: Running, the
// container restarted with the back-off, each attempt terminated
// StartError with exit code 128 and containerd's error, never started
// (startedAt the zero of Unix time), the container waiting in
// RunContainerError (CrashLoopBackOff later in a back-off); the same pod
// all along, not rolled back or made again at the re-scans. A fixed
// manifest runs.
func TestDaemonStartErrorKeepsRestarting(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	pod := func(command string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: dp-nocmd}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["` + command + `", "3600"]
`
	}
	downOnCleanup(t, "dp-nocmd")
	writeByRename(t, dir, "dp-nocmd.yaml", pod("dp-no-such-command"))
	d := startDaemon(t, dir, nil, "--resync", "2s")
	var first corev1.Pod
	eventually(t, 60*time.Second, "dp-nocmd listed with its container", func() (bool, string) {
		first = podsByName(t)["dp-nocmd"]
		return len(first.Status.ContainerStatuses) == 1, fmt.Sprintf("%+v", first.Status)
	})
	var p corev1.Pod
	eventually(t, 60*time.Second, "dp-nocmd restarted twice after failed starts, waiting", func() (bool, string) {
		p = podsByName(t)["dp-nocmd"]
		if len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%+v", p.Status)
		}
		// Not the instant an attempt is made (ContainerCreating) but
		// the back-off after its failure.
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.LastTerminationState.Terminated != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "ContainerCreating",
			fmt.Sprintf("restarts %d, %+v, %+v", cs.RestartCount, cs.State, cs.LastTerminationState)
	})
	cs := p.Status.ContainerStatuses[0]
	if p.UID != first.UID || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s %s, want the first pod %s Running", p.UID, p.Status.Phase, first.UID)
	}
	last := cs.LastTerminationState.Terminated
	if last.Reason != "StartError" || last.ExitCode != 128 || !strings.Contains(last.Message, `exec: "dp-no-such-command": executable file not found in $PATH`) ||
		!strings.HasPrefix(last.Message, "failed to create containerd task: ") || !last.StartedAt.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("lastState %+v, want terminated StartError 128 with containerd's message, started at 1970", last)
	}
	if w := cs.State.Waiting; w == nil || (w.Reason != "RunContainerError" || w.Message != last.Message) && w.Reason != "CrashLoopBackOff" {
		t.Errorf("state %+v, want waiting RunContainerError with the message, or CrashLoopBackOff", cs.State)
	}
	if cs.Started == nil || *cs.Started || cs.Ready {
		t.Errorf("started %v ready %v, want neither", cs.Started, cs.Ready)
	}
	checkPsStatus(t, "dp-nocmd", "RunContainerError", "CrashLoopBackOff")
	for _, l := range strings.Split(d.stderr(), "\n") {
		if strings.Contains(l, "dp-nocmd") && (strings.Contains(l, "FAILED") || strings.Contains(l, "rolling back")) {
			t.Errorf("the daemon failed dp-nocmd's start: %s", l)
		}
	}

	writeByRename(t, dir, "dp-nocmd.yaml", pod("sleep"))
	waitPodsRunning(t, 60*time.Second, nil, "dp-nocmd")
}

// checkPsStatus checks that `podrun ps` shows the daemon's pod name with one
// of the STATUS values want.
func checkPsStatus(t *testing.T, name string, want ...string) {
	t.Helper()
	stdout, _, code := H.Podrun(t, "", "ps")
	if row := strings.Fields(rowNamed(stdout, staticPodName(name))); code != 0 || len(row) < 4 || !slices.Contains(want, row[3]) {
		t.Errorf("podrun ps (exit %d): %s row %q, want STATUS %s:\n%s", code, name, row, strings.Join(want, " or "), stdout)
	}
}

// rowNamed returns the first line of s whose first fields include name.
func rowNamed(s, name string) string {
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == name {
			return l
		}
	}
	return ""
}
