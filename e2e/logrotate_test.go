package e2e

// Container log rotation by podrun's log driver (issue 11): the cap holds at
// every sampled moment, no line is split, and `logs --tail 1` and `logs -f`
// read across rotations.

import (
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

func TestLogRotation(t *testing.T) {
	H.require(t)
	// The container writes in bursts of 1 MB with 0.1 s between them
	// (about 8 MB/s, 12 rotations): a follower polls every 200 ms and reads
	// whole files, but a writer faster than the follower can read would
	// have the oldest files removed before it reaches them (docs/pods.md).
	const (
		lines    = 120000 // of 1 kB: 120 MB, under the default cap
		maxSize  = 10 << 20
		maxFiles = 5
	)
	manifest := H.WriteManifest(t, "lr-rot.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: lr-rot}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.1; done; i=0; while [ $i -lt %d ]; do printf 'line %%06d %%01000d\\n' $i 0; i=$((i+1)); if [ $((i %% 1000)) -eq 0 ]; then sleep 0.1; fi; done; echo done; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`, H.Image, lines))
	downOnCleanup(t, manifest)
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", manifest); code != 0 { // the defaults: 10Mi, 5 files
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(H.LogDir, "default_lr-rot_*", "app"))
	if len(dirs) != 1 {
		t.Fatalf("log dirs %v", dirs)
	}
	follow := trackProcess(t, H.Start(t, "logs", "-f", "lr-rot"))

	// Sample the container's log directory, as fast as it can be read,
	// while the container writes.
	stop, sampled := make(chan struct{}), make(chan [2]int64)
	go func() {
		worst, samples := int64(0), int64(0)
		for {
			select {
			case <-stop:
				sampled <- [2]int64{worst, samples}
				return
			default:
			}
			var total int64
			entries, _ := os.ReadDir(dirs[0])
			for _, e := range entries {
				if info, err := e.Info(); err == nil {
					total += info.Size()
				}
			}
			worst, samples = max(worst, total), samples+1
		}
	}()
	execIn(t, "lr-rot", "", "touch", "/tmp/go")
	eventually(t, 120*time.Second, "the container has written its lines", func() (bool, string) {
		out, _, _, _ := H.run(t, "", 10*time.Second, "logs", "--tail", "1", "lr-rot")
		return strings.TrimSpace(out) == "done", e2eClip(out)
	})
	close(stop)
	s := <-sampled
	worst, samples := s[0], s[1]
	t.Logf("log dir at most %d bytes over %d samples (cap %d files of %d)", worst, samples, maxFiles, maxSize)
	if worst > maxFiles*maxSize+1100 {
		t.Errorf("the log dir reached %d bytes, over %d files of %d bytes plus a line", worst, maxFiles, maxSize)
	}
	if out, _, code := H.Podrun(t, "", "logs", "--tail", "1", "lr-rot"); code != 0 || strings.TrimSpace(out) != "done" {
		t.Fatalf("logs --tail 1: exit %d, %q; want done", code, e2eClip(out))
	}
	entries, _ := os.ReadDir(dirs[0])
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	t.Logf("files: %v", names)
	if len(names) > maxFiles {
		t.Errorf("%d files kept, want at most %d", len(names), maxFiles)
	}

	// Every line `logs` returns is whole, and they are a run of the last ones.
	whole := regexp.MustCompile(`^line (\d{6}) 0{1000}$`)
	check := func(what, out string) {
		t.Helper()
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) < 2 || got[len(got)-1] != "done" {
			t.Errorf("%s: %d lines, the last %q; want the last one \"done\"", what, len(got), e2eClip(got[len(got)-1]))
			return
		}
		prev := -1
		for i, l := range got[:len(got)-1] {
			m := whole.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("%s: line %d is not whole: %q", what, i, e2eClip(l))
				return
			}
			n, _ := strconv.Atoi(m[1])
			// logs -f began before the first line: it must see every one.
			if (prev >= 0 || what == "logs -f") && n != prev+1 {
				t.Errorf("%s: line %d is %06d after %06d: a gap", what, i, n, prev)
				return
			}
			if n <= prev {
				t.Errorf("%s: line %d is %06d after %06d: out of order", what, i, n, prev)
				return
			}
			prev = n
		}
		if prev != lines-1 {
			t.Errorf("%s: the last numbered line is %d, want %d", what, prev, lines-1)
		}
		t.Logf("%s: %d whole lines, the last %06d", what, len(got)-1, prev)
	}
	out, _, _ := H.Podrun(t, "", "logs", "lr-rot")
	check("logs", out)

	eventually(t, 10*time.Second, "logs -f has read up to done", func() (bool, string) {
		return strings.HasSuffix(follow.stdout(), "done\n"), fmt.Sprintf("%d bytes", len(follow.stdout()))
	})
	if err := follow.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	follow.wait(10 * time.Second)
	check("logs -f", follow.stdout())
}

// TestLogGC: `podrun gc --log-retention 1s` removes the logs of a pod that
// is gone, keeps those of a pod that runs, and never touches a directory
// podrun did not make (a kubelet's, in a shared log dir).
func TestLogGC(t *testing.T) {
	H.require(t)
	pod := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo hello; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`, name, H.Image)
	}
	goneFile, _ := mustRunUp(t, "lr-gone", pod("lr-gone"), "--wait=running")
	mustRunUp(t, "lr-live", pod("lr-live"), "--wait=running")
	foreign := filepath.Join(H.LogDir, "default_kubelets_0000", "app")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(foreign)) })
	if err := os.WriteFile(filepath.Join(foreign, "0.log"), []byte("x\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(foreign, "0.log"), old, old); err != nil {
		t.Fatal(err)
	}
	gone, _ := filepath.Glob(filepath.Join(H.LogDir, "default_lr-gone_*"))
	live, _ := filepath.Glob(filepath.Join(H.LogDir, "default_lr-live_*"))
	if len(gone) != 1 || len(live) != 1 {
		t.Fatalf("log dirs: gone %v, live %v", gone, live)
	}
	if _, stderr, code := H.Podrun(t, "", "down", goneFile); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	time.Sleep(1500 * time.Millisecond)
	out, stderr, code := H.Podrun(t, "", "gc", "--log-retention", "1s")
	// Earlier tests' pods are gone too: theirs may go as well.
	if code != 0 || !strings.Contains(out, "removed "+gone[0]+"\n") || strings.Contains(out, live[0]) || strings.Contains(out, "kubelets") {
		t.Errorf("gc: exit %d, %q; want %s removed, not %s nor the kubelet's\n%s", code, out, gone[0], live[0], stderr)
	}
	for _, keep := range []string{live[0], filepath.Dir(foreign)} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("gc removed %s: %v", keep, err)
		}
	}
	if _, err := os.Stat(gone[0]); err == nil {
		t.Errorf("%s is still there", gone[0])
	}
}
