package e2e

// A log whose rotation fails (issue 35 item 6): the log dir runs out of
// inodes while a container writes (another container filling the shared
// file system), and rotations fail; the log must stay readable, and the cap
// come back once inodes are free again.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLogRotationOutOfInodes(t *testing.T) {
	H.require(t)
	// A log dir of its own: a tmpfs of 200 inodes.
	logDir := filepath.Join(H.TmpDir, "lr-inodes")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", logDir, "tmpfs", syscall.MS_NODEV|syscall.MS_NOSUID|syscall.MS_NOEXEC, "size=16m,nr_inodes=200,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(logDir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", logDir, err)
		}
		_ = os.RemoveAll(logDir)
	})
	podrun := func(args ...string) (string, string, int) {
		t.Helper()
		return H.Podrun(t, "", append([]string{"--log-dir", logDir}, args...)...)
	}
	manifest := H.WriteManifest(t, "lr-inodes.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: lr-inodes}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do echo \"line $i\"; i=$((i+1)); sleep 0.005; done"]
`, H.Image))
	t.Cleanup(func() {
		if _, stderr, code := podrun("down", manifest); code != 0 {
			t.Errorf("cleanup: down: exit %d\n%s", code, stderr)
		}
	})
	const maxSize = 4096
	if _, stderr, code := podrun("up", "--wait=running", "--container-log-max-size", strconv.Itoa(maxSize), "--container-log-max-files", "3", manifest); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(logDir, "default_lr-inodes_*", "app"))
	if len(dirs) != 1 {
		t.Fatalf("log dirs %v", dirs)
	}
	logPath := filepath.Join(dirs[0], "0.log")
	eventually(t, 30*time.Second, "two rotations", func() (bool, string) {
		rotated, _ := filepath.Glob(logPath + ".*")
		return len(rotated) >= 2, fmt.Sprint(rotated)
	})

	numbered := regexp.MustCompile(`^line (\d+)$`)
	last := func() (int, string) { // the number of the last line `logs` gives, -1 if none
		t.Helper()
		out, stderr, code := podrun("logs", "--tail", "1", "lr-inodes")
		m := numbered.FindStringSubmatch(strings.TrimSpace(out))
		if code != 0 || m == nil {
			return -1, fmt.Sprintf("exit %d, %q, %s", code, e2eClip(out), e2eClip(stderr))
		}
		n, _ := strconv.Atoi(m[1])
		return n, ""
	}

	// Another container takes every inode left.
	var fill []string
	for i := 0; ; i++ {
		p := filepath.Join(logDir, fmt.Sprintf("fill-%d", i))
		err := os.WriteFile(p, nil, 0o600)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("filling the inodes: %v after %d files", err, i)
		}
		fill = append(fill, p)
	}
	t.Logf("%d inodes taken", len(fill))
	prev := -1
	for range 8 { // several rotations' worth: each one fails
		time.Sleep(400 * time.Millisecond)
		n, why := last()
		if n < 0 {
			t.Fatalf("with no inode left, `logs` reads nothing: %s", why)
		}
		if n < prev {
			t.Fatalf("logs --tail 1: line %d after line %d", n, prev)
		}
		prev = n
		if st, err := os.Stat(logPath); err != nil || st.Size() > 2*maxSize {
			t.Fatalf("with no inode left: the log %v, %v; want it at its name, at most twice its cap", st, err)
		}
	}
	for _, p := range fill {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	// The cap is back: every file at most maxSize and a line, and the
	// newest lines read.
	eventually(t, 30*time.Second, "the log rotated again, every file under its cap", func() (bool, string) {
		n, why := last()
		if n <= prev {
			return false, fmt.Sprintf("last line %d (%s), %d before", n, why, prev)
		}
		ents, _ := os.ReadDir(dirs[0])
		var sizes []string
		ok := true
		for _, e := range ents {
			info, err := e.Info()
			if err != nil {
				continue
			}
			sizes = append(sizes, fmt.Sprintf("%s %d", e.Name(), info.Size()))
			ok = ok && info.Size() <= maxSize+100
		}
		return ok && len(ents) <= 3, strings.Join(sizes, ", ")
	})
	// The failed rotations in the keeper's log: once for the streak, once
	// at its end, not once per record.
	b, _ := os.ReadFile(filepath.Join(H.RunDir, "io", "keeper.log"))
	if n := strings.Count(string(b), "rotating "+logPath); n > 2 {
		t.Errorf("the keeper's log says %d times that %s could not be rotated, want once and its end", n, logPath)
	}
}
