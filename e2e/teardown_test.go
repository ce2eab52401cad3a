package e2e

// Crash-consistent teardown: a daemon stopped while it removes a pod never
// leaves it half-removed.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowTeardownPod ignores SIGTERM, so that its removal lasts its whole grace
// period, and holds a host port (portmap rules to remove).
func slowTeardownPod(name string, port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 6
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
    ports: [{containerPort: 80, hostPort: %d}]
`, name, H.Image, port)
}

// TestDaemonStoppedWhileRemovingAPod: the daemon gets SIGTERM (or SIGKILL)
// 1.5 s into the removal of a pod whose app ignores SIGTERM; with SIGTERM it
// finishes the removal before it exits; with SIGKILL the restarted daemon
// finishes it, with the pod's own grace period (6 s, not the default 30 s).
// Either way nothing of the pod is left: containers, netns, IP reservation,
// iptables rules, pod directory.
func TestDaemonStoppedWhileRemovingAPod(t *testing.T) {
	H.require(t)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			name := fmt.Sprintf("td-slow-%d", i)
			dir := t.TempDir()
			writeByRename(t, dir, name+".yaml", slowTeardownPod(name, 18090+i))
			d := startDaemon(t, dir, nil, "--resync", "2s")
			pods := waitPodsRunning(t, 60*time.Second, allRunning, name)
			uid := string(pods[name].UID)
			sandboxID := findSandboxID(t, podContainers(t, name))
			if err := os.Remove(filepath.Join(dir, name+".yaml")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // the removal waits out the grace period meanwhile
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if !d.wait(20 * time.Second) {
				t.Fatalf("the daemon did not exit after %v", sig)
			}
			if sig == syscall.SIGKILL {
				start := time.Now()
				d2 := startDaemon(t, dir, nil, "--resync", "2s")
				waitPodsGone(t, 30*time.Second, name)
				if took := time.Since(start); took > 20*time.Second {
					t.Errorf("the restarted daemon took %v to finish the removal: not the pod's 6 s grace period", took)
				}
				d2.stop(t, 30*time.Second)
			}
			checkPodGone(t, name, uid)
			if traces := networkTraces(t, sandboxID); len(traces) != 0 {
				t.Errorf("network state of the pod left: %v", traces)
			}
		})
	}
}

// TestDaemonSlowStopDelaysNoOtherPod: while the daemon removes a pod that
// takes its whole 20 s grace period to stop, a new file's pod is started
// and Running before that removal ends (each pod has its own worker).
func TestDaemonSlowStopDelaysNoOtherPod(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	slow := strings.Replace(slowTeardownPod("td-slowstop", 18092), "terminationGracePeriodSeconds: 6", "terminationGracePeriodSeconds: 20", 1)
	writeByRename(t, dir, "td-slowstop.yaml", slow)
	d := startDaemon(t, dir, nil, "--resync", "2s")
	waitPodsRunning(t, 60*time.Second, allRunning, "td-slowstop")
	if err := os.Remove(filepath.Join(dir, "td-slowstop.yaml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // its removal waits out the grace period meanwhile
	start := time.Now()
	writeByRename(t, dir, "td-new.yaml", joinDocuments(daemonPod{name: "td-new"}))
	waitPodsRunning(t, 60*time.Second, allRunning, "td-new")
	took := time.Since(start)
	t.Logf("the new pod was Running %v after its file appeared", took.Round(time.Millisecond))
	if _, still := podsByName(t)["td-slowstop"]; !still {
		t.Errorf("the new pod was Running only after the slow removal ended (%v): it waited for it", took)
	}
	waitPodsGone(t, 60*time.Second, "td-slowstop")
	if err := os.Remove(filepath.Join(dir, "td-new.yaml")); err != nil {
		t.Fatal(err)
	}
	waitPodsGone(t, 60*time.Second, "td-new")
	d.stop(t, 30*time.Second)
}
