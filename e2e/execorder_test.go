package e2e

// End-to-end tests of issue 35 items 13, 19 and 20: an exec whose command
// leaves a process holding its output returns in bounded time and leaves
// no exec behind; app containers start one after another in spec order;
// a container whose postStart hook still runs is not running, started or
// Ready. Helpers are prefixed eo.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/defaults"
	corev1 "k8s.io/api/core/v1"
)

// countExecFIFOs counts the FIFO sets of podrun's exec processes (cio's
// <fifo dir>/<random>/exec-<id>-stdout, in containerd's default FIFO
// directory, the client's): a set goes when its exec is deleted.
func countExecFIFOs(t *testing.T) int {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(defaults.DefaultFIFODir, "*", "exec-*-stdout"))
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
	_, up := upForeground(t, "eo-held", `apiVersion: v1
kind: Pod
metadata:
  name: eo-held
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
    readinessProbe:
      exec: {command: ["sh", "-c", "sleep 600 & exit 0"]}
      periodSeconds: 1
      timeoutSeconds: 3
`, "--wait=running")

	t.Run("podrun exec returns", func(t *testing.T) {
		start := time.Now()
		stdout, stderr, code, timedOut := podrunWithTimeout(t, "", 40*time.Second, "exec", "eo-held", "--", "sh", "-c", "sleep 600 & echo started")
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
		start := countExecFIFOs(t)
		time.Sleep(16 * time.Second) // several probe periods, each drained within its timeout
		// A probe in flight has its set, and one being deleted (the shim
		// waits up to 2 s for its output copy) may still have its own.
		if n := countExecFIFOs(t) - start; n > 2 {
			t.Errorf("%d exec FIFO sets more after the probes (each probe's goes with it; at most two in flight)", n)
		}
		pod := podStatus(t, "eo-held")
		if cs := mustContainerStatus(t, pod, "app"); cs.Ready {
			t.Errorf("container app Ready with a probe whose output never ends (the kubelet's times out)")
		}
		if up.exited() {
			t.Fatalf("podrun up -f exited: %s", up.stderr())
		}
	})

	t.Run("postStart hook fails in bounded time", func(t *testing.T) {
		_, _, stderr, code, took := runUpTimed(t, "eo-held-hook", `apiVersion: v1
kind: Pod
metadata:
  name: eo-held-hook
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 3' TERM; while true; do sleep 0.1; done"]
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
		pod := podStatus(t, "eo-held-hook")
		if pod.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s, want Failed (the hook failed, the container killed exited 3, restartPolicy Never)", pod.Status.Phase)
		}
	})
}

// TestAppsStartInSpecOrder: app containers start one after another in spec
// order, each once the one before has started (its postStart hook
// returned), as the kubelet's SyncPod starts them. The docs'
// streaming-sidecar example: the sidecar's tail finds the file the writer
// made; and a container that reads at its start what the one before made
// in its postStart hook finds it.
func TestAppsStartInSpecOrder(t *testing.T) {
	H.require(t)
	t.Run("streaming sidecar", func(t *testing.T) {
		mustRunUpTimed(t, "eo-counter", `apiVersion: v1
kind: Pod
metadata:
  name: eo-counter
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: count
    image: `+H.Image+`
    args:
    - /bin/sh
    - -c
    - >
      i=0;
      while true;
      do
        echo "$i: $(date)" >> /var/log/1.log;
        i=$((i+1));
        sleep 1;
      done
    volumeMounts:
    - {name: varlog, mountPath: /var/log}
  - name: count-log-1
    image: `+H.Image+`
    args: [/bin/sh, -c, 'tail -n+1 -F /var/log/1.log']
    volumeMounts:
    - {name: varlog, mountPath: /var/log}
  volumes:
  - {name: varlog, emptyDir: {}}
`, "--wait=running")
		var out string
		eventually(t, 15*time.Second, "the sidecar's first line", func() (bool, string) {
			out, _ = podrunQuiet(t, "logs", "eo-counter", "-c", "count-log-1")
			return strings.Contains(out, "\n"), out
		})
		if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "0: ") {
			t.Errorf("the sidecar's first line is %q, want the writer's first (0: ...): it started before the writer made the file", first)
		}
	})

	t.Run("postStart before the next container", func(t *testing.T) {
		mustRunUpTimed(t, "eo-order", `apiVersion: v1
kind: Pod
metadata:
  name: eo-order
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: first
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "sleep 1; echo made-by-first > /shared/ready"]}
  - name: second
    image: `+H.Image+`
    command: ["sh", "-c", "cat /shared/ready || exit 1; `+sleepLoop+`"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
  volumes:
  - {name: shared, emptyDir: {}}
`, "--wait=running")
		pod := podStatus(t, "eo-order")
		if cs := mustContainerStatus(t, pod, "second"); cs.State.Running == nil {
			t.Errorf("container second: %+v, want running (it found the file first's postStart made)", cs.State)
		}
		if out, _ := podrunQuiet(t, "logs", "eo-order", "-c", "second"); out != "made-by-first\n" {
			t.Errorf("second's log %q, want made-by-first", out)
		}
	})
}

// TestPostStartHoldsRunning: a container whose postStart hook still runs is
// not running, started or Ready (the kubelet shows it ContainerCreating,
// the pod Pending), the next container is not started, and up waits;
// once the hook returns, both run and the pod is Ready.
func TestPostStartHoldsRunning(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "eo-hang.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: eo-hang
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "while [ ! -f /tmp/go ]; do sleep 0.1; done"]}
  - name: next
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
`)
	downOnCleanup(t, file)
	up := startPodrun(t, "up", "--wait=running", file)
	eventually(t, 60*time.Second, "app's task running (its hook waiting)", func() (bool, string) {
		return appTaskRuns(t), "podrun exec eo-hang -c app -- true fails; up stderr:\n" + up.stderr()
	})
	time.Sleep(2 * time.Second) // the hook keeps waiting
	pod := podStatus(t, "eo-hang")
	cs := mustContainerStatus(t, pod, "app")
	if cs.State.Running != nil || cs.Ready || (cs.Started != nil && *cs.Started) || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("container app while its postStart hook runs: %+v, want waiting ContainerCreating, not started or ready", cs)
	}
	if next := mustContainerStatus(t, pod, "next"); next.State.Running != nil || next.Ready {
		t.Errorf("container next started while app's postStart hook runs: %+v", next)
	}
	if _, code := podrunQuiet(t, "exec", "eo-hang", "-c", "next", "--", "true"); code == 0 {
		t.Errorf("podrun exec reaches container next: its task runs while app's postStart hook runs")
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s while a postStart hook runs, want Pending", pod.Status.Phase)
	}
	if c := podCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready condition %+v while a postStart hook runs, want False", c)
	}
	if up.exited() {
		t.Errorf("up --wait=running returned while a postStart hook ran: %s", up.stderr())
	}
	execIn(t, "eo-hang", "app", "touch", "/tmp/go")
	if !up.wait(60 * time.Second) {
		t.Fatalf("up did not return after the hook did; stderr:\n%s", up.stderr())
	}
	if code := up.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("up: exit %d; stderr:\n%s", code, up.stderr())
	}
	pod = waitStatus(t, "eo-hang", 10*time.Second, "both running and Ready", func(p corev1.Pod) (bool, string) {
		a, n := containerStatus(p, "app"), containerStatus(p, "next")
		return a != nil && n != nil && a.Ready && n.State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses)
	})
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s after the hook returned, want Running", pod.Status.Phase)
	}
}

