package e2e

// kill -9 of `podrun up` and `podrun down` at random points, then `down`:
// nothing of the pod is left.

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

// crPod has what a teardown must undo: an init container, a disk and a
// memory emptyDir (a tmpfs), a configMap volume (a tmpfs with the atomic
// writer's files), and a host port (portmap rules).
func crPod(port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cr-config}
data: {greeting: hello}
---
apiVersion: v1
kind: Pod
metadata:
  name: cr-kill
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: %[1]s
    command: ["sh", "-c", "echo init > /data/init"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: %[1]s
    command: ["sleep", "3600"]
    ports: [{containerPort: 80, hostPort: %[2]d}]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: mem, mountPath: /mem}
    - {name: config, mountPath: /config}
  volumes:
  - {name: data, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 8Mi}}
  - {name: config, configMap: {name: cr-config}}
`, H.Image, port)
}

// crLeft lists what of pod uid (sandbox id sandboxID) is on the host:
// containers, tasks, network namespace, IP reservation, iptables rules, CNI
// cache entries, mounts, the pod cgroup, the pod's record.
func crLeft(t *testing.T, name, uid, sandboxID string) []string {
	t.Helper()
	var left []string
	for _, c := range plContainers(t, name) {
		left = append(left, "container "+c.ID())
	}
	if plNetns(t)["podrun-"+uid] {
		left = append(left, "netns podrun-"+uid)
	}
	left = append(left, plNetworkTraces(t, sandboxID)...)
	podDir := filepath.Join(H.Root, "pods", uid)
	if _, err := os.Lstat(podDir); err == nil {
		left = append(left, "pod directory "+podDir)
	}
	for _, m := range e2eMountsUnder(podDir) {
		left = append(left, "mount "+m)
	}
	cache, _ := filepath.Glob(filepath.Join(H.Root, "cni", "cache", "results", "*"+sandboxID+"*"))
	for _, c := range cache {
		left = append(left, "CNI cache entry "+c)
	}
	for p := range e2ePodCgroups() {
		if strings.Contains(p, uid) || strings.Contains(p, strings.ReplaceAll(uid, "-", "_")) {
			left = append(left, "cgroup "+p)
		}
	}
	return left
}

// TestKill9UpAndDownThenDown: 50 trials; in each, `podrun up` (even trials)
// or `podrun down` of a running pod (odd trials) is killed with SIGKILL
// after a random 0–1.2 s, then `podrun down` is run: it exits 0 and nothing
// of the pod is left on the host.
func TestKill9UpAndDownThenDown(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "cr-kill.yaml", crPod(18093))
	plDownOnCleanup(t, file)
	// The pod's UID (its content's hash) and sandbox id, from one full run.
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	uid := string(svStatus(t, "cr-kill").UID)
	sandboxID := plSandboxID(t, plContainers(t, "cr-kill"))
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	rng := rand.New(rand.NewSource(20261126))
	killedDuring := map[string]int{}
	for trial := range 50 {
		after := time.Duration(rng.Int63n(int64(1200 * time.Millisecond)))
		what := "up"
		if trial%2 == 1 {
			what = "down"
			if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
				t.Fatalf("trial %d: up before the down: exit %d\n%s", trial, code, stderr)
			}
		}
		p := H.Start(t, what, file)
		time.Sleep(after)
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
		stderr := p.Stderr.(*CmdOutput).String()
		step := "before any step"
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) > 0 && lines[len(lines)-1] != "" {
			step = lines[len(lines)-1]
		}
		killedDuring[what]++
		if _, derr, code := H.Podrun(t, "", "down", file); code != 0 {
			t.Fatalf("trial %d (%s killed after %v, last said %q): down exited %d\n%s", trial, what, after, step, code, derr)
		}
		if left := crLeft(t, "cr-kill", uid, sandboxID); len(left) != 0 {
			t.Fatalf("trial %d (%s killed after %v, last said %q): left after down: %v", trial, what, after, step, left)
		}
		t.Logf("trial %d: %s killed after %v, last said %q: clean", trial, what, after.Round(time.Millisecond), step)
	}
	t.Logf("50 trials clean (%v)", killedDuring)
}
