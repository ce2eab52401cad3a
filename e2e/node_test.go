package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/kubenode"
)

// anchorBin holds the control plane's binaries, built once per machine by
// cluster-anchor's build.sh (KVER=v1.37.2); anchorDir holds its scripts
// ($PODRUN_CLUSTER_ANCHOR, by default where this machine keeps them).
const anchorBin = "/var/lib/anchor/bin"

var anchorDir = cmp.Or(os.Getenv("PODRUN_CLUSTER_ANCHOR"), "/work/shared/cluster-anchor")

// nodeGrace is the node lifecycle controller's --node-monitor-grace-period
// in these tests (its default is 50 s): how long a node may be silent
// before it is marked NotReady (Unknown).
const nodeGrace = 20 * time.Second

// controlPlane is a real control plane started by cluster-anchor's start.sh
// with its state in a temp dir of the test.
type controlPlane struct {
	dir string // start.sh's $S
}

// startControlPlane starts etcd, the API server, the controller manager and
// the scheduler, and stops them (stop.sh, by pid) when the test ends. It runs
// start.sh with two flags added: the API server's endpoint reconciler off
// (v1.37 refuses a loopback --advertise-address with it) and the
// controller manager's shorter node grace.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	H.require(t)
	if _, err := os.Stat(filepath.Join(anchorBin, "kube-apiserver")); err != nil {
		t.Skipf("no control plane built (%v): run %s/build.sh", err, anchorDir)
	}
	b, err := os.ReadFile(filepath.Join(anchorDir, "start.sh"))
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	for _, r := range [][2]string{
		{"--advertise-address=127.0.0.1 ", "--advertise-address=127.0.0.1 --endpoint-reconciler-type=none "},
		{"$BIN/kube-controller-manager ", fmt.Sprintf("$BIN/kube-controller-manager --node-monitor-grace-period=%s ", nodeGrace)},
	} {
		if !strings.Contains(script, r[0]) {
			t.Fatalf("start.sh has no %q to add flags to", r[0])
		}
		script = strings.Replace(script, r[0], r[1], 1)
	}
	cp := &controlPlane{dir: filepath.Join(t.TempDir(), "cluster")}
	start := filepath.Join(t.TempDir(), "start.sh")
	if err := os.WriteFile(start, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := cp.script("stop.sh")
		if err != nil {
			t.Errorf("stop.sh: %v\n%s", err, out)
		}
	})
	began := time.Now()
	if out, err := cp.run("bash", start); err != nil {
		t.Fatalf("start.sh: %v\n%s", err, out)
	}
	t.Logf("control plane answered /readyz in %v", time.Since(began).Round(time.Millisecond))
	return cp
}

func (cp *controlPlane) run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "S="+cp.dir, "BIN="+anchorBin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (cp *controlPlane) script(name string, args ...string) (string, error) {
	return cp.run("bash", append([]string{filepath.Join(anchorDir, name)}, args...)...)
}

