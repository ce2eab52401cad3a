package e2e

// End-to-end tests of issue 35 item 17: a podrun killed while it makes a
// pod directory never leaves one that nothing names. Pods named cr-rec.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPodDirectoryWithoutRecordRemoved: what an `up` killed 30 ms in left
// before the fix — the pod directory with its two tmpfs mounts (shm, and
// containers, the termination messages) and no record — is removed by the
// next podrun: `ps` lists no nameless pod, and nothing of it is left.
func TestPodDirectoryWithoutRecordRemoved(t *testing.T) {
	H.require(t)
	uid := "0e0e0e0e-1717-4017-8017-171717171717"
	dir := filepath.Join(H.Root, "pods", uid)
	for _, sub := range []string{"shm", "containers"} {
		mp := filepath.Join(dir, sub)
		if err := os.MkdirAll(mp, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", mp, "tmpfs", syscall.MS_NODEV|syscall.MS_NOSUID|syscall.MS_NOEXEC, "size=1m"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range e2eMountsUnder(dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(dir)
	})
	out, stderr, code := H.Podrun(t, "", "ps", "-a")
	if code != 0 {
		t.Fatalf("ps: exit %d\n%s", code, stderr)
	}
	if strings.Contains(out, "Unknown") {
		t.Errorf("ps lists a pod that nothing names:\n%s", out)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the pod directory without a record is left: %v", err)
	}
	if m := e2eMountsUnder(dir); len(m) != 0 {
		t.Errorf("its mounts are left: %v", m)
	}
}

// TestKill9UpEarlyThenDown: `podrun up` killed with SIGKILL in its first
// 80 ms (where it makes the pod directory), 40 times; after each, `down`
// exits 0 and nothing of the pod is left, no pod directory without a
// record either (`ps` lists no nameless pod).
func TestKill9UpEarlyThenDown(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "cr-rec.yaml", strings.Replace(crashPod(18095), "name: cr-kill", "name: cr-rec", 1))
	downOnCleanup(t, file)
	uid, sandboxID := runOnceForIDs(t, file, "cr-rec")
	rng := rand.New(rand.NewSource(20261129))
	for trial := range 40 {
		after := time.Duration(rng.Int63n(int64(80 * time.Millisecond)))
		p := H.Start(t, "up", file)
		time.Sleep(after)
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		if _, derr, code := H.Podrun(t, "", "down", file); code != 0 {
			t.Fatalf("trial %d (killed after %v): down exited %d\n%s", trial, after, code, derr)
		}
		left := podLeftovers(t, "cr-rec", uid, sandboxID, "")
		if out, _ := podrunQuiet(t, "ps", "-a"); strings.Contains(out, "Unknown") {
			left = append(left, fmt.Sprintf("a nameless pod in ps:\n%s", out))
		}
		if entries, _ := os.ReadDir(filepath.Join(H.Root, "pods")); len(entries) != 0 {
			for _, e := range entries {
				left = append(left, "pods/"+e.Name())
			}
		}
		if len(left) != 0 {
			t.Fatalf("trial %d (killed after %v): left after down: %v", trial, after, left)
		}
	}
}
