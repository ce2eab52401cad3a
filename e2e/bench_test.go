package e2e

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// stepLineRE matches a progress line: "default/bench [6/9] sandbox: namespaces + network (31ms)".
var stepLineRE = regexp.MustCompile(`^\S+ \[(\d+)/\d+\] (.+) \(([^)]+)\)$`)

// BenchmarkUpToRunning measures `podrun up` of a one-container pod whose
// image is present, from the command's start to its exit with the pod
// Running, and prints the median per step. Run it with `sudo make bench`.
func BenchmarkUpToRunning(b *testing.B) {
	if H.skip != "" {
		b.Skip(H.skip)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: bench}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: app, image: %s, command: ["sleep", "3600"]}
`, H.Image)
	dir := b.TempDir()
	path := dir + "/bench.yaml"
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		b.Fatal(err)
	}
	var totals []time.Duration
	steps := map[string][]time.Duration{}
	var order []string
	b.Cleanup(func() { benchPodrun(b, "down", "--grace-period", "0", path) })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, stderr, code := benchPodrun(b, "up", path)
		total := time.Since(start)
		if code != 0 {
			b.Fatalf("podrun up: exit %d:\n%s", code, stderr)
		}
		totals = append(totals, total)
		order = addStepTimes(stderr, steps, order)
		b.StopTimer()
		if _, stderr, code := benchPodrun(b, "down", "--grace-period", "0", path); code != 0 {
			b.Fatalf("podrun down: exit %d:\n%s", code, stderr)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(median(totals).Milliseconds()), "ms-median")
	fmt.Printf("\npodrun up -> Running, one-container pod, image present: median %s over %d runs (min %s, max %s)\n",
		median(totals), len(totals), minDuration(totals), maxDuration(totals))
	for _, s := range order {
		fmt.Printf("  %-28s median %s\n", s, median(steps[s]))
	}
}

// addStepTimes adds the step times of up's stderr to steps, and new step names
// to order, which it returns.
func addStepTimes(stderr string, steps map[string][]time.Duration, order []string) []string {
	for _, line := range strings.Split(stderr, "\n") {
		m := stepLineRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[3])
		if err != nil {
			continue
		}
		if _, seen := steps[m[2]]; !seen {
			order = append(order, m[2])
		}
		steps[m[2]] = append(steps[m[2]], d)
	}
	return order
}

// BenchmarkImageGroups: what reading the image's /etc/group costs a
// container's start (supplementalGroupsPolicy Merge, the default, against
// Strict, which reads nothing), alternating the two in one run.
func BenchmarkImageGroups(b *testing.B) {
	if H.skip != "" {
		b.Skip(H.skip)
	}
	dir := b.TempDir()
	paths := map[string]string{}
	for _, policy := range []string{"Merge", "Strict"} {
		path := dir + "/" + policy + ".yaml"
		paths[policy] = path
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: bench-groups-%s}
spec:
  terminationGracePeriodSeconds: 0
  securityContext: {supplementalGroupsPolicy: %s}
  containers:
  - {name: app, image: %s, command: ["sleep", "3600"]}
`, strings.ToLower(policy), policy, H.Image)
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { benchPodrun(b, "down", "--grace-period", "0", path) })
	}
	steps := map[string]map[string][]time.Duration{"Merge": {}, "Strict": {}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, policy := range []string{"Merge", "Strict"} {
			_, stderr, code := benchPodrun(b, "up", "--wait=running", paths[policy])
			if code != 0 {
				b.Fatalf("podrun up: exit %d:\n%s", code, stderr)
			}
			addStepTimes(stderr, steps[policy], nil)
			if _, stderr, code := benchPodrun(b, "down", "--grace-period", "0", paths[policy]); code != 0 {
				b.Fatalf("podrun down: exit %d:\n%s", code, stderr)
			}
		}
	}
	b.StopTimer()
	merge, strict := median(steps["Merge"]["container/app"]), median(steps["Strict"]["container/app"])
	b.ReportMetric(float64((merge-strict).Microseconds())/1000, "ms-merge-cost")
	fmt.Printf("\ncontainer step (create + start), %d runs each, alternating: Merge median %s, Strict median %s\n", b.N, merge, strict)
}

// BenchmarkUpFourContainers: up to Running of a pod of four app
// containers, and its down. With PODRUN_BENCH_BEFORE naming another podrun
// binary (an older build), the two alternate, run by run, and both are
// printed: before/after figures from one run.
func BenchmarkUpFourContainers(b *testing.B) {
	if H.skip != "" {
		b.Skip(H.skip)
	}
	var containers strings.Builder
	for i := range 4 {
		fmt.Fprintf(&containers, "  - {name: c%d, image: %s, command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 0.1; done\"]}\n", i, H.Image)
	}
	path := b.TempDir() + "/four.yaml"
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: bench-four}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n" + containers.String()
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		b.Fatal(err)
	}
	bins := map[string]string{"after": H.Bin}
	if before := os.Getenv("PODRUN_BENCH_BEFORE"); before != "" {
		bins["before"] = before
	}
	current := H.Bin
	b.Cleanup(func() { H.Bin = current; benchPodrun(b, "down", "--grace-period", "0", path) })
	ups, downs := map[string][]time.Duration{}, map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, which := range []string{"before", "after"} {
			bin, ok := bins[which]
			if !ok {
				continue
			}
			H.Bin = bin
			start := time.Now()
			if _, stderr, code := benchPodrun(b, "up", "--wait=running", path); code != 0 {
				H.Bin = current
				b.Fatalf("%s: podrun up: exit %d:\n%s", which, code, stderr)
			}
			ups[which] = append(ups[which], time.Since(start))
			start = time.Now()
			if _, stderr, code := benchPodrun(b, "down", path); code != 0 {
				H.Bin = current
				b.Fatalf("%s: podrun down: exit %d:\n%s", which, code, stderr)
			}
			downs[which] = append(downs[which], time.Since(start))
		}
	}
	H.Bin = current
	b.StopTimer()
	b.ReportMetric(float64(median(ups["after"]).Milliseconds()), "ms-up-median")
	for _, which := range []string{"before", "after"} {
		if len(ups[which]) > 0 {
			fmt.Printf("\n%s: 4-container pod, up --wait=running median %s (min %s), down (TERM honoured) median %s, %d runs\n",
				which, median(ups[which]), minDuration(ups[which]), median(downs[which]), len(ups[which]))
		}
	}
}

// benchPodrun runs podrun quietly (b.Logf would print every call).
func benchPodrun(b *testing.B, args ...string) (stdout, stderr string, code int) {
	stdout, stderr, code, _ = H.run(b, "", H.Timeout, args...)
	return stdout, stderr, code
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func minDuration(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

func maxDuration(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
