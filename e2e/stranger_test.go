package e2e

// End-to-end test of issue 35 item 14: a status file left by a daemon
// killed -9 names a pid that another process may have since. `rollout
// undo` must not take that process for the daemon: it is not signalled,
// and the undo is not reported as handed to a daemon. Pods named st-*.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRolloutUndoStaleDaemonStatus: pod st-undo of a file, revisions 1
// (v1) and 2 (v2); a status file names the file's directory as a daemon's
// and, as its pid, a live process that is no daemon (a reused pid). undo
// leaves that process alone, says no daemon runs and puts v1 back itself.
func TestRolloutUndoStaleDaemonStatus(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "st-undo.yaml")
	downOnCleanup(t, "st-undo")
	for _, v := range []string{"v1", "v2"} {
		if err := os.WriteFile(file, []byte(rolloutPod{name: "st-undo", value: v}.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := H.Podrun(t, "", "up", file); code != 0 {
			t.Fatalf("up %s: exit %d\n%s", v, code, stderr)
		}
	}
	eventually(t, 10*time.Second, "rollout history: revisions 1 and 2", func() (bool, string) {
		out, _ := podrunQuiet(t, "rollout", "history", "st-undo")
		return hasRevision(out, 1) && hasRevision(out, 2), out
	})

	stranger := exec.Command("sleep", "600")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	var waited error
	ended := make(chan struct{})
	go func() { waited = stranger.Wait(); close(ended) }()
	t.Cleanup(func() { _ = stranger.Process.Kill(); <-ended })
	status := filepath.Join(H.Root, "daemon.json")
	if _, err := os.Stat(status); err == nil {
		t.Fatalf("%s exists: a daemon of another test runs or was left", status)
	}
	data, _ := json.Marshal(map[string]any{"pid": stranger.Process.Pid, "manifestDir": dir, "updated": time.Now().UTC()})
	if err := os.WriteFile(status, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(status) })

	out, stderr, code := H.Podrun(t, "", "rollout", "undo", "st-undo")
	t.Logf("rollout undo: exit %d\n%s%s", code, out, stderr)
	select {
	case <-ended:
		t.Fatalf("rollout undo signalled pid %d, which is no daemon: it ended (%v)", stranger.Process.Pid, waited)
	case <-time.After(500 * time.Millisecond):
	}
	if code != 0 || strings.Contains(out, "the daemon applies it") || !strings.Contains(out, "pod/st-undo rolled back to revision 1") {
		t.Errorf("rollout undo: exit %d, stdout %q: want it rolled back here, not handed to a daemon", code, out)
	}
	if !strings.Contains(stderr, "no podrun daemon runs") {
		t.Errorf("rollout undo did not say that no daemon runs; stderr:\n%s", stderr)
	}
	if p := podsByName(t)["st-undo"]; valueEnv(p) != "v1" || !allRunning(p) {
		t.Errorf("after undo st-undo runs VALUE %q (%s), want v1 Running", valueEnv(p), p.Status.Phase)
	}
}
