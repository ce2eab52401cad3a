package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// floodLines is how many empty lines the flooding container writes per
// run: 8 MiB of output, the worst case per byte for the keeper (a record
// of some 40 bytes per byte written).
const floodLines = 8 << 20

// BenchmarkKeeperFlood: what a container writing short lines flat out
// costs the node. Per run, the container writes 8 MiB of empty lines; the
// benchmark reports the stream keeper's CPU time per MiB of the
// container's output (user+system, compression of the rotated files
// included), how fast the container could write, and what another pod
// sees meanwhile: the latency of HTTP requests to it (p50/p99) and the time
// of a fixed shell loop run in it, before and during the flood: a
// BestEffort pod (cpu.shares 2, as the flooder) and a Burstable one
// requesting 500m (512 shares, above the keeper's 256). Run it with
// `sudo make bench-keeper`.
func BenchmarkKeeperFlood(b *testing.B) {
	if H.skip != "" {
		b.Skip(H.skip)
	}
	dir := b.TempDir()
	victim := filepath.Join(dir, "kp-victim.yaml")
	victimReq := filepath.Join(dir, "kp-victim-req.yaml")
	flood := filepath.Join(dir, "kp-flood.yaml")
	write := func(path, yaml string) {
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(victim, `apiVersion: v1
kind: Pod
metadata: {name: kp-victim}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: `+H.Image+`
    command: ["sh", "-c", "mkdir -p /tmp/www && echo kp-victim > /tmp/www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /tmp/www & wait"]
`)
	write(victimReq, `apiVersion: v1
kind: Pod
metadata: {name: kp-victim-req}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: `+H.Image+`
    command: ["sh", "-c", "mkdir -p /tmp/www && echo kp-victim > /tmp/www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /tmp/www & wait"]
    resources: {requests: {cpu: 500m}}
`)
	write(flood, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: kp-flood}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; k=0; while true; do while [ ! -e /tmp/go ]; do sleep 0.05; done; rm /tmp/go; yes '' | head -n %d; echo flood-done-$k; k=$((k+1)); done"]
`, H.Image, floodLines))
	b.Cleanup(func() { benchPodrun(b, "down", "--grace-period", "0", victim, victimReq, flood) })
	for _, f := range []string{victim, victimReq, flood} {
		if _, stderr, code := benchPodrun(b, "up", f); code != 0 {
			b.Fatalf("podrun up %s: exit %d:\n%s", f, code, stderr)
		}
	}
	victims := []string{"kp-victim", "kp-victim-req"}
	urls := map[string]string{}
	idle := map[string]victimSample{}
	for _, v := range victims {
		out, stderr, code := benchPodrun(b, "status", v, "-o", "json")
		var pod corev1.Pod
		if code != 0 || json.Unmarshal([]byte(out), &pod) != nil || pod.Status.PodIP == "" {
			b.Fatalf("status %s: exit %d, %s", v, code, stderr)
		}
		urls[v] = "http://" + pod.Status.PodIP + ":8080/"
		idle[v] = measureVictim(b, v, urls[v])
	}

	var cpu, wall time.Duration
	during := map[string][]victimSample{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pid := keeperPid(b)
		before := processCPU(b, pid)
		start := time.Now()
		if _, stderr, code := benchPodrun(b, "exec", "kp-flood", "--", "touch", "/tmp/go"); code != 0 {
			b.Fatalf("exec: exit %d:\n%s", code, stderr)
		}
		for _, v := range victims {
			during[v] = append(during[v], measureVictim(b, v, urls[v]))
		}
		done := fmt.Sprintf("flood-done-%d", i)
		for deadline := time.Now().Add(10 * time.Minute); ; {
			out, _, _ := benchPodrun(b, "logs", "--tail", "1", "kp-flood")
			if strings.TrimSpace(out) == done {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no %s in the log after 10 minutes", done)
			}
			time.Sleep(100 * time.Millisecond)
		}
		wall += time.Since(start)
		cpu += processCPU(b, pid) - before
	}
	b.StopTimer()
	mib := float64(b.N) * floodLines / (1 << 20)
	b.ReportMetric(cpu.Seconds()/mib*1000, "keeper-ms/MiB")
	b.ReportMetric(mib/wall.Seconds(), "container-MiB/s")
	fmt.Printf("\nkeeper flood: %d run(s) of %d MiB of empty lines: keeper CPU %.0f ms/MiB of output, the container wrote %.2f MiB/s\n",
		b.N, floodLines>>20, cpu.Seconds()/mib*1000, mib/wall.Seconds())
	for _, v := range victims {
		var lat50, lat99, loop []time.Duration
		for _, s := range during[v] {
			lat50, lat99, loop = append(lat50, s.p50), append(lat99, s.p99), append(loop, s.loop)
		}
		fmt.Printf("%s, idle node:    HTTP p50 %v p99 %v, shell loop %v\n", v, idle[v].p50, idle[v].p99, idle[v].loop)
		fmt.Printf("%s, during flood: HTTP p50 %v p99 %v, shell loop %v (medians over the runs)\n",
			v, median(lat50), median(lat99), median(loop))
	}
}

// victimSample is what another pod sees: its HTTP latency, and how long a
// fixed shell loop takes in it.
type victimSample struct {
	p50, p99, loop time.Duration
}

// measureVictim measures the victim pod: 100 requests 10 ms apart, and a loop of
// 100,000 iterations run with exec.
func measureVictim(b *testing.B, pod, url string) victimSample {
	client := &http.Client{Timeout: 10 * time.Second}
	var lat []time.Duration
	for range 100 {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	start := time.Now()
	if _, stderr, code := benchPodrun(b, "exec", pod, "--", "sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"); code != 0 {
		b.Fatalf("exec: exit %d:\n%s", code, stderr)
	}
	return victimSample{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], loop: time.Since(start)}
}

// processCPU is the user and system time process pid has used.
func processCPU(b testing.TB, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command (in parentheses): state is field 3, utime 14, stime 15.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}
