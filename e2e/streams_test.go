package e2e

// The node's stream keeper (issue 31, issue 27 item 3): a container's last
// line without a newline is in its log as soon as the container has ended;
// a keeper killed -9 mid-stream loses nothing the container writes after
// the kill; a log that cannot be written never blocks the container, and
// the gap is said in the log once it can be written again.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noNewlinePod is a run-to-completion pod whose output ends without a
// newline.
func noNewlinePod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "printf 'first\\nDONE'"]
`, name, H.Image)
}

// TestLastPartialLineRightAfterUp: the last line a container printed
// without a newline is in `podrun logs` a second after a plain `up`
// returned, and right after `up --wait=completion`, 20 runs of 20 each.
func TestLastPartialLineRightAfterUp(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "st-partial.yaml", noNewlinePod("st-partial"))
	downOnCleanup(t, file)
	for _, wait := range []string{"--wait=ready", "--wait=completion"} { // --wait=ready: a plain up's
		missed := 0
		for run := range 20 {
			if _, stderr, code, _ := H.run(t, "", time.Minute, "up", wait, file); code != 0 {
				t.Fatalf("%s run %d: up exited %d\n%s", wait, run, code, stderr)
			}
			if wait == "--wait=ready" {
				time.Sleep(time.Second)
			}
			out, _, code, _ := H.run(t, "", time.Minute, "logs", "st-partial")
			if code != 0 || out != "first\nDONE\n" {
				missed++
				t.Logf("%s run %d: logs after up: exit %d, %q", wait, run, code, out)
			}
			if _, stderr, code, _ := H.run(t, "", time.Minute, "down", file); code != 0 {
				t.Fatalf("%s run %d: down exited %d\n%s", wait, run, code, stderr)
			}
		}
		if missed > 0 {
			t.Errorf("up %s: the last line was missing %d times of 20", wait, missed)
		}
	}
}

// TestLastPartialLineUnderTheDaemon: the same for a static pod of the
// daemon, read once `ps` shows it Succeeded.
func TestLastPartialLineUnderTheDaemon(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	name := staticPodName("st-dpartial")
	downOnCleanup(t, name)
	d := startDaemon(t, dir, nil)
	waitDaemonSynced(t, d, 60*time.Second)
	writeByRename(t, dir, "st-dpartial.yaml", noNewlinePod("st-dpartial"))
	eventually(t, 60*time.Second, name+" Succeeded", func() (bool, string) {
		p, ok := podsByName(t)["st-dpartial"]
		return ok && p.Status.Phase == "Succeeded", string(p.Status.Phase)
	})
	if out, _, code := H.Podrun(t, "", "logs", name); code != 0 || out != "first\nDONE\n" {
		t.Errorf("logs of the finished static pod: exit %d, %q", code, out)
	}
	if err := os.Remove(filepath.Join(dir, "st-dpartial.yaml")); err != nil {
		t.Fatal(err)
	}
	waitPodsGone(t, 60*time.Second, name)
}

// counterPod writes a numbered line every interval.
func counterPod(name, interval string) string { return countingPod(name, interval, "", "") }

// floodPod counts as counterPod does (a line "n N" and /tmp/count per
// round, every 5 ms) and writes 1 KiB more per round, a line of its own.
func floodPod(name string) string {
	return countingPod(name, "0.005", `p=$(printf '%01023d' 0); `, `echo \"$p\"; `)
}

