package e2e

// Admission as the kubelet's: a pod the node cannot run is refused before
// anything of it is made.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func admissionPod(name, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
`, name, extra, H.Image)
}

// checkAdmissionRefused checks that `up` of file was refused with exit 4 and the
// kubelet's reason and message, and that nothing of pod name was made.
func checkAdmissionRefused(t *testing.T, name, file, reason, message string, args ...string) {
	t.Helper()
	before, _ := os.ReadDir(filepath.Join(H.Root, "pods"))
	stdout, stderr, code := H.Podrun(t, "", append(args, "up", "--wait=running", file)...)
	want := fmt.Sprintf("pod default/%s refused by the node: %s: %s", name, reason, message)
	if code != 4 || !strings.Contains(stderr, want) {
		t.Errorf("up %s: exit %d, stderr:\n%s\nwant exit 4 and %q", name, code, stderr, want)
	}
	if strings.Contains(stdout, name) || psRow(t, name, "-a") != nil || len(podContainers(t, name)) != 0 {
		t.Errorf("%s was made: stdout %q", name, stdout)
	}
	if after, _ := os.ReadDir(filepath.Join(H.Root, "pods")); len(after) != len(before) {
		t.Errorf("pod directories: %d before, %d after a refused up", len(before), len(after))
	}
}

// TestAdmissionNodeSelectorAndResources: a nodeSelector the node's labels
// do not match is refused (NodeAffinity), and admitted once --node-labels
// gives the label; the well-known kubernetes.io/os label is matched; a
// request larger than the machine is refused (OutOfmemory).
func TestAdmissionNodeSelectorAndResources(t *testing.T) {
	H.require(t)
	ssd := H.WriteManifest(t, "ad-ssd.yaml", admissionPod("ad-ssd", "  nodeSelector: {disktype: ssd}\n"))
	downOnCleanup(t, ssd)
	checkAdmissionRefused(t, "ad-ssd", ssd, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")
	if _, stderr, code := H.Podrun(t, "", "--node-labels", "disktype=ssd,room=lab", "up", "--wait=running", ssd); code != 0 {
		t.Errorf("up with --node-labels disktype=ssd: exit %d\n%s", code, stderr)
	}

	linux := H.WriteManifest(t, "ad-linux.yaml", admissionPod("ad-linux", "  nodeSelector: {kubernetes.io/os: linux}\n"))
	downOnCleanup(t, linux)
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", linux); code != 0 {
		t.Errorf("up of a pod selecting kubernetes.io/os=linux: exit %d\n%s", code, stderr)
	}

	big := H.WriteManifest(t, "ad-big.yaml", strings.Replace(admissionPod("ad-big", ""), `    command: ["sleep", "3600"]`,
		"    command: [\"sleep\", \"3600\"]\n    resources: {requests: {memory: 1000Gi}}", 1))
	downOnCleanup(t, big)
	checkAdmissionRefused(t, "ad-big", big, "OutOfmemory", "Node didn't have enough resource: memory, requested: 1073741824000, used: 0, capacity: ")
}

// TestDaemonRecordsRefusedPod: the daemon records a pod the node refuses as
// the kubelet does: Failed, with the reason and message, in ps and status;
// nothing of it runs; once its file is fixed it is admitted.
func TestDaemonRecordsRefusedPod(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "ad-daemon")
	writeInPlace(t, dir, "ad-daemon.yaml", admissionPod("ad-daemon", "  nodeSelector: {disktype: ssd}\n"))
	startDaemon(t, dir, nil, "--resync", "2s")
	var p corev1.Pod
	eventually(t, 30*time.Second, "ad-daemon Failed with reason NodeAffinity", func() (bool, string) {
		p = podsByName(t)["ad-daemon"]
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "NodeAffinity", fmt.Sprintf("%+v", p.Status)
	})
	if p.Status.Message != "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" {
		t.Errorf("message %q", p.Status.Message)
	}
	if row := psRow(t, "ad-daemon", "-a"); len(row) < 4 || row[3] != "NodeAffinity" {
		t.Errorf("ps -a row %q, want STATUS NodeAffinity", row)
	}
	time.Sleep(3 * time.Second) // a re-scan leaves it as it is
	if n := len(podContainers(t, "ad-daemon")); n != 0 {
		t.Errorf("%d containers of a refused pod", n)
	}
	if q := podsByName(t)["ad-daemon"]; q.UID != p.UID || q.Status.Phase != corev1.PodFailed {
		t.Errorf("after a re-scan: uid %s phase %s, want %s Failed as it was", q.UID, q.Status.Phase, p.UID)
	}
	writeByRename(t, dir, "ad-daemon.yaml", admissionPod("ad-daemon", ""))
	waitPodsRunning(t, 60*time.Second, nil, "ad-daemon")
}
