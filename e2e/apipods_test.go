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

	"github.com/podrun/podrun/internal/testimage"
)

// apiPodsManifest is what the operator applies: a pod naming the node
// (no scheduler needed) and a Deployment of 2 the scheduler binds to it.
// Their containers end at SIGTERM; the pod's preStop hook runs first.
const apiPodsManifest = `apiVersion: v1
kind: Pod
metadata: {name: api-single, labels: {test: apipods}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    env:
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
    - name: HOST_IPS
      valueFrom: {fieldRef: {fieldPath: status.hostIPs}}
    lifecycle:
      preStop: {exec: {command: ["sh", "-c", "sleep 1"]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-web}
spec:
  replicas: 2
  selector: {matchLabels: {app: api-web}}
  template:
    metadata: {labels: {app: api-web, test: apipods}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: web
        image: %[2]s
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: api-refused}
spec:
  nodeName: %[1]s
  nodeSelector: {podrun.test/absent: "yes"}
  containers: [{name: app, image: %[2]s}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-unsupported}
spec:
  nodeName: %[1]s
  readinessGates: [{conditionType: example.com/gate}]
  containers: [{name: app, image: %[2]s}]
`

// TestNodeRunsAPIPods: as an operator with kubectl only, a pod naming the
// podrun node and a Deployment's pods the scheduler binds to it run on it,
// with their status written back as a kubelet writes it, and written only
// when it changes, their hostIP the Node's InternalIP (--node-ip 127.0.0.1,
// not the host's first address), in their status and in the downward
// API's status.hostIP(s); pods the node cannot admit are Failed with the
// kubelet's reason; a restart of the daemon restarts none of them, nor
// does one with the API server unreachable (its static pods start beside
// them);
// `kubectl delete pod` (graceful) removes the object once nothing of it
// is left on the device, a forced one tears the pod down after, `kubectl
// drain` cordons the node and evicts the Deployment's pods likewise, and
// scaling the Deployment to 0 removes the replacements.
func TestNodeRunsAPIPods(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/api-web:1"})
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, "--kubeconfig", kc, "--node-ip", "127.0.0.1")
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	var n corev1.Node
	if err := cp.get(t, &n, "node", name); err != nil {
		t.Fatal(err)
	}
	checkNodeObject(t, &n, name)
	var internal []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = append(internal, a.Address)
		}
	}
	if len(internal) != 1 || internal[0] != "127.0.0.1" {
		t.Fatalf("node addresses %+v: want the one InternalIP 127.0.0.1 (--node-ip)", n.Status.Addresses)
	}

	// The ServiceAccount admission plugin refuses pods until the
	// namespace's default ServiceAccount exists.
	eventually(t, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	file := filepath.Join(t.TempDir(), "apipods.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(apiPodsManifest, name, image)), 0o644); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	if out, err := cp.kubectl("", "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { cp.kubectl("", "delete", "--wait=false", "-f", file) })
	pods := cp.waitAPIPods(t, "test=apipods", 3, 120*time.Second)
	t.Logf("3 pods Running with their status written %v after kubectl apply", time.Since(applied).Round(time.Millisecond))
	out, _ := cp.kubectl("", "get", "pods", "-o", "wide")
	t.Logf("$ kubectl get pods -o wide\n%s", out)
	for _, p := range pods {
		checkAPIPodStatus(t, &p, name)
		// The kubelet's getHostIPsAnyWay: the Node's InternalIP.
		if s := p.Status; s.HostIP != internal[0] || len(s.HostIPs) != 1 || s.HostIPs[0].IP != internal[0] {
			t.Errorf("pod %s: hostIP %q hostIPs %v, want the Node's InternalIP %s", p.Name, s.HostIP, s.HostIPs, internal[0])
		}
	}
	if out, code := podrunQuiet(t, "exec", "api-single", "--", "sh", "-c", `echo "$HOST_IP $HOST_IPS"`); code != 0 || out != internal[0]+" "+internal[0]+"\n" {
		t.Errorf("downward API status.hostIP and status.hostIPs (exit %d): %q, want the Node's InternalIP %s twice", code, out, internal[0])
	}
	for pod, reason := range map[string]string{"api-refused": "NodeAffinity", "api-unsupported": "UnsupportedPodSpec"} {
		var p corev1.Pod
		eventually(t, 30*time.Second, pod+" rejected", func() (bool, string) {
			err := cp.get(t, &p, "pod", pod)
			return err == nil && p.Status.Phase == corev1.PodFailed, fmt.Sprintf("%+v %v", p.Status, err)
		})
		if p.Status.Reason != reason || !strings.HasPrefix(p.Status.Message, "Pod was rejected: ") {
			t.Errorf("pod %s: reason %q message %q, want %s", pod, p.Status.Reason, p.Status.Message, reason)
		}
		t.Logf("pod %s: %s %s: %s", pod, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}

	// A status that does not change is not written again (nor its
	// containers restarted).
	time.Sleep(3 * time.Second)
	later := cp.waitAPIPods(t, "test=apipods", 3, 30*time.Second)
	checkNotRestarted(t, pods, later, true)
	pods = later

	// A quick restart: nothing restarted, nothing written.
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	began := time.Now()
	d = startDaemon(t, dir, nil, "--kubeconfig", kc, "--node-ip", "127.0.0.1")
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	time.Sleep(5 * time.Second) // its first syncs of the pods and of their status
	after := cp.waitAPIPods(t, "test=apipods", 3, 30*time.Second)
	t.Logf("daemon restarted; pods looked at %v after", time.Since(began).Round(time.Millisecond))
	checkNotRestarted(t, pods, after, true)

	// The API server unreachable at the daemon's start: the pods bound
	// to the node keep running, its static pods start beside them (the
	// loop is not held up), nothing is torn down.
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	kcb, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	if !strings.Contains(string(kcb), "127.0.0.1:6443") {
		t.Fatalf("the node's kubeconfig names no 127.0.0.1:6443:\n%s", kcb)
	}
	if err := os.WriteFile(unreachable, []byte(strings.ReplaceAll(string(kcb), "127.0.0.1:6443", "127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	writeInPlace(t, dir, "static.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, image))
	d = startDaemon(t, dir, nil, "--kubeconfig", unreachable, "--node-ip", "127.0.0.1", "--resync", "2s")
	static := "static-" + name
	eventually(t, 60*time.Second, "the static pod Running beside the API's", func() (bool, string) {
		ps := podsOnNode(t)
		return ps[static] == corev1.PodRunning, fmt.Sprint(ps)
	})
	time.Sleep(5 * time.Second) // two re-scans of its sources
	ps := podsOnNode(t)
	for _, p := range pods {
		if ps[p.Name] != corev1.PodRunning {
			t.Errorf("API server unreachable: pod %s %q on the node, want Running (%v)", p.Name, ps[p.Name], ps)
		}
	}
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	if err := os.Remove(filepath.Join(dir, "static.yaml")); err != nil {
		t.Fatal(err)
	}

	// Back to the API server: no pod restarted; the static pod whose file
	// went is removed.
	// Anything left at the end is stopped with this one (the suite's
	// leak check then finds nothing of a failed run).
	startDaemon(t, dir, nil, "--kubeconfig", kc, "--node-ip", "127.0.0.1", "--stop-pods-on-exit")
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	time.Sleep(5 * time.Second) // its first syncs of the pods and of their status
	eventually(t, 30*time.Second, "the static pod removed with its file", func() (bool, string) {
		return !onNode(t, static), "still listed"
	})
	// The node was silent for longer than the node lifecycle controller's
	// grace: it may have marked the pods not Ready meanwhile (the node
	// writes them Ready again), so only the containers are compared.
	checkNotRestarted(t, pods, cp.waitAPIPods(t, "test=apipods", 3, 30*time.Second), false)

	began = time.Now()
	if out, err := cp.kubectl("", "delete", "pod", "api-single", "--timeout=60s"); err != nil {
		t.Fatalf("kubectl delete pod: %v\n%s", err, out)
	}
	t.Logf("kubectl delete pod api-single (graceful, preStop 1 s) returned after %v", time.Since(began).Round(time.Millisecond))
	if out, err := cp.kubectl("", "get", "pod", "api-single"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("pod api-single after its deletion: %v %s", err, out)
	}
	cp.checkNotOnNode(t, "api-single")
	if out, err := cp.kubectl("", "delete", "pod", "api-refused", "api-unsupported", "--timeout=30s"); err != nil {
		t.Errorf("kubectl delete the rejected pods: %v\n%s", err, out)
	}

	// Forced: the object goes at once; the node tears the pod down after.
	forced := ""
	for _, p := range pods {
		if p.Name != "api-single" {
			forced = p.Name
		}
	}
	began = time.Now()
	if out, err := cp.kubectl("", "delete", "pod", forced, "--force", "--grace-period=0"); err != nil {
		t.Fatalf("kubectl delete --force: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, forced+" torn down", func() (bool, string) {
		return !onNode(t, forced), "still listed by podrun ps"
	})
	t.Logf("pod %s deleted with --force: gone from the node %v after", forced, time.Since(began).Round(time.Millisecond))

	// kubectl drain: the node cordoned, the Deployment's pods (the forced
	// one's replacement among them) evicted through the Eviction API and
	// torn down on the device; drain returns once their objects are gone,
	// which the node does once nothing of them is left. Their replacements
	// stay Pending: no other node.
	cp.waitAPIPods(t, "app=api-web", 2, 90*time.Second)
	began = time.Now()
	if out, err := cp.kubectl("", "drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"); err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	t.Logf("kubectl drain returned after %v", time.Since(began).Round(time.Millisecond))
	for pod := range podsOnNode(t) {
		if strings.HasPrefix(pod, "api-web") {
			t.Errorf("pod %s still on the device after kubectl drain", pod)
		}
	}
	var n2 corev1.Node
	if err := cp.get(t, &n2, "node", name); err != nil || !n2.Spec.Unschedulable {
		t.Errorf("node after kubectl drain: unschedulable %t (%v), want cordoned", n2.Spec.Unschedulable, err)
	}

	began = time.Now()
	if out, err := cp.kubectl("", "scale", "deployment", "api-web", "--replicas=0"); err != nil {
		t.Fatalf("kubectl scale: %v\n%s", err, out)
	}
	cp.waitAPIPods(t, "app=api-web", 0, 90*time.Second)
	t.Logf("Deployment scaled to 0: its pods' objects gone %v after kubectl scale", time.Since(began).Round(time.Millisecond))
	out, code := podrunQuiet(t, "ps", "-a")
	if code != 0 || strings.Contains(out, "api-") {
		t.Errorf("pods left on the node (exit %d):\n%s", code, out)
	}
	if out, err := cp.kubectl("", "delete", "deployment", "api-web"); err != nil {
		t.Errorf("kubectl delete deployment: %v\n%s", err, out)
	}
	if out, err := cp.kubectl("", "uncordon", name); err != nil {
		t.Errorf("kubectl uncordon: %v\n%s", err, out)
	}
}

// waitAPIPods waits until the pods of selector are n, all Running and
// Ready with their status written (as the admin reads them), and returns
// them.
func (cp *controlPlane) waitAPIPods(t *testing.T, selector string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	eventually(t, timeout, fmt.Sprintf("%d pods %s Running and Ready", n, selector), func() (bool, string) {
		if err := cp.get(t, &list, "pods", "-l", selector); err != nil {
			return false, err.Error()
		}
		var seen []string
		ok := len(list.Items) == n
		for _, p := range list.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			ok = ok && p.Status.Phase == corev1.PodRunning && ready
			seen = append(seen, fmt.Sprintf("%s %s ready=%t", p.Name, p.Status.Phase, ready))
		}
		return ok, strings.Join(seen, ", ")
	})
	return list.Items
}

// checkAPIPodStatus checks what the node wrote of a running pod: as a
// kubelet's, its IPs, start time, conditions and container statuses.
func checkAPIPodStatus(t *testing.T, p *corev1.Pod, node string) {
	t.Helper()
	s := p.Status
	if p.Spec.NodeName != node || s.PodIP == "" || len(s.PodIPs) == 0 || s.HostIP == "" || s.StartTime == nil || s.QOSClass == "" {
		t.Errorf("pod %s: node %q podIP %q podIPs %v hostIP %q startTime %v qos %q", p.Name, p.Spec.NodeName, s.PodIP, s.PodIPs, s.HostIP, s.StartTime, s.QOSClass)
	}
	want := map[corev1.PodConditionType]bool{corev1.PodScheduled: true, corev1.PodInitialized: true, corev1.ContainersReady: true, corev1.PodReady: true}
	for _, c := range s.Conditions {
		if want[c.Type] && c.Status == corev1.ConditionTrue {
			delete(want, c.Type)
		}
	}
	if len(want) != 0 {
		t.Errorf("pod %s: conditions %+v, missing True %v", p.Name, s.Conditions, want)
	}
	if len(s.ContainerStatuses) != 1 {
		t.Fatalf("pod %s: container statuses %+v", p.Name, s.ContainerStatuses)
	}
	c := s.ContainerStatuses[0]
	if !c.Ready || c.State.Running == nil || c.ContainerID == "" || c.ImageID == "" || c.RestartCount != 0 || c.Started == nil || !*c.Started {
		t.Errorf("pod %s: container status %+v", p.Name, c)
	}
}

// checkNotOnNode checks that nothing of pod name is left on the device:
// podrun lists no pod of that name (the suite's leak check looks at the
// rest).
func (cp *controlPlane) checkNotOnNode(t *testing.T, name string) {
	t.Helper()
	if onNode(t, name) {
		t.Errorf("pod %s still on the node", name)
	}
}

// onNode reports whether podrun lists a pod of that name.
func onNode(t *testing.T, name string) bool {
	t.Helper()
	_, ok := podsOnNode(t)[name]
	return ok
}

// podsOnNode are the phases of the pods podrun lists, by name.
func podsOnNode(t *testing.T) map[string]corev1.PodPhase {
	t.Helper()
	out, code := podrunQuiet(t, "ps", "-a", "-o", "json")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("podrun ps -a -o json: exit %d, %v: %s", code, err, out)
	}
	phases := map[string]corev1.PodPhase{}
	for _, p := range list.Items {
		phases[p.Name] = p.Status.Phase
	}
	return phases
}