// countingPod's container runs setup, then counts rounds: a line "n N",
// the rest of the round's output (more), N in /tmp/count, a sleep of
// interval.
func countingPod(name, interval, setup, more string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; %si=0; while true; do echo \"n $i\"; %secho $i > /tmp/c; mv /tmp/c /tmp/count; i=$((i+1)); sleep %s; done"]
`, name, H.Image, setup, more, interval)
}

// keeperPid is the stream keeper's pid, from its lock file.
func keeperPid(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(H.RunDir, "io", "keeper.lock"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// countedNumbers are the numbers of the "n N" lines of a log, in order.
func countedNumbers(t *testing.T, log string) []int {
	t.Helper()
	var ns []int
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if n, err := strconv.Atoi(strings.TrimPrefix(l, "n ")); err == nil && strings.HasPrefix(l, "n ") {
			ns = append(ns, n)
		}
	}
	return ns
}

// TestKeeperKilledMidStream: the stream keeper is killed -9 while a
// container writes; the container goes on; the next podrun that looks at
// the node (here `ps`) starts a keeper, which takes the container over, and
// every line written after the kill reaches the log, in order.
func TestKeeperKilledMidStream(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "st-kill.yaml", counterPod("st-kill", "0.02"))
	downOnCleanup(t, file)
	if _, stderr, code := H.Podrun(t, "", "up", file); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	time.Sleep(500 * time.Millisecond)
	pid := keeperPid(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	before, _, _ := H.Podrun(t, "", "exec", "st-kill", "--", "cat", "/tmp/count")
	time.Sleep(2 * time.Second) // the container writes ~100 lines, with no keeper
	after, _, _ := H.Podrun(t, "", "exec", "st-kill", "--", "cat", "/tmp/count")
	b, _ := strconv.Atoi(strings.TrimSpace(before))
	a, _ := strconv.Atoi(strings.TrimSpace(after))
	if a <= b+10 {
		t.Fatalf("the container did not go on while no keeper ran: count %d, then %d", b, a)
	}
	if _, _, code := H.Podrun(t, "", "ps"); code != 0 {
		t.Fatal("ps failed")
	}
	if np := keeperPid(t); np == pid {
		t.Fatal("no new keeper after ps")
	}
	eventually(t, 30*time.Second, "the lines written while no keeper ran in the log", func() (bool, string) {
		out, _, _, _ := H.run(t, "", time.Minute, "logs", "st-kill")
		ns := countedNumbers(t, out)
		return len(ns) > 0 && ns[len(ns)-1] > a, fmt.Sprintf("%d lines", len(ns))
	})
	out, _, _ := H.Podrun(t, "", "logs", "st-kill")
	ns := countedNumbers(t, out)
	if ns[0] != 0 {
		t.Errorf("the log starts at line %d", ns[0])
	}
	checkUnbrokenAfterKill(t, ns, b)
}

// checkUnbrokenAfterKill fails the test unless ns counts up by one, but
// for one gap of the lines the killed keeper had read and not yet written
// (any reader killed -9 between its read and its write loses them:
// containerd's CRI logger has the same window): the gap must end by line
// b+1, b counted right after the kill, so that every line written after
// it is in the log, in order.
func checkUnbrokenAfterKill(t *testing.T, ns []int, b int) {
	t.Helper()
	gaps := 0
	for i := 1; i < len(ns); i++ {
		if ns[i] == ns[i-1]+1 {
			continue
		}
		if gaps++; gaps > 1 || ns[i] < ns[i-1] || ns[i] > b+1 {
			t.Fatalf("the log goes from line %d to line %d (the count was %d right after the kill)", ns[i-1], ns[i], b)
		}
		t.Logf("lines %d..%d were in flight when the keeper was killed -9: not in the log", ns[i-1]+1, ns[i]-1)
	}
}

// TestLogDiskFullNeverBlocks: the container's log is on a filesystem that
// fills up; the container never blocks on its output (it writes well over
// what the pipes between it and the keeper hold); once space is freed its
// later lines reach the log, after a line that says how much was dropped
// and why.
func TestLogDiskFullNeverBlocks(t *testing.T) {
	H.require(t)
	logDir := t.TempDir()
	if err := syscall.Mount("tmpfs", logDir, "tmpfs", 0, "size=256k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(logDir, syscall.MNT_DETACH) })
	file := H.WriteManifest(t, "st-full.yaml", floodPod("st-full"))
	withLogDir := func(args ...string) []string { return append([]string{"--log-dir", logDir}, args...) }
	t.Cleanup(func() { H.Podrun(t, "", withLogDir("down", file)...) })
	if _, stderr, code := H.Podrun(t, "", withLogDir("up", file)...); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	// Fill the filesystem.
	filler := filepath.Join(logDir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(make([]byte, 512<<10)) // ENOSPC part way
	f.Close()
	count := func() int {
		out, _, _ := H.Podrun(t, "", withLogDir("exec", "st-full", "--", "cat", "/tmp/count")...)
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	// 300 rounds are 300 KiB of output, twice what the shim's pipe, its
	// copy buffer and the keeper's FIFO hold: a container whose output were
	// not drained would stop counting before. Waited for, not timed (the
	// machine may be slow).
	c0 := count()
	c1 := c0
	eventually(t, 90*time.Second, "the container going on while its log cannot be written", func() (bool, string) {
		c1 = count()
		return c1 >= c0+300, fmt.Sprintf("count %d, then %d", c0, c1)
	})
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "later lines in the log after the dropped ones", func() (bool, string) {
		out, _, _, _ := H.run(t, "", time.Minute, withLogDir("logs", "st-full")...)
		ns := countedNumbers(t, out)
		return strings.Contains(out, "of this container's output were dropped") && len(ns) > 0 && ns[len(ns)-1] > c1,
			e2eClip(out)
	})
	out, _, _ := H.Podrun(t, "", withLogDir("logs", "st-full")...)
	if !strings.Contains(out, "no space left on device") {
		t.Errorf("the gap is not explained:\n%s", e2eClip(out))
	}
}
