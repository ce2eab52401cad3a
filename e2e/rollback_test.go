package e2e

// End-to-end tests of issue 29: an edit that never gets Ready is rolled
// back. The daemon: a new version whose container exits at once, and one
// whose readiness probe never passes (a short deadline by annotation), are
// replaced by the last version that became Ready, shown RolledBack and
// counted, until the file changes again. Helpers are prefixed rb, pods
// named rb-*.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// rolloutPod is a one-container busybox pod: a long-running app unless exit is
// set (the app exits 1 at once); with notReady, a readiness probe that
// never passes; deadline sets podrun.io/progress-deadline-seconds.
type rolloutPod struct {
	name, value string
	exit        bool
	notReady    bool
	deadline    int
}

func (p rolloutPod) yaml() string {
	script := "trap 'exit 0' TERM; while true; do sleep 0.1; done"
	if p.exit {
		script = "echo bad version; exit 1"
	}
	cmd, _ := json.Marshal([]string{"sh", "-c", script})
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n", p.name)
	if p.deadline > 0 {
		fmt.Fprintf(&b, "  annotations:\n    podrun.io/progress-deadline-seconds: %q\n", fmt.Sprint(p.deadline))
	}
	fmt.Fprintf(&b, `spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    command: %s
    env:
    - name: VALUE
      value: %q
`, H.Image, cmd, p.value)
	if p.notReady {
		b.WriteString("    readinessProbe:\n      exec:\n        command: [\"false\"]\n      periodSeconds: 1\n")
	}
	return b.String()
}

// waitValue waits until pod name runs VALUE value, Running and Ready.
func waitValue(t *testing.T, name, value string, timeout time.Duration) corev1.Pod {
	t.Helper()
	pods := waitPodsRunning(t, timeout, func(p corev1.Pod) bool { return e2eFileName(p) != name || valueEnv(p) == value && isReady(p) }, name)
	return pods[name]
}

// TestRollbackDaemonCrash: an edit to a version whose container exits 1 at
// once is rolled back to the version before (Running again, the same UID
// as before the edit), `ps` says RolledBack, the status file and the
// metric say why; the same bad file stays rolled back at the re-scans; a
// later good edit applies normally.
func TestRollbackDaemonCrash(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "rb-crash")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	d := startDaemon(t, dir, nil, "--resync", "2s", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	waitDaemonSynced(t, d, 60*time.Second)

	good := startFirstVersion(t, dir, "rb-crash")

	start := time.Now()
	writeByRename(t, dir, "rb-crash.yaml", rolloutPod{name: "rb-crash", value: "v2", exit: true}.yaml())
	eventually(t, 60*time.Second, "rb-crash rolled back to v1 (its UID before the edit), RolledBack in ps", func() (bool, string) {
		row := quietPsRow(t, "rb-crash")
		p, ok := podsByName(t)["rb-crash"]
		return ok && p.UID == good.UID && allRunning(p) && len(row) > 3 && row[3] == "RolledBack", fmt.Sprintf("ps row %q, uid %s", row, p.UID)
	})
	t.Logf("bad edit -> rolled back and Running after %v", time.Since(start).Round(time.Millisecond))
	waitDaemonLog(t, d, `msg="new version failed; rolling back until its file changes" pod=default/`+staticPodName("rb-crash"), 5*time.Second)
	if lines := daemonLogLines(d.stderr(), "new version failed; rolling back until its file changes", "rb-crash"); len(lines) != 1 ||
		!strings.Contains(lines[0], "reason=CrashLoopBackOff") {
		t.Errorf("daemon log: rollback lines %q, want one with reason=CrashLoopBackOff", lines)
	}
	p := podsByName(t)["rb-crash"]
	if c := progressingCondition(p); c == nil || c.Reason != "CrashLoopBackOff" || !strings.Contains(c.Message, "rolled back to revision 1") {
		t.Errorf("podrun status: Progressing condition %+v, want False CrashLoopBackOff, rolled back to revision 1", c)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	eventually(t, 10*time.Second, `podrun_rollbacks_total{reason="CrashLoopBackOff"} 1`, func() (bool, string) {
		_, body, _ := getWithTimeout(client, base+"/metrics")
		n, _ := metricValue(body, `podrun_rollbacks_total{reason="CrashLoopBackOff"}`)
		return n == 1, fmt.Sprint(n)
	})
	if st, _ := readDaemonStatus(); len(st.RolledBack) != 1 || st.RolledBack[0]["reason"] != "CrashLoopBackOff" {
		t.Errorf("status file rolledBack = %v, want rb-crash with reason CrashLoopBackOff", st.RolledBack)
	}

	// The bad version is not tried again at the re-scans.
	waitDaemonSyncs(t, d, 3, 30*time.Second)
	if p := podsByName(t)["rb-crash"]; p.UID != good.UID {
		t.Errorf("after re-scans rb-crash runs %s, want the rolled-back %s", p.UID, good.UID)
	}
	if n := len(daemonLogLines(d.stderr(), "pod replaced", "rb-crash")); n != 2 {
		t.Errorf("daemon log: rb-crash replaced %d times, want 2 (the bad edit, the rollback)", n)
	}

	// A good edit applies normally, and is no longer RolledBack.
	writeByRename(t, dir, "rb-crash.yaml", rolloutPod{name: "rb-crash", value: "v3"}.yaml())
	waitValue(t, "rb-crash", "v3", 30*time.Second)
	if row := quietPsRow(t, "rb-crash"); len(row) < 4 || row[3] != "Running" {
		t.Errorf("after a good edit: ps row %q, want Running", row)
	}
	eventually(t, 10*time.Second, "rollout history: revisions 1 and 2", func() (bool, string) {
		out, _ := podrunQuiet(t, "rollout", "history", "rb-crash")
		return hasRevision(out, 1) && hasRevision(out, 2), out
	})

	// rollout undo of the daemon's pod: back to revision 1, nothing written
	// into the directory, kept at the re-scans until the file changes.
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "rb-crash"); code != 0 || !strings.Contains(out, "the daemon applies it") {
		t.Fatalf("rollout undo: exit %d\n%s\n%s", code, out, stderr)
	}
	eventually(t, 30*time.Second, "rb-crash back at v1 after undo", func() (bool, string) {
		p := podsByName(t)["rb-crash"]
		return p.UID == good.UID && allRunning(p), string(p.UID)
	})
	waitDaemonSyncs(t, d, 2, 30*time.Second)
	if p := podsByName(t)["rb-crash"]; p.UID != good.UID {
		t.Errorf("after re-scans the undone rb-crash runs %s (VALUE %q), want v1", p.UID, valueEnv(p))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rb-crash.yaml")); !strings.Contains(string(b), `"v3"`) {
		t.Errorf("rollout undo changed the daemon's file:\n%s", b)
	}
	if out, code := podrunQuiet(t, "rollout", "status", "rb-crash"); code != 0 || !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status after undo: exit %d\n%s", code, out)
	}
}

