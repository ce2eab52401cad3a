package e2e

// Host safety (issue 9), as a user meets it: a container re-owning files in
// its fsGroup volume keeps them so across a daemon's kill -9 and restart
// (adoption never walks a volume), oversized and nested-List manifests are
// refused at once, an untrusted manifest directory starts nothing, the
// daemon's status file is root's alone, an oversized URL body keeps the
// running pods, and a daemon killed with --listen unix: restarts.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHostSafetyAdoptionNeverWalksVolumes(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "hs-fsgroup")
	writeInPlace(t, dir, "hs-fsgroup.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hs-fsgroup}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {fsGroup: 2000}
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "touch /data/f; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`, H.Image))
	d1 := startDaemon(t, dir, nil, "--resync", "2s")
	waitPodsRunning(t, 60*time.Second, nil, "hs-fsgroup")
	stat := func() string { return strings.TrimSpace(execIn(t, "hs-fsgroup", "", "stat", "-c", "%g %a", "/data/f")) }
	if got := stat(); got != "2000 644" {
		t.Errorf("a file the container made in the fsGroup volume: %q, want group 2000 (the setgid directory's) and mode 644 (umask 022)", got)
	}
	execIn(t, "hs-fsgroup", "", "sh", "-c", "chgrp 0 /data/f && chmod 600 /data/f")
	tasks := podTasks(t, "hs-fsgroup")
	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !d1.wait(10 * time.Second) {
		t.Fatal("the daemon did not die of kill -9")
	}
	d2 := startDaemon(t, dir, nil, "--resync", "2s")
	waitDaemonLog(t, d2, "default/"+staticPodName("hs-fsgroup")+" unchanged; supervising it", 60*time.Second)
	waitDaemonSyncs(t, d2, 2, 20*time.Second)
	if got := stat(); got != "0 600" {
		t.Errorf("after the daemon's restart the file is %q, want \"0 600\" as the container left it (adoption walked the volume)", got)
	}
	checkSameTasks(t, "hs-fsgroup", tasks)
}

// TestHostSafetyBoundedInput: a 20 MiB manifest and a nested-List bomb are
// refused in well under a second with exit 2.
func TestHostSafetyBoundedInput(t *testing.T) {
	H.require(t)
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# padding\n"), 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var bomb strings.Builder
	for range 5000 {
		bomb.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	}
	bomb.WriteString(strings.Repeat("]}", 5000))
	bombFile := filepath.Join(t.TempDir(), "bomb.json")
	if err := os.WriteFile(bombFile, []byte(bomb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{big: "larger than the limit of 10 MiB", bombFile: "a List inside a List is not supported"} {
		for _, cmd := range []string{"validate", "up"} {
			start := time.Now()
			_, stderr, code := H.Podrun(t, "", cmd, file)
			took := time.Since(start)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("podrun %s %s: exit %d, stderr:\n%s\nwant exit 2 and %q", cmd, filepath.Base(file), code, e2eClip(stderr), want)
			}
			if n := strings.Count(stderr, "\n"); n > 10 {
				t.Errorf("podrun %s %s: %d lines on stderr", cmd, filepath.Base(file), n)
			}
			t.Logf("podrun %s %s: exit %d in %v", cmd, filepath.Base(file), code, took.Round(time.Millisecond))
		}
		// Bounded memory: the process's own peak. Not this test binary's
		// rusage of it: Go starts children with vfork, and the kernel hands
		// the parent's high-water mark to a child at exec; GNU time (a small
		// process; deps.sh installs it) reports the child's own (busybox's
		// %M is four times too large).
		c := exec.Command("/usr/bin/time", append([]string{"-f", "%M", H.Bin}, append(H.globalArgs(), "validate", file)...)...)
		out, _ := c.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		kib, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
		if err != nil {
			t.Fatalf("/usr/bin/time: %q: %v", out, err)
		}
		t.Logf("podrun validate %s: max RSS %d KiB", filepath.Base(file), kib)
		if kib > 100<<10 {
			t.Errorf("podrun validate %s: max RSS %d KiB, want under 100 MiB", filepath.Base(file), kib)
		}
	}
}

// TestHostSafetyUntrustedDirectory: a group-writable manifest directory
// starts no pod and says why; once fixed, its pod starts.
func TestHostSafetyUntrustedDirectory(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "hs-trust")
	writeInPlace(t, dir, "hs-trust.yaml", daemonPod{name: "hs-trust"}.yaml())
	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, nil, "--resync", "1s")
	st := waitDaemonSynced(t, d, 60*time.Second)
	found := false
	for _, p := range st.Problems {
		found = found || (p.Source == dir && strings.Contains(p.Message, "not trusted") && strings.Contains(p.Message, "writable by its group"))
	}
	if !found {
		t.Errorf("status problems %+v: want the directory refused as group-writable", st.Problems)
	}
	waitDaemonSyncs(t, d, 2, 20*time.Second)
	if _, ok := podsByName(t)["hs-trust"]; ok {
		t.Error("a pod of an untrusted directory was started")
	}
	if _, stderr, _ := H.Podrun(t, "", "ps"); !strings.Contains(stderr, "not trusted") {
		t.Errorf("podrun ps does not say why:\n%s", stderr)
	}
	info, err := os.Stat(filepath.Join(H.Root, "daemon.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("daemon.json: %v, %v; want mode 0600", info.Mode().Perm(), err)
	}
	if info, err := os.Stat(H.Root); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the state root %s: %v, %v; want mode 0700", H.Root, info.Mode().Perm(), err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, 60*time.Second, nil, "hs-trust")
}

// TestHostSafetyListenStaleSocket: kill -9 of a daemon serving on a unix
// socket, then a new daemon on the same socket: it starts and serves.
func TestHostSafetyListenStaleSocket(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "podrun.sock")
	d1 := startDaemon(t, dir, nil, "--listen", "unix:"+sock)
	waitDaemonSynced(t, d1, 60*time.Second)
	if err := d1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !d1.wait(10 * time.Second) {
		t.Fatal("the daemon did not die of kill -9")
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("kill -9 left no socket to test with: %v", err)
	}
	d2 := startDaemon(t, dir, nil, "--listen", "unix:"+sock)
	waitDaemonSynced(t, d2, 60*time.Second)
	eventually(t, 10*time.Second, "the restarted daemon answers on the socket", func() (bool, string) {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return !d2.exited(), ""
	})
}
