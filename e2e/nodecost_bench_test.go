package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// nodeCostWindow is how long the API server's counters are read over, with
// no node and with one idle node.
const nodeCostWindow = 2 * time.Minute

// nodeCostDeployment is the operator's Deployment of %[1]d pods bound to
// a node (%[3]s) by nodeSelector (the scheduler places them), the suite's
// busybox image (already imported: no pull).
const nodeCostDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s}
spec:
  replicas: %[1]d
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      nodeSelector: {kubernetes.io/hostname: %[3]s}
      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: %[4]s
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// BenchmarkNodeCost: what one podrun node costs its control plane and
// itself (issue 39, Measure), on a real control plane (cluster-anchor's):
//   - the API server's requests per minute by verb and resource
//     (apiserver_request_total, which has no client label) with no node,
//     then with one idle node running 10 pods of a Deployment, over
//     nodeCostWindow each: the difference is the node's; the API priority
//     and fairness flow schemas system-nodes and system-node-high (the
//     requests of group system:nodes) count the node's alone;
//   - a Deployment of 50 pods: from kubectl apply to the API showing all 50
//     Running, and the daemon's Pss and Rss (/proc/PID/smaps_rollup) then,
//     with the Pss of every podrun process (the daemon and its helpers).
//
// Figures are logged, never asserted. Run alone on the machine: the
// counters count every client and the time is the machine's.
// BenchmarkNodeBesideKubelet measures the same beside the real kubelet.
func BenchmarkNodeCost(b *testing.B) {
	cp := startControlPlane(b)
	base := cp.controlPlaneAlone(b)
	n, stop := cp.startPodrunNode(b)
	f := cp.measureNode(b, n)
	b.Logf("API server requests per minute, one idle podrun node with 10 pods (over %v each; no node = the control plane alone):\n%s",
		nodeCostWindow, formatRates(base, f.rates))
	b.ReportMetric(float64(f.pss), "daemon-Pss-KiB")
	b.ReportMetric(median(f.running).Seconds(), "s-to-50-running")
	stop()
}

// controlPlaneAlone waits for the default ServiceAccount and the
// controllers' start-up, then reads the API server's requests per minute
// with no node over nodeCostWindow.
func (cp *controlPlane) controlPlaneAlone(b *testing.B) map[string]float64 {
	b.Helper()
	waitFor(b, 60*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, err := cp.kubectl("", "get", "serviceaccount", "default")
		return err == nil, out
	})
	// The controllers' start-up settles before the baseline.
	time.Sleep(20 * time.Second)
	b.Logf("load before the baseline: %s", loadAvg())
	return cp.requestRates(b, nodeCostWindow)
}

// nodeUnderTest is a node agent the cost benchmarks measure.
type nodeUnderTest struct {
	agent string     // "podrun" or "kubelet": names its figures and Deployments
	node  string     // its Node's name
	pid   int        // its process (Pss, Rss)
	ctrd  int        // its containerd's process (Pss, told apart)
	left  func() int // the pods left on the node (-1: cannot tell)
}

// nodeFigures are what measureNode saw of a node.
type nodeFigures struct {
	rates            map[string]float64 // the API server's requests per minute, the node idle with 10 pods
	idlePss, idleRss int                // the agent's KiB with 10 pods
	running          []time.Duration    // kubectl apply of 50 pods -> all Running, each run
	pss, rss         int                // the agent's KiB with 50 pods Running (the last run)
	ctrdPss          int                // its containerd's Pss in KiB then
	start            map[string]float64 // the API server's requests from kubectl apply to 50 Running (the last run)
}

// startPodrunNode starts `podrun daemon --kubeconfig` as node H.Node of cp
// and waits for the Node to be Ready; stop ends it (also at cleanup).
func (cp *controlPlane) startPodrunNode(b *testing.B) (n nodeUnderTest, stop func()) {
	b.Helper()
	kc := cp.nodeKubeconfig(b, H.Node)
	cmd := exec.Command(H.Bin, append(H.globalArgs(), "daemon", "--manifest-dir", b.TempDir(), "--kubeconfig", kc, "--stop-pods-on-exit")...)
	out := &CmdOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			b.Errorf("daemon: %v\n%s", err, out.String())
		}
	}
	b.Cleanup(stop)
	waitFor(b, 60*time.Second, "the node Ready", func() (bool, string) {
		o, err := cp.kubectl("", "get", "node", H.Node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && o == "True", o
	})
	return nodeUnderTest{agent: "podrun", node: H.Node, pid: cmd.Process.Pid, ctrd: suiteContainerd(b),
		left: func() int { return podsOnNodeCount(b) }}, stop
}

