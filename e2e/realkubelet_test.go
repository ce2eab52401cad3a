package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// The real kubelet as a second node of the test's control plane, the judge
// of what a node reports (issue 39: "where the two differ on the same pod,
// the kubelet is right unless docs/fields.md says why not"). It is
// kubelet-anchor's setup (../shared/kubelet-anchor: start.sh, ns-init.sh)
// with every piece of state in a temp dir of the test, and the kubelet given
// a node's kubeconfig: a private network + mount + UTS namespace (hostname
// and node name realKubeletNode, node IP 192.0.2.10 on a veth pair whose
// two ends stay inside, private tmpfs /run, /var/lib and /var/log), its own
// containerd with the CRI plugin (containerd 1.6 of the host), a bridge CNI
// network, cgroups under realKubeletCgroup. Inside the namespace
// 127.0.0.1:6443 is a listener of the test that forwards to the control
// plane's API server, so the node's kubeconfig works there unchanged. Once
// the namespace's last process is gone its mounts, netns, links and
// iptables rules are gone with it; what outlives it (shims' processes,
// cgroups) is removed by stop.

// realKubeletBin is the kubelet binary: $PODRUN_KUBELET, else beside the
// control plane's binaries, else where kubelet-anchor's build.sh puts it
// (KVER=v1.37.2 bash ../shared/kubelet-anchor/build.sh).
var realKubeletBin = func() string {
	if b := os.Getenv("PODRUN_KUBELET"); b != "" {
		return b
	}
	for _, dir := range []string{anchorBin, "/var/lib/anchor/bin"} {
		if _, err := os.Stat(filepath.Join(dir, "kubelet")); err == nil {
			return filepath.Join(dir, "kubelet")
		}
	}
	return filepath.Join(anchorBin, "kubelet")
}()

const (
	realKubeletNode   = "anchor-node"
	realKubeletNodeIP = "192.0.2.10"
	realKubeletCgroup = "sidekubelet"
	// realKubeletPause is the sandbox image the CRI plugin starts for
	// each pod (containerd's sandbox_image).
	realKubeletPause = "registry.k8s.io/pause:3.9"
)

// realKubelet is a running kubelet node and what it started.
type realKubelet struct {
	dir     string
	sock    string   // its containerd's socket (a file: reachable from the host)
	argv    []string // the kubelet's command line, inside the namespace
	holder  *bgProc  // unshare --fork: the namespace's first process
	nsPid   int      // ns-init.sh inside it
	ctrd    *bgProc
	kubelet *bgProc
	proxy   *apiProxy
}

