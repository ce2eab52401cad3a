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

// rbPod is a one-container busybox pod: a long-running app unless exit is
// set (the app exits 1 at once); with notReady, a readiness probe that
// never passes; deadline sets podrun.io/progress-deadline-seconds.
type rbPod struct {
	name, value string
	exit        bool
	notReady    bool
	deadline    int
}

func (p rbPod) yaml() string {
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

// rbStatusRolledBack is the daemon's status file's rolledBack entries.
func rbStatusRolledBack(t *testing.T) []map[string]any {
	t.Helper()
	var st struct {
		RolledBack []map[string]any `json:"rolledBack"`
	}
	b, err := os.ReadFile(filepath.Join(H.Root, "daemon.json"))
	if err != nil || json.Unmarshal(b, &st) != nil {
		return nil
	}
	return st.RolledBack
}

// rbWaitValue waits until pod name runs VALUE value, Running and Ready.
func rbWaitValue(t *testing.T, name, value string, timeout time.Duration) corev1.Pod {
	t.Helper()
	pods := dmWaitRunning(t, timeout, func(p corev1.Pod) bool { return e2eFileName(p) != name || dmValue(p) == value && dmReady(p) }, name)
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
	plDownOnCleanup(t, "rb-crash")
	port := plFreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	d := dmStart(t, dir, nil, "--resync", "2s", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	dmWaitSynced(t, d, 60*time.Second)

	good := rbFirstVersion(t, dir, "rb-crash")

	start := time.Now()
	dmRename(t, dir, "rb-crash.yaml", rbPod{name: "rb-crash", value: "v2", exit: true}.yaml())
	svEventually(t, 60*time.Second, "rb-crash rolled back to v1 (its UID before the edit), RolledBack in ps", func() (bool, string) {
		row := svQuietPsRow(t, "rb-crash")
		p, ok := dmPods(t)["rb-crash"]
		return ok && p.UID == good.UID && dmRunning(p) && len(row) > 3 && row[3] == "RolledBack", fmt.Sprintf("ps row %q, uid %s", row, p.UID)
	})
	t.Logf("bad edit -> rolled back and Running after %v", time.Since(start).Round(time.Millisecond))
	dmWaitLog(t, d, `msg="new version failed; rolling back until its file changes" pod=default/`+dmFull("rb-crash"), 5*time.Second)
	if lines := dmLogged(d.stderr(), "new version failed; rolling back until its file changes", "rb-crash"); len(lines) != 1 ||
		!strings.Contains(lines[0], "reason=CrashLoopBackOff") {
		t.Errorf("daemon log: rollback lines %q, want one with reason=CrashLoopBackOff", lines)
	}
	p := dmPods(t)["rb-crash"]
	if c := rbCondition(p); c == nil || c.Reason != "CrashLoopBackOff" || !strings.Contains(c.Message, "rolled back to revision 1") {
		t.Errorf("podrun status: Progressing condition %+v, want False CrashLoopBackOff, rolled back to revision 1", c)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	svEventually(t, 10*time.Second, `podrun_rollbacks_total{reason="CrashLoopBackOff"} 1`, func() (bool, string) {
		_, body, _ := dmGet(client, base+"/metrics")
		n, _ := dmMetric(body, `podrun_rollbacks_total{reason="CrashLoopBackOff"}`)
		return n == 1, fmt.Sprint(n)
	})
	if rb := rbStatusRolledBack(t); len(rb) != 1 || rb[0]["reason"] != "CrashLoopBackOff" {
		t.Errorf("status file rolledBack = %v, want rb-crash with reason CrashLoopBackOff", rb)
	}

	// The bad version is not tried again at the re-scans.
	dmWaitSyncs(t, d, 3, 30*time.Second)
	if p := dmPods(t)["rb-crash"]; p.UID != good.UID {
		t.Errorf("after re-scans rb-crash runs %s, want the rolled-back %s", p.UID, good.UID)
	}
	if n := len(dmLogged(d.stderr(), "pod replaced", "rb-crash")); n != 2 {
		t.Errorf("daemon log: rb-crash replaced %d times, want 2 (the bad edit, the rollback)", n)
	}

	// A good edit applies normally, and is no longer RolledBack.
	dmRename(t, dir, "rb-crash.yaml", rbPod{name: "rb-crash", value: "v3"}.yaml())
	rbWaitValue(t, "rb-crash", "v3", 30*time.Second)
	if row := svQuietPsRow(t, "rb-crash"); len(row) < 4 || row[3] != "Running" {
		t.Errorf("after a good edit: ps row %q, want Running", row)
	}
	svEventually(t, 10*time.Second, "rollout history: revisions 1 and 2", func() (bool, string) {
		out, _ := svQuiet(t, "rollout", "history", "rb-crash")
		return rbHasRevision(out, 1) && rbHasRevision(out, 2), out
	})

	// rollout undo of the daemon's pod: back to revision 1, nothing written
	// into the directory, kept at the re-scans until the file changes.
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "rb-crash"); code != 0 || !strings.Contains(out, "the daemon applies it") {
		t.Fatalf("rollout undo: exit %d\n%s\n%s", code, out, stderr)
	}
	svEventually(t, 30*time.Second, "rb-crash back at v1 after undo", func() (bool, string) {
		p := dmPods(t)["rb-crash"]
		return p.UID == good.UID && dmRunning(p), string(p.UID)
	})
	dmWaitSyncs(t, d, 2, 30*time.Second)
	if p := dmPods(t)["rb-crash"]; p.UID != good.UID {
		t.Errorf("after re-scans the undone rb-crash runs %s (VALUE %q), want v1", p.UID, dmValue(p))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rb-crash.yaml")); !strings.Contains(string(b), `"v3"`) {
		t.Errorf("rollout undo changed the daemon's file:\n%s", b)
	}
	if out, code := svQuiet(t, "rollout", "status", "rb-crash"); code != 0 || !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status after undo: exit %d\n%s", code, out)
	}
}

// TestRollbackDaemonReadinessDeadline: an edit whose readiness probe never
// passes is rolled back at its progress deadline (5 s by annotation).
func TestRollbackDaemonReadinessDeadline(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	plDownOnCleanup(t, "rb-ready")
	d := dmStart(t, dir, nil, "--resync", "2s")
	dmWaitSynced(t, d, 60*time.Second)
	good := rbFirstVersion(t, dir, "rb-ready")
	start := time.Now()
	dmRename(t, dir, "rb-ready.yaml", rbPod{name: "rb-ready", value: "v2", notReady: true, deadline: 5}.yaml())
	dmWaitRunning(t, 30*time.Second, func(p corev1.Pod) bool { return dmValue(p) == "v2" }, "rb-ready")
	svEventually(t, 60*time.Second, "rb-ready rolled back to v1", func() (bool, string) {
		p := dmPods(t)["rb-ready"]
		return p.UID == good.UID && dmRunning(p), string(p.UID)
	})
	took := time.Since(start)
	t.Logf("never-ready edit -> rolled back after %v", took.Round(time.Millisecond))
	if took < 5*time.Second {
		t.Errorf("rolled back after %v, before its 5 s deadline", took)
	}
	if c := rbCondition(dmPods(t)["rb-ready"]); c == nil || c.Reason != "ProgressDeadlineExceeded" {
		t.Errorf("Progressing condition %+v, want ProgressDeadlineExceeded", c)
	}
	if row := svQuietPsRow(t, "rb-ready"); len(row) < 4 || row[3] != "RolledBack" {
		t.Errorf("ps row %q, want STATUS RolledBack", row)
	}
}

// rbFirstVersion puts version v1 of pod name into the daemon's directory
// dir and waits until it runs and `rollout history` lists it as revision 1
// (its version is recorded once Ready); it returns the pod.
func rbFirstVersion(t *testing.T, dir, name string) corev1.Pod {
	t.Helper()
	dmRename(t, dir, name+".yaml", rbPod{name: name, value: "v1"}.yaml())
	good := rbWaitValue(t, name, "v1", 30*time.Second)
	svEventually(t, 10*time.Second, "rollout history lists revision 1 of "+name, func() (bool, string) {
		out, _ := svQuiet(t, "rollout", "history", name)
		return strings.Contains(out, "REVISION") && rbHasRevision(out, 1), out
	})
	return good
}

// rbCondition is a pod's Progressing condition.
func rbCondition(p corev1.Pod) *corev1.PodCondition {
	return svCond(p, corev1.PodConditionType("Progressing"))
}

// rbHasRevision reports whether `rollout history` output lists revision n.
func rbHasRevision(out string, n int) bool {
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
	plDownOnCleanup(t, "rb-up")
	v1 := H.WriteManifest(t, "rb-up-v1.yaml", rbPod{name: "rb-up", value: "v1"}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", v1); code != 0 {
		t.Fatalf("up v1: exit %d\n%s", code, stderr)
	}
	good := dmPods(t)["rb-up"]
	bad := H.WriteManifest(t, "rb-up-v2.yaml", rbPod{name: "rb-up", value: "v2", exit: true}.yaml())
	_, stderr, code := H.Podrun(t, "", "up", "--timeout", "20s", bad)
	if code != 1 || !strings.Contains(stderr, "rolled back to revision 1") {
		t.Errorf("up of a failing change: exit %d, want 1 saying rolled back to revision 1; stderr:\n%s", code, stderr)
	}
	if p := dmPods(t)["rb-up"]; p.UID != good.UID || !dmRunning(p) || dmValue(p) != "v1" {
		t.Errorf("after the rollback rb-up is %s (%s, VALUE %q), want v1 Running again (%s)", p.UID, p.Status.Phase, dmValue(p), good.UID)
	}
	out, _ := svQuiet(t, "rollout", "history", "rb-up")
	if !strings.HasPrefix(out, "pod/rb-up\nREVISION  CHANGE-CAUSE\n") || !rbHasRevision(out, 1) {
		t.Errorf("rollout history:\n%s", out)
	}
	if out, code := svQuiet(t, "rollout", "status", "rb-up"); code != 0 || !strings.Contains(out, `pod "rb-up" successfully rolled out`) {
		t.Errorf("rollout status: exit %d\n%s", code, out)
	}

	// v3, good: revision 2; undo goes back to revision 1 (v1, its UID).
	v3 := H.WriteManifest(t, "rb-up-v3.yaml", rbPod{name: "rb-up", value: "v3"}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", v3); code != 0 {
		t.Fatalf("up v3: exit %d\n%s", code, stderr)
	}
	if out, _ := svQuiet(t, "rollout", "history", "rb-up"); !rbHasRevision(out, 2) {
		t.Errorf("rollout history after v3:\n%s", out)
	}
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "rb-up"); code != 0 || !strings.Contains(out, "rolled back to revision 1") {
		t.Errorf("rollout undo: exit %d\n%s\n%s", code, out, stderr)
	}
	if p := dmPods(t)["rb-up"]; p.UID != good.UID || dmValue(p) != "v1" {
		t.Errorf("after undo rb-up runs VALUE %q (%s), want v1 (%s)", dmValue(p), p.UID, good.UID)
	}
	if out, stderr, code := H.Podrun(t, "", "rollout", "undo", "--to-revision", "9", "rb-up"); code == 0 || !strings.Contains(stderr, "revision 9 not found") {
		t.Errorf("rollout undo --to-revision 9: exit %d\n%s\n%s", code, out, stderr)
	}

	// --no-rollback: a change never Ready times out and is removed; the
	// version before is gone too (today's behaviour).
	never := H.WriteManifest(t, "rb-up-never.yaml", rbPod{name: "rb-up", value: "v4", notReady: true}.yaml())
	if _, stderr, code := H.Podrun(t, "", "up", "--no-rollback", "--timeout", "5s", never); code != 1 || strings.Contains(stderr, "rolled back") {
		t.Errorf("up --no-rollback of a change never Ready: exit %d, want 1 without a rollback; stderr:\n%s", code, stderr)
	}
	if p, ok := dmPods(t)["rb-up"]; ok {
		t.Errorf("after up --no-rollback rb-up is still listed (%s, VALUE %q)", p.Status.Phase, dmValue(p))
	}
}