// measureNode: n idle with a Deployment of 10 pods (the API server's
// requests per minute over nodeCostWindow, 30 s after the 10 are Running;
// the agent's Pss), then b.N times a Deployment of 50 pods from kubectl
// apply to all Running (the agent's Pss then), each Deployment deleted and
// waited for until nothing of it is left on the node.
func (cp *controlPlane) measureNode(b *testing.B, n nodeUnderTest) nodeFigures {
	b.Helper()
	var f nodeFigures
	idleApp, app := n.agent+"-idle", n.agent+"-50"
	b.Cleanup(func() {
		cp.kubectl("", "delete", "--ignore-not-found", "--wait=false", "deployment", idleApp, app)
	})
	idle := cp.applyDeployment(b, idleApp, 10, n.node)
	cp.waitRunning(b, idleApp, 10, idle, 3*time.Minute)
	time.Sleep(30 * time.Second) // the pods' first status writes, tokens and objects
	b.Logf("%s: load before the node's window: %s", n.agent, loadAvg())
	f.rates = cp.requestRates(b, nodeCostWindow)
	b.Logf("%s: load after the node's window: %s", n.agent, loadAvg())
	f.idlePss, f.idleRss = smapsRollup(b, n.pid)
	b.Logf("%s with 10 pods: Pss %d KiB, Rss %d KiB", n.agent, f.idlePss, f.idleRss)
	cp.deleteDeployment(b, idleApp, n)

	b.ResetTimer()
	for i := range b.N {
		b.Logf("%s: load before the 50 pods (run %d): %s", n.agent, i+1, loadAvg())
		before := cp.apiCounters(b)
		applied := cp.applyDeployment(b, app, 50, n.node)
		took := cp.waitRunning(b, app, 50, applied, 10*time.Minute)
		f.start = ratesPerMinute(before, cp.apiCounters(b), time.Minute)
		b.Logf("%s run %d: the API server's requests from before kubectl apply to all 50 Running (the benchmark's polling included):\n%s",
			n.agent, i+1, formatCounts(f.start))
		f.running = append(f.running, took)
		f.pss, f.rss = smapsRollup(b, n.pid)
		f.ctrdPss, _ = smapsRollup(b, n.ctrd)
		all := ""
		if n.agent == "podrun" {
			all = fmt.Sprintf("; every podrun process: Pss %d KiB", podrunPss(b))
		}
		b.Logf("%s run %d: 50 pods Running (as the API shows them) %v after kubectl apply; %s Pss %d KiB, Rss %d KiB%s; its containerd: Pss %d KiB; load %s",
			n.agent, i+1, took.Round(time.Millisecond), n.agent, f.pss, f.rss, all, f.ctrdPss, loadAvg())
		cp.deleteDeployment(b, app, n)
	}
	b.StopTimer()
	return f
}

// deleteDeployment deletes Deployment app as the operator and waits until
// no pod is left on n, nor bound to it in the API.
func (cp *controlPlane) deleteDeployment(b *testing.B, app string, n nodeUnderTest) {
	b.Helper()
	if o, err := cp.kubectl("", "delete", "deployment", app); err != nil {
		b.Fatalf("kubectl delete: %v\n%s", err, o)
	}
	waitFor(b, 5*time.Minute, "no pod left on node "+n.node, func() (bool, string) {
		left, bound := n.left(), cp.podsBoundTo(n.node)
		return left == 0 && bound == 0, fmt.Sprintf("%d pods on the node, %d bound to it in the API", left, bound)
	})
}

