package e2e

// The node's autonomy (issue 39, acceptance 5): what the API server bound
// to the node comes back after a power cut while the API server is down,
// and the API's view wins when it returns.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// autonomyManifest: a Deployment of 3, a pod naming the node with a
// ConfigMap and a Secret (its container ends when their files are not
// there), one that fails every 2 s (restartPolicy Always), one that ends
// on its own (Never) and one the operator deletes while the node is away.
const autonomyManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: auto-cm}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: auto-secret}
stringData: {token: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: auto-web}
spec:
  replicas: 3
  selector: {matchLabels: {app: auto-web}}
  template:
    metadata: {labels: {app: auto-web, test: autonomy, healthy: "yes"}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: web
        image: %[2]s
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: auto-vol, labels: {test: autonomy, healthy: "yes"}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 5
  volumes:
  - {name: cm, configMap: {name: auto-cm}}
  - {name: sec, secret: {secretName: auto-secret}}
  containers:
  - name: app
    image: %[2]s
    env: [{name: GREETING, valueFrom: {configMapKeyRef: {name: auto-cm, key: greeting}}}]
    command: ["sh", "-c", "test \"$GREETING\" = hello && test -f /etc/cm/greeting && test -f /etc/sec/token || exit 3; trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: cm, mountPath: /etc/cm}, {name: sec, mountPath: /etc/sec}]
---
apiVersion: v1
kind: Pod
metadata: {name: auto-doomed, labels: {test: autonomy, healthy: "yes"}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: auto-crash, labels: {test: autonomy}}
spec:
  nodeName: %[1]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "sleep 2; exit 1"]
---
apiVersion: v1
kind: Pod
metadata: {name: auto-once, labels: {test: autonomy}}
spec:
  nodeName: %[1]s
  restartPolicy: Never
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "sleep 30; exit 0"]
`

// TestNodeAutonomy: API pods running → the API server stopped: they keep
// running, the failing one restarts, the one that ends finishes → a power
// cut of the device (podrun, containerd, every container, shim, mount,
// netns, cgroup and what lives in /run gone) while the API server is still
// down → podrun and containerd start again: every API pod Running again
// from the kept state (the finished one not run again) → the API server
// back, the operator deletes a pod while the node cannot reach it yet →
// the node reaches it: statuses written, the deleted pod stopped and its
// object removed, no healthy pod restarted.
func TestNodeAutonomy(t *testing.T) {
	cp := startControlPlane(t)
	name := H.Node
	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/api-web:1"})
	rules, err := e2eIptablesCNI() // a power cut leaves none of those added from here
	if err != nil {
		t.Fatal(err)
	}
	// The node reaches the API server through a proxy the test can cut:
	// "the node away" while the operator's kubectl reaches it.
	px := startAPIProxy(t, "127.0.0.1:6443")
	kcb, err := os.ReadFile(cp.nodeKubeconfig(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kcb), "127.0.0.1:6443") {
		t.Fatalf("the node's kubeconfig names no 127.0.0.1:6443:\n%s", kcb)
	}
	kc := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := os.WriteFile(kc, []byte(strings.ReplaceAll(string(kcb), "127.0.0.1:6443", px.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, "--kubeconfig", kc)
	cp.waitNodeReady(t, name, corev1.ConditionTrue, 60*time.Second)
	eventually(t, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	file := filepath.Join(t.TempDir(), "autonomy.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(autonomyManifest, name, image)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.kubectl("", "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { cp.kubectl("", "delete", "--wait=false", "-f", file) })
	healthy := cp.waitAPIPods(t, "healthy=yes", 5, 120*time.Second)
	var all corev1.PodList
	eventually(t, 30*time.Second, "auto-crash and auto-once on the node", func() (bool, string) {
		ps := podsOnNode(t)
		return ps["auto-crash"] != "" && ps["auto-once"] == corev1.PodRunning, fmt.Sprint(ps)
	})
	if err := cp.get(t, &all, "pods", "-l", "test=autonomy"); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range all.Items {
		uids[p.Name] = string(p.UID)
	}
	t.Logf("7 API pods on the node: %v", uids)
	eventually(t, 30*time.Second, "7 pods kept", func() (bool, string) {
		files, _ := filepath.Glob(filepath.Join(H.Root, "kept", "pods", "*.json"))
		return len(files) == 7, fmt.Sprint(files)
	})

	// The API server stops: the pods keep running, the failing one
	// restarts, the one that ends finishes (and its phase is kept).
	apiserver := cp.stopAPIServer(t)
	stopped := time.Now()
	crash := nodePods(t)["auto-crash"]
	eventually(t, 60*time.Second, "auto-once Succeeded on the node and auto-crash restarted", func() (bool, string) {
		ps := nodePods(t)
		return ps["auto-once"].Status.Phase == corev1.PodSucceeded && totalRestarts(ps["auto-crash"]) > totalRestarts(crash),
			fmt.Sprintf("once %s, crash restarts %d (before %d)", ps["auto-once"].Status.Phase, totalRestarts(ps["auto-crash"]), totalRestarts(crash))
	})
	for _, p := range healthy {
		if q := nodePods(t)[p.Name]; q.Status.Phase != corev1.PodRunning || totalRestarts(q) != 0 {
			t.Errorf("API server down: %s %s with %d restarts, want Running", p.Name, q.Status.Phase, totalRestarts(q))
		}
	}
	t.Logf("API server down for %v: pods running, auto-crash restarted, auto-once Succeeded", time.Since(stopped).Round(time.Millisecond))
	eventually(t, 10*time.Second, "auto-once kept Succeeded", func() (bool, string) {
		phase := keptPhase(t, uids["auto-once"])
		return phase == corev1.PodSucceeded, string(phase)
	})

	// A power cut, the API server still down; then the device boots.
	powerCut(t, d, uids, rules)
	restartContainerd(t)
	booted := time.Now()
	d = startDaemon(t, dir, nil, "--kubeconfig", kc, "--stop-pods-on-exit")
	want := []string{"auto-vol", "auto-doomed", "auto-crash"}
	for _, p := range healthy {
		if strings.HasPrefix(p.Name, "auto-web-") {
			want = append(want, p.Name)
		}
	}
	var onNodeRunning map[string]corev1.Pod
	eventually(t, 150*time.Second, "every API pod Running again from the kept state", func() (bool, string) {
		onNodeRunning = nodePods(t)
		var missing []string
		for _, n := range want {
			if onNodeRunning[n].Status.Phase != corev1.PodRunning {
				missing = append(missing, n+" "+string(onNodeRunning[n].Status.Phase))
			}
		}
		return len(missing) == 0, strings.Join(missing, ", ")
	})
	t.Logf("after the reboot with the API server down: %d API pods Running %v after podrun daemon started (containerd answering)", len(want), time.Since(booted).Round(time.Millisecond))
	if l := lineWith(d.stderr(), "running the pods bound to the node from the kept state"); l == "" {
		t.Errorf("the daemon did not say it runs the kept pods; log:\n%s", d.stderr())
	}
	ready := waitNodePodsReady(t, 120*time.Second, healthy)
	t.Logf("the 5 healthy pods Ready %v after podrun daemon started", time.Since(booted).Round(time.Millisecond))
	if p, ok := nodePods(t)["auto-once"]; ok && p.Status.Phase == corev1.PodRunning {
		t.Errorf("auto-once, which had finished, runs again after the reboot")
	}

	// The API server back; the operator deletes auto-doomed while the
	// node cannot reach it yet: it stays Terminating.
	px.cut(true)
	cp.startAPIServer(t, apiserver)
	if out, err := cp.kubectl("", "delete", "pod", "auto-doomed", "--wait=false"); err != nil {
		t.Fatalf("kubectl delete pod auto-doomed: %v\n%s", err, out)
	}
	var doomed corev1.Pod
	if err := cp.get(t, &doomed, "pod", "auto-doomed"); err != nil || doomed.DeletionTimestamp == nil {
		t.Fatalf("auto-doomed is not Terminating: %v %+v", err, doomed.ObjectMeta)
	}
	logBefore := len(d.stderr())
	px.cut(false)
	back := time.Now()
	eventually(t, 90*time.Second, "auto-doomed stopped and its object removed", func() (bool, string) {
		out, err := cp.kubectl("", "get", "pod", "auto-doomed")
		return err != nil && strings.Contains(out, "NotFound") && !onNode(t, "auto-doomed"), out
	})
	t.Logf("the node reached the API server again: auto-doomed (deleted meanwhile) stopped and its object removed %v after", time.Since(back).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(H.Root, "kept", "pods", uids["auto-doomed"]+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the kept copy of auto-doomed is still there: %v", err)
	}
	var healthyAfter []corev1.Pod
	eventually(t, 60*time.Second, "the statuses written: the containers running on the node", func() (bool, string) {
		healthyAfter = cp.waitAPIPods(t, "healthy=yes", 4, 30*time.Second)
		var stale []string
		for _, p := range healthyAfter {
			n := ready[p.Name]
			if len(p.Status.ContainerStatuses) != 1 || len(n.Status.ContainerStatuses) != 1 ||
				p.Status.ContainerStatuses[0].ContainerID != n.Status.ContainerStatuses[0].ContainerID {
				stale = append(stale, p.Name)
			}
		}
		return len(stale) == 0, fmt.Sprint("not written yet: ", stale)
	})
	t.Logf("statuses written %v after the node reached the API server", time.Since(back).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // no restart follows
	now := nodePods(t)
	for _, p := range healthyAfter {
		n, a := ready[p.Name], now[p.Name]
		if n.Status.ContainerStatuses[0].ContainerID != a.Status.ContainerStatuses[0].ContainerID ||
			totalRestarts(a) != totalRestarts(n) || a.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s restarted on reconnect: %+v -> %+v", p.Name, n.Status.ContainerStatuses, a.Status.ContainerStatuses)
		}
		if c := p.Status.ContainerStatuses[0]; c.RestartCount != 0 || !c.Ready {
			t.Errorf("pod %s in the API after reconnect: %+v", p.Name, c)
		}
	}
	var once corev1.Pod
	eventually(t, 30*time.Second, "auto-once Succeeded in the API", func() (bool, string) {
		err := cp.get(t, &once, "pod", "auto-once")
		return err == nil && once.Status.Phase == corev1.PodSucceeded, fmt.Sprintf("%s %v", once.Status.Phase, err)
	})
	if log := d.stderr()[logBefore:]; strings.Contains(log, "pod replaced") || strings.Contains(log, "pod created") {
		t.Errorf("the daemon started pods again on reconnect:\n%s", log)
	}

	// Clean up as an operator: nothing left on the device.
	if out, err := cp.kubectl("", "delete", "-f", file, "--ignore-not-found", "--timeout=90s"); err != nil {
		t.Errorf("kubectl delete -f: %v\n%s", err, out)
	}
	eventually(t, 90*time.Second, "no API pod left on the node", func() (bool, string) {
		ps := podsOnNode(t)
		for n := range ps {
			if strings.HasPrefix(n, "auto-") {
				return false, fmt.Sprint(ps)
			}
		}
		return true, ""
	})
}

// nodePods are the pods podrun lists, by name.
func nodePods(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	out, code := podrunQuiet(t, "ps", "-a", "-o", "json")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("podrun ps -a -o json: exit %d, %v: %s", code, err, out)
	}
	pods := map[string]corev1.Pod{}
	for _, p := range list.Items {
		pods[p.Name] = p
	}
	return pods
}

// waitNodePodsReady waits until the pods named as those of want are
// Running and Ready on the node (as podrun lists them), and returns them.
func waitNodePodsReady(t *testing.T, timeout time.Duration, want []corev1.Pod) map[string]corev1.Pod {
	t.Helper()
	var ps map[string]corev1.Pod
	eventually(t, timeout, "the pods Ready on the node", func() (bool, string) {
		ps = nodePods(t)
		var not []string
		for _, w := range want {
			p := ps[w.Name]
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if p.Status.Phase != corev1.PodRunning || !ready || len(p.Status.ContainerStatuses) != 1 {
				not = append(not, w.Name)
			}
		}
		return len(not) == 0, fmt.Sprint("not ready: ", not)
	})
	return ps
}

// stopAPIServer stops only kube-apiserver (etcd, the controller manager
// and the scheduler keep running) and returns its command line.
func (cp *controlPlane) stopAPIServer(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cp.dir, "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if filepath.Base(argv[0]) != "kube-apiserver" {
		t.Fatalf("pid %d is %q, not kube-apiserver", pid, argv)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 10*time.Second)
	t.Logf("stopped kube-apiserver (pid %d)", pid)
	return argv
}

// startAPIServer starts kube-apiserver again with argv, its pid where
// stop.sh finds it, and waits for /readyz.
func (cp *controlPlane) startAPIServer(t *testing.T, argv []string) {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(cp.dir, "log", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaped when stop.sh stops it
	if err := os.WriteFile(filepath.Join(cp.dir, "kube-apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	eventually(t, 60*time.Second, "kube-apiserver /readyz", func() (bool, string) {
		out, err := cp.kubectl("", "get", "--raw", "/readyz")
		return err == nil, out
	})
	t.Logf("kube-apiserver started again (pid %d): /readyz after %v", cmd.Process.Pid, time.Since(began).Round(time.Millisecond))
}

// waitGone waits until process pid is gone (SIGKILL past timeout).
func waitGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			return
		}
		// A zombie child of this test is gone for our purpose.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(10 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// powerCut is what a power cut leaves of the device: podrun's daemon and
// the suite's containerd killed, every process of the suite's containers,
// their shims and stream keepers killed, every mount under the suite's
// directory, the pods' network namespaces and cgroups gone, and what lives
// in /run (containerd's state, podrun's run directory) emptied. What is on
// disk stays: containerd's root (images, container records), podrun's root
// (its kept state), the logs.
func powerCut(t *testing.T, d *podrunProc, uids map[string]string, rules map[string]bool) {
	t.Helper()
	_ = d.cmd.Process.Kill()
	if !d.wait(10 * time.Second) {
		t.Fatal("the daemon did not die of kill -9")
	}
	ctrd := containerdPID(t)
	_ = syscall.Kill(ctrd, syscall.SIGKILL)
	waitGone(t, ctrd, 10*time.Second)
	var sockets []string // the shims' (in /run/containerd/s)
	for _, pid := range e2eShims(H.Address) {
		for _, path := range listeningSockets(pid) {
			if strings.HasPrefix(path, "/") {
				sockets = append(sockets, path)
			}
		}
	}
	for i := 0; ; i++ {
		pids := slices.Concat(e2eNamespacePids(), e2eShims(H.Address), e2eKeepers(H.TmpDir))
		if len(pids) == 0 {
			break
		}
		if i == 100 {
			t.Fatalf("processes of the suite's containers left after 10 s of SIGKILL: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, mp := range e2eMountsUnder(H.TmpDir) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("unmounting %s: %v", mp, err)
		}
	}
	for _, uid := range uids {
		if _, err := os.Lstat("/run/netns/podrun-" + uid); err == nil {
			if out, err := exec.Command("ip", "netns", "delete", "podrun-"+uid).CombinedOutput(); err != nil {
				t.Errorf("ip netns delete podrun-%s: %v %s", uid, err, out)
			}
		}
		cgroups, _ := filepath.Glob(filepath.Join(cgroupMount, "*", podCgroup(uid)))
		cgroups = append(cgroups, filepath.Join(cgroupMount, podCgroup(uid)))
		for _, cg := range cgroups {
			if err := e2eRemoveCgroup(cg); err != nil {
				t.Errorf("removing cgroup %s: %v", cg, err)
			}
		}
	}
	// What lives in /run: runc's state of the namespace's containers, the
	// shims' sockets, containerd's state, podrun's run directory.
	for _, dir := range []string{e2eRuncDir, filepath.Join(H.TmpDir, "containerd", "state"), H.RunDir} {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("emptying %s: %v", dir, err)
		}
	}
	for _, s := range sockets {
		if err := os.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("removing the shim socket %s: %v", s, err)
		}
	}
	// The rules CNI added for the pods (iptables is empty after a boot).
	now, err := e2eIptablesCNI()
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, r := range e2eNew(rules, now) {
		if !e2eIptablesPlumbing(r) {
			added = append(added, r)
		}
	}
	if err := e2eRemoveIptables(added); err != nil {
		t.Errorf("removing the pods' iptables rules: %v", err)
	}
	t.Logf("power cut: daemon, containerd, containers, shims and stream keepers killed; mounts, netns, pod cgroups, containerd's state and %s gone", H.RunDir)
}

// keptPhase is the phase of the pod of uid in the node's kept state.
func keptPhase(t *testing.T, uid string) corev1.PodPhase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(H.Root, "kept", "pods", uid+".json"))
	if err != nil {
		return ""
	}
	var f struct {
		Record struct {
			Pod corev1.Pod `json:"pod"`
		} `json:"record"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("kept file of %s: %v", uid, err)
	}
	return f.Record.Pod.Status.Phase
}

