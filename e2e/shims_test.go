package e2e

// End-to-end tests and a benchmark of issue 35 item 18: pods share a pool
// of shims (lanes), and a runc shim creates one task at a time, holding
// its lock. Pods named sh-*.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
)

// manyContainersPod is a pod of n long-running containers c0..c(n-1); cpu, if set, is
// each container's CPU limit.
func manyContainersPod(name string, n int, cpu string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n", name)
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", i, H.Image)
		if cpu != "" {
			fmt.Fprintf(&b, "    resources: {limits: {cpu: %s}}\n", cpu)
		}
	}
	return b.String()
}

// shimPID is the pid of the shim of container id's task: its process's
// parent.
func shimPID(t testing.TB, c *containerd.Client, ctx context.Context, id string) int {
	t.Helper()
	ctr, err := c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", task.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// TestKilledShimRestartsItsContainers: two pods of three containers under
// `up -f` share the pool's shims; a shim killed with SIGKILL takes every
// container it ran, of both pods, and each of them is restarted (its
// restartCount 1, Running again), the others left alone.
func TestKilledShimRestartsItsContainers(t *testing.T) {
	H.require(t)
	yaml := manyContainersPod("sh-kill-a", 3, "") + "---\n" + manyContainersPod("sh-kill-b", 3, "")
	_, up := upForeground(t, "sh-kill", yaml)
	c, ctx := H.Client(t)
	byShim := map[int][]string{} // shim pid -> pod/container
	for _, pod := range []string{"sh-kill-a", "sh-kill-b"} {
		for _, ctr := range podContainers(t, pod) {
			l, _ := ctr.Labels(ctx)
			if l[labels.Kind] != labels.KindApp {
				continue
			}
			shim := shimPID(t, c, ctx, ctr.ID())
			byShim[shim] = append(byShim[shim], pod+"/"+l[labels.Container])
		}
	}
	victim, most := 0, 0
	for pid, ctrs := range byShim {
		if len(ctrs) > most {
			victim, most = pid, len(ctrs)
		}
	}
	t.Logf("containers by shim: %v; killing shim %d", byShim, victim)
	if most == 0 {
		t.Fatal("no container found in a shim")
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := map[string]bool{}
	for _, c := range byShim[victim] {
		killed[c] = true
	}
	for _, pod := range []string{"sh-kill-a", "sh-kill-b"} {
		waitStatus(t, pod, 60*time.Second, pod+": the killed shim's containers restarted once and Running, the others untouched",
			func(p corev1.Pod) (bool, string) {
				ok := true
				var seen []string
				for _, cs := range p.Status.ContainerStatuses {
					want := int32(0)
					if killed[pod+"/"+cs.Name] {
						want = 1
					}
					seen = append(seen, fmt.Sprintf("%s restarts %d running %v", cs.Name, cs.RestartCount, cs.State.Running != nil))
					ok = ok && cs.RestartCount == want && cs.State.Running != nil
				}
				return ok && len(p.Status.ContainerStatuses) == 3, strings.Join(seen, ", ")
			})
	}
	if up.exited() {
		t.Errorf("podrun up -f exited: %v\n%s", up.cmd.ProcessState, up.stderr())
	}
}

// BenchmarkLaneStall: the latency of pod A's task State (what the
// supervisor, probes and `ps` ask its shim) and of `podrun exec` into it,
// while pod B, four containers each limited to 10m of CPU (so in every
// lane of a 2-core node's pool, were it in the pool), is created. runc
// create runs in the container's cgroup, so each create takes long; a
// shim answers nothing else meanwhile. B runs in the lanes of the
// CPU-limited pods, A in the pool.
func BenchmarkLaneStall(b *testing.B) {
	if H.skip != "" {
		b.Skip(H.skip)
	}
	dir := b.TempDir()
	fileA, fileB := dir+"/sh-lane-a.yaml", dir+"/sh-lane-b.yaml"
	if err := os.WriteFile(fileA, []byte(manyContainersPod("sh-lane-a", 1, "")), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(fileB, []byte(manyContainersPod("sh-lane-b", 4, "10m")), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { benchPodrun(b, "down", "--grace-period", "0", fileA, fileB) })
	if _, stderr, code := benchPodrun(b, "up", "--wait=running", fileA); code != 0 {
		b.Fatalf("up A: exit %d\n%s", code, stderr)
	}
	c, err := containerd.New(H.Address)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), H.Namespace)
	var idA string
	all, _ := c.Containers(ctx, `labels."`+labels.PodName+`"==sh-lane-a`)
	for _, ctr := range all {
		if l, _ := ctr.Labels(ctx); l[labels.Container] == "c0" {
			idA = ctr.ID()
		}
	}
	if idA == "" {
		b.Fatal("pod A's container not found")
	}
	var states, execs, ups []time.Duration
	b.ResetTimer()
	for range b.N {
		up := exec.Command(H.Bin, append(H.globalArgs(), "up", "--wait=running", fileB)...)
		start := time.Now()
		if err := up.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- up.Wait() }()
		// A's State every 20 ms meanwhile (as the supervisor and probes ask
		// it), apart from the execs (which list the node first).
		stop := make(chan struct{})
		sampled := make(chan []time.Duration)
		go func() {
			var ds []time.Duration
			defer func() { sampled <- ds }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				t0 := time.Now()
				sctx, cancel := context.WithTimeout(ctx, time.Minute)
				ctr, err := c.LoadContainer(sctx, idA)
				if err == nil {
					var task containerd.Task
					if task, err = ctr.Task(sctx, nil); err == nil {
						_, err = task.Status(sctx)
					}
				}
				cancel()
				if err != nil {
					return
				}
				ds = append(ds, time.Since(t0))
			}
		}()
	measure:
		for {
			select {
			case err := <-done:
				if err != nil {
					b.Fatalf("up B: %v", err)
				}
				ups = append(ups, time.Since(start))
				break measure
			default:
			}
			t0 := time.Now()
			if _, stderr, code := benchPodrun(b, "exec", "sh-lane-a", "--", "true"); code != 0 {
				b.Fatalf("exec into A: exit %d\n%s", code, stderr)
			}
			execs = append(execs, time.Since(t0))
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		states = append(states, <-sampled...)
		b.StopTimer()
		if _, stderr, code := benchPodrun(b, "down", "--grace-period", "0", fileB); code != 0 {
			b.Fatalf("down B: exit %d\n%s", code, stderr)
		}
		b.StartTimer()
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	b.ReportMetric(float64(pct(states, 1).Milliseconds()), "ms-state-max")
	b.ReportMetric(float64(pct(execs, 1).Milliseconds()), "ms-exec-max")
	fmt.Printf("\npod A while pod B (4 containers, cpu limit 10m each) is created, %d runs: B up→Running median %s\n", len(ups), median(ups))
	fmt.Printf("  A task State:   %d samples, median %s, p90 %s, max %s\n", len(states), pct(states, 0.5), pct(states, 0.9), pct(states, 1))
	fmt.Printf("  podrun exec A:  %d samples, median %s, p90 %s, max %s\n", len(execs), pct(execs, 0.5), pct(execs, 0.9), pct(execs, 1))
}
