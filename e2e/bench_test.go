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

// bnStepLine matches a progress line: "default/bench [5/8] sandbox: pause + network (215ms)".
var bnStepLine = regexp.MustCompile(`^\S+ \[(\d+)/\d+\] (.+) \(([^)]+)\)$`)

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
	b.Cleanup(func() { bnPodrun(b, "down", "--grace-period", "0", path) })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, stderr, code := bnPodrun(b, "up", path)
		total := time.Since(start)
		if code != 0 {
			b.Fatalf("podrun up: exit %d:\n%s", code, stderr)
		}
		totals = append(totals, total)
		for _, line := range strings.Split(stderr, "\n") {
			m := bnStepLine.FindStringSubmatch(strings.TrimSpace(line))
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
		b.StopTimer()
		if _, stderr, code := bnPodrun(b, "down", "--grace-period", "0", path); code != 0 {
			b.Fatalf("podrun down: exit %d:\n%s", code, stderr)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(bnMedian(totals).Milliseconds()), "ms-median")
	fmt.Printf("\npodrun up -> Running, one-container pod, image present: median %s over %d runs (min %s, max %s)\n",
		bnMedian(totals), len(totals), bnMin(totals), bnMax(totals))
	for _, s := range order {
		fmt.Printf("  %-28s median %s\n", s, bnMedian(steps[s]))
	}
}

// bnPodrun runs podrun quietly (b.Logf would print every call).
func bnPodrun(b *testing.B, args ...string) (stdout, stderr string, code int) {
	stdout, stderr, code, _ = H.run(b, "", H.Timeout, args...)
	return stdout, stderr, code
}

func bnMedian(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func bnMin(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

func bnMax(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
