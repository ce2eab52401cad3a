package e2e

// Concurrent podrun commands: one owner per pod (a flock per pod under the
// state dir), one private containerd per state dir.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// podWithV is pod cc-<name> whose one container carries env V=v: another v is
// another manifest.
func podWithV(name, v string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    env: [{name: V, value: %q}]
`, name, H.Image, v)
}

// appliedV is the value of V in the applied manifest of pod name, and its phase.
func appliedV(t *testing.T, name string) (string, corev1.PodPhase) {
	t.Helper()
	pod := podStatus(t, name)
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "V" {
			return e.Value, pod.Status.Phase
		}
	}
	return "", pod.Status.Phase
}

// TestConcurrentUpOfAChangedFile: two `podrun up` of the same changed file
// at once, 20 times: both exit 0, one replaces the pod and the other finds
// it unchanged, and the pod runs the new manifest.
func TestConcurrentUpOfAChangedFile(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	file := H.WriteManifest(t, "cc-up.yaml", podWithV("cc-up", "0"))
	downOnCleanup(t, file)
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		t.Fatalf("first up: exit %d\n%s", code, stderr)
	}
	for trial := 1; trial <= 20; trial++ {
		if err := os.WriteFile(file, []byte(podWithV("cc-up", strconv.Itoa(trial))), 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		outs, errs, codes := make([]string, 2), make([]string, 2), make([]int, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i], codes[i], _ = H.run(t, "", 2*time.Minute, "up", "--wait=running", file)
			}()
		}
		wg.Wait()
		var said []string
		for i := range 2 {
			if codes[i] != 0 {
				t.Fatalf("trial %d: an up exited %d\nstdout: %s\nstderr:\n%s", trial, codes[i], outs[i], errs[i])
			}
			said = append(said, strings.TrimSpace(outs[i]))
		}
		slices.Sort(said)
		if want := []string{"pod/default/cc-up replaced (Running)", "pod/default/cc-up unchanged (Running)"}; !slices.Equal(said, want) {
			t.Fatalf("trial %d: the two ups said %q, want %q", trial, said, want)
		}
		if v, phase := appliedV(t, "cc-up"); v != strconv.Itoa(trial) || phase != corev1.PodRunning {
			t.Fatalf("trial %d: the pod runs V=%q (%s), want V=%d Running", trial, v, phase, trial)
		}
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	checkPodGone(t, "cc-up", "")
	checkNothingLeft(t, before, "the concurrent ups")
}

// TestUpAndDownAtOnce: `up` and `down` of one file started together, at
// several offsets: both exit 0 and the pod is whole or gone, never half.
func TestUpAndDownAtOnce(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	file := H.WriteManifest(t, "cc-updown.yaml", podWithV("cc-updown", "x"))
	downOnCleanup(t, file)
	for _, offset := range []time.Duration{0, 30 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 600 * time.Millisecond} {
		up := H.Start(t, "up", "--wait=running", file)
		time.Sleep(offset)
		_, downErr, downCode := H.Podrun(t, "", "down", file)
		if err := up.Wait(); err != nil {
			t.Errorf("offset %v: up: %v\n%s", offset, err, up.Stderr.(*CmdOutput).String())
		}
		if downCode != 0 {
			t.Errorf("offset %v: down exited %d\n%s", offset, downCode, downErr)
		}
		row := psRow(t, "cc-updown", "-a")
		if row != nil {
			// Whole: Running with its container running.
			if row[2] != "1/1" || row[3] != "Running" {
				t.Errorf("offset %v: a half pod is left: %q", offset, row)
			}
		} else if ctrs := podContainers(t, "cc-updown"); len(ctrs) != 0 {
			t.Errorf("offset %v: no pod listed, but %d containers are left", offset, len(ctrs))
		}
		t.Logf("offset %v: the pod is %s", offset, map[bool]string{true: "whole", false: "gone"}[row != nil])
		if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
			t.Fatalf("offset %v: cleaning down: exit %d\n%s", offset, code, stderr)
		}
	}
	checkPodGone(t, "cc-updown", "")
	checkNothingLeft(t, before, "up and down at once")
}

// TestDownWhileUpForegroundSupervises: `down` from another shell while
// `up -f` supervises the pod ends the pod, and `up -f` then exits 0.
func TestDownWhileUpForegroundSupervises(t *testing.T) {
	H.require(t)
	file, up := upForeground(t, "cc-fg", podWithV("cc-fg", "x"), "--wait=running")
	uid := string(podStatus(t, "cc-fg").UID)
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	if !up.wait(15 * time.Second) {
		t.Fatalf("up -f still runs after its pod was taken down; stderr:\n%s", up.stderr())
	}
	if code := up.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("up -f exited %d, want 0; stderr:\n%s", code, up.stderr())
	}
	if !strings.Contains(up.stderr(), "taken down by another podrun") {
		t.Errorf("up -f did not say why it stopped supervising; stderr:\n%s", up.stderr())
	}
	checkPodGone(t, "cc-fg", uid)
}

// TestKilledLockHolder: an `up` killed with SIGKILL while it holds its
// pod's lock (mid-pipeline) leaves no lock: the next `up` of the pod goes
// on at once, replacing the half-made pod.
func TestKilledLockHolder(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	slow := strings.Replace(podWithV("cc-kill", "slow"), "  containers:", `  initContainers:
  - name: wait
    image: `+H.Image+`
    command: ["sleep", "60"]
  containers:`, 1)
	file := H.WriteManifest(t, "cc-kill.yaml", slow)
	downOnCleanup(t, file)
	up := startPodrun(t, "up", file)
	eventually(t, 60*time.Second, "the first up in its init container", func() (bool, string) {
		return strings.Contains(up.stderr(), "sandbox: files"), up.stderr()
	})
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.wait(10 * time.Second)
	if err := os.WriteFile(file, []byte(podWithV("cc-kill", "fast")), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stdout, stderr, code := H.Podrun(t, "", "up", "--wait=running", file)
	if code != 0 || strings.TrimSpace(stdout) != "pod/default/cc-kill replaced (Running)" {
		t.Fatalf("up after kill -9: exit %d, %q\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "waiting for podrun") {
		t.Errorf("the second up waited for a lock the killed one held:\n%s", stderr)
	}
	t.Logf("second up took %v", time.Since(start))
	if v, phase := appliedV(t, "cc-kill"); v != "fast" || phase != corev1.PodRunning {
		t.Errorf("pod runs V=%q (%s)", v, phase)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	checkPodGone(t, "cc-kill", "")
	checkNothingLeft(t, before, "the killed up and the next")
}

// TestPrivateContainerdStartedOnce: with no containerd answering, three
// commands that may start podrun's private containerd run at once on one
// state dir: exactly one containerd is started, and all three succeed.
func TestPrivateContainerdStartedOnce(t *testing.T) {
	H.require(t)
	if _, err := os.Stat("/run/containerd/containerd.sock"); err == nil {
		t.Skip("a containerd listens at the default address: podrun would use it, not a private one")
	}
	dir, err := os.MkdirTemp(H.TmpDir, "private-")
	if err != nil {
		t.Fatal(err)
	}
	root, runDir := filepath.Join(dir, "root"), filepath.Join(dir, "run")
	archive := filepath.Join(dir, "image.tar")
	if err := e2eWriteArchive(archive, testimage.Config{Ref: "podrun.test/private:1"}); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(root, "containerd", "config.toml")
	started := func() []int {
		return e2eProcs(func(_ int, argv []string) bool {
			return filepath.Base(argv[0]) == "containerd" && slices.Contains(argv, config)
		})
	}
	t.Cleanup(func() {
		for _, pid := range started() {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(100 * time.Millisecond)
			}
		}
		for _, m := range e2eMountsUnder(dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	var wg sync.WaitGroup
	outs := make([]string, 3)
	codes := make([]int, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, H.Bin, "--root", root, "--run-dir", runDir, "--containerd-namespace", "podrun-e2e-private",
				"image", "import", archive)
			out, err := cmd.CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				codes[i] = -1
				if ee, ok := err.(*exec.ExitError); ok {
					codes[i] = ee.ExitCode()
				}
			}
		}()
	}
	wg.Wait()
	for i := range 3 {
		if codes[i] != 0 {
			t.Errorf("command %d exited %d:\n%s", i, codes[i], outs[i])
		}
	}
	if pids := started(); len(pids) != 1 {
		t.Errorf("%d private containerd processes (%v), want exactly 1", len(pids), pids)
	}
	pidFile, err := os.ReadFile(filepath.Join(runDir, "containerd", "containerd.pid"))
	if pids := started(); err != nil || len(pids) != 1 || strings.TrimSpace(string(pidFile)) != strconv.Itoa(pids[0]) {
		t.Errorf("pid file %q (%v), running %v: the pid file must name the one that runs", pidFile, err, pids)
	}
	n := 0
	for _, o := range outs {
		if strings.Contains(o, "started podrun's private containerd") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d commands said they started the private containerd, want 1:\n%s", n, strings.Join(outs, "\n---\n"))
	}
}

// TestLongPodName: a pod whose name has the most characters a name may
// have (253) goes down — also when it is not there — and comes up, and
// its lock file goes with it (a lock file named after the pod made a name
// over 255 bytes: such a pod could neither come up nor go down).
func TestLongPodName(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	name := "cc-long-" + strings.Repeat("x", 253-len("cc-long-"))
	file := H.WriteManifest(t, "cc-long.yaml", podWithV(name, "x"))
	downOnCleanup(t, file)
	locks := func() []string {
		entries, _ := os.ReadDir(filepath.Join(H.Root, "locks", "pods"))
		var out []string
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(H.Root, "locks", "pods", e.Name())); err == nil && strings.Contains(string(b), name) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down of a pod not there: exit %d\n%s", code, stderr)
	}
	if l := locks(); len(l) != 0 {
		t.Errorf("lock files left by down: %v", l)
	}
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		if strings.Contains(stderr, H.LogDir) && strings.Contains(stderr, "file name too long") {
			// The kubelet's own bug (kubernetes#80042): <ns>_<name>_<uid> is
			// over 255 bytes. Until logs.PodDir bounds it, only down is tested.
			t.Skipf("the pod's log directory's name is over 255 bytes:\n%s", stderr)
		}
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	if row := psRow(t, name, "-a"); row == nil || row[3] != "Running" {
		t.Errorf("ps: %q, want the pod Running", row)
	}
	if l := locks(); len(l) != 1 {
		t.Errorf("lock files naming the pod: %v, want one", l)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	checkPodGone(t, name, "")
	if l := locks(); len(l) != 0 {
		t.Errorf("lock files left by down: %v", l)
	}
	checkNothingLeft(t, before, "the long-named pod")
}
