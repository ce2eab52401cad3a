package e2e

// kill -9 of `podrun up` and `podrun down` at random points, then `down`:
// nothing of the pod is left.

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/snapshots"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// crashPod has what a teardown must undo: an init container, a disk and a
// memory emptyDir (a tmpfs), a configMap volume (a tmpfs with the atomic
// writer's files), and a host port (portmap rules).
func crashPod(port int) string {
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

// podLeftovers lists what of pod uid (sandbox id sandboxID) is on the host:
// containers, tasks, snapshots, network namespace, IP reservation, iptables
// rules, CNI cache entries, mounts, the pod cgroup, the pod's record. Rules that name
// no container id (the firewall plugin's name the pod's IP) are found by
// podNet, the pod network's address prefix ("" for none).
func podLeftovers(t *testing.T, name, uid, sandboxID, podNet string) []string {
	t.Helper()
	var left []string
	for _, c := range podContainers(t, name) {
		left = append(left, "container "+c.ID())
	}
	if listNetns(t)["podrun-"+uid] {
		left = append(left, "netns podrun-"+uid)
	}
	left = append(left, networkTraces(t, sandboxID)...)
	if podNet != "" {
		rules, err := e2eIptablesCNI()
		if err != nil {
			t.Fatalf("iptables-save: %v", err)
		}
		for r := range rules {
			if strings.Contains(r, " "+podNet) {
				left = append(left, "iptables: "+r)
			}
		}
	}
	podDir := filepath.Join(H.Root, "pods", uid)
	if _, err := os.Lstat(podDir); err == nil {
		left = append(left, "pod directory "+podDir)
	}
	for _, m := range e2eMountsUnder(podDir) {
		left = append(left, "mount "+m)
	}
	c, ctx := H.Client(t)
	prefix := strings.TrimSuffix(sandboxID, "pause") // <short uid>-: every container id of the pod
	if err := c.SnapshotService(e2eSnapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if strings.HasPrefix(info.Name, prefix) {
			left = append(left, "snapshot "+info.Name)
		}
		return nil
	}); err != nil {
		t.Fatalf("listing snapshots: %v", err)
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

// firewallConf is a network whose last plugin is the firewall (iptables
// backend): its per-pod rules name the pod's IP, and its DEL finds them only
// through prevResult. Its own bridge and subnet keep its rules apart.
const (
	firewallPrefix = "10.87.0."
	firewallConf   = `{
  "cniVersion": "1.0.0",
  "name": "podrun-e2e-fw",
  "plugins": [
    {"type": "bridge", "bridge": "podrunfw0", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.87.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
    {"type": "firewall", "backend": "iptables"}
  ]
}
`
)

// useFirewallNetwork points podrun at firewallConf for the rest of the test.
func useFirewallNetwork(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "10-fw.conflist"), []byte(firewallConf), 0o644); err != nil {
		t.Fatal(err)
	}
	old := H.CNIConfDir
	H.CNIConfDir = dir
	// host-local's directory of the network (its lock and last reserved
	// address) and the firewall plugin's chains and FORWARD jump (which it
	// never removes) go with the test that made them.
	ipam := filepath.Join(e2eIPAMDir, "podrun-e2e-fw")
	_, statErr := os.Stat(ipam)
	before, err := e2eIptablesCNI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		H.CNIConfDir = old
		if statErr != nil {
			_ = os.RemoveAll(ipam)
		}
		after, err := e2eIptablesCNI()
		if err != nil {
			t.Error(err)
			return
		}
		var made []string
		for r := range after {
			if !before[r] {
				made = append(made, r)
			}
		}
		if err := e2eRemoveIptables(made); err != nil {
			t.Errorf("removing the firewall plugin's rules: %v", err)
		}
	})
}

// runOnceForIDs runs the pod once, up then down, and returns its UID (its content's
// hash) and its sandbox id, which every run of the same file has.
func runOnceForIDs(t *testing.T, file, name string) (uid, sandboxID string) {
	t.Helper()
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	uid = string(podStatus(t, name).UID)
	sandboxID = findSandboxID(t, podContainers(t, name))
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	return uid, sandboxID
}

