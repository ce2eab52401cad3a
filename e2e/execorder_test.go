package e2e

// End-to-end tests of issue 35 items 13, 19 and 20: an exec whose command
// leaves a process holding its output returns in bounded time and leaves
// no exec behind; app containers start one after another in spec order;
// a container whose postStart hook still runs is not running, started or
// Ready. Helpers are prefixed eo.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// eoExecFIFOs counts the FIFO sets of exec processes (cio's
// <tmp>/<random>/exec-<id>-stdout) under dir: a set goes with its exec.
func eoExecFIFOs(t *testing.T, dir string) int {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "*", "exec-*-stdout"))
	if err != nil {
		t.Fatal(err)
	}
	return len(found)
}

// TestExecOutputHeld: a command that starts a process in the background
// with its stdout (`sh -c 'sleep 600 & ...'`) and exits. podrun exec
// returns with its output and exit code; a probe of that kind runs every
// period without leaving its exec (FIFOs, shim record, goroutine) behind;
// a postStart hook of that kind fails in bounded time instead of holding
// up the pod for ever.
func TestExecOutputHeld(t *testing.T) {
	H.require(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where podrun's exec FIFOs go (cio: os.MkdirTemp)
	_, up := svForeground(t, "eo-held", `apiVersion: v1
kind: Pod
metadata:
  name: eo-held
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+svLoop+`"]
    readinessProbe:
      exec: {command: ["sh", "-c", "sleep 600 & exit 0"]}
      periodSeconds: 1
      timeoutSeconds: 5
`, "--wait=running")

	t.Run("podrun exec returns", func(t *testing.T) {
		start := time.Now()
		stdout, stderr, code, timedOut := svRun(t, "", 40*time.Second, "exec", "eo-held", "--", "sh", "-c", "sleep 600 & echo started")
		took := time.Since(start)
		if timedOut || took > 20*time.Second {
			t.Fatalf("podrun exec of a command that left a process holding its output took %v (timed out: %v)", took, timedOut)
		}
		if code != 0 || stdout != "started\n" {
			t.Errorf("podrun exec: exit %d, stdout %q; want 0 and the command's output", code, stdout)
		}
		if !strings.Contains(stderr, "output held open") {
			t.Errorf("podrun exec stderr does not say the output was cut: %q", stderr)
		}
	})

	t.Run("probes leave no exec behind", func(t *testing.T) {
		time.Sleep(8 * time.Second) // several probe periods, each drained within its timeout
		if n := eoExecFIFOs(t, tmp); n > 1 {
			t.Errorf("%d exec FIFO sets left after the probes (at most the one in flight may remain)", n)
		}
		pod := svStatus(t, "eo-held")
		if cs := svMustCS(t, pod, "app"); cs.Ready {
			t.Errorf("container app Ready with a probe whose output never ends (the kubelet's times out)")
		}
		if up.exited() {
			t.Fatalf("podrun up -f exited: %s", up.stderr())
		}
	})

	t.Run("postStart hook fails in bounded time", func(t *testing.T) {
		_, _, stderr, code, took := svUp(t, "eo-held-hook", `apiVersion: v1
kind: Pod
metadata:
  name: eo-held-hook
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+svLoop+`"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "sleep 600 & exit 0"]}
`, "--timeout", "60s")
		if took > 30*time.Second {
			t.Errorf("up took %v: the hook waited for output a background process holds", took)
		}
		if code != 1 || !strings.Contains(stderr, "output held open") {
			t.Errorf("up: exit %d, want 1 with the hook's failure (output held open); stderr:\n%s", code, stderr)
		}
		pod := svStatus(t, "eo-held-hook")
		if pod.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s, want Failed (the hook failed, restartPolicy Never)", pod.Status.Phase)
		}
	})
	if n := eoExecFIFOs(t, tmp); n > 1 {
		t.Errorf("%d exec FIFO sets left at the end", n)
	}
	_ = os.RemoveAll(tmp)
}
