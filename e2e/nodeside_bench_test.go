package e2e

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/internal/testimage"
)

// kubeletRebootWatch is how long the kubelet is watched after its reboot
// with the API server unreachable.
const kubeletRebootWatch = 60 * time.Second

// BenchmarkNodeBesideKubelet: issue 39's figures of a podrun node beside
// the real kubelet's (realkubelet_test.go) on one control plane, the same
// Deployments (nodeCostDeployment: the suite's busybox image, pinned to
// the node by nodeSelector), one node after the other in one run:
//   - the control plane alone (no node) over nodeCostWindow;
//   - the podrun node (`podrun daemon --kubeconfig`), measureNode: idle
//     with 10 pods, the API server's requests per minute; 50 pods from
//     kubectl apply to all Running; the daemon's Pss; then the daemon
//     stopped (its pods with it) and its Node deleted;
//   - the kubelet node, the same; then a Deployment of 20 pods Running
//     on it, its API server cut off (the node's listener closed), a power
//     cut of its machine (kubelet, containerd, containers killed, its
//     /run, netns and cgroups gone), and the kubelet started again with
//     the API server still unreachable: the pods' containers running in
//     its containerd, watched for kubeletRebootWatch; then the API server
//     back, the time until the 20 run again.
//
// Neither node's containerd is counted in its agent's Pss (each runs its
// own: the suite's containerd 1.7 for podrun, the host's 1.6 with the CRI
// plugin for the kubelet; their Pss is shown apart). podrun's reboot figure is BenchmarkRebootAPIDown's: run
// both in one invocation (docs/benchmarks.md). Figures are logged (a table
// of both nodes at the end), never asserted. Run alone on the machine.
func BenchmarkNodeBesideKubelet(b *testing.B) {
	cp := startControlPlane(b)
	base := cp.controlPlaneAlone(b)

	pn, stop := cp.startPodrunNode(b)
	pf := cp.measureNode(b, pn)
	stop()
	if o, err := cp.kubectl("", "delete", "node", H.Node); err != nil {
		b.Fatalf("kubectl delete node: %v\n%s", err, o)
	}

	k := startRealKubelet(b, cp, testimage.Config{Ref: H.Image}, testimage.Config{
		Ref:        realKubeletPause,
		Entrypoint: []string{"sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait"},
	})
	kn := nodeUnderTest{agent: "kubelet", node: realKubeletNode, pid: k.kubelet.cmd.Process.Pid, ctrd: k.ctrd.cmd.Process.Pid,
		left: func() int { return cp.podsBoundTo(realKubeletNode) }}
	kf := cp.measureNode(b, kn)
	reboot := cp.rebootKubelet(b, k)

	b.Logf("API server requests per minute, one idle node with 10 pods, podrun's then the kubelet's (over %v each; no node = the control plane alone):\n%s",
		nodeCostWindow, formatNodesBeside(base, pf.rates, kf.rates))
	b.Logf("the node beside the kubelet (containerd counted for neither):\n%s", formatFigures(pf, kf, reboot))
	for _, s := range []struct {
		agent string
		f     nodeFigures
	}{{"podrun", pf}, {"kubelet", kf}} {
		b.ReportMetric(median(s.f.running).Seconds(), s.agent+"-s-to-50-running")
		b.ReportMetric(float64(s.f.pss), s.agent+"-Pss-KiB")
		b.ReportMetric(nodeRequests(s.f.rates), s.agent+"-req/min")
	}
	b.ReportMetric(float64(reboot.maxRunning), "kubelet-running-after-reboot")
}

// kubeletReboot is what rebootKubelet saw.
type kubeletReboot struct {
	pods       int           // pods Running on the kubelet before the power cut
	watched    time.Duration // how long after the kubelet's start without the API server
	maxRunning int           // the most of their containers running meanwhile
	back       time.Duration // the API server back -> all pods' containers running again
}

