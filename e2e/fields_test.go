package e2e

// Fields of today's API that podrun implements, one case each.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEmptyDirMode: the docs' emptyDir.mode example, 01777, is seen in the
// container as drwxrwxrwt.
func TestEmptyDirMode(t *testing.T) {
	H.require(t)
	_, _, stderr, code := runUp(t, "fd-mode", `apiVersion: v1
kind: Pod
metadata:
  name: fd-mode
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "ls -ld /scratch /mem"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
  volumes:
  - name: scratch
    emptyDir: {mode: 01777}
  - name: mem
    emptyDir: {medium: Memory, mode: 01777}
`)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	out, _, _ := H.Podrun(t, "", "logs", "fd-mode")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "drwxrwxrwt") {
			t.Errorf("ls -ld: %q, want drwxrwxrwt", line)
		}
	}
	if n := strings.Count(out, "drwxrwxrwt"); n != 2 {
		t.Errorf("ls -ld output %q: want both volumes drwxrwxrwt", out)
	}
}

// TestLifecycleStopSignal: a container's lifecycle.stopSignal SIGUSR1 is
// what `down` sends it (its trap says so in its log, which down keeps).
func TestLifecycleStopSignal(t *testing.T) {
	H.require(t)
	file, _, stderr, code := runUp(t, "fd-stop", `apiVersion: v1
kind: Pod
metadata:
  name: fd-stop
spec:
  os: {name: linux}
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'echo got USR1; exit 0' USR1; trap 'echo got TERM; exit 0' TERM; echo ready; while true; do sleep 0.1; done"]
    lifecycle: {stopSignal: SIGUSR1}
`, "--wait=running")
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	eventually(t, 10*time.Second, "the app's trap set", func() (bool, string) {
		out, _ := podrunQuiet(t, "logs", "fd-stop")
		return strings.Contains(out, "ready"), out
	})
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(H.LogDir, "default_fd-stop_*", "app", "0.log"))
	if len(logs) != 1 {
		t.Fatalf("logs of fd-stop: %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), "got USR1") || strings.Contains(string(b), "got TERM") {
		t.Errorf("the app's log %q: want SIGUSR1, not SIGTERM", b)
	}
}

// TestRestartPolicyRules: a rule restarting the container on exit code 42
// only (an init container's too: its first run exits 42 and is restarted,
// its second exits 0 under the pod's Never): the app's first run exits 42 and is restarted, its second exits 3 and is
// not (its own restartPolicy Never).
func TestRestartPolicyRules(t *testing.T) {
	H.require(t)
	_, _, stderr, code := runUp(t, "fd-rules", `apiVersion: v1
kind: Pod
metadata:
  name: fd-rules
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: `+H.Image+`
    command: ["sh", "-c", "if [ -e /data/init ]; then exit 0; fi; touch /data/init; exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "if [ -e /data/ran ]; then exit 3; fi; touch /data/ran; exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
`, "--wait=completion") // the app is Ready a moment between its runs: up's default could return then
	if code != 1 || !strings.Contains(stderr, `container "app" exited with code 3`) {
		t.Fatalf("up: exit %d, want 1 (exit code 3 is not restarted)\n%s", code, stderr)
	}
	st := podStatus(t, "fd-rules")
	if ics := st.Status.InitContainerStatuses; len(ics) != 1 || ics[0].RestartCount != 1 || ics[0].State.Terminated == nil || ics[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container setup: %+v; want restarted once (42), then 0", ics)
	}
	cs := mustContainerStatus(t, st, "app")
	// The finished container has no lastState: the kubelet keeps one
	// exited container per name, so the exit 42 is gone from its status.
	if cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 ||
		cs.LastTerminationState.Terminated != nil {
		t.Errorf("container app: restartCount %d, state %+v, lastState %+v; want 1 restart, 3, no lastState", cs.RestartCount, cs.State, cs.LastTerminationState)
	}
}

// TestHostnameOverride: the pod's hostname is its hostnameOverride.
func TestHostnameOverride(t *testing.T) {
	H.require(t)
	_, _, stderr, code := runUp(t, "fd-host", `apiVersion: v1
kind: Pod
metadata:
  name: fd-host
spec:
  restartPolicy: Never
  hostnameOverride: custom-host.lab
  containers:
  - name: app
    image: `+H.Image+`
    command: ["hostname"]
`)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	if out, _, _ := H.Podrun(t, "", "logs", "fd-host"); out != "custom-host.lab\n" {
		t.Errorf("hostname in the pod: %q, want custom-host.lab", out)
	}
}

// TestFileKeyRef: an init container writes an env file into an emptyDir;
// the app's env reads a key of it (fileKeyRef).
func TestFileKeyRef(t *testing.T) {
	H.require(t)
	_, _, stderr, code := runUp(t, "fd-envfile", `apiVersion: v1
kind: Pod
metadata:
  name: fd-envfile
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: `+H.Image+`
    command: ["sh", "-c", "printf '# written by setup\nDB_ADDRESS=db.lab:5432\nMODE=fast\n' > /config/config.env"]
    volumeMounts: [{name: config, mountPath: /config}]
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "echo DB=$DB_ADDRESS"]
    env:
    - name: DB_ADDRESS
      valueFrom:
        fileKeyRef: {volumeName: config, path: config.env, key: DB_ADDRESS}
  volumes:
  - {name: config, emptyDir: {}}
`)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	if out, _, _ := H.Podrun(t, "", "logs", "fd-envfile", "-c", "app"); out != "DB=db.lab:5432\n" {
		t.Errorf("app's log %q, want DB=db.lab:5432", out)
	}
}
