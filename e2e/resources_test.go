package e2e

// End-to-end tests of resources: a memory limit OOM-kills a process that
// exceeds it and the container shows reason OOMKilled; cpu and memory limits
// land in the container's and the pod's cgroups; the pod cgroup is gone after
// `down`; the QoS class and oom_score_adj are the kubelet's. Helpers are
// prefixed rs; the pod cgroup leak check of the harness lives here too.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupV2Only reports whether the host has cgroup v2 only.
func cgroupV2Only() bool {
	_, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers"))
	return err == nil
}

// e2ePodCgroups lists the pod cgroups of the suite's namespace in every
// hierarchy (/sys/fs/cgroup/<controller>/podrun-e2e/pod<uid> on v1,
// /sys/fs/cgroup/podrun-e2e/pod<uid> on v2), and the stream keepers' cgroup
// (podrun-e2e/keeper), which the last keeper removes when it ends.
func e2ePodCgroups() map[string]bool {
	out := map[string]bool{}
	for _, pattern := range []string{
		filepath.Join(cgroupMount, e2eNamespace, "pod*"),
		filepath.Join(cgroupMount, "*", e2eNamespace, "pod*"),
		filepath.Join(cgroupMount, e2eNamespace, "keeper"),
		filepath.Join(cgroupMount, "*", e2eNamespace, "keeper"),
	} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				out[m] = true
			}
		}
	}
	return out
}