// rebootKubelet: a Deployment of 20 pods Running on the kubelet's node, the
// API server cut off from it, a power cut, the kubelet booted and started
// again without the API server and watched for kubeletRebootWatch (its
// containerd's running containers, every 500 ms); then the API server back
// and the time until the 20 run again; the Deployment deleted.
func (cp *controlPlane) rebootKubelet(b *testing.B, k *realKubelet) kubeletReboot {
	b.Helper()
	const app = "kubelet-reboot"
	r := kubeletReboot{pods: 20}
	n := nodeUnderTest{agent: "kubelet", node: realKubeletNode, left: func() int { return cp.podsBoundTo(realKubeletNode) }}
	b.Cleanup(func() { cp.kubectl("", "delete", "--ignore-not-found", "--wait=false", "deployment", app) })
	cp.waitRunning(b, app, r.pods, cp.applyDeployment(b, app, r.pods, realKubeletNode), 5*time.Minute)
	if got := k.runningContainers(b); got != r.pods {
		b.Fatalf("%d containers running in the kubelet's containerd, want %d", got, r.pods)
	}
	k.proxy.cut(true) // the node cut off from its API server, then the machine's power
	k.powerCut(b)
	b.Logf("kubelet: power cut with %d pods Running, the API server unreachable from the node; load %s", r.pods, loadAvg())
	k.boot(b, false)
	began := k.startKubelet(b)
	for time.Since(began) < kubeletRebootWatch {
		if k.kubelet.exited() {
			b.Fatalf("the kubelet exited after the reboot (%v): %s", k.kubelet.cmd.ProcessState, tailLines(k.kubelet.output(), 20))
		}
		r.maxRunning = max(r.maxRunning, k.runningContainers(b))
		time.Sleep(500 * time.Millisecond)
	}
	r.watched = time.Since(began)
	b.Logf("kubelet rebooted with the API server unreachable: %d of %d pods' containers running at most over %v after its start; its last lines:\n%s",
		r.maxRunning, r.pods, r.watched.Round(time.Second), tailLines(k.kubelet.output(), 8))

	k.connectAPI(b)
	back := time.Now()
	waitFor(b, 5*time.Minute, "the kubelet's pods running again", func() (bool, string) {
		got := k.runningContainers(b)
		return got == r.pods, fmt.Sprintf("%d of %d", got, r.pods)
	})
	r.back = time.Since(back)
	b.Logf("kubelet: API server reachable again: %d pods' containers running %v after; load %s", r.pods, r.back.Round(time.Millisecond), loadAvg())
	cp.deleteDeployment(b, app, n)
	return r
}

