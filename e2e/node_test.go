package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/kubenode"
)

// anchorBin holds the control plane's binaries (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kubectl), built once per machine
// by cluster-anchor's build.sh (KVER=v1.37.2): $PODRUN_CLUSTER_BIN, which
// `make e2e-cluster` sets to scripts/cluster-bin.sh's cache, else where
// build.sh puts them by default. anchorDir holds cluster-anchor's scripts:
// $PODRUN_CLUSTER_ANCHOR, else ../shared/cluster-anchor beside the checkout
// (this package runs in e2e/).
var (
	anchorBin = cmp.Or(os.Getenv("PODRUN_CLUSTER_BIN"), "/var/lib/anchor/bin")
	anchorDir = cmp.Or(os.Getenv("PODRUN_CLUSTER_ANCHOR"), absPath("../../shared/cluster-anchor"))
)

// clusterTestPrefix starts the name of every test that starts a control
// plane: `make e2e` skips them and `make e2e-cluster` runs them once the
// binaries are built (make test builds them meanwhile).
const clusterTestPrefix = "TestNode"

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// nodeGrace is the node lifecycle controller's --node-monitor-grace-period
// in these tests (its default is 50 s): how long a node may be silent
// before it is marked NotReady (Unknown).
const nodeGrace = 20 * time.Second

// controlPlaneFlags are added to the command lines start.sh runs (after
// its own flags: the last of a repeated flag wins). v1.37's API server
// refuses a loopback --advertise-address with its endpoint reconciler on
// ("cannot use public IP 127.0.0.1 with endpoint reconciler"), which
// start.sh does not turn off; the controller manager's grace is nodeGrace.
var controlPlaneFlags = map[string][]string{
	"kube-apiserver":          {"--endpoint-reconciler-type=none"},
	"kube-controller-manager": {"--node-monitor-grace-period=" + nodeGrace.String()},
}

// controlPlaneBins are what start.sh and the tests run of anchorBin.
var controlPlaneBins = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// controlPlane is a real control plane started by cluster-anchor's start.sh
// with its state in a temp dir of the test.
type controlPlane struct {
	dir string // start.sh's $S
	bin string // start.sh's $BIN: anchorBin's binaries, with controlPlaneFlags
}

// missingControlPlane says what is missing to start a control plane, or "".
func missingControlPlane() string {
	for _, b := range controlPlaneBins {
		if _, err := os.Stat(filepath.Join(anchorBin, b)); err != nil {
			return fmt.Sprintf("no control plane in %s (%v): build it once with `sudo make cluster-bin`, then run with PODRUN_CLUSTER_BIN=$(scripts/cluster-bin.sh --cached), or `sudo make e2e-cluster`", anchorBin, err)
		}
	}
	for _, s := range []string{"start.sh", "stop.sh", "node-kubeconfig.sh"} {
		if _, err := os.Stat(filepath.Join(anchorDir, s)); err != nil {
			return fmt.Sprintf("no cluster-anchor scripts in %s (%v): set PODRUN_CLUSTER_ANCHOR to ../shared/cluster-anchor's path", anchorDir, err)
		}
	}
	return ""
}

// startControlPlane starts etcd, the API server, the controller manager and
// the scheduler with cluster-anchor's start.sh, and stops them (stop.sh, by
// pid) when the test ends. start.sh runs as it is, its $BIN a directory of
// the test where the API server and the controller manager are scripts that
// exec anchorBin's with controlPlaneFlags added.
// Without the binaries the test fails when the run asked for them
// (PODRUN_CLUSTER_BIN set, as `make e2e-cluster` does, or CI set); a
// developer's plain `go test` skips it, saying what to build.
func startControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	H.require(t)
	if !strings.HasPrefix(t.Name(), clusterTestPrefix) && !strings.HasPrefix(t.Name(), "BenchmarkNode") {
		t.Fatalf("%s starts a control plane: name it %s... so that make e2e-cluster runs it (make e2e skips those)", t.Name(), clusterTestPrefix)
	}
	if why := missingControlPlane(); why != "" {
		if os.Getenv("PODRUN_CLUSTER_BIN") != "" || os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	cp := &controlPlane{dir: filepath.Join(t.TempDir(), "cluster"), bin: t.TempDir()}
	if err := wrapControlPlane(cp.bin, anchorBin, controlPlaneFlags); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	t.Cleanup(func() {
		cp.logCPU(t, time.Since(began))
		out, err := cp.script("stop.sh")
		if err != nil {
			t.Errorf("stop.sh: %v\n%s", err, out)
		}
	})
	if out, err := cp.script("start.sh"); err != nil {
		t.Fatalf("start.sh: %v\n%s", err, out)
	}
	t.Logf("control plane answered /readyz in %v", time.Since(began).Round(time.Millisecond))
	return cp
}