// podsBoundTo is how many pods the API server has bound to node (any
// phase; -1: cannot tell).
func (cp *controlPlane) podsBoundTo(node string) int {
	o, err := cp.kubectl("", "get", "pods", "-A", "--field-selector", "spec.nodeName="+node, "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(o))
}

// suiteContainerd is the pid of the suite's containerd (a child of this
// process), podrun's.
func suiteContainerd(b testing.TB) int {
	b.Helper()
	for _, pid := range childrenOf(os.Getpid()) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(exe) == "containerd" {
			return pid
		}
	}
	b.Fatal("the suite's containerd: not a child of this process")
	return 0
}

// applyDeployment applies nodeCostDeployment of n pods on node as the
// operator and returns when it did.
func (cp *controlPlane) applyDeployment(b *testing.B, name string, n int, node string) time.Time {
	b.Helper()
	file := filepath.Join(b.TempDir(), name+".yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(nodeCostDeployment, n, name, node, H.Image)), 0o644); err != nil {
		b.Fatal(err)
	}
	applied := time.Now()
	if o, err := cp.kubectl("", "apply", "-f", file); err != nil {
		b.Fatalf("kubectl apply: %v\n%s", err, o)
	}
	return applied
}

// waitRunning waits until the API shows n pods of app Running (the phase
// the node wrote) and returns the time since since (polled every 500 ms).
func (cp *controlPlane) waitRunning(b *testing.B, app string, n int, since time.Time, timeout time.Duration) time.Duration {
	b.Helper()
	var took time.Duration
	waitFor(b, timeout, fmt.Sprintf("%d pods of %s Running", n, app), func() (bool, string) {
		o, err := cp.kubectl("", "get", "pods", "-l", "app="+app, "-o", "json")
		var list corev1.PodList
		if err != nil || json.Unmarshal([]byte(o), &list) != nil {
			return false, o
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		took = time.Since(since)
		return running == n, fmt.Sprintf("%d of %d Running", running, len(list.Items))
	})
	return took
}

// waitFor polls cond every 500 ms until it holds, failing past timeout.
func waitFor(b testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %v: %s", what, timeout, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// podsOnNodeCount is how many pods podrun lists (any phase).
func podsOnNodeCount(b *testing.B) int {
	stdout, _, code := benchPodrun(b, "ps", "-a", "-o", "json")
	var list corev1.PodList
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil {
		return -1
	}
	return len(list.Items)
}

// requestRates reads the API server's counters twice, window apart, and
// returns their increase per minute.
func (cp *controlPlane) requestRates(b *testing.B, window time.Duration) map[string]float64 {
	b.Helper()
	first, t0 := cp.apiCounters(b), time.Now()
	time.Sleep(window)
	second, t1 := cp.apiCounters(b), time.Now()
	return ratesPerMinute(first, second, t1.Sub(t0))
}

// apiCounters scrapes the API server's /metrics as the admin.
func (cp *controlPlane) apiCounters(b *testing.B) map[string]float64 {
	b.Helper()
	o, err := cp.kubectl("", "get", "--raw", "/metrics")
	if err != nil {
		b.Fatalf("kubectl get --raw /metrics: %v\n%s", err, o)
	}
	return parseAPICounters(o)
}

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// parseAPICounters sums the API server's request counters by what they
// count: "VERB resource[.group][/subresource]" from apiserver_request_total
// (every code and scope), "flow FLOWSCHEMA" from API priority and
// fairness's apiserver_flowcontrol_dispatched_requests_total, and
// "open WATCH resource" from the apiserver_longrunning_requests gauge.
func parseAPICounters(text string) map[string]float64 {
	counts := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		open := strings.IndexByte(line, '{')
		end := strings.LastIndexByte(line, '}')
		if strings.HasPrefix(line, "#") || open < 0 || end < open {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, m := range metricLabel.FindAllStringSubmatch(line[open:end], -1) {
			labels[m[1]] = m[2]
		}
		switch line[:open] {
		case "apiserver_request_total":
			counts[labels["verb"]+" "+resourceKey(labels)] += v
		case "apiserver_flowcontrol_dispatched_requests_total":
			counts["flow "+labels["flow_schema"]] += v
		case "apiserver_longrunning_requests":
			counts["open "+labels["verb"]+" "+resourceKey(labels)] += v
		}
	}
	return counts
}

// resourceKey is resource[.group][/subresource], "(non-resource)" for a
// path such as /metrics.
func resourceKey(labels map[string]string) string {
	r := labels["resource"]
	if r == "" {
		return "(non-resource)"
	}
	if g := labels["group"]; g != "" {
		r += "." + g
	}
	if s := labels["subresource"]; s != "" {
		r += "/" + s
	}
	return r
}

// ratesPerMinute is each counter's increase from first to second per
// minute of window; gauges ("open ...") are second's values.
func ratesPerMinute(first, second map[string]float64, window time.Duration) map[string]float64 {
	rates := map[string]float64{}
	for k, v := range second {
		if strings.HasPrefix(k, "open ") {
			rates[k] = v
			continue
		}
		if d := v - first[k]; d != 0 {
			rates[k] = d / window.Minutes()
		}
	}
	return rates
}

// formatRates is a table of base and with by key, with their difference,
// the rows that differ first (largest difference first).
func formatRates(base, with map[string]float64) string {
	var keys []string
	for k := range with {
		keys = append(keys, k)
	}
	for k := range base {
		if _, ok := with[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		da, db := with[a]-base[a], with[b]-base[b]
		if da != db {
			if da > db {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-58s %10s %10s %10s\n", "verb resource (flow: APF flow schema; open: watches open)", "no node", "with node", "node's")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%-58s %10.1f %10.1f %10.1f\n", k, base[k], with[k], with[k]-base[k])
	}
	return sb.String()
}

// formatCounts lists counts of requests (no gauges), largest first.
func formatCounts(counts map[string]float64) string {
	var keys []string
	for k := range counts {
		if !strings.HasPrefix(k, "open ") {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			if counts[a] > counts[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%-58s %8.0f\n", k, counts[k])
	}
	return sb.String()
}

// smapsRollup is pid's Pss and Rss in KiB.
func smapsRollup(b testing.TB, pid int) (pss, rss int) {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	return smapsField(string(raw), "Pss:"), smapsField(string(raw), "Rss:")
}

// smapsField is the KiB of field in a smaps_rollup.
func smapsField(rollup, field string) int {
	for _, l := range strings.Split(rollup, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// podrunPss is the Pss in KiB of every process running the suite's podrun
// binary (the daemon and the helpers it starts).
func podrunPss(b testing.TB) int {
	b.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	sum := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != H.Bin {
			continue
		}
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
			sum += smapsField(string(raw), "Pss:")
		}
	}
	return sum
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func TestParseAPICounters(t *testing.T) {
	text := `# HELP apiserver_request_total x
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 2
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-nodes",priority_level="system"} 7
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 9
`
	got := parseAPICounters(text)
	want := map[string]float64{
		"PATCH nodes/status": 4, "PUT leases.coordination.k8s.io": 12, "GET (non-resource)": 2,
		"flow system-nodes": 7, "open WATCH pods": 4,
	}
	if len(got) != len(want) {
		t.Errorf("parseAPICounters = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for _, tc := range []struct {
		name          string
		first, second map[string]float64
		window        time.Duration
		want          map[string]float64
	}{
		{"per minute", map[string]float64{"GET nodes": 10}, map[string]float64{"GET nodes": 22}, 2 * time.Minute, map[string]float64{"GET nodes": 6}},
		{"new counter", nil, map[string]float64{"PUT leases": 3}, 30 * time.Second, map[string]float64{"PUT leases": 6}},
		{"unchanged: left out", map[string]float64{"GET x": 1}, map[string]float64{"GET x": 1}, time.Minute, map[string]float64{}},
		{"a gauge is its value", map[string]float64{"open WATCH pods": 9}, map[string]float64{"open WATCH pods": 2}, time.Minute, map[string]float64{"open WATCH pods": 2}},
	} {
		got := ratesPerMinute(tc.first, tc.second, tc.window)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, got[k], v)
			}
		}
	}
	if got := smapsField("Rss:               12 kB\nPss:                7 kB\n", "Pss:"); got != 7 {
		t.Errorf("smapsField = %d, want 7", got)
	}
}