// runningContainers is how many containers of pods (not sandboxes) run in
// the kubelet's containerd: its CRI's containers with a running task.
func (k *realKubelet) runningContainers(b *testing.B) int {
	b.Helper()
	ctr := func(args ...string) []string {
		out, err := exec.Command("ctr", append([]string{"-a", k.sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			b.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	containers := ctr("containers", "ls", "-q", `labels."io.cri-containerd.kind"==container`)
	running := 0
	for _, l := range ctr("tasks", "ls") {
		// TASK PID STATUS
		if f := strings.Fields(l); len(f) == 3 && f[2] == "RUNNING" && slices.Contains(containers, f[0]) {
			running++
		}
	}
	return running
}

// nodeRequests is a node's requests per minute: the API priority and
// fairness flows that match only a node's credentials.
func nodeRequests(rates map[string]float64) float64 {
	return rates["flow system-node-high"] + rates["flow system-nodes"]
}

// formatNodesBeside is a table of the rows of a and b (the control plane
// with one node, then with another) that differ from base (the control
// plane alone): the rates and each node's difference, the rows where the
// nodes differ most first.
func formatNodesBeside(base, a, b map[string]float64) string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]float64{a, b} {
		for k, v := range m {
			if !seen[k] && v != base[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for k := range base {
		if !seen[k] && (a[k] != base[k] || b[k] != base[k]) {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	weight := func(k string) float64 { return max(a[k]-base[k], b[k]-base[k], base[k]-a[k], base[k]-b[k]) }
	slices.SortFunc(keys, func(x, y string) int {
		if wx, wy := weight(x), weight(y); wx != wy {
			if wx > wy {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-52s %8s %8s %8s %9s %9s\n", "verb resource (flow: APF flow schema; open: watches)", "no node", "podrun", "kubelet", "podrun's", "kubelet's")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%-52s %8.1f %8.1f %8.1f %9.1f %9.1f\n", k, base[k], a[k], b[k], a[k]-base[k], b[k]-base[k])
	}
	return sb.String()
}

// formatFigures is the table of both nodes' figures.
func formatFigures(p, k nodeFigures, r kubeletReboot) string {
	var sb strings.Builder
	row := func(what, pv, kv string) { fmt.Fprintf(&sb, "%-58s %14s %14s\n", what, pv, kv) }
	row("", "podrun", "kubelet")
	row("50 pods: kubectl apply -> all Running (median)", median(p.running).Round(time.Millisecond).String(), median(k.running).Round(time.Millisecond).String())
	row("agent's Pss with 50 pods (KiB)", fmt.Sprint(p.pss), fmt.Sprint(k.pss))
	row("agent's Rss with 50 pods (KiB)", fmt.Sprint(p.rss), fmt.Sprint(k.rss))
	row("agent's Pss idle with 10 pods (KiB)", fmt.Sprint(p.idlePss), fmt.Sprint(k.idlePss))
	row("its containerd's Pss with 50 pods (KiB; not above)", fmt.Sprint(p.ctrdPss), fmt.Sprint(k.ctrdPss))
	row("node's requests/min idle with 10 pods (flows system-node*)", fmt.Sprintf("%.1f", nodeRequests(p.rates)), fmt.Sprintf("%.1f", nodeRequests(k.rates)))
	row("node's requests from kubectl apply to 50 Running", fmt.Sprintf("%.0f", nodeRequests(p.start)), fmt.Sprintf("%.0f", nodeRequests(k.start)))
	row("reboot, API server down: pods running",
		"BenchmarkRebootAPIDown", fmt.Sprintf("%d of %d in %v", r.maxRunning, r.pods, r.watched.Round(time.Second)))
	row("  then the API server back: all running again after", "", r.back.Round(time.Millisecond).String())
	return sb.String()
}

func TestFormatNodesBeside(t *testing.T) {
	base := map[string]float64{"GET (non-resource)": 20, "PUT leases.coordination.k8s.io": 6, "WATCH services": 1}
	podrun := map[string]float64{"GET (non-resource)": 20, "PUT leases.coordination.k8s.io": 12, "WATCH services": 1,
		"flow system-node-high": 6, "flow system-nodes": 1}
	kubelet := map[string]float64{"GET (non-resource)": 20, "PUT leases.coordination.k8s.io": 12, "WATCH services": 2,
		"flow system-node-high": 6.5, "flow system-nodes": 4}
	got := strings.Split(strings.TrimSpace(formatNodesBeside(base, podrun, kubelet)), "\n")
	var rows []string
	for _, l := range got[1:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"flow system-node-high 0.0 6.0 6.5 6.0 6.5",
		"PUT leases.coordination.k8s.io 6.0 12.0 12.0 6.0 6.0",
		"flow system-nodes 0.0 1.0 4.0 1.0 4.0",
		"WATCH services 1.0 1.0 2.0 0.0 1.0",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("formatNodesBeside rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		rates map[string]float64
		want  float64
	}{
		{podrun, 7}, {kubelet, 10.5}, {base, 0},
	} {
		if got := nodeRequests(tc.rates); got != tc.want {
			t.Errorf("nodeRequests(%v) = %v, want %v", tc.rates, got, tc.want)
		}
	}
}