// TestRollbackDaemonKill9: the daemon is killed (kill -9) as soon as it
// has decided a rollback; started again it finishes it: one version, the
// one before, Running, and nothing of the failed version left.
func TestRollbackDaemonKill9(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	plDownOnCleanup(t, "rb-kill")
	d1 := dmStart(t, dir, nil, "--resync", "2s")
	dmWaitSynced(t, d1, 60*time.Second)
	good := rbFirstVersion(t, dir, "rb-kill")
	prefix := strings.ReplaceAll(string(good.UID), "-", "")[:12] // its containers' ids begin so
	dmRename(t, dir, "rb-kill.yaml", rbPod{name: "rb-kill", value: "v2", exit: true}.yaml())
	line := `msg="new version failed; rolling back until its file changes" pod=default/` + dmFull("rb-kill")
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
	d2 := dmStart(t, dir, nil, "--resync", "2s")
	dmWaitSynced(t, d2, 60*time.Second)
	svEventually(t, 60*time.Second, "rb-kill back at v1, only its containers there", func() (bool, string) {
		p := dmPods(t)["rb-kill"]
		tasks := dmTasks(t, "rb-kill")
		for id := range tasks {
			if !strings.HasPrefix(id, prefix) {
				return false, fmt.Sprintf("container %s of another version", id)
			}
		}
		return p.UID == good.UID && dmRunning(p), fmt.Sprintf("uid %s, containers %v", p.UID, tasks)
	})
	dmWaitSyncs(t, d2, 2, 30*time.Second)
	if p := dmPods(t)["rb-kill"]; p.UID != good.UID || !dmRunning(p) {
		t.Errorf("after re-scans rb-kill is %s (%s), want v1 Running", p.UID, p.Status.Phase)
	}
	if row := svQuietPsRow(t, "rb-kill"); len(row) < 4 || row[3] != "RolledBack" {
		t.Errorf("ps row %q, want STATUS RolledBack", row)
	}
}