// TestKill9UpAndDownThenDown: 50 trials; in each, `podrun up` (even trials)
// or `podrun down` of a running pod (odd trials) is killed with SIGKILL
// after a random 0–1.2 s, then `podrun down` is run: it exits 0 and nothing
// of the pod is left on the host.
func TestKill9UpAndDownThenDown(t *testing.T) {
	H.require(t)
	kill9Trials(t, 20261126, "")
}

// TestKill9UpAndDownThenDownFirewall: the same 50 trials on a network with
// the firewall plugin.
func TestKill9UpAndDownThenDownFirewall(t *testing.T) {
	H.require(t)
	useFirewallNetwork(t)
	kill9Trials(t, 20261127, firewallPrefix)
}

func kill9Trials(t *testing.T, seed int64, podNet string) {
	t.Helper()
	file := H.WriteManifest(t, "cr-kill.yaml", crashPod(18093))
	downOnCleanup(t, file)
	uid, sandboxID := runOnceForIDs(t, file, "cr-kill")
	rng := rand.New(rand.NewSource(seed))
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
		if left := podLeftovers(t, "cr-kill", uid, sandboxID, podNet); len(left) != 0 {
			t.Fatalf("trial %d (%s killed after %v, last said %q): left after down: %v", trial, what, after, step, left)
		}
		t.Logf("trial %d: %s killed after %v, last said %q: clean", trial, what, after.Round(time.Millisecond), step)
	}
	t.Logf("50 trials clean (%v)", killedDuring)
}

// TestDownAfterAddCutOffFirewall: an ADD cut off after the firewall plugin
// made its rules but before libcni cached the result (the cache entry is
// removed to stand for it): `down` still removes the firewall's rules, which
// it finds only through the addresses the pod's interface has, once the
// plugins of that ADD still running have ended.
func TestDownAfterAddCutOffFirewall(t *testing.T) {
	H.require(t)
	useFirewallNetwork(t)
	file := H.WriteManifest(t, "cr-kill.yaml", crashPod(18094))
	downOnCleanup(t, file)
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	uid := string(podStatus(t, "cr-kill").UID)
	sandboxID := findSandboxID(t, podContainers(t, "cr-kill"))
	rules, err := e2eIptablesCNI()
	if err != nil {
		t.Fatal(err)
	}
	fw := 0
	for r := range rules {
		if strings.HasPrefix(r, "filter\t-A CNI-FORWARD") && strings.Contains(r, firewallPrefix) {
			fw++
		}
	}
	if fw != 2 {
		t.Fatalf("the firewall plugin made %d rules naming the pod's IP, want 2:\n%v", fw, rules)
	}
	cache, _ := filepath.Glob(filepath.Join(H.Root, "cni", "cache", "results", "*"+sandboxID+"-eth0"))
	if len(cache) != 1 {
		t.Fatalf("CNI cache entries of the pod's eth0: %v, want one", cache)
	}
	if err := os.Remove(cache[0]); err != nil {
		t.Fatal(err)
	}
	// A plugin of that ADD still running (its podrun killed): DEL waits
	// for it, or what it makes afterwards would stay. The plugin is a
	// program of a CNI bin dir (a copy of sleep); sleep itself, with the
	// same environment, is anyone's process and delays nothing.
	bin := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "slow-plugin"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + sandboxID, "CNI_IFNAME=eth0"}
	anyone := exec.Command(sleep, "60")
	anyone.Env = env
	plugin := exec.Command(filepath.Join(bin, "slow-plugin"), "2")
	plugin.Env = env
	for _, c := range []*exec.Cmd{anyone, plugin} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = anyone.Process.Kill(); _ = anyone.Wait() }()
	exited := make(chan time.Time, 1)
	go func() { _ = plugin.Wait(); exited <- time.Now() }()
	time.Sleep(100 * time.Millisecond) // its environment shows once it has run a moment
	start := time.Now()
	if _, stderr, code := H.Podrun(t, "", "--cni-bin-dir", "/opt/cni/bin", "--cni-bin-dir", "/usr/lib/cni", "--cni-bin-dir", bin, "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	select {
	case <-exited:
	default:
		t.Error("down ended while a plugin of the pod's ADD still ran")
	}
	// Waiting for sleep would last the whole bound (30 s).
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("down took %v: it waited for a process outside the CNI bin dirs", took)
	}
	if left := podLeftovers(t, "cr-kill", uid, sandboxID, firewallPrefix); len(left) != 0 {
		t.Fatalf("left after down: %v", left)
	}
}