// wrapControlPlane fills dir with the control plane's binaries of from:
// for those with flags, a script that execs the binary with the flags added
// (exec: start.sh's pid file is the binary's, which stop.sh kills), else a
// symlink.
func wrapControlPlane(dir, from string, flags map[string][]string) error {
	for _, b := range controlPlaneBins {
		bin := filepath.Join(from, b)
		if len(flags[b]) == 0 {
			if err := os.Symlink(bin, filepath.Join(dir, b)); err != nil {
				return err
			}
			continue
		}
		line := []string{"exec", shellQuote(bin), `"$@"`}
		for _, f := range flags[b] {
			line = append(line, shellQuote(f))
		}
		script := "#!/bin/sh\n" + strings.Join(line, " ") + "\n"
		if err := os.WriteFile(filepath.Join(dir, b), []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// logCPU logs the CPU time each process of the control plane has used in
// its life (what the cluster tests cost beside podrun's own).
func (cp *controlPlane) logCPU(t testing.TB, life time.Duration) {
	var parts []string
	var sum time.Duration
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		b, err := os.ReadFile(filepath.Join(cp.dir, name+".pid"))
		if err != nil {
			continue // not started
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			parts = append(parts, name+" gone")
			continue
		}
		cpu := processCPU(t, pid)
		sum += cpu
		parts = append(parts, fmt.Sprintf("%s %v", name, cpu.Round(10*time.Millisecond)))
	}
	t.Logf("control plane CPU over its %v: %v (%s)", life.Round(time.Second), sum.Round(10*time.Millisecond), strings.Join(parts, ", "))
}

func (cp *controlPlane) run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "S="+cp.dir, "BIN="+cp.bin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (cp *controlPlane) script(name string, args ...string) (string, error) {
	return cp.run("bash", append([]string{filepath.Join(anchorDir, name)}, args...)...)
}

// nodeKubeconfig mints node name's credentials (system:node:NAME).
func (cp *controlPlane) nodeKubeconfig(t testing.TB, name string) string {
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
func (cp *controlPlane) get(t testing.TB, v any, args ...string) error {
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
// after it restarts, untainted (it runs the pods bound to it).
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

// wrapControlPlane's scripts run the binary with the test's flags after
// start.sh's arguments; the others are the binaries themselves.
func TestWrapControlPlane(t *testing.T) {
	from, dir := t.TempDir(), t.TempDir()
	for _, b := range controlPlaneBins {
		// Each "binary" prints its name and arguments, one a line.
		if err := os.WriteFile(filepath.Join(from, b), []byte("#!/bin/sh\necho \"$0\"; for a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	flags := map[string][]string{"kube-apiserver": {"--endpoint-reconciler-type=none", "--x=it's"}}
	if err := wrapControlPlane(dir, from, flags); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bin  string
		want []string
	}{
		{"kube-apiserver", []string{filepath.Join(from, "kube-apiserver"), "--a=1", "b c", "--endpoint-reconciler-type=none", "--x=it's"}},
		{"etcd", []string{filepath.Join(dir, "etcd"), "--a=1", "b c"}}, // a symlink: $0 is the link
	} {
		out, err := exec.Command(filepath.Join(dir, tc.bin), "--a=1", "b c").Output()
		if err != nil {
			t.Fatalf("%s: %v", tc.bin, err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !slices.Equal(got, tc.want) {
			t.Errorf("%s ran %q, want %q", tc.bin, got, tc.want)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "etcd")); err != nil || target != filepath.Join(from, "etcd") {
		t.Errorf("etcd: link to %q, %v", target, err)
	}
}