// e2eRemoveCgroup removes a leaked cgroup and the cgroups below it, deepest
// first (cgroupfs directories go with rmdir only).
func e2eRemoveCgroup(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// e2eRemoveNamespaceCgroups removes the parent cgroups podrun made for the
// suite's containerd namespace (/<namespace> in each hierarchy), once the
// leak check has removed every pod cgroup below them.
func e2eRemoveNamespaceCgroups() error {
	dirs, _ := filepath.Glob(filepath.Join(cgroupMount, "*", e2eNamespace))
	dirs = append(dirs, filepath.Join(cgroupMount, e2eNamespace))
	var errs []error
	for _, d := range dirs {
		errs = append(errs, e2eRemoveCgroup(d))
	}
	return errors.Join(errs...)
}

// podCgroup is pod uid's cgroup path relative to a hierarchy's root.
func podCgroup(uid string) string { return filepath.Join(e2eNamespace, "pod"+uid) }

// readCgroupFile returns the trimmed content of a cgroup file of controller (ignored
// on v2) at rel.
func readCgroupFile(t *testing.T, controller, rel, file string) string {
	t.Helper()
	dir := filepath.Join(cgroupMount, controller, rel)
	if cgroupV2Only() {
		dir = filepath.Join(cgroupMount, rel)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("reading the cgroup file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// memoryHogPod is a pod whose container hog fills memory past its 20Mi limit.
func memoryHogPod(name, restartPolicy string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  containers:
  - name: hog
    image: %s
    command: ["tail", "/dev/zero"]
    resources:
      limits:
        memory: 20Mi
`, name, restartPolicy, H.Image)
}

// TestResourcesOOMKilled: a container over its 20Mi memory limit is killed
// by the kernel; the pod fails with exit code 137 and reason OOMKilled in
// `up`'s message and in `podrun status`.
func TestResourcesOOMKilled(t *testing.T) {
	H.require(t)
	_, stdout, stderr, code := runUp(t, "rs-oom", memoryHogPod("rs-oom", "Never"))
	if code != 1 {
		t.Fatalf("podrun up: exit %d, want 1 (pod failed); stdout %q stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `container "hog" exited with code 137 (OOMKilled)`) {
		t.Errorf("up stderr does not name the OOM kill:\n%s", stderr)
	}
	pod := podStatus(t, "rs-oom")
	if pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", pod.Status.Phase)
	}
	if pod.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("qosClass %q, want Burstable (memory only)", pod.Status.QOSClass)
	}
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %+v", pod.Status.ContainerStatuses)
	}
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("state %+v, want terminated with reason OOMKilled and exit code 137", pod.Status.ContainerStatuses[0].State)
	}
	if row := psRow(t, "rs-oom", "-a"); len(row) < 4 || row[3] != "OOMKilled" {
		t.Errorf("ps -a row %q, want STATUS OOMKilled", row)
	}
}

// TestResourcesCgroups: requests and limits in the container cgroups (cpu
// shares, CFS quota and period, memory and memory+swap on v1), the sums in
// the pod cgroup, the Burstable oom_score_adj inside the container,
// qosClass in `status -o yaml`; after `down` the pod cgroup is gone from
// every hierarchy.
func TestResourcesCgroups(t *testing.T) {
	H.require(t)
	file, _ := mustRunUp(t, "rs-limits", `apiVersion: v1
kind: Pod
metadata:
  name: rs-limits
spec:
  containers:
  - name: app
    image: `+H.Image+`
    command: `+sleeperCommand+`
    resources:
      requests: {cpu: 100m, memory: 16Mi}
      limits: {cpu: 250m, memory: 32Mi}
  - name: side
    image: `+H.Image+`
    command: `+sleeperCommand+`
    resources:
      limits: {cpu: 50m, memory: 16Mi}
`)
	pod := podStatus(t, "rs-limits")
	uid := string(pod.UID)
	ids := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		ids[cs.Name] = strings.TrimPrefix(cs.ContainerID, "containerd://")
	}
	app := filepath.Join(podCgroup(uid), ids["app"])
	side := filepath.Join(podCgroup(uid), ids["side"])
	if cgroupV2Only() {
		for _, c := range []struct{ rel, file, want string }{
			{app, "memory.max", "33554432"},
			{app, "cpu.max", "25000 100000"},
			{app, "memory.oom.group", "1"},
			{side, "cpu.max", "5000 100000"},
			{podCgroup(uid), "memory.max", "50331648"},
			{podCgroup(uid), "cpu.max", "30000 100000"},
		} {
			if got := readCgroupFile(t, "", c.rel, c.file); got != c.want {
				t.Errorf("%s/%s = %q, want %q", c.rel, c.file, got, c.want)
			}
		}
	} else {
		for _, c := range []struct{ controller, rel, file, want string }{
			{"memory", app, "memory.limit_in_bytes", "33554432"},
			{"cpu", app, "cpu.cfs_quota_us", "25000"},
			{"cpu", app, "cpu.cfs_period_us", "100000"},
			{"cpu", app, "cpu.shares", "102"},
			{"cpu", side, "cpu.shares", "51"}, // the request defaults to the limit
			{"cpu", side, "cpu.cfs_quota_us", "5000"},
			{"memory", side, "memory.limit_in_bytes", "16777216"},
			{"memory", podCgroup(uid), "memory.limit_in_bytes", "50331648"},
			{"cpu", podCgroup(uid), "cpu.cfs_quota_us", "30000"},
			{"cpu", podCgroup(uid), "cpu.shares", "153"},
		} {
			if got := readCgroupFile(t, c.controller, c.rel, c.file); got != c.want {
				t.Errorf("%s %s/%s = %q, want %q", c.controller, c.rel, c.file, got, c.want)
			}
		}
		if _, err := os.Stat(filepath.Join(cgroupMount, "memory", "memory.memsw.limit_in_bytes")); err == nil {
			if got := readCgroupFile(t, "memory", app, "memory.memsw.limit_in_bytes"); got != "33554432" {
				t.Errorf("memory+swap limit %q, want the memory limit (no swap)", got)
			}
		}
		// Inside, the container sees its own memory cgroup.
		out, stderr, code := H.Podrun(t, "", "exec", "rs-limits", "-c", "app", "--", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
		if code != 0 || strings.TrimSpace(out) != "33554432" {
			t.Errorf("memory limit seen inside: %q (exit %d, stderr %q), want 33554432", out, code, stderr)
		}
	}

	// Burstable: 1000 - 1000*request/MemTotal, at least 3 and at most 999.
	out, _, code := H.Podrun(t, "", "exec", "rs-limits", "-c", "app", "--", "cat", "/proc/self/oom_score_adj")
	if want := strconv.Itoa(burstableOOMScoreAdj(t, 16<<20)); code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("oom_score_adj inside %q (exit %d), want %s", out, code, want)
	}

	yaml, stderr, code := H.Podrun(t, "", "status", "rs-limits", "-o", "yaml")
	if code != 0 || !strings.Contains(yaml, "qosClass: Burstable") {
		t.Errorf("status -o yaml (exit %d, stderr %q) has no qosClass: Burstable:\n%s", code, stderr, yaml)
	}

	cg := podCgroup(uid)
	if !e2ePodCgroupsHave(cg) {
		t.Fatalf("pod cgroup %s not found while the pod runs", cg)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("podrun down: exit %d; stderr:\n%s", code, stderr)
	}
	if e2ePodCgroupsHave(cg) {
		t.Errorf("pod cgroup %s left after down: %v", cg, e2ePodCgroups())
	}
}

// e2ePodCgroupsHave reports whether pod cgroup rel exists in any hierarchy.
func e2ePodCgroupsHave(rel string) bool {
	for p := range e2ePodCgroups() {
		if strings.HasSuffix(p, "/"+rel) {
			return true
		}
	}
	return false
}

// burstableOOMScoreAdj is the kubelet's oom_score_adj of a Burstable
// container requesting req bytes on this machine.
func burstableOOMScoreAdj(t *testing.T, req int64) int {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	adj := int(1000 - 1000*req/(kb*1024))
	switch {
	case adj < 3:
		return 3
	case adj == 1000:
		return 999
	}
	return adj
}

// TestResourcesOOMKilledUnwatched: `up --wait=running` returns while the
// container still runs; it goes over its memory limit a few seconds later,
// when no podrun process is left to see containerd's OOM event. `status`
// still shows it terminated OOMKilled (read from its cgroup's counter, as
// containerd's CRI, which always watches, would have said), and so does
// `ps`. (The record a later podrun makes when it finishes the task is
// unit-tested: run.TestOOMKillFromTheCgroup.)
func TestResourcesOOMKilledUnwatched(t *testing.T) {
	H.require(t)
	_, stdout, stderr, code := runUp(t, "rs-oom-late", `apiVersion: v1
kind: Pod
metadata:
  name: rs-oom-late
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: `+H.Image+`
    command: ["sh", "-c", "sleep 3; exec tail /dev/zero"]
    resources:
      limits:
        memory: 20Mi
`, "--wait=running")
	if code != 0 {
		t.Fatalf("podrun up --wait=running: exit %d; stdout %q stderr:\n%s", code, stdout, stderr)
	}
	term := func(pod corev1.Pod) *corev1.ContainerStateTerminated {
		if len(pod.Status.ContainerStatuses) != 1 {
			return nil
		}
		return pod.Status.ContainerStatuses[0].State.Terminated
	}
	waitStatus(t, "rs-oom-late", 60*time.Second, "the container terminated", func(pod corev1.Pod) (bool, string) {
		return term(pod) != nil, fmt.Sprintf("%+v", pod.Status.ContainerStatuses)
	})
	pod := podStatus(t, "rs-oom-late")
	if tm := term(pod); tm == nil || tm.Reason != "OOMKilled" || tm.ExitCode != 137 {
		t.Errorf("state %+v, want terminated OOMKilled (137)", pod.Status.ContainerStatuses[0].State)
	}
	if row := psRow(t, "rs-oom-late", "-a"); len(row) < 4 || row[3] != "OOMKilled" {
		t.Errorf("ps -a row %q, want STATUS OOMKilled", row)
	}
}

// TestResourcesOOMKilledLastState: under restartPolicy Always with a
// supervisor (`up -f`), the OOM-killed attempt shows as lastState
// terminated OOMKilled (137) while the container waits in CrashLoopBackOff
// or runs again.
func TestResourcesOOMKilledLastState(t *testing.T) {
	H.require(t)
	upForeground(t, "rs-oom-always", memoryHogPod("rs-oom-always", "Always"), "--wait", "running")
	waitStatus(t, "rs-oom-always", 60*time.Second, "lastState OOMKilled", func(pod corev1.Pod) (bool, string) {
		if len(pod.Status.ContainerStatuses) != 1 {
			return false, "no container status"
		}
		cs := pod.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		seen, _ := json.Marshal(cs)
		return last != nil && last.Reason == "OOMKilled" && last.ExitCode == 137, string(seen)
	})
}

// TestResourcesPodCgroupRollback: a pod that fails is rolled back with its
// pod cgroup; kept with --keep-on-failure, its half-made remains (the pod
// cgroup among them) go with `down`.
func TestResourcesPodCgroupRollback(t *testing.T) {
	H.require(t)
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: rs-rollback
spec:
  restartPolicy: Never
  initContainers:
  - name: fail
    image: ` + H.Image + `
    command: ["false"]
    resources:
      limits: {cpu: 100m, memory: 16Mi}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["true"]
`
	before := e2ePodCgroups()
	if _, _, stderr, code := runUp(t, "rs-rollback", manifest); code != 1 {
		t.Fatalf("podrun up: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if left := e2eNew(before, e2ePodCgroups()); len(left) > 0 {
		t.Errorf("pod cgroups left after the rollback: %v", left)
	}

	if _, _, stderr, code := runUp(t, "rs-rollback", manifest, "--keep-on-failure"); code != 1 {
		t.Fatalf("podrun up --keep-on-failure: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	kept := e2eNew(before, e2ePodCgroups())
	if len(kept) == 0 {
		t.Fatalf("no pod cgroup kept with --keep-on-failure")
	}
	if _, stderr, code := H.Podrun(t, "", "down", "rs-rollback"); code != 0 {
		t.Fatalf("podrun down: exit %d; stderr:\n%s", code, stderr)
	}
	if left := e2eNew(before, e2ePodCgroups()); len(left) > 0 {
		t.Errorf("pod cgroups left after down of the half-made pod: %v", left)
	}
}

// TestResourcesPodLevel: pod-level resources (spec.resources) limit the pod
// cgroup, stand in for the limits a container does not set, and make the
// pod Guaranteed (its requests default to its limits), so its container
// gets oom_score_adj -997, or podrun's own when podrun may not go lower.
func TestResourcesPodLevel(t *testing.T) {
	H.require(t)
	mustRunUp(t, "rs-podlevel", `apiVersion: v1
kind: Pod
metadata:
  name: rs-podlevel
spec:
  resources:
    limits: {cpu: 500m, memory: 64Mi}
  containers:
  - name: app
    image: `+H.Image+`
    command: `+sleeperCommand+`
`)
	pod := podStatus(t, "rs-podlevel")
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass %q, want Guaranteed", pod.Status.QOSClass)
	}
	pcg := podCgroup(string(pod.UID))
	app := filepath.Join(pcg, strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://"))
	checks := []struct{ controller, rel, file, want string }{
		{"memory", pcg, "memory.limit_in_bytes", "67108864"},
		{"cpu", pcg, "cpu.cfs_quota_us", "50000"},
		{"cpu", pcg, "cpu.shares", "512"},
		{"memory", app, "memory.limit_in_bytes", "67108864"},
		{"cpu", app, "cpu.cfs_quota_us", "50000"},
	}
	if cgroupV2Only() {
		checks = []struct{ controller, rel, file, want string }{
			{"", pcg, "memory.max", "67108864"},
			{"", pcg, "cpu.max", "50000 100000"},
			{"", app, "memory.max", "67108864"},
			{"", app, "cpu.max", "50000 100000"},
		}
	}
	for _, c := range checks {
		if got := readCgroupFile(t, c.controller, c.rel, c.file); got != c.want {
			t.Errorf("%s %s/%s = %q, want %q", c.controller, c.rel, c.file, got, c.want)
		}
	}
	want := -997
	if own := oomScoreAdjFloor(t); own > want {
		want = own
	}
	out, _, code := H.Podrun(t, "", "exec", "rs-podlevel", "--", "cat", "/proc/self/oom_score_adj")
	if code != 0 || strings.TrimSpace(out) != strconv.Itoa(want) {
		t.Errorf("oom_score_adj inside %q (exit %d), want %d", out, code, want)
	}
}

// oomScoreAdjFloor is the lowest oom_score_adj a process started from
// here may get: -1000 with CAP_SYS_RESOURCE, else this process's own.
func oomScoreAdjFloor(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			if set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64); err == nil && set&(1<<24) != 0 {
				return -1000 // CAP_SYS_RESOURCE
			}
		}
	}
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	adj, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return adj
}