// e2eNamespacePids are the processes in the suite's cgroups (every
// hierarchy's /<namespace> and below).
func e2eNamespacePids() []int {
	seen := map[int]bool{}
	dirs, _ := filepath.Glob(filepath.Join(cgroupMount, "*", e2eNamespace))
	dirs = append(dirs, filepath.Join(cgroupMount, e2eNamespace))
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	var out []int
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// apiProxy forwards TCP connections to the API server, and can be cut
// (connections refused, those open closed): the node away from a running
// API server.
type apiProxy struct {
	addr, to string
	mu       sync.Mutex
	l        net.Listener
	conns    map[net.Conn]bool
}

func startAPIProxy(t *testing.T, to string) *apiProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &apiProxy{addr: l.Addr().String(), to: to, conns: map[net.Conn]bool{}}
	px.serve(l)
	t.Cleanup(func() { px.cut(true) })
	return px
}

func (px *apiProxy) serve(l net.Listener) {
	px.l = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go px.forward(c)
		}
	}()
}

func (px *apiProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", px.to, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	px.mu.Lock()
	if px.l == nil { // cut meanwhile
		px.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	px.conns[c], px.conns[up] = true, true
	px.mu.Unlock()
	done := make(chan struct{}, 2)
	for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
		go func() {
			_, _ = io.Copy(pair[0], pair[1])
			done <- struct{}{}
		}()
	}
	<-done
	_ = c.Close()
	_ = up.Close()
	px.mu.Lock()
	delete(px.conns, c)
	delete(px.conns, up)
	px.mu.Unlock()
}

// cut refuses connections (and closes the open ones) when off, and
// accepts them again on the same address when not.
func (px *apiProxy) cut(off bool) {
	px.mu.Lock()
	defer px.mu.Unlock()
	if off {
		if px.l != nil {
			_ = px.l.Close()
			px.l = nil
		}
		for c := range px.conns {
			_ = c.Close()
		}
		return
	}
	if px.l == nil {
		l, err := net.Listen("tcp", px.addr)
		if err != nil {
			panic(fmt.Sprintf("listening on %s again: %v", px.addr, err))
		}
		px.serve(l)
	}
}
