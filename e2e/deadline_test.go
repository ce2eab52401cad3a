package e2e

// spec.activeDeadlineSeconds: a pod active longer than its deadline since
// its start time is killed and Failed with reason DeadlineExceeded, as the
// kubelet's activeDeadlineHandler does. Helpers are prefixed dl.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const deadlineMessage = "Pod was active on the node longer than the specified deadline"

// deadlinePod is a pod with a 3 s deadline whose container runs for a minute.
func deadlinePod(name, policy, grace, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: %s
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
`, name, policy, grace, H.Image, command)
}

// checkDeadlineExceeded checks that pod is Failed at its deadline with the
// kubelet's reason and message, that its container ended with code and was
// not restarted, and that `ps -a` shows DeadlineExceeded.
func checkDeadlineExceeded(t *testing.T, pod corev1.Pod, code int32) {
	t.Helper()
	if pod.Status.Phase != corev1.PodFailed || pod.Status.Reason != "DeadlineExceeded" || pod.Status.Message != deadlineMessage {
		t.Errorf("status phase %s reason %q message %q, want Failed, DeadlineExceeded, %q",
			pod.Status.Phase, pod.Status.Reason, pod.Status.Message, deadlineMessage)
	}
	cs := mustContainerStatus(t, pod, "main")
	if term := cs.State.Terminated; term == nil || term.ExitCode != code || cs.RestartCount != 0 {
		t.Errorf("container status %+v, want terminated with %d, no restart", cs, code)
	}
	if row := psRow(t, pod.Name, "-a"); len(row) < 4 || row[3] != "DeadlineExceeded" {
		t.Errorf("podrun ps -a row %q, want STATUS DeadlineExceeded", row)
	}
}

// TestDeadlineForeground: `up -f` kills a restartPolicy Always pod 3 s
// after its start time: SIGTERM with the pod's grace period (the container
// exits 143 on it), no restart, the sandbox's network released; SIGTERM to
// `up -f` then removes everything.
func TestDeadlineForeground(t *testing.T) {
	H.require(t)
	_, up := upForeground(t, "dl-fg", deadlinePod("dl-fg", "Always", "30", "trap 'exit 143' TERM; while true; do sleep 0.1; done"))
	pod := waitStatus(t, "dl-fg", 20*time.Second, "pod dl-fg Failed", func(pod corev1.Pod) (bool, string) {
		return pod.Status.Phase == corev1.PodFailed, fmt.Sprintf("phase %s reason %q", pod.Status.Phase, pod.Status.Reason)
	})
	if pod.Status.StartTime == nil {
		t.Fatal("no startTime")
	}
	ended := time.Now()
	active := ended.Sub(pod.Status.StartTime.Time)
	t.Logf("Failed %v after the pod's start time", active.Round(time.Millisecond))
	if active < 3*time.Second || active > 10*time.Second {
		t.Errorf("the pod was Failed %v after its start time, want 3 s (the deadline) plus the time to stop it", active)
	}
	checkDeadlineExceeded(t, pod, 143)
	if !strings.Contains(up.stderr(), "DeadlineExceeded: "+deadlineMessage) {
		t.Errorf("up -f did not report the deadline; stderr:\n%s", up.stderr())
	}
	if listNetns(t)["podrun-"+string(pod.UID)] {
		t.Errorf("the network namespace of the ended pod is still there")
	}
	time.Sleep(3 * time.Second)
	if p := podStatus(t, "dl-fg"); p.Status.Phase != corev1.PodFailed || mustContainerStatus(t, p, "main").RestartCount != 0 {
		t.Errorf("after 3 s more: phase %s restarts %d, want Failed and none", p.Status.Phase, mustContainerStatus(t, p, "main").RestartCount)
	}
	if code, _ := up.terminate(t, 60*time.Second); code != 0 {
		t.Errorf("up -f exit %d after SIGTERM; stderr:\n%s", code, up.stderr())
	}
	checkPodGone(t, "dl-fg", string(pod.UID))
}

// TestDeadlineWaitCompletion: `up --wait=completion` on a restartPolicy
// Never pod that would sleep for a minute returns at the deadline, exit 1
// like any failed pod, with the pod Failed/DeadlineExceeded (sleep ignores
// SIGTERM as PID 1: SIGKILL after the pod's 2 s grace, exit 137); `down`
// removes it. (`--wait=ready` returns once it is Ready: then no podrun is
// left to enforce the deadline.)
func TestDeadlineWaitCompletion(t *testing.T) {
	H.require(t)
	_, _, stderr, code, took := runUpTimed(t, "dl-wait", deadlinePod("dl-wait", "Never", "2", "exec sleep 60"), "--wait=completion")
	t.Logf("up returned after %v", took.Round(time.Millisecond))
	if code != 1 {
		t.Errorf("podrun up: exit %d, want 1 (a failed pod); stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "DeadlineExceeded: "+deadlineMessage) {
		t.Errorf("up did not say why the pod failed; stderr:\n%s", stderr)
	}
	if took > 30*time.Second {
		t.Errorf("up took %v, want the 3 s deadline plus the 2 s grace and the setup", took)
	}
	pod := podStatus(t, "dl-wait")
	checkDeadlineExceeded(t, pod, 137)
	if _, stderr, code := H.Podrun(t, "", "down", "dl-wait"); code != 0 {
		t.Fatalf("podrun down dl-wait: exit %d; stderr:\n%s", code, stderr)
	}
	checkPodGone(t, "dl-wait", string(pod.UID))
}