// nodeKubeconfig mints node name's credentials (system:node:NAME).
func (cp *controlPlane) nodeKubeconfig(t *testing.T, name string) string {
	t.Helper()
	out, err := cp.script("node-kubeconfig.sh", name)
	if err != nil {
		t.Fatalf("node-kubeconfig.sh: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// kubectl runs kubectl with kubeconfig (the admin's when "").
func (cp *controlPlane) kubectl(kubeconfig string, args ...string) (string, error) {
	if kubeconfig == "" {
		kubeconfig = filepath.Join(cp.dir, "admin.kubeconfig")
	}
	return cp.run(filepath.Join(anchorBin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// get reads one object as the admin into v.
func (cp *controlPlane) get(t *testing.T, v any, args ...string) error {
	out, err := cp.kubectl("", append(append([]string{"get"}, args...), "-o", "json")...)
	if err != nil {
		return fmt.Errorf("kubectl get %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return json.Unmarshal([]byte(out), v)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// waitNodeReady waits until the node's Ready condition is want.
func (cp *controlPlane) waitNodeReady(t *testing.T, name string, want corev1.ConditionStatus, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("node %s Ready=%s", name, want), func() (bool, string) {
		var n corev1.Node
		if err := cp.get(t, &n, "node", name); err != nil {
			return false, err.Error()
		}
		return readyStatus(&n) == want, fmt.Sprintf("%+v", n.Status.Conditions)
	})
}

// waitLeaseRenewed waits until the node's Lease is renewed after since.
func (cp *controlPlane) waitLeaseRenewed(t *testing.T, name string, since time.Time, timeout time.Duration) coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	eventually(t, timeout, "the node's Lease renewed", func() (bool, string) {
		if err := cp.get(t, &l, "lease", "-n", corev1.NamespaceNodeLease, name); err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since), fmt.Sprintf("%+v", l.Spec)
	})
	return l
}

// TestNodeJoinsCluster: `podrun daemon --kubeconfig` registers this machine
// as a Node of a real control plane with a node's credentials: Ready, its
// Lease renewed, NotReady (Unknown) once the daemon is stopped, Ready again
// after it restarts. Pods are not run from the API yet: the node is tainted.
func TestNodeJoinsCluster(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	kc := cp.nodeKubeconfig(t, name)
	if out, err := cp.kubectl(kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "system:node:"+name {
		t.Fatalf("auth whoami as the node: %q, %v", out, err)
	}
	dir := t.TempDir()

	began := time.Now()
	d := startDaemon(t, dir, nil, "--kubeconfig", kc)
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	t.Logf("node Ready %v after `podrun daemon --kubeconfig` started (acceptance: within 10 s)", time.Since(began).Round(time.Millisecond))
	out, _ := cp.kubectl("", "get", "nodes", "-o", "wide")
	t.Logf("$ kubectl get nodes -o wide\n%s", out)

	var n corev1.Node
	if err := cp.get(t, &n, "node", name); err != nil {
		t.Fatal(err)
	}
	checkNodeObject(t, &n, name)

	l := cp.waitLeaseRenewed(t, name, time.Now(), 30*time.Second)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != name || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID {
		t.Errorf("lease: holder %v, owners %+v (node uid %s)", l.Spec.HolderIdentity, l.OwnerReferences, n.UID)
	}

	// What the node's credentials may not do (Node authorizer, NodeRestriction).
	for _, args := range [][]string{
		{"get", "secrets", "-A"},
		{"get", "nodes"},
		{"label", "node", name, "--overwrite", "node-restriction.kubernetes.io/x=y"},
	} {
		if out, err := cp.kubectl(kc, args...); err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("kubectl %s as the node: %v, %s; want forbidden", strings.Join(args, " "), err, out)
		}
	}

	stopped := time.Now()
	if code, _ := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	cp.waitNodeReady(t, name, corev1.ConditionUnknown, nodeGrace+60*time.Second)
	t.Logf("node NotReady (Ready=Unknown) %v after the daemon stopped (--node-monitor-grace-period %v)", time.Since(stopped).Round(time.Millisecond), nodeGrace)

	began = time.Now()
	startDaemon(t, dir, nil, "--kubeconfig", kc)
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	t.Logf("node Ready again %v after the daemon restarted", time.Since(began).Round(time.Millisecond))
	cp.waitLeaseRenewed(t, name, time.Now(), 30*time.Second)
	if err := cp.get(t, &n, "node", name); err != nil {
		t.Fatal(err)
	}
	checkNodeObject(t, &n, name)
}

// checkNodeObject checks what the node registered as a kubelet does.
func checkNodeObject(t *testing.T, n *corev1.Node, name string) {
	t.Helper()
	for k, v := range map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", "beta.kubernetes.io/os": "linux"} {
		if n.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, n.Labels[k], v)
		}
	}
	// It runs the pods bound to it: not tainted as podrun nodes were
	// before. (The node lifecycle controller's own taints, unreachable
	// and not-ready, may be there for a moment after a restart.)
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == kubenode.NotRunningPodsTaint.Key }) {
		t.Errorf("taints %+v: %s is no longer set", n.Spec.Taints, kubenode.NotRunningPodsTaint.Key)
	}
	if !strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") || n.Status.NodeInfo.KernelVersion == "" || n.Status.NodeInfo.BootID == "" {
		t.Errorf("nodeInfo %+v", n.Status.NodeInfo)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemonEndpoints %+v", n.Status.DaemonEndpoints)
	}
	if q := n.Status.Allocatable[corev1.ResourcePods]; q.Value() != 110 {
		t.Errorf("allocatable pods %s, want 110 (--max-pods)", q.String())
	}
	if _, ok := n.Status.Allocatable[corev1.ResourceMemory]; !ok {
		t.Errorf("allocatable %v has no memory", n.Status.Allocatable)
	}
	var internal, host bool
	for _, a := range n.Status.Addresses {
		internal = internal || a.Type == corev1.NodeInternalIP
		host = host || (a.Type == corev1.NodeHostName && a.Address == name)
	}
	if !internal || !host {
		t.Errorf("addresses %+v", n.Status.Addresses)
	}
	if len(n.Status.Conditions) != 4 {
		t.Errorf("conditions %+v", n.Status.Conditions)
	}
}
