package e2e

// Image pulls retried with the kubelet's back-off (10 s doubling to 300 s):
// `podrun up` retries a registry that is down, and the daemon keeps a pod
// whose image is missing Pending (ErrImagePull, then ImagePullBackOff) until
// the image appears. Helpers are prefixed pb; the registry is the one of
// registry_test.go.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// daemonStatusText is the daemon's status file as written.
func daemonStatusText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(H.Root, "daemon.json"))
	if err != nil {
		t.Fatalf("reading the daemon's status file: %v", err)
	}
	return string(b)
}

// waitingReason returns the waiting reason and message of the pod's container.
func waitingReason(p corev1.Pod) (reason, message string) {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return "", ""
	}
	w := p.Status.ContainerStatuses[0].State.Waiting
	return w.Reason, w.Message
}

// TestPullBackOffUp: the registry is down when `up` starts and comes up a
// few seconds later: `up` says ImagePullBackOff with the reason, retries
// after 10 s, and the pod runs.
func TestPullBackOffUp(t *testing.T) {
	H.require(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ref := addr + "/pb-later:1"
	downAndCheckOnCleanup(t, "pb-up")
	path := H.WriteManifest(t, "pb-up.yaml", registryPod("pb-up", ref, "pb-cred", addr, registryUser, registryPass))
	noCreds := writeDockerConfig(t, "", "", "")
	start := time.Now()
	up := startPodrun(t, "--registry-config", noCreds, "up", "--timeout", "2m", path)
	first := fmt.Sprintf("ImagePullBackOff: back-off 10s pulling image %q: ", ref)
	eventually(t, 20*time.Second, "up's first ImagePullBackOff line", func() (bool, string) {
		if up.exited() {
			t.Fatalf("podrun up exited (%v) while the registry is down; stderr:\n%s", up.cmd.ProcessState, up.stderr())
		}
		return strings.Contains(up.stderr(), first), up.stderr()
	})
	if line := lineWith(up.stderr(), first); !strings.Contains(line, "connection refused") {
		t.Errorf("the back-off line does not give the reason: %q", line)
	}
	// While up waits, ps shows the pod Pending, ImagePullBackOff.
	if row := psRow(t, "pb-up"); len(row) < 4 || row[3] != "ImagePullBackOff" {
		t.Errorf("podrun ps row while up waits: %q, want STATUS ImagePullBackOff", row)
	}
	reg := startRegistryAt(t, addr, registryUser, registryPass)
	pushImage(t, reg, H.Image, ref, registryUser, registryPass)
	pushed := time.Since(start)
	if !up.wait(60 * time.Second) {
		t.Fatalf("podrun up still running 60 s after the image was pushed; stderr:\n%s", up.stderr())
	}
	took := time.Since(start)
	t.Logf("pushed after %v; up done after %v", pushed.Round(time.Millisecond), took.Round(time.Millisecond))
	if code := up.cmd.ProcessState.ExitCode(); code != 0 || up.stdout() != "pod/default/pb-up created (Running)\n" {
		t.Fatalf("podrun up: exit %d, stdout %q, want 0 and created (Running); stderr:\n%s", code, up.stdout(), up.stderr())
	}
	if took > 45*time.Second {
		t.Errorf("up took %v: the retries should come after 10 s, then 20 s", took)
	}
	if p := podStatus(t, "pb-up"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod phase %s after up, want Running", p.Status.Phase)
	}
}

// TestPullBackOffUpFailsFast: errors that retrying cannot fix (a refusal
// for want of credentials, an unknown image) fail `up` at once.
func TestPullBackOffUpFailsFast(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, registryUser, registryPass)
	noCreds := writeDockerConfig(t, "", "", "")
	for _, tc := range []struct {
		name, pod, want string
	}{
		{"pb-anon", registryPod("pb-anon", reg.Addr+"/pb-none:1", "", "", "", ""), "401 Unauthorized"},
		{"pb-missing", registryPod("pb-missing", reg.Addr+"/pb-none:1", "pb-cred", reg.Addr, registryUser, registryPass), "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			downAndCheckOnCleanup(t, tc.name)
			path := H.WriteManifest(t, tc.name+".yaml", tc.pod)
			start := time.Now()
			stdout, stderr, code := H.Podrun(t, "", "--registry-config", noCreds, "up", "--timeout", "2m", path)
			took := time.Since(start)
			if code != 1 || stdout != "" || !strings.Contains(stderr, "ErrImagePull") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("podrun up: exit %d, stdout %q; want exit 1, ErrImagePull and %q; stderr:\n%s", code, stdout, tc.want, stderr)
			}
			if strings.Contains(stderr, "ImagePullBackOff") || took > 8*time.Second {
				t.Errorf("up retried (%v); stderr:\n%s", took, stderr)
			}
			if strings.Contains(stderr, "level=") || strings.Contains(stderr, "trying next host") {
				t.Errorf("containerd's own log lines on stderr without --debug:\n%s", stderr)
			}
		})
	}
}

