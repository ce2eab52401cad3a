package e2e

// The stream keeper and the logs of restarts (issue 35 items 8, 9, 11): a
// crash-looping container keeps the logs of its current and previous
// attempts only; an attach client that never reads is dropped while the
// container's log goes on; the keeper runs in a cgroup of its own.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// TestCrashLoopKeepsTwoAttempts: a container that writes enough to rotate
// its log and exits, under restartPolicy Always, has after three restarts
// only the containers and log files (rotated ones included) of its current
// and previous attempts, as the kubelet keeps one dead container per
// container and removes the log of each it removes.
func TestCrashLoopKeepsTwoAttempts(t *testing.T) {
	H.require(t)
	_, up := upForeground(t, "kp-crash", `apiVersion: v1
kind: Pod
metadata:
  name: kp-crash
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "i=0; while [ $i -lt 100 ]; do printf 'kp-crash %%0100d\\n' $i; i=$((i+1)); done; exit 1"]
`, "--wait=running", "--container-log-max-size", "4Ki", "--container-log-max-files", "2")
	pod := waitStatus(t, "kp-crash", 60*time.Second, "3 restarts", func(p corev1.Pod) (bool, string) {
		c := containerStatus(p, "app")
		return c != nil && c.RestartCount >= 3, fmt.Sprintf("%+v", c)
	})
	cur := int(containerStatus(pod, "app").RestartCount)
	dir := containerLogDir(pod, "app")
	// The current attempt's file may still be written: what is checked is
	// which attempts have files.
	eventually(t, 10*time.Second, "the logs of the current and previous attempts only", func() (bool, string) {
		ents, _ := os.ReadDir(dir)
		var names []string
		attempts := map[int]bool{}
		for _, e := range ents {
			names = append(names, e.Name())
			digits, _, ok := strings.Cut(e.Name(), ".log")
			if n, err := strconv.Atoi(digits); ok && err == nil {
				attempts[n] = true
			}
		}
		ok := len(attempts) == 2 && attempts[cur] && attempts[cur-1]
		return ok, fmt.Sprintf("restart %d, files %v", cur, names)
	})
	var rotated int
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), strconv.Itoa(cur-1)+".log.") {
			rotated++
		}
	}
	if rotated == 0 {
		t.Errorf("the previous attempt's log has no rotated file: the test does not rotate")
	}
	if ids := podContainerIDs(t, "kp-crash"); len(ids) != 3 { // the sandbox, the previous and the current attempt
		t.Errorf("containers %v, want the sandbox and two attempts", ids)
	}
	if code, _ := up.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("up -f after SIGTERM: exit %d, want 0; stderr:\n%s", code, up.stderr())
	}
	checkPodGone(t, "kp-crash", string(pod.UID))
}

// TestAttachClientThatNeverReads: a client attached to a container that
// writes flat out, and never reading, is dropped by the keeper (its
// connection closed), and the container's log goes on growing.
func TestAttachClientThatNeverReads(t *testing.T) {
	H.require(t)
	mustRunUp(t, "kp-attach", `apiVersion: v1
kind: Pod
metadata:
  name: kp-attach
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "while true; do echo kp-attach-0123456789012345678901234567890123456789; done"]
    stdin: true
`)
	pod := podStatus(t, "kp-attach")
	id := strings.TrimPrefix(mustContainerStatus(t, pod, "app").ContainerID, "containerd://")
	conn, err := net.Dial("unix", filepath.Join(H.RunDir, "io", id, "attach.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0}); err != nil { // no stdin from this client
		t.Fatal(err)
	}
	rc, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	hup := false
	deadline := time.Now().Add(20 * time.Second)
	_ = rc.Control(func(fd uintptr) {
		for !hup && time.Now().Before(deadline) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
			if n, err := unix.Poll(fds, 100); err == nil && n > 0 {
				hup = fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP) != 0
			}
		}
	})
	if !hup {
		t.Fatal("the keeper kept the connection of a client that never reads (20 s)")
	}
	logPath := filepath.Join(containerLogDir(pod, "app"), "0.log")
	size := func() int64 {
		var total int64
		for _, p := range append(sortedGlob(logPath+".*"), logPath) {
			if st, err := os.Stat(p); err == nil {
				total += st.Size()
			}
		}
		return total
	}
	before := size()
	eventually(t, 10*time.Second, "the log grows after the drop", func() (bool, string) {
		return size() > before+1<<20, fmt.Sprintf("%d bytes, %d before", size(), before)
	})
	if b, _ := os.ReadFile(filepath.Join(H.RunDir, "io", "keeper.log")); !strings.Contains(string(b), id+": dropping an attached client") {
		t.Errorf("the keeper's log does not say it dropped the client:\n%s", e2eClip(string(b)))
	}
}

func sortedGlob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	slices.Sort(m)
	return m
}

// TestKeeperOwnCgroup: the stream keeper runs in a cgroup of its own,
// <namespace>/keeper, in every hierarchy (not the cgroup of the process
// that started it: a keeper left in an SSH session's scope dies with the
// session), with a CPU weight below a default sibling's; the last keeper to
// end removes it.
func TestKeeperOwnCgroup(t *testing.T) {
	H.require(t)
	file, _ := mustRunUp(t, "kp-cgroup", `apiVersion: v1
kind: Pod
metadata:
  name: kp-cgroup
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "echo kp-cgroup; sleep 3600"]
`)
	pid := keeperPid(t)
	own := "/" + H.Namespace + "/keeper"
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] != own && (parts[1] == "" || strings.Contains(parts[1], "cpu") || strings.Contains(parts[1], "memory") || parts[1] == "name=systemd") {
			t.Errorf("keeper %d: %q, want %s", pid, line, own)
		}
	}
	weight := filepath.Join(cgroupMount, "cpu", own, "cpu.shares")
	want := "256"
	if cgroupV2Only() {
		weight, want = filepath.Join(cgroupMount, own, "cpu.weight"), "10"
	}
	if b, err := os.ReadFile(weight); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("%s: %q (%v), want %s", weight, b, err, want)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	eventually(t, 30*time.Second, "the keeper ends and its cgroup is gone", func() (bool, string) {
		left := sortedGlob(filepath.Join(cgroupMount, "*", H.Namespace, "keeper"))
		if _, err := os.Stat(filepath.Join(cgroupMount, H.Namespace, "keeper")); err == nil {
			left = append(left, filepath.Join(cgroupMount, H.Namespace, "keeper"))
		}
		return unix.Kill(pid, 0) != nil && len(left) == 0, fmt.Sprintf("keeper alive %v, cgroups %v", unix.Kill(pid, 0) == nil, left)
	})
}
