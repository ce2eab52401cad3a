package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// TestDaemonUpdateWindow: with --update-window closed, a changed
// manifest's image (only in the registry) is pulled into the store at
// once, while the old pod runs untouched (its UID, its tasks) and ps and
// rollout status say the update waits for the window; the window (a real
// one, of the node's local time, opening a few seconds later) opens, and
// the pod is replaced.
func TestDaemonUpdateWindow(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	ref := reg.Addr + "/uw-win:2"
	pushImage(t, reg, H.Image, ref, "", "")
	dir := t.TempDir()
	downOnCleanup(t, "uw-win")
	writeInPlace(t, dir, "uw-win.yaml", daemonPod{name: "uw-win", value: "v1"}.yaml())
	// The window: from 40 s from now, for a minute, in local time.
	opens := time.Now().Add(40 * time.Second).Truncate(time.Second)
	window := opens.Format("15:04:05") + "-" + opens.Add(time.Minute).Format("15:04:05")
	port := freePort(t)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	d := startDaemon(t, dir, nil, "--resync", "1s", "--settle", "100ms", "--update-window", window, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	pods := waitPodsRunning(t, 30*time.Second, nil, "uw-win")
	uid, tasks := pods["uw-win"].UID, podTasks(t, "uw-win")

	v2 := strings.Replace(daemonPod{name: "uw-win", value: "v2"}.yaml(), "image: "+H.Image, "image: "+ref, 1)
	writeByRename(t, dir, "uw-win.yaml", v2)
	waitDaemonLog(t, d, "update staged", 30*time.Second)
	if !hasImage(t, ref) {
		t.Errorf("the update is said staged, but %s is not in the store", ref)
	}
	_, stderr, _ := H.Podrun(t, "", "ps")
	if !strings.Contains(stderr, "default/"+staticPodName("uw-win")+": update pending: window") || !strings.Contains(stderr, "its images are pulled") {
		t.Errorf("ps does not say the update waits for its window; stderr:\n%s", stderr)
	}
	stdout, _, code := H.Podrun(t, "", "rollout", "status", "--watch=false", staticPodName("uw-win"))
	if code != 0 || !strings.Contains(stdout, "update pending: window (the next opens at") {
		t.Errorf("rollout status: exit %d, stdout:\n%s\nwant it to say the update waits for the window", code, stdout)
	}
	checkMetric(t, metrics, `podrun_updates_pending{reason="window"} 1`)
	waitDaemonSyncs(t, d, 3, 30*time.Second)
	if time.Now().After(opens) {
		t.Fatalf("the window opened before the checks of the closed window ended (the machine is slow): nothing shown")
	}
	if p := podsByName(t)["uw-win"]; p.UID != uid || !allRunning(p) || valueEnv(p) != "v1" {
		t.Errorf("with the window closed: uw-win is %s %s %s, want still Running v1 as %s", p.UID, p.Status.Phase, valueEnv(p), uid)
	}
	checkSameTasks(t, "uw-win", tasks)
	t.Logf("the window %s opens in %v", window, time.Until(opens).Round(time.Second))

	pods = waitPodsRunning(t, time.Until(opens)+45*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v2" }, "uw-win")
	if now := time.Now(); now.Before(opens) {
		t.Errorf("replaced at %s, before the window opened at %s", now.Format(time.TimeOnly), opens.Format(time.TimeOnly))
	}
	t.Logf("replaced %v after the window opened", time.Since(opens).Round(100*time.Millisecond))
	if pods["uw-win"].UID == uid {
		t.Error("the pod was not replaced")
	}
	waitDaemonLog(t, d, "update no longer held: replacing the pod", 5*time.Second)
	_, stderr, _ = H.Podrun(t, "", "ps")
	if strings.Contains(stderr, "update pending") {
		t.Errorf("ps still says an update is pending:\n%s", stderr)
	}
	checkMetric(t, metrics, `podrun_updates_pending{reason="window"} 0`)
}

// checkMetric fails t unless the daemon's /metrics at url has line.
func checkMetric(t *testing.T, url, line string) {
	t.Helper()
	code, body, err := getWithTimeout(&http.Client{Timeout: 2 * time.Second}, url)
	if code != 200 || !slices.Contains(strings.Split(body, "\n"), line) {
		t.Errorf("GET %s: %d %v; want the line %s in:\n%s", url, code, err, line, body)
	}
}

// flockholdImage builds e2e/testdata/flockhold and imports an image with
// it as /bin/flockhold.
func flockholdImage(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "flockhold")
	cmd := exec.Command(goBin, "build", "-o", bin, "./e2e/testdata/flockhold")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building flockhold: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return H.ImportImage(t, testimage.Config{
		Ref:   "podrun.test/flockhold:1",
		Files: []testimage.File{{Path: "/bin/flockhold", Mode: 0o755, Data: data}},
	})
}

// lockPod is a pod that holds its update lock (flock on updates.lock in
// its emptyDir "lock", named by podrun.io/update-lock-volume) until the
// file "go" appears in that directory.
func lockPod(name, image, value string) string {
	cmd, _ := json.Marshal([]string{"flockhold", "/lock/updates.lock", "/lock/go"})
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations:
    podrun.io/update-lock-volume: lock
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    command: %s
    env:
    - name: VALUE
      value: %q
    volumeMounts:
    - name: lock
      mountPath: /lock
  volumes:
  - name: lock
    emptyDir: {}
`, name, image, cmd, value)
}

// TestDaemonUpdateLock: a pod that holds its update lock (a container
// holding flock on updates.lock, no podrun code in it) keeps running
// untouched while its changed version waits, said by ps and status; once
// it lets go it is replaced; the new version, which holds it too, is
// replaced by the next change once --update-lock-timeout is over, and the
// daemon says so.
func TestDaemonUpdateLock(t *testing.T) {
	H.require(t)
	image := flockholdImage(t)
	dir := t.TempDir()
	downOnCleanup(t, "uw-lock")
	writeInPlace(t, dir, "uw-lock.yaml", lockPod("uw-lock", image, "v1"))
	const timeout = 8 * time.Second
	d := startDaemon(t, dir, nil, "--resync", "1s", "--settle", "100ms", "--update-lock-timeout", timeout.String())
	pods := waitPodsRunning(t, 30*time.Second, nil, "uw-lock")
	uid, tasks := pods["uw-lock"].UID, podTasks(t, "uw-lock")
	lockDir := filepath.Join(H.Root, "pods", string(uid), "volumes", "kubernetes.io~empty-dir", "lock")
	eventually(t, 10*time.Second, "the pod's lock file", func() (bool, string) {
		_, err := os.Stat(filepath.Join(lockDir, "updates.lock"))
		return err == nil, fmt.Sprint(err)
	})

	writeByRename(t, dir, "uw-lock.yaml", lockPod("uw-lock", image, "v2"))
	waitDaemonLog(t, d, "reason=lock", 15*time.Second)
	_, stderr, _ := H.Podrun(t, "", "ps")
	if !strings.Contains(stderr, "default/"+staticPodName("uw-lock")+": held by lock") {
		t.Errorf("ps does not say the update is held by the lock; stderr:\n%s", stderr)
	}
	_, stderr, _ = H.Podrun(t, "", "status", staticPodName("uw-lock"))
	if !strings.Contains(stderr, "held by lock") {
		t.Errorf("status does not say the update is held by the lock; stderr:\n%s", stderr)
	}
	waitDaemonSyncs(t, d, 3, 15*time.Second) // well within the timeout
	if p := podsByName(t)["uw-lock"]; p.UID != uid || valueEnv(p) != "v1" {
		t.Errorf("with its lock held: uw-lock is %s %s, want still v1 as %s", p.UID, valueEnv(p), uid)
	}
	checkSameTasks(t, "uw-lock", tasks)
	let := time.Now()
	if err := os.WriteFile(filepath.Join(lockDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, 30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v2" }, "uw-lock")
	took := time.Since(let)
	t.Logf("replaced %v after the pod let go of its lock", took.Round(100*time.Millisecond))
	if took >= timeout {
		t.Errorf("replaced %v after the pod let go: the timeout (%v), not the letting go, replaced it", took, timeout)
	}
	if strings.Contains(d.stderr(), "update lock held too long") {
		t.Errorf("the timeout was said though the pod let go:\n%s", d.stderr())
	}

	// v2 holds its lock too, and never lets go: v3 replaces it after the timeout.
	changed := time.Now()
	writeByRename(t, dir, "uw-lock.yaml", lockPod("uw-lock", image, "v3"))
	waitPodsRunning(t, timeout+30*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v3" }, "uw-lock")
	took = time.Since(changed)
	t.Logf("v3 replaced the locked v2 %v after the change (timeout %v)", took.Round(100*time.Millisecond), timeout)
	if took < timeout {
		t.Errorf("v3 replaced v2 %v after the change, before the lock's timeout %v", took, timeout)
	}
	waitDaemonLog(t, d, "update lock held too long: replacing the pod anyway", 5*time.Second)
}

// TestDaemonUpdateWindowRollback: a held version that never gets Ready is
// applied when its window opens and rolled back as today, the rollback not
// held though the window (1 s long) has closed by then; while held, the
// version kept in the history stands in for the file's, the running pod
// untouched.
func TestDaemonUpdateWindowRollback(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "uw-rb")
	opens := time.Now().Add(25 * time.Second).Truncate(time.Second)
	closed := opens.Add(time.Second)
	window := opens.Format("15:04:05") + "-" + closed.Format("15:04:05")
	far := opens.Add(12 * time.Hour) // a second window, not open now
	d := startDaemon(t, dir, nil, "--resync", "1s", "--settle", "100ms", "--update-window", window,
		"--update-window", far.Format("15:04")+"-"+far.Add(time.Hour).Format("15:04"))
	waitDaemonSynced(t, d, 60*time.Second)
	good := startFirstVersion(t, dir, "uw-rb") // a new pod: never held
	tasks := podTasks(t, "uw-rb")

	// v2 never gets Ready: its deadline (3 s) ends after its window.
	writeByRename(t, dir, "uw-rb.yaml", rolloutPod{name: "uw-rb", value: "v2", notReady: true, deadline: 3}.yaml())
	waitDaemonLog(t, d, "reason=window", 15*time.Second)
	waitDaemonSyncs(t, d, 3, 15*time.Second)
	if time.Now().After(opens) {
		t.Fatalf("the window opened before the checks of the closed window ended (the machine is slow)")
	}
	if p := podsByName(t)["uw-rb"]; p.UID != good.UID || valueEnv(p) != "v1" {
		t.Errorf("with the window closed: uw-rb is %s %s, want still v1 as %s", p.UID, valueEnv(p), good.UID)
	}
	checkSameTasks(t, "uw-rb", tasks)

	eventually(t, time.Until(opens)+60*time.Second, "uw-rb replaced by v2 in its window, then rolled back to v1 (RolledBack)", func() (bool, string) {
		row := quietPsRow(t, "uw-rb")
		p := podsByName(t)["uw-rb"]
		return p.UID == good.UID && allRunning(p) && len(row) > 3 && row[3] == "RolledBack", fmt.Sprintf("ps row %q, uid %s", row, p.UID)
	})
	replacedAt := daemonLogLines(d.stderr(), "pod replaced", "uw-rb")
	if len(replacedAt) != 2 {
		t.Fatalf("daemon log: uw-rb replaced %d times, want 2 (in the window, the rollback): %q", len(replacedAt), replacedAt)
	}
	in, back := logTime(t, replacedAt[0]), logTime(t, replacedAt[1])
	t.Logf("replaced by v2 %v after the window opened; rolled back %v after it closed", in.Sub(opens).Round(10*time.Millisecond), back.Sub(closed).Round(10*time.Millisecond))
	if in.Before(opens) || !back.After(closed) {
		t.Errorf("replaced at %s and rolled back at %s, want inside the window %s and after it", in.Format(time.TimeOnly), back.Format(time.TimeOnly), window)
	}
	waitDaemonLog(t, d, `msg="new version failed; rolling back until its file changes" pod=default/`+staticPodName("uw-rb"), 5*time.Second)
}

// logTime is the time of a daemon log line (time=RFC3339).
func logTime(t *testing.T, line string) time.Time {
	t.Helper()
	f := strings.Fields(line)
	if len(f) == 0 || !strings.HasPrefix(f[0], "time=") {
		t.Fatalf("no time in log line %q", line)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time="))
	if err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	return at
}

// TestDaemonUpdateHeldNeverReady: a pod that runs but never became Ready
// (so no version of it is kept in the history) gets an update while the
// window is closed; the daemon restarts meanwhile; the running version
// stands in as its record holds it, so it is adopted and supervised: its
// container killed is started again, and nothing of the update is applied.
func TestDaemonUpdateHeldNeverReady(t *testing.T) {
	H.require(t)
	const name = "uw-unready"
	pod := func(value string) string { return daemonPod{name: name, value: value, never: true}.yaml() }
	dir := t.TempDir()
	downOnCleanup(t, name)
	writeInPlace(t, dir, name+".yaml", pod("v1"))
	// A window that does not open during the test.
	opens := time.Now().Add(3 * time.Hour)
	window := opens.Format("15:04") + "-" + opens.Add(time.Minute).Format("15:04")
	flags := []string{"--resync", "1s", "--settle", "100ms", "--update-window", window}
	d := startDaemon(t, dir, nil, flags...)
	uid := waitPodsRunning(t, 30*time.Second, nil, name)[name].UID
	writeByRename(t, dir, name+".yaml", pod("v2"))
	waitDaemonLog(t, d, "update staged", 30*time.Second)
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}

	d = startDaemon(t, dir, nil, flags...)
	waitDaemonLog(t, d, staticPodName(name)+" unchanged; supervising it", 30*time.Second)
	tasks := podTasks(t, name)
	var app uint32
	for id, pid := range tasks {
		if !strings.HasSuffix(id, "-pause") && pid != 0 {
			app = pid
		}
	}
	if app == 0 {
		t.Fatalf("no running task of the app in %v", tasks)
	}
	if err := syscall.Kill(int(app), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the killed container started again", func() (bool, string) {
		p := podsByName(t)[name]
		return totalRestarts(p) >= 1 && allRunning(p), fmt.Sprintf("%s %s restarts %d", p.UID, p.Status.Phase, totalRestarts(p))
	})
	if p := podsByName(t)[name]; p.UID != uid || valueEnv(p) != "v1" {
		t.Errorf("%s is %s %s, want still v1 as %s (the update held)", name, p.UID, valueEnv(p), uid)
	}
}
