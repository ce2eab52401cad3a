package e2e

// emptyDir sizeLimit on disk: the supervising process (`up -f`, the daemon)
// measures the volume every 10 s and evicts the pod over the limit, as the
// kubelet's eviction manager does. Helpers are prefixed ev.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// diskHogPod is a pod whose container fills its 1Mi disk emptyDir with 4 MiB,
// then idles ignoring SIGTERM (so that only the eviction's short grace
// period, not its own 30 s, ends it).
func diskHogPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: writer
    image: %s
    command: ["sh", "-c", "trap '' TERM; sleep 1; dd if=/dev/zero of=/scratch/fill bs=1M count=4; echo filled; while true; do sleep 0.1; done"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
  volumes:
  - name: scratch
    emptyDir:
      sizeLimit: 1Mi
`, name, H.Image)
}

const evictionMessage = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `

// waitEvicted polls `podrun status NAME -o json` until the pod is Failed,
// and checks it says Evicted with the kubelet's message, that its container
// was killed and not restarted, and that `ps -a` shows Evicted. It returns
// how long the eviction took to show.
func waitEvicted(t *testing.T, name string, timeout time.Duration) corev1.Pod {
	t.Helper()
	pod := waitStatus(t, name, timeout, "pod "+name+" Failed", func(pod corev1.Pod) (bool, string) {
		return pod.Status.Phase == corev1.PodFailed, fmt.Sprintf("phase %s reason %q", pod.Status.Phase, pod.Status.Reason)
	})
	if pod.Status.Reason != "Evicted" || pod.Status.Message != evictionMessage {
		t.Errorf("status reason %q message %q, want Evicted and %q", pod.Status.Reason, pod.Status.Message, evictionMessage)
	}
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %+v", pod.Status.ContainerStatuses)
	}
	cs := pod.Status.ContainerStatuses[0]
	if term := cs.State.Terminated; term == nil || term.ExitCode != 137 || cs.RestartCount != 0 {
		t.Errorf("container status %+v, want terminated by SIGKILL (137), no restart", cs)
	}
	if row := psRow(t, name, "-a"); len(row) < 4 || row[3] != "Evicted" {
		t.Errorf("podrun ps -a row %q, want STATUS Evicted", row)
	}
	return pod
}

// TestEvictionEmptyDirSizeLimit: `up -f` evicts a pod that writes 4 MiB
// into a 1Mi emptyDir within a housekeeping interval or two; the
// container is stopped with the eviction's grace (SIGTERM ignored, so
// SIGKILL after 2 s, not the pod's 30 s) and not restarted; SIGTERM to
// `up -f` removes everything.
func TestEvictionEmptyDirSizeLimit(t *testing.T) {
	H.require(t)
	_, up := upForeground(t, "ev-fill", diskHogPod("ev-fill"))
	start := time.Now()
	pod := waitEvicted(t, "ev-fill", 30*time.Second)
	took := time.Since(start)
	t.Logf("evicted %v after up -f supervised", took.Round(time.Millisecond))
	if took > 25*time.Second {
		t.Errorf("eviction took %v, want within ~20 s (10 s housekeeping + 2 s grace)", took)
	}
	if !strings.Contains(up.stderr(), "evicted: "+strings.TrimSpace(evictionMessage)) {
		t.Errorf("up -f did not report the eviction; stderr:\n%s", up.stderr())
	}
	// The data stays for inspection until down; the sandbox does not run.
	if _, err := os.Stat(filepath.Join(H.Root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch", "fill")); err != nil {
		t.Errorf("the emptyDir's file after eviction: %v", err)
	}
	if listNetns(t)["podrun-"+string(pod.UID)] {
		t.Errorf("the evicted pod's network namespace is still there")
	}
	time.Sleep(3 * time.Second)
	if p := podStatus(t, "ev-fill"); p.Status.ContainerStatuses[0].RestartCount != 0 || p.Status.Phase != corev1.PodFailed {
		t.Errorf("after 3 s more: phase %s restarts %d, want Failed and none", p.Status.Phase, p.Status.ContainerStatuses[0].RestartCount)
	}
	if code, _ := up.terminate(t, 60*time.Second); code != 0 {
		t.Errorf("up -f exit %d after SIGTERM; stderr:\n%s", code, up.stderr())
	}
	checkPodGone(t, "ev-fill", string(pod.UID))
}

// TestEvictionDaemon: the daemon evicts the same pod, leaves it Failed
// (it does not start it again while the file is unchanged), and `down`
// removes it.
func TestEvictionDaemon(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	writeByRename(t, dir, "ev-daemon.yaml", diskHogPod("ev-daemon"))
	downOnCleanup(t, "ev-daemon")
	d := startDaemon(t, dir, nil, "--resync", "2s")
	pod := waitEvicted(t, "ev-daemon", 45*time.Second)
	waitDaemonSyncs(t, d, 2, 30*time.Second)
	if p := podStatus(t, "ev-daemon"); p.UID != pod.UID || p.Status.Phase != corev1.PodFailed || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("after two more syncs: uid %s phase %s restarts %d, want the same pod, Failed, no restart",
			p.UID, p.Status.Phase, p.Status.ContainerStatuses[0].RestartCount)
	}
	if !strings.Contains(d.stderr(), "evicted") {
		t.Errorf("the daemon did not log the eviction; stderr:\n%s", d.stderr())
	}
	d.stop(t, 30*time.Second)
	if _, stderr, code := H.Podrun(t, "", "down", "ev-daemon"); code != 0 {
		t.Fatalf("podrun down ev-daemon: exit %d; stderr:\n%s", code, stderr)
	}
	checkPodGone(t, "ev-daemon", string(pod.UID))
}