// TestRollbackDaemonReadinessDeadline: an edit whose readiness probe never
// passes is rolled back at its progress deadline (5 s by annotation).
func TestRollbackDaemonReadinessDeadline(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "rb-ready")
	d := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonSynced(t, d, 60*time.Second)
	good := startFirstVersion(t, dir, "rb-ready")
	start := time.Now()
	writeByRename(t, dir, "rb-ready.yaml", rolloutPod{name: "rb-ready", value: "v2", notReady: true, deadline: 5}.yaml())
	waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v2" }, "rb-ready")
	eventually(t, 60*time.Second, "rb-ready rolled back to v1", func() (bool, string) {
		p := podsByName(t)["rb-ready"]
		return p.UID == good.UID && allRunning(p), string(p.UID)
	})
	took := time.Since(start)
	t.Logf("never-ready edit -> rolled back after %v", took.Round(time.Millisecond))
	if took < 5*time.Second {
		t.Errorf("rolled back after %v, before its 5 s deadline", took)
	}
	if c := progressingCondition(podsByName(t)["rb-ready"]); c == nil || c.Reason != "ProgressDeadlineExceeded" {
		t.Errorf("Progressing condition %+v, want ProgressDeadlineExceeded", c)
	}
	if row := quietPsRow(t, "rb-ready"); len(row) < 4 || row[3] != "RolledBack" {
		t.Errorf("ps row %q, want STATUS RolledBack", row)
	}
}

// startFirstVersion puts version v1 of pod name into the daemon's directory
// dir and waits until it runs and `rollout history` lists it as revision 1
// (its version is recorded once Ready); it returns the pod.
func startFirstVersion(t *testing.T, dir, name string) corev1.Pod {
	t.Helper()
	writeByRename(t, dir, name+".yaml", rolloutPod{name: name, value: "v1"}.yaml())
	good := waitValue(t, name, "v1", 30*time.Second)
	eventually(t, 10*time.Second, "rollout history lists revision 1 of "+name, func() (bool, string) {
		out, _ := podrunQuiet(t, "rollout", "history", name)
		return strings.Contains(out, "REVISION") && hasRevision(out, 1), out
	})
	return good
}

// progressingCondition is a pod's Progressing condition.
func progressingCondition(p corev1.Pod) *corev1.PodCondition {
	return podCondition(p, corev1.PodConditionType("Progressing"))
}

// hasRevision reports whether `rollout history` output lists revision n.
func hasRevision(out string, n int) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == fmt.Sprint(n) {
			return true
		}
	}
	return false
}

