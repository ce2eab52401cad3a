package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// mirrorPod reads the mirror pod of the daemon's pod name (file name) as the
// admin; found is false when the API has no pod of that name.
func (cp *controlPlane) mirrorPod(t *testing.T, name string) (p corev1.Pod, found bool, err error) {
	t.Helper()
	out, err := cp.kubectl("", "get", "pod", "-n", "default", staticPodName(name), "-o", "json", "--ignore-not-found")
	if err != nil {
		return p, false, fmt.Errorf("kubectl get pod %s: %w: %s", staticPodName(name), err, out)
	}
	if strings.TrimSpace(out) == "" {
		return p, false, nil
	}
	return p, true, json.Unmarshal([]byte(out), &p)
}

// TestNodeMirrorPods (issue 39, acceptance 6): the static pods of `podrun
// daemon --kubeconfig` appear in the API as mirror pods, as the kubelet makes
// them (named <name>-<node>, the mirror, hash, source and seen annotations,
// the Node as controller owner, the static pod's status), are replaced when
// their file changes and go when it goes; a static pod the API refuses to
// mirror (it references a ConfigMap: NodeRestriction) runs all the same.
func TestNodeMirrorPods(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	dir := t.TempDir()
	downOnCleanup(t, "mp-web", "mp-cm")
	writeByRename(t, dir, "mp-web.yaml", daemonPod{name: "mp-web", value: "v1"}.yaml())
	writeByRename(t, dir, "mp-cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: mp-config
data:
  level: "1"
---
`+strings.Replace(daemonPod{name: "mp-cm"}.yaml(), "    env:\n", "    envFrom:\n    - configMapRef: {name: mp-config}\n    env:\n", 1))

	began := time.Now()
	d := startDaemon(t, dir, nil, "--kubeconfig", kc, "--resync", "2s")
	var m corev1.Pod
	eventually(t, 60*time.Second, "the mirror pod of mp-web Running", func() (bool, string) {
		var found bool
		var err error
		m, found, err = cp.mirrorPod(t, "mp-web")
		if err != nil || !found {
			return false, fmt.Sprintf("found %v, %v", found, err)
		}
		return allRunning(m), fmt.Sprintf("%+v", m.Status)
	})
	t.Logf("mirror pod %s Running in the API %v after `podrun daemon --kubeconfig` started", m.Name, time.Since(began).Round(time.Millisecond))
	var n corev1.Node
	if err := cp.get(t, &n, "node", name); err != nil {
		t.Fatal(err)
	}
	static := waitPodsRunning(t, 10*time.Second, nil, "mp-web", "mp-cm")
	checkMirrorPod(t, m, static["mp-web"], n)
	out, _ := cp.kubectl("", "get", "pods", "-A", "-o", "wide")
	t.Logf("$ kubectl get pods -A -o wide\n%s", out)

	// mp-cm is refused a mirror pod, and runs: the refusal is logged once.
	waitDaemonLog(t, d, "can not create pods that reference configmaps", 30*time.Second)
	if _, found, err := cp.mirrorPod(t, "mp-cm"); found || err != nil {
		t.Errorf("mp-cm has a mirror pod (%v): NodeRestriction should refuse it", err)
	}

	// The mirror pod deleted as an operator would: a new one appears, the
	// static pod runs on untouched.
	tasks := podTasks(t, "mp-web")
	if out, err := cp.kubectl("", "delete", "pod", "-n", "default", m.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete pod %s: %v\n%s", m.Name, err, out)
	}
	began = time.Now()
	deleted := m
	eventually(t, 60*time.Second, "a new mirror pod of mp-web Running", func() (bool, string) {
		var found bool
		var err error
		m, found, err = cp.mirrorPod(t, "mp-web")
		if err != nil || !found {
			return false, fmt.Sprintf("found %v, %v", found, err)
		}
		return m.UID != deleted.UID && m.DeletionTimestamp == nil && allRunning(m), fmt.Sprintf("uid %s, %+v", m.UID, m.Status)
	})
	t.Logf("mirror pod deleted with kubectl -> a new one (uid %s -> %s) Running %v later", deleted.UID, m.UID, time.Since(began).Round(time.Millisecond))
	checkSameTasks(t, "mp-web", tasks)
	checkMirrorPod(t, m, static["mp-web"], n)

	// The file changes: the static pod is replaced, and its mirror pod.
	writeByRename(t, dir, "mp-web.yaml", daemonPod{name: "mp-web", value: "v2"}.yaml())
	began = time.Now()
	old := m
	eventually(t, 60*time.Second, "the mirror pod of mp-web replaced and Running", func() (bool, string) {
		var found bool
		var err error
		m, found, err = cp.mirrorPod(t, "mp-web")
		if err != nil || !found {
			return false, fmt.Sprintf("found %v, %v", found, err)
		}
		return m.UID != old.UID && valueEnv(m) == "v2" && allRunning(m), fmt.Sprintf("uid %s, %+v", m.UID, m.Status)
	})
	t.Logf("mirror pod replaced (uid %s -> %s) and Running %v after the file changed", old.UID, m.UID, time.Since(began).Round(time.Millisecond))
	static = waitPodsRunning(t, 10*time.Second, nil, "mp-web")
	checkMirrorPod(t, m, static["mp-web"], n)

	// The files go: the static pods stop, the mirror pod goes, nothing is left.
	for _, f := range []string{"mp-web.yaml", "mp-cm.yaml"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	began = time.Now()
	eventually(t, 60*time.Second, "the mirror pod of mp-web gone", func() (bool, string) {
		m, found, err := cp.mirrorPod(t, "mp-web")
		return err == nil && !found, fmt.Sprintf("%v %s %v", found, m.UID, err)
	})
	t.Logf("mirror pod gone from the API %v after its file was removed", time.Since(began).Round(time.Millisecond))
	waitPodsGone(t, 30*time.Second, "mp-web", "mp-cm")
	checkPodGone(t, "mp-web", string(static["mp-web"].UID))
	logPodRequests(t, cp)
	log := d.stderr()
	for msg, want := range map[string]int{
		`msg="mirror pod created" pod=default/` + staticPodName("mp-web"): 3,
		`msg="mirror pod deleted" pod=default/` + staticPodName("mp-web"): 3,
		"can not create pods that reference configmaps":                   1,
	} {
		if got := strings.Count(log, msg); got != want {
			t.Errorf("daemon log: %d lines with %s, want %d", got, msg, want)
		}
	}
}

// checkMirrorPod checks mirror pod m of static pod s on node n, as the
// kubelet makes one.
func checkMirrorPod(t *testing.T, m, s corev1.Pod, n corev1.Node) {
	t.Helper()
	for k, want := range map[string]string{
		"kubernetes.io/config.mirror": string(s.UID),
		"kubernetes.io/config.hash":   string(s.UID),
		"kubernetes.io/config.source": "file",
	} {
		if m.Annotations[k] != want {
			t.Errorf("mirror pod annotation %s=%q, want %q", k, m.Annotations[k], want)
		}
	}
	if m.Annotations["kubernetes.io/config.seen"] == "" {
		t.Errorf("mirror pod without kubernetes.io/config.seen: %v", m.Annotations)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("mirror pod owners %+v", m.OwnerReferences)
	}
	o := m.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != n.Name || o.UID != n.UID || o.Controller == nil || !*o.Controller {
		t.Errorf("mirror pod owner %+v, want the Node %s (%s) as controller", o, n.Name, n.UID)
	}
	if m.Spec.NodeName != n.Name || m.Name != staticPodName("mp-web") {
		t.Errorf("mirror pod %s on %q", m.Name, m.Spec.NodeName)
	}
	if m.Status.PodIP == "" || m.Status.PodIP != s.Status.PodIP || len(m.Status.ContainerStatuses) != 1 || m.Status.ContainerStatuses[0].ContainerID != s.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("mirror pod status %+v\nwant the static pod's %+v", m.Status, s.Status)
	}
}

// logPodRequests logs the API server's count of requests on pods by verb
// and subresource (its apiserver_request_total): what the node and the test
// asked of it.
func logPodRequests(t *testing.T, cp *controlPlane) {
	t.Helper()
	out, err := cp.kubectl("", "get", "--raw", "/metrics")
	if err != nil {
		t.Logf("kubectl get --raw /metrics: %v", err)
		return
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "apiserver_request_total{") && strings.Contains(l, `resource="pods"`) {
			lines = append(lines, l)
		}
	}
	t.Logf("the API server's requests on pods (the node's and kubectl's):\n%s", strings.Join(lines, "\n"))
}