// TestPullBackOffDaemon: the daemon runs a pod whose image the registry
// does not have: ps and status show it Pending with ErrImagePull, then
// ImagePullBackOff and the registry's message, as does the daemon's status
// file; once the image is pushed, the pod runs without the file changing.
func TestPullBackOffDaemon(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, registryUser, registryPass)
	ref := reg.Addr + "/pb-pushed-later:1"
	dir := t.TempDir()
	writeByRename(t, dir, "pb-daemon.yaml", registryPod("pb-daemon", ref, "pb-cred", reg.Addr, registryUser, registryPass))
	downOnCleanup(t, "pb-daemon")
	d := startDaemon(t, dir, nil, "--resync", "2s")
	start := time.Now()
	seen := map[string]string{} // waiting reason -> message
	waitStatus(t, "pb-daemon", 40*time.Second, "status ImagePullBackOff", func(p corev1.Pod) (bool, string) {
		reason, msg := waitingReason(p)
		if p.Status.Phase != corev1.PodPending {
			t.Fatalf("phase %s while the image is missing, want Pending", p.Status.Phase)
		}
		if reason != "" {
			seen[reason] = msg
		}
		return reason == "ImagePullBackOff", reason
	})
	t.Logf("statuses seen: %q", seen)
	msg := seen["ImagePullBackOff"]
	if !strings.HasPrefix(msg, fmt.Sprintf("Back-off pulling image %q: ", ref)) || !strings.Contains(msg, "not found") {
		t.Errorf("ImagePullBackOff message %q, want the kubelet's back-off message with the registry's answer", msg)
	}
	if !strings.Contains(d.stderr(), "reason=ErrImagePull") {
		t.Errorf("the daemon did not log the failed pull as ErrImagePull; stderr:\n%s", d.stderr())
	}
	if row := psRow(t, "pb-daemon"); len(row) < 4 || row[2] != "0/1" || row[3] != "ImagePullBackOff" {
		t.Errorf("podrun ps row %q, want 0/1 ImagePullBackOff", row)
	}
	// Syncs during the back-off leave the pod as it is: no replacement, no pull.
	waitDaemonSyncs(t, d, 2, 10*time.Second)
	if line := lineWith(d.stderr(), "replacing pod"); line != "" && time.Since(start) < 10*time.Second {
		t.Errorf("the daemon replaced the pod during the back-off: %s", line)
	}
	raw := daemonStatusText(t)
	for _, want := range []string{`"pod": "default/` + staticPodName("pb-daemon") + `"`, `"phase": "Pending"`, `"reason": "ImagePullBackOff"`, "not found"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the daemon's status file lacks %s:\n%s", want, raw)
		}
	}

	pushImage(t, reg, H.Image, ref, registryUser, registryPass)
	pushed := time.Since(start)
	waitPodsRunning(t, 60*time.Second, allRunning, "pb-daemon")
	t.Logf("image pushed after %v; pod running after %v", pushed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if raw := daemonStatusText(t); strings.Contains(raw, "pb-daemon") {
		waitDaemonSyncs(t, d, 1, 30*time.Second)
		if raw := daemonStatusText(t); strings.Contains(raw, "pb-daemon") {
			t.Errorf("the daemon's status file still lists the pod once it runs:\n%s", raw)
		}
	}
}