// startRealKubelet joins the real kubelet to cp as realKubeletNode with
// images (test image configs) imported into its containerd, and waits for
// the node to be Ready. Without the kubelet binary the test is skipped
// (failed under CI), saying how to build it.
func startRealKubelet(t testing.TB, cp *controlPlane, images ...testimage.Config) *realKubelet {
	t.Helper()
	if _, err := os.Stat(realKubeletBin); err != nil {
		why := fmt.Sprintf("no kubelet at %s (%v): build it once with `KVER=v1.37.2 bash ../shared/kubelet-anchor/build.sh`, or set PODRUN_KUBELET", realKubeletBin, err)
		if os.Getenv("CI") != "" || os.Getenv("PODRUN_KUBELET") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	kc := cp.nodeKubeconfig(t, realKubeletNode)
	// short: containerd's socket path must fit a sockaddr_un
	dir, err := os.MkdirTemp("", "rk")
	if err != nil {
		t.Fatal(err)
	}
	k := &realKubelet{dir: dir, sock: filepath.Join(dir, "c.sock")}
	t.Cleanup(func() {
		k.stop(t)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the kubelet's state: %v", err)
		}
	})
	for _, d := range []string{"containerd", "cni/net.d", "kubelet", "plugins", "fakesys", "images"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"ns-init.sh":                 realKubeletNsInit,
		"containerd.toml":            fmt.Sprintf(realKubeletContainerd, dir, k.sock, realKubeletPause),
		"cni/net.d/10-side.conflist": realKubeletCNI,
		"kubelet-config.yaml":        fmt.Sprintf(realKubeletConfig, realKubeletCgroup, k.sock, filepath.Join(dir, "plugins")),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// 1–3. the namespace, the API server at 127.0.0.1:6443 inside it, its containerd
	k.boot(t, true)
	for i, cfg := range images {
		archive := filepath.Join(dir, "images", strconv.Itoa(i)+".tar")
		if err := e2eWriteArchive(archive, cfg); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("ctr", "-a", k.sock, "-n", "k8s.io", "images", "import", archive).CombinedOutput(); err != nil {
			t.Fatalf("importing %s into the kubelet's containerd: %v\n%s", cfg.Ref, err, out)
		}
	}

	// 4. the kubelet, with the node's credentials
	// the namespace has a /var/lib of its own: the kubelet from the test's dir
	bin := filepath.Join(dir, "kubelet.bin")
	if err := linkOrCopy(realKubeletBin, bin); err != nil {
		t.Fatal(err)
	}
	k.argv = []string{bin, "--config", filepath.Join(dir, "kubelet-config.yaml"),
		"--kubeconfig", kc, "--root-dir", filepath.Join(dir, "kubelet"),
		"--hostname-override", realKubeletNode, "--node-ip", realKubeletNodeIP, "--v=1"}
	began := k.startKubelet(t)
	eventually(t, 90*time.Second, "the kubelet's node Ready", func() (bool, string) {
		if k.kubelet.exited() {
			t.Fatalf("the kubelet exited (%v): %s", k.kubelet.cmd.ProcessState, tailLines(k.kubelet.output(), 20))
		}
		var n corev1.Node
		if err := cp.get(t, &n, "node", realKubeletNode); err != nil {
			return false, fmt.Sprintf("%v\n%s", err, tailLines(k.kubelet.output(), 20))
		}
		return readyStatus(&n) == corev1.ConditionTrue, fmt.Sprintf("%+v", n.Status.Conditions)
	})
	out, _ := exec.Command(realKubeletBin, "--version").CombinedOutput()
	t.Logf("real kubelet (%s) node %s Ready %v after its start", strings.TrimSpace(string(out)), realKubeletNode, time.Since(began).Round(time.Millisecond))
	return k
}

// boot makes what a boot of the kubelet's machine gives it: the namespace
// (its /run, /var/lib and /var/log empty), the API server at
// 127.0.0.1:6443 inside it when api (else nothing answers there: the API
// server unreachable), the kubelet's containerd answering, and its cgroup
// root. What is in the test's dir (containerd's root, the kubelet's root
// dir) is its disk, kept.
func (k *realKubelet) boot(t testing.TB, api bool) {
	t.Helper()
	holder := exec.Command("unshare", "--net", "--mount", "--uts", "--propagation", "private", "--fork",
		filepath.Join(k.dir, "ns-init.sh"), k.dir)
	holder.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	log := &CmdOutput{}
	holder.Stdout, holder.Stderr = log, log
	_ = os.Remove(filepath.Join(k.dir, "ns.pid"))
	var err error
	if k.holder, err = startBg(holder); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	eventually(t, 10*time.Second, "the kubelet's namespace", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(k.dir, "ns.pid"))
		if err == nil {
			k.nsPid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil, fmt.Sprintf("%v: %s", err, log)
	})
	if api {
		k.connectAPI(t)
	}
	if k.ctrd, err = startBg(k.inNamespace("containerd", "--config", filepath.Join(k.dir, "containerd.toml"))); err != nil {
		t.Fatalf("containerd: %v", err)
	}
	eventually(t, 30*time.Second, "the kubelet's containerd", func() (bool, string) {
		if k.ctrd.exited() {
			t.Fatalf("the kubelet's containerd exited: %s", tailLines(k.ctrd.output(), 20))
		}
		out, err := exec.Command("ctr", "-a", k.sock, "version").CombinedOutput()
		return err == nil, fmt.Sprintf("%v: %s", err, out)
	})
	for _, h := range cgroupV1Hierarchies() {
		p := filepath.Join(h, realKubeletCgroup)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(p, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// connectAPI makes 127.0.0.1:6443 inside the namespace a listener of the
// test that forwards to the control plane's API server.
func (k *realKubelet) connectAPI(t testing.TB) {
	t.Helper()
	l, err := listenInNetns(k.nsPid, "127.0.0.1:6443")
	if err != nil {
		t.Fatalf("listening in the kubelet's namespace: %v", err)
	}
	k.proxy = &apiProxy{to: "127.0.0.1:6443", conns: map[net.Conn]bool{}}
	k.proxy.serve(l)
}

// startKubelet starts the kubelet (k.argv) in the namespace and returns
// when it did.
func (k *realKubelet) startKubelet(t testing.TB) time.Time {
	t.Helper()
	began := time.Now()
	var err error
	if k.kubelet, err = startBg(k.inNamespace(k.argv[0], k.argv[1:]...)); err != nil {
		t.Fatalf("kubelet: %v", err)
	}
	return began
}

// linkOrCopy makes to the file from: a hard link, else a copy.
func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// inNamespace is a command run inside the kubelet's namespace (nsenter
// execs it: its pid is the command's), in a session of its own, its
// output kept.
func (k *realKubelet) inNamespace(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(k.nsPid), "-n", "-m", "-u", "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out := &CmdOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// stop stops what start started, by pid: the kubelet, the containers of
// its containerd (their shims and what runs in them), containerd, the
// namespace; then removes the kubelet's cgroups. Pods are expected gone
// already (the test deletes them through the API first).
func (k *realKubelet) stop(t testing.TB) {
	if k.kubelet != nil {
		if !k.kubelet.terminate(30 * time.Second) {
			t.Errorf("the kubelet did not exit at SIGTERM: killed")
		}
		t.Logf("kubelet [pid %d, %v], last lines:\n%s", k.kubelet.cmd.Process.Pid, k.kubelet.cmd.ProcessState,
			tailLines(k.kubelet.output(), 40))
	}
	if n := k.killShims(); n > 0 {
		t.Logf("%d shim(s) of the kubelet's containerd left: killed with their containers", n)
	}
	if k.ctrd != nil {
		k.ctrd.terminate(30 * time.Second)
	}
	k.downNamespace()
	// The cgroups, once their last process is gone.
	if left := k.removeCgroups(20 * time.Second); len(left) > 0 {
		t.Errorf("cgroups of the kubelet left: %v", left)
	}
}

// powerCut is what a power cut leaves of the kubelet's machine: the
// kubelet, its containerd, the containers and their shims killed
// (SIGKILL), the namespace gone with its /run, /var/lib and /var/log,
// the pods' network namespaces and its iptables rules, and the cgroups
// removed. The test's dir (containerd's root, the kubelet's root dir)
// stays: its disk.
func (k *realKubelet) powerCut(t testing.TB) {
	t.Helper()
	if k.kubelet != nil {
		_ = k.kubelet.cmd.Process.Kill()
		<-k.kubelet.done
	}
	if k.ctrd != nil {
		_ = k.ctrd.cmd.Process.Kill()
		<-k.ctrd.done
	}
	k.killShims()
	k.downNamespace()
	if left := k.removeCgroups(20 * time.Second); len(left) > 0 {
		t.Fatalf("cgroups of the kubelet left after the power cut: %v", left)
	}
}

// killShims kills the shims of the kubelet's containerd and the processes
// they run; it returns how many shims there were.
func (k *realKubelet) killShims() int {
	shims := e2eShims(k.sock)
	for _, s := range shims {
		for _, c := range childrenOf(s) {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		_ = syscall.Kill(s, syscall.SIGKILL)
	}
	return len(shims)
}

// downNamespace closes the API's listener and ends the namespace's first
// process: the namespace goes with it.
func (k *realKubelet) downNamespace() {
	if k.proxy != nil {
		k.proxy.cut(true)
	}
	if k.holder != nil {
		if k.nsPid > 0 {
			_ = syscall.Kill(k.nsPid, syscall.SIGKILL)
		}
		k.holder.terminate(10 * time.Second)
	}
}

// removeCgroups removes the kubelet's cgroups once their last process is
// gone, trying for up to timeout; it lists those left.
func (k *realKubelet) removeCgroups(timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		left := removeCgroupTrees(realKubeletCgroup)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bgProc is a started command reaped in the background.
type bgProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
}

func startBg(cmd *exec.Cmd) (*bgProc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &bgProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *bgProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *bgProc) output() string {
	if o, ok := p.cmd.Stdout.(*CmdOutput); ok {
		return o.String()
	}
	return ""
}

// terminate sends the process SIGTERM, then SIGKILL after timeout, and
// waits for it; false when it had to be killed.
func (p *bgProc) terminate(timeout time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	return e2eProcs(func(p int, _ []string) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		return len(f) > 1 && f[1] == strconv.Itoa(pid)
	})
}

// cgroupV1Hierarchies are the mounted cgroup v1 hierarchies, the named
// one (systemd's) too: the kubelet wants its cgroupRoot in each. Not the
// unified one.
func cgroupV1Hierarchies() []string {
	var out []string
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range ents {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if !e.IsDir() || e.Name() == "unified" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// removeCgroupTrees removes every cgroup /sys/fs/cgroup/*/name/..., the
// deepest first, and lists those it could not remove.
func removeCgroupTrees(name string) []string {
	var left []string
	tops, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", name))
	for _, top := range tops {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				left = append(left, d)
			}
		}
	}
	return left
}

// listenInNetns listens on addr inside the network namespace of pid: the
// socket is made on a thread moved into it (the thread is not given back
// to Go's scheduler: it ends with its goroutine).
func listenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// realKubeletNsInit is kubelet-anchor's ns-init.sh with its state in $1:
// the namespace's first process.
const realKubeletNsInit = `#!/bin/sh
set -e
D=$1
hostname ` + realKubeletNode + `
ip link set lo up
ip link add sidedummy type veth peer name sidedummy1
ip link set sidedummy1 up
ip addr add ` + realKubeletNodeIP + `/24 dev sidedummy
ip link set sidedummy up
ip route add default via 192.0.2.1 dev sidedummy onlink
mount -t tmpfs -o mode=755 side-varlib /var/lib
mount -t tmpfs -o mode=755 side-run /run
mkdir -p /run/lock /run/netns
mount -t tmpfs -o mode=755 side-log /var/log
# the kubelet's kernel tunables, which protectKernelDefaults only reads
for kv in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
          kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
  f=${kv%%=*}; v=${kv#*=}; n=$D/fakesys/$(echo $f | tr / _)
  echo "$v" > $n; mount --bind $n /proc/sys/$f
done
echo $$ > $D/ns.pid
exec sleep infinity
`

// realKubeletContainerd is kubelet-anchor's containerd.toml (root in the
// test's dir, state on the namespace's /run).
const realKubeletContainerd = `version = 2
root = "%[1]s/containerd"
state = "/run/side-containerd"
disabled_plugins = ["io.containerd.internal.v1.opt"]
[grpc]
  address = "%[2]s"
[ttrpc]
  address = "%[2]s.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[1]s/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`

const realKubeletCNI = `{
  "cniVersion": "1.0.0",
  "name": "side-kubelet",
  "plugins": [
    {
      "type": "bridge", "bridge": "side0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.77.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    }
  ]
}
`

// realKubeletConfig is kubelet-anchor's kubelet config for a kubelet of a
// cluster: no staticPodPath, cgroup v1 allowed (this machine's), its API
// on loopback inside the namespace. Node-pressure eviction at 1 %: with
// its defaults the kubelet evicted a pod of the side-by-side test once,
// this machine's shared disk at 15.1 % free (imagefs.available < 15 % is
// a default: the likely signal); podrun has no node-pressure eviction to
// compare.
const realKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
failSwapOn: false
failCgroupV1: false
protectKernelDefaults: true
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%[2]s
volumePluginDir: %[3]s
serializeImagePulls: false
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
  imagefs.inodesFree: 1%%
`