// checkNotRestarted checks that the pods before are after with the same
// containers, none restarted, and, when unwritten, not written since
// unless their status changed.
func checkNotRestarted(t *testing.T, before, after []corev1.Pod, unwritten bool) {
	t.Helper()
	for _, p := range before {
		for _, q := range after {
			if p.UID != q.UID {
				continue
			}
			b, _ := json.Marshal(p.Status)
			a, _ := json.Marshal(q.Status)
			switch {
			case !unwritten || p.ResourceVersion == q.ResourceVersion:
			case string(a) == string(b):
				t.Errorf("pod %s written again with nothing changed: resourceVersion %s -> %s", p.Name, p.ResourceVersion, q.ResourceVersion)
			default:
				// The node's status changed (a container's start time and
				// user are recorded a moment after it shows Running).
				t.Logf("pod %s: its status changed and was written: resourceVersion %s -> %s\nbefore %s\nafter  %s", p.Name, p.ResourceVersion, q.ResourceVersion, b, a)
			}
			if a, b := p.Status.ContainerStatuses[0], q.Status.ContainerStatuses[0]; a.ContainerID != b.ContainerID || b.RestartCount != 0 {
				t.Errorf("pod %s restarted by the daemon's restart: %+v -> %+v", p.Name, a, b)
			}
		}
	}
}