// TestRollbackUp: `up` of a change whose container exits at once exits 1,
// saying it rolled back, and the version before runs again (its UID); with
// --no-rollback, a change never Ready is removed and nothing of the pod is
// left, as before. rollout history, undo and status on the pod of up.
func TestRollbackUp(t *testing.T) {
	H.require(t)
	downOnCleanup(t, "rb-up")
	v1 := H.WriteManifest(t, "rb-up-v1.yaml", rolloutPod{name: "rb-up", value: "v1"}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", v1); code != 0 {
		t.Fatalf("up v1: exit %d\n%s", code, stderr)
	}
	good := podsByName(t)["rb-up"]
	bad := H.WriteManifest(t, "rb-up-v2.yaml", rolloutPod{name: "rb-up", value: "v2", exit: true}.yaml())
	_, stderr, code := H.Podrun(t, "", "up", "--timeout", "20s", bad)
	if code != 1 || !strings.Contains(stderr, "rolled back to revision 1") {
		t.Errorf("up of a failing change: exit %d, want 1 saying rolled back to revision 1; stderr:\n%s", code, stderr)
	}
	if p := podsByName(t)["rb-up"]; p.UID != good.UID || !allRunning(p) || valueEnv(p) != "v1" {
		t.Errorf("after the rollback rb-up is %s (%s, VALUE %q), want v1 Running again (%s)", p.UID, p.Status.Phase, valueEnv(p), good.UID)
	}
	out, _ := podrunQuiet(t, "rollout", "history", "rb-up")
	if !strings.HasPrefix(out, "pod/rb-up\nREVISION  CHANGE-CAUSE\n") || !hasRevision(out, 1) {
		t.Errorf("rollout history:\n%s", out)
	}
	if out, code := podrunQuiet(t, "rollout", "status", "rb-up"); code != 0 || !strings.Contains(out, `pod "rb-up" successfully rolled out`) {
		t.Errorf("rollout status: exit %d\n%s", code, out)
	}

	// v3, good: revision 2; undo goes back to revision 1 (v1, its UID).
	v3 := H.WriteManifest(t, "rb-up-v3.yaml", rolloutPod{name: "rb-up", value: "v3"}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", v3); code != 0 {
		t.Fatalf("up v3: exit %d\n%s", code, stderr)
	}
	if out, _ := podrunQuiet(t, "rollout", "history", "rb-up"); !hasRevision(out, 2) {
		t.Errorf("rollout history after v3:\n%s", out)
	}
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "rb-up"); code != 0 || !strings.Contains(out, "rolled back to revision 1") {
		t.Errorf("rollout undo: exit %d\n%s\n%s", code, out, stderr)
	}
	if p := podsByName(t)["rb-up"]; p.UID != good.UID || valueEnv(p) != "v1" {
		t.Errorf("after undo rb-up runs VALUE %q (%s), want v1 (%s)", valueEnv(p), p.UID, good.UID)
	}
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "--to-revision", "9", "rb-up"); code == 0 || !strings.Contains(stderr, "revision 9 not found") {
		t.Errorf("rollout undo --to-revision 9: exit %d\n%s\n%s", code, out, stderr)
	}

	// --no-rollback: a change never Ready times out and is removed; the
	// version before is gone too (today's behaviour).
	never := H.WriteManifest(t, "rb-up-never.yaml", rolloutPod{name: "rb-up", value: "v4", notReady: true}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", "--no-rollback", "--timeout", "5s", never); code != 1 || strings.Contains(stderr, "rolled back") {
		t.Errorf("up --no-rollback of a change never Ready: exit %d, want 1 without a rollback; stderr:\n%s", code, stderr)
	}
	if p, ok := podsByName(t)["rb-up"]; ok {
		t.Errorf("after up --no-rollback rb-up is still listed (%s, VALUE %q)", p.Status.Phase, valueEnv(p))
	}
}

// TestRollbackDaemonKill9: the daemon is killed (kill -9) as soon as it
// has decided a rollback; started again it finishes it: one version, the
// one before, Running, and nothing of the failed version left.
func TestRollbackDaemonKill9(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "rb-kill")
	d1 := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonSynced(t, d1, 60*time.Second)
	good := startFirstVersion(t, dir, "rb-kill")
	prefix := strings.ReplaceAll(string(good.UID), "-", "")[:12] // its containers' ids begin so
	writeByRename(t, dir, "rb-kill.yaml", rolloutPod{name: "rb-kill", value: "v2", exit: true}.yaml())
	line := `msg="new version failed; rolling back until its file changes" pod=default/` + staticPodName("rb-kill")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(d1.stderr(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no rollback logged within 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", d1.cmd.Process.Pid, err)
	}
	if !d1.wait(10 * time.Second) {
		t.Fatalf("the daemon did not die of kill -9")
	}
	d2 := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonSynced(t, d2, 60*time.Second)
	eventually(t, 60*time.Second, "rb-kill back at v1, only its containers there", func() (bool, string) {
		p := podsByName(t)["rb-kill"]
		tasks := podTasks(t, "rb-kill")
		for id := range tasks {
			if !strings.HasPrefix(id, prefix) {
				return false, fmt.Sprintf("container %s of another version", id)
			}
		}
		return p.UID == good.UID && allRunning(p), fmt.Sprintf("uid %s, containers %v", p.UID, tasks)
	})
	waitDaemonSyncs(t, d2, 2, 30*time.Second)
	if p := podsByName(t)["rb-kill"]; p.UID != good.UID || !allRunning(p) {
		t.Errorf("after re-scans rb-kill is %s (%s), want v1 Running", p.UID, p.Status.Phase)
	}
	if row := quietPsRow(t, "rb-kill"); len(row) < 4 || row[3] != "RolledBack" {
		t.Errorf("ps row %q, want STATUS RolledBack", row)
	}
}