// appTaskRuns reports whether `podrun exec` reaches container app of
// eo-hang (its task runs).
func appTaskRuns(t *testing.T) bool {
	_, code := podrunQuiet(t, "exec", "eo-hang", "-c", "app", "--", "true")
	return code == 0
}

// TestPostStartFailingBackOff: the node-conformance lifecycle-hook pod's
// case, a postStart hook that fails after a wait, every time. As on the
// kubelet the container is never running or Ready; it shows
// ContainerCreating during its first hook, then PostStartHookError (the
// first restart is at once), then CrashLoopBackOff, its restart count
// growing as the kubelet's.
func TestPostStartFailingBackOff(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "eo-hookfail.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: eo-hookfail
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "`+sleepLoop+`"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "sleep 3; echo no handler; exit 1"]}
`)
	downOnCleanup(t, file)
	// up supervises its restarts while it waits for the container to start
	// (it never does: up times out past the test).
	up := startPodrun(t, "up", "--foreground", "--wait=running", "--timeout", "5m", file)
	eventually(t, 60*time.Second, "the pod listed", func() (bool, string) {
		_, code := podrunQuiet(t, "status", "eo-hookfail")
		return code == 0, "up stderr:\n" + up.stderr()
	})
	seen := map[string]bool{}
	var maxRestarts int32
	// The hooks' timeline starts once the sandbox is made, which takes
	// seconds on a loaded machine: watch until 19 s after the first hook
	// failed (PostStartHookError first shown, 3 s into the hooks), at most
	// a minute.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, code := podrunQuiet(t, "status", "eo-hookfail", "-o", "json")
		if code != 0 {
			t.Fatalf("podrun status: exit %d", code)
		}
		pod := decodePod(t, out)
		cs := mustContainerStatus(t, pod, "app")
		if cs.Ready || cs.State.Running != nil || (cs.Started != nil && *cs.Started) {
			t.Fatalf("container running, started or Ready though every postStart hook fails: %+v", cs)
		}
		if c := podCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
			t.Fatalf("pod Ready %+v though every postStart hook fails", c)
		}
		if w := cs.State.Waiting; w != nil {
			if w.Reason == "PostStartHookError" && !seen[w.Reason] {
				deadline = time.Now().Add(19 * time.Second)
			}
			seen[w.Reason] = true
			if w.Reason == "PostStartHookError" && !strings.Contains(w.Message, "no handler") {
				t.Errorf("PostStartHookError message %q, want the hook's failure and output", w.Message)
			}
		}
		maxRestarts = max(maxRestarts, cs.RestartCount)
		time.Sleep(200 * time.Millisecond)
	}
	for _, r := range []string{"ContainerCreating", "PostStartHookError", "CrashLoopBackOff"} {
		if !seen[r] {
			t.Errorf("never seen waiting %s; seen %v", r, seen)
		}
	}
	// 0-3 s attempt 0, 3-6 s attempt 1 (at once), back-off 10 s, 16-19 s
	// attempt 2 (shown with restartCount 1), back-off 20 s.
	if maxRestarts < 1 || maxRestarts > 2 {
		t.Errorf("restartCount reached %d by 19 s after the first hook failed, want 1 or 2", maxRestarts)
	}
	if up.exited() {
		t.Errorf("up --foreground exited: %s", up.stderr())
	}
}