// TestUpAfterCreatesCutOff: what a podrun killed inside a container create
// leaves — the snapshot without its container, the create's lease alone —
// does not stop the next `up` of that container, and `down` leaves nothing
// of it, also of creates of attempts that were never made again.
func TestUpAfterCreatesCutOff(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "cr-kill.yaml", crashPod(18095))
	downOnCleanup(t, file)
	uid, sandboxID := runOnceForIDs(t, file, "cr-kill")
	prefix := strings.TrimSuffix(sandboxID, "pause")
	c, ctx := H.Client(t)
	// init-0 and app-0 are created again by the up; app-7 and app-8 (a
	// restart's create cut off) only down finds, by key.
	for _, k := range []string{"init-0", "app-7"} {
		if _, err := c.SnapshotService(e2eSnapshotter).Prepare(ctx, prefix+k, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"app-0", "app-8"} {
		if _, err := c.LeasesService().Create(ctx, leases.WithID("podrun-create-"+prefix+k), leases.WithExpiration(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := H.Podrun(t, "", "up", "--wait=running", file); code != 0 {
		t.Fatalf("up over a cut-off create: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	if left := podLeftovers(t, "cr-kill", uid, sandboxID, ""); len(left) != 0 {
		t.Fatalf("left after down: %v", left)
	}
	ls, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if strings.HasPrefix(l.ID, "podrun-create-"+prefix) {
			t.Errorf("lease %s left", l.ID)
		}
	}
}

// TestDownWaitsOutCreateInFlight: a task create that a killed `up` left in
// flight in containerd (its runtime's work directory there, no task yet)
// would make the task and its cgroups after `down` removed the pod: down
// waits until the create is over before it removes the container.
func TestDownWaitsOutCreateInFlight(t *testing.T) {
	H.require(t)
	file, _ := mustRunUp(t, "cr-flight", `apiVersion: v1
kind: Pod
metadata:
  name: cr-flight
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`, "--wait", "running")
	c, ctx := H.Client(t)
	pod := podNamed(t, "cr-flight")
	// A second container of the pod whose task create is "in flight".
	id := strings.ReplaceAll(string(pod.UID), "-", "")[:12] + "-late-0"
	ls := map[string]string{labelPodUID: string(pod.UID), labelPodNS: "default", labelPodName: "cr-flight",
		labelContainer: "late", labelKind: "app"}
	if _, err := c.NewContainer(ctx, id, containerd.WithContainerLabels(ls), containerd.WithRuntime("io.containerd.runc.v2", nil),
		containerd.WithSpec(&specs.Spec{Version: specs.Version})); err != nil {
		t.Fatal(err)
	}
	resp, err := c.IntrospectionService().Plugins(ctx, []string{`type=="io.containerd.snapshotter.v1",id=="overlayfs"`})
	if err != nil || len(resp.Plugins) == 0 {
		t.Fatalf("snapshotter root: %v", err)
	}
	work := filepath.Join(filepath.Dir(resp.Plugins[0].Exports["root"]), "io.containerd.runtime.v2.task", H.Namespace, id)
	if err := os.MkdirAll(work, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	down := H.Start(t, "down", file)
	done := make(chan error, 1)
	go func() { done <- down.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("down ended (%v) while a create of the pod was in flight", err)
	case <-time.After(time.Second):
	}
	if err := os.Remove(work); err != nil { // the create failed: containerd removed its work directory
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("down: %v\n%s", err, down.Stderr.(*CmdOutput).String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("down still waits 30 s after the create ended")
	}
	if left := podContainers(t, "cr-flight"); len(left) != 0 {
		t.Errorf("%d containers left after down", len(left))
	}
}
