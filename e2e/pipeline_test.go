package e2e

// End-to-end tests of podrun's pipeline: init containers, idempotent up,
// rollback, graceful termination, crash recovery, run-to-completion pods,
// hostNetwork, the shared shim, env expansion and volumes.
//
// Every test registers `podrun down` for what it creates before it runs
// `podrun up`, so that the suite's leak check stays clean when a test fails.
// Helpers are prefixed pl.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/errdefs"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

const (
	labelPodName   = "io.podrun.pod.name"
	labelPodNS     = "io.podrun.pod.namespace"
	labelPodUID    = "io.podrun.pod.uid"
	labelContainer = "io.podrun.container.name"
	labelKind      = "io.podrun.container.kind"

	// sleeperCommand is an app container command that exits promptly on SIGTERM.
	sleeperCommand = `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]`
)

// ---- helpers ----

// downOnCleanup registers `podrun down` of the given files or pods for the
// end of the test, whatever its outcome.
func downOnCleanup(t *testing.T, targets ...string) {
	t.Helper()
	t.Cleanup(func() {
		_, stderr, code := H.Podrun(t, "", append([]string{"down"}, targets...)...)
		if code != 0 {
			t.Errorf("cleanup: podrun down %s: exit %d; stderr:\n%s", strings.Join(targets, " "), code, stderr)
		}
	})
}

// runUp writes yaml to a manifest, registers its down, and runs `podrun up
// extra... FILE` (runUpTimed without the time).
func runUp(t *testing.T, name, yaml string, extra ...string) (file, stdout, stderr string, code int) {
	t.Helper()
	file, stdout, stderr, code, _ = runUpTimed(t, name, yaml, extra...)
	return file, stdout, stderr, code
}

// mustRunUp is runUp that fails the test unless up exits 0.
func mustRunUp(t *testing.T, name, yaml string, extra ...string) (file, stdout string) {
	t.Helper()
	file, stdout, _ = mustRunUpTimed(t, name, yaml, extra...)
	return file, stdout
}

// listPods returns the pods `podrun ps -a -o json` lists.
func listPods(t *testing.T) []corev1.Pod {
	t.Helper()
	stdout, stderr, code := H.Podrun(t, "", "ps", "-a", "-o", "json")
	if code != 0 {
		t.Fatalf("podrun ps -a -o json: exit %d; stderr:\n%s", code, stderr)
	}
	var list corev1.PodList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("podrun ps -a -o json: decoding %q: %v", stdout, err)
	}
	return list.Items
}

// podNamed returns pod default/name as `podrun ps -a -o json` shows it; it fails
// the test unless exactly one is listed.
func podNamed(t *testing.T, name string) corev1.Pod {
	t.Helper()
	var found []corev1.Pod
	for _, p := range listPods(t) {
		if p.Namespace == "default" && e2eFileName(p) == name {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("podrun ps -a -o json lists %d pods named default/%s, want 1", len(found), name)
	}
	return found[0]
}

// e2eFileName is a pod's name as its file says: a static pod of the daemon
// is <name>-<node> (the kubelet's naming).
func e2eFileName(p corev1.Pod) string {
	switch p.Annotations["kubernetes.io/config.source"] {
	case "file", "http":
		return strings.TrimSuffix(p.Name, "-"+p.Spec.NodeName)
	}
	return p.Name
}

// psRow returns the fields of pod default/name's row in `podrun ps [flags]`
// (NAMESPACE NAME READY STATUS RESTARTS AGE IP ...), or nil when it is not listed.
func psRow(t *testing.T, name string, flags ...string) []string {
	t.Helper()
	stdout, stderr, code := H.Podrun(t, "", append([]string{"ps"}, flags...)...)
	if code != 0 {
		t.Fatalf("podrun ps %v: exit %d; stderr:\n%s", flags, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAMESPACE") {
		t.Fatalf("podrun ps %v: no header in:\n%s", flags, stdout)
	}
	var row []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) >= 7 && f[0] == "default" && (f[1] == name || f[1] == staticPodName(name)) {
			if row != nil {
				t.Fatalf("podrun ps %v: pod %s listed twice:\n%s", flags, name, stdout)
			}
			row = f
		}
	}
	return row
}

// podContainers returns the containerd containers of pod default/name.
func podContainers(t *testing.T, name string) []containerd.Container {
	t.Helper()
	c, ctx := H.Client(t)
	all, err := c.Containers(ctx)
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	var out []containerd.Container
	for _, ctr := range all {
		l, err := ctr.Labels(ctx)
		if err != nil {
			if errdefs.IsNotFound(err) {
				continue
			}
			t.Fatalf("labels of %s: %v", ctr.ID(), err)
		}
		if (l[labelPodName] == name || l[labelPodName] == name+"-"+H.Node) && l[labelPodNS] == "default" {
			out = append(out, ctr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// podContainerIDs returns the IDs of pod default/name's containers.
func podContainerIDs(t *testing.T, name string) []string {
	t.Helper()
	var ids []string
	for _, c := range podContainers(t, name) {
		ids = append(ids, c.ID())
	}
	return ids
}

// initRunningUID returns the UID of pod default/name while the task of one of
// its init containers runs, else "".
func initRunningUID(t *testing.T, name string) string {
	t.Helper()
	_, ctx := H.Client(t)
	for _, ctr := range podContainers(t, name) {
		l, err := ctr.Labels(ctx)
		if err != nil || l[labelKind] != "init" {
			continue
		}
		if task, err := ctr.Task(ctx, nil); err == nil {
			if st, err := task.Status(ctx); err == nil && st.Status == containerd.Running {
				return l[labelPodUID]
			}
		}
	}
	return ""
}

// findSandboxID returns the ID of the pause container among ctrs.
func findSandboxID(t *testing.T, ctrs []containerd.Container) string {
	t.Helper()
	_, ctx := H.Client(t)
	for _, ctr := range ctrs {
		if l, err := ctr.Labels(ctx); err == nil && l[labelContainer] == "POD" {
			return ctr.ID()
		}
	}
	t.Fatalf("no pause container (label %s=POD) among %d containers", labelContainer, len(ctrs))
	return ""
}

// runningTaskPIDs returns the PIDs of the running tasks of ctrs by container ID
// (0 for a container without a task).
func runningTaskPIDs(t *testing.T, ctrs []containerd.Container) map[string]uint32 {
	t.Helper()
	_, ctx := H.Client(t)
	out := map[string]uint32{}
	for _, ctr := range ctrs {
		task, err := ctr.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			out[ctr.ID()] = 0
			continue
		}
		if err != nil {
			t.Fatalf("task of %s: %v", ctr.ID(), err)
		}
		out[ctr.ID()] = task.Pid()
	}
	return out
}

// nsInode is the inode of the namespace file at path.
func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("namespace %s: %v", path, err)
	}
	return st.Ino
}

// tasksOf returns the IDs of the tasks in the suite's namespace whose
// container is one of ids, or has no container record at all, or carries
// label value uid.
func tasksOf(t *testing.T, ids map[string]bool, uid string) []string {
	t.Helper()
	c, ctx := H.Client(t)
	resp, err := c.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		t.Fatalf("listing tasks: %v", err)
	}
	var out []string
	for _, task := range resp.Tasks {
		if ids[task.ID] {
			out = append(out, task.ID)
			continue
		}
		ctr, err := c.LoadContainer(ctx, task.ID)
		if err != nil {
			out = append(out, task.ID+" (no container record: "+err.Error()+")")
			continue
		}
		if l, err := ctr.Labels(ctx); err == nil && uid != "" && l[labelPodUID] == uid {
			out = append(out, task.ID)
		}
	}
	return out
}

// allTasks returns the IDs of every task in the suite's namespace.
func allTasks(t *testing.T) map[string]bool {
	t.Helper()
	c, ctx := H.Client(t)
	resp, err := c.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		t.Fatalf("listing tasks: %v", err)
	}
	out := map[string]bool{}
	for _, task := range resp.Tasks {
		out[task.ID] = true
	}
	return out
}

// networkTraces lists what CNI keeps for a sandbox container ID on the
// host: host-local IP reservations naming it and iptables lines mentioning it.
func networkTraces(t *testing.T, sandboxID string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(e2eIPAMDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || net.ParseIP(d.Name()) == nil {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), sandboxID) {
			out = append(out, "IP reservation "+p)
		}
		return nil
	})
	rules, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	for _, l := range strings.Split(string(rules), "\n") {
		if strings.Contains(l, sandboxID) {
			out = append(out, "iptables: "+l)
		}
	}
	return out
}

// listNetns returns the names of /run/netns/podrun-* entries.
func listNetns(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ents, err := os.ReadDir("/run/netns")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading /run/netns: %v", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "podrun-") {
			out[e.Name()] = true
		}
	}
	return out
}

// listPodDirs returns the entries of H.Root/pods.
func listPodDirs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ents, err := os.ReadDir(filepath.Join(H.Root, "pods"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading pods dir: %v", err)
	}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// hostState is what a pod may leave on the host besides its containers:
// tasks, network namespaces and pod directories.
type hostState struct {
	tasks, netns, dirs map[string]bool
}

func captureHostState(t *testing.T) hostState {
	t.Helper()
	return hostState{tasks: allTasks(t), netns: listNetns(t), dirs: listPodDirs(t)}
}

// checkNothingLeft fails the test if a task, network namespace or pod
// directory appeared since before; whose names what would have left it.
func checkNothingLeft(t *testing.T, before hostState, whose string) {
	t.Helper()
	if n := e2eNew(before.tasks, allTasks(t)); len(n) != 0 {
		t.Errorf("tasks left by %s: %v", whose, n)
	}
	if n := e2eNew(before.netns, listNetns(t)); len(n) != 0 {
		t.Errorf("network namespaces left by %s: %v", whose, n)
	}
	if n := e2eNew(before.dirs, listPodDirs(t)); len(n) != 0 {
		t.Errorf("pod directories left by %s: %v", whose, n)
	}
}

// checkRolledBack checks a `podrun up` of pod default/name that failed at
// run time: exit 1, stderr holds every string of want, stdout does not
// report the pod created, and nothing of it is left since before. whose
// names the pod in the messages ("the failed pod").
func checkRolledBack(t *testing.T, name, whose string, before hostState, stdout, stderr string, code int, want ...string) {
	t.Helper()
	if code != 1 {
		t.Errorf("up: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("up stderr does not contain %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stdout, name+" created") {
		t.Errorf("up stdout = %q: %s reported as created", stdout, whose)
	}
	if ids := podContainerIDs(t, name); len(ids) != 0 {
		t.Errorf("containers of %s are left: %v", whose, ids)
	}
	checkNothingLeft(t, before, whose)
}

type mountEntry struct {
	point, fstype, options string
}

// hostMounts returns the host's mounts (from /proc/self/mountinfo).
func hostMounts(t *testing.T) []mountEntry {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("reading mountinfo: %v", err)
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, mountEntry{point: e2eUnescape(f[4]), fstype: g[0], options: g[2]})
	}
	return out
}

// mountPointsMatching returns the mount points for which keep is true.
func mountPointsMatching(t *testing.T, keep func(mountEntry) bool) []string {
	t.Helper()
	var out []string
	for _, m := range hostMounts(t) {
		if keep(m) {
			out = append(out, m.point+" ("+m.fstype+")")
		}
	}
	return out
}

// httpGetRetry GETs url with a short timeout, retrying a few times.
func httpGetRetry(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for i := 0; i < 10; i++ {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		code, body, err := getWithTimeout(client, url)
		if err != nil {
			lastErr = err
			continue
		}
		if code != http.StatusOK {
			lastErr = fmt.Errorf("status %d, body %q", code, body)
			continue
		}
		return body
	}
	t.Fatalf("GET %s: %v", url, lastErr)
	return ""
}

// containerLogPath is a container's CRI log file.
func containerLogPath(pod corev1.Pod, container string, restart int) string {
	return filepath.Join(H.LogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container, fmt.Sprintf("%d.log", restart))
}

var criLineRE = regexp.MustCompile(`^\S+ (stdout|stderr) (F|P) `)

// containerLog reads a container's CRI log, checks every line's format and returns
// the texts of its records.
func containerLog(t *testing.T, pod corev1.Pod, container string, restart int) []string {
	t.Helper()
	var texts []string
	for _, r := range containerLogRecords(t, pod, container, restart) {
		texts = append(texts, r.text)
	}
	return texts
}

type logRecord struct{ stream, tag, text string }

// containerLogRecords reads a container's CRI log, checks every line's format and
// returns its records.
func containerLogRecords(t *testing.T, pod corev1.Pod, container string, restart int) []logRecord {
	t.Helper()
	p := containerLogPath(pod, container, restart)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading log of %s: %v", container, err)
	}
	t.Logf("%s:\n%s", p, e2eClip(string(b)))
	var recs []logRecord
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		sm := criLineRE.FindStringSubmatch(l)
		if sm == nil {
			t.Errorf("%s: line %q is not in the CRI format `<time> <stdout|stderr> <F|P> <text>`", p, l)
			continue
		}
		if ts := strings.Fields(l)[0]; !validRFC3339Nano(ts) {
			t.Errorf("%s: line %q: time %q is not RFC 3339", p, l, ts)
		}
		recs = append(recs, logRecord{stream: sm[1], tag: sm[2], text: l[len(sm[0]):]})
	}
	return recs
}

func validRFC3339Nano(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// timeDown runs `podrun down args...`, requires exit 0 and returns how long it took.
func timeDown(t *testing.T, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	_, stderr, code := H.Podrun(t, "", append([]string{"down"}, args...)...)
	d := time.Since(start)
	if code != 0 {
		t.Fatalf("podrun down %v: exit %d; stderr:\n%s", args, code, stderr)
	}
	return d
}

// procStatusField returns a field of /proc/<pid>/status.
func procStatusField(t *testing.T, pid uint32, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading status of pid %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return ""
}

// ---- 1. the seed scenario ----

func TestPipelineSeed(t *testing.T) {
	H.require(t)
	src, err := os.ReadFile("../examples/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	www := filepath.Join(t.TempDir(), "seed", "www")
	y := string(src)
	for old, repl := range map[string]string{
		"podrun.local/busybox:1":            H.Image,
		"/var/lib/podrun-examples/seed/www": www,
		"\n  name: seed\n":                  "\n  name: pl-seed\n", // its own name: no clash with other tests
	} {
		if !strings.Contains(y, old) {
			t.Fatalf("examples/seed.yaml no longer contains %q", old)
		}
		y = strings.ReplaceAll(y, old, repl)
	}
	_, stdout := mustRunUp(t, "seed", y)
	if !strings.Contains(stdout, "pod/default/pl-seed created (Running)") {
		t.Errorf("up stdout = %q, want pod/default/pl-seed created (Running)", stdout)
	}

	order, err := os.ReadFile(filepath.Join(www, "order.txt"))
	if err != nil {
		t.Fatalf("the init containers' order file: %v", err)
	}
	if got, want := strings.Split(strings.TrimSpace(string(order)), "\n"), []string{"1 write-pages", "2 fix-permissions"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("order.txt = %q, want lines %q", order, want)
	}
	st, err := os.Stat(filepath.Join(www, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("index.html mode = %v, want 0644 (set by fix-permissions)", st.Mode().Perm())
	}

	pod := podNamed(t, "pl-seed")
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil {
		t.Fatalf("ps -o json: status.podIP = %q, not an IP", pod.Status.PodIP)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("ps -o json: phase = %q, want Running", pod.Status.Phase)
	}
	body := httpGetRetry(t, "http://"+net.JoinHostPort(ip.String(), "80")+"/")
	if body != "<h1>Hello from podrun</h1>\n" {
		t.Errorf("GET http://%s/ = %q, want the page write-pages wrote", ip, body)
	}

	row := psRow(t, "pl-seed")
	if row == nil {
		t.Fatal("podrun ps does not list pl-seed")
	}
	if row[2] != "1/1" || row[3] != "Running" || row[6] != ip.String() {
		t.Errorf("podrun ps row = %q, want READY 1/1, STATUS Running, IP %s", row, ip)
	}
}

// ---- 2. idempotent up and replace ----

func idempotentPod(value string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: pl-idem
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: ` + H.Image + `
    command: ` + sleeperCommand + `
    env:
    - {name: GREETING, value: "` + value + `"}
`
}

func TestPipelineIdempotentUp(t *testing.T) {
	H.require(t)
	file, stdout := mustRunUp(t, "idem", idempotentPod("one"))
	if !strings.Contains(stdout, "pod/default/pl-idem created (Running)") {
		t.Errorf("first up stdout = %q, want created (Running)", stdout)
	}
	uid1 := podNamed(t, "pl-idem").UID
	ctrs1 := podContainers(t, "pl-idem")
	if len(ctrs1) != 2 {
		t.Fatalf("pl-idem has %d containers in containerd, want 2 (pause and app)", len(ctrs1))
	}
	pids1 := runningTaskPIDs(t, ctrs1)
	sandbox1 := findSandboxID(t, ctrs1)
	if tr := networkTraces(t, sandbox1); len(tr) == 0 {
		t.Errorf("no IP reservation for the sandbox %s of the running pod", sandbox1)
	}
	for id, pid := range pids1 {
		if pid == 0 && id != sandbox1 {
			t.Errorf("container %s has no running task after up", id)
		}
	}
	if pid := pids1[sandbox1]; pid != 0 {
		t.Errorf("the sandbox %s runs a pause (pid %d); a plain pod needs none", sandbox1, pid)
	}

	stdout, stderr, code := H.Podrun(t, "", "up", file)
	if code != 0 {
		t.Fatalf("second up: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "pod/default/pl-idem unchanged") {
		t.Errorf("second up stdout = %q, want unchanged", stdout)
	}
	pids2 := runningTaskPIDs(t, podContainers(t, "pl-idem"))
	if fmt.Sprint(pids1) != fmt.Sprint(pids2) {
		t.Errorf("an unchanged up restarted something: containers and task PIDs before %v, after %v", pids1, pids2)
	}
	if uid := podNamed(t, "pl-idem").UID; uid != uid1 {
		t.Errorf("an unchanged up changed the UID from %s to %s", uid1, uid)
	}

	if err := os.WriteFile(file, []byte(idempotentPod("two")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = H.Podrun(t, "", "up", file)
	if code != 0 {
		t.Fatalf("up of the edited manifest: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "pod/default/pl-idem replaced (Running)") {
		t.Errorf("up of the edited manifest: stdout = %q, want replaced (Running)", stdout)
	}
	pod := podNamed(t, "pl-idem")
	if pod.UID == uid1 || pod.UID == "" {
		t.Errorf("replaced pod UID = %q, want a new one (was %s)", pod.UID, uid1)
	}
	if pod.Spec.Containers[0].Env[0].Value != "two" {
		t.Errorf("ps -o json shows env %v, want the edited value", pod.Spec.Containers[0].Env)
	}
	c, ctx := H.Client(t)
	for id := range pids1 {
		if _, err := c.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
			t.Errorf("old container %s still exists after replace (err %v)", id, err)
		}
	}
	ctrs3 := podContainers(t, "pl-idem")
	if len(ctrs3) != 2 {
		t.Errorf("after replace pl-idem has %d containers, want 2", len(ctrs3))
	}
	sandbox3 := findSandboxID(t, ctrs3)
	for id, pid := range runningTaskPIDs(t, ctrs3) {
		if pid == 0 && id != sandbox3 {
			t.Errorf("container %s has no running task after replace", id)
		}
		if _, old := pids1[id]; old {
			t.Errorf("container %s survived the replace", id)
		}
	}
	if n := len(listNetns(t)); n == 0 {
		t.Errorf("no podrun netns while pl-idem runs")
	}
	if listNetns(t)["podrun-"+string(uid1)] {
		t.Errorf("the old pod's netns podrun-%s is still there after replace", uid1)
	}
	if tr := networkTraces(t, sandbox1); len(tr) != 0 {
		t.Errorf("network state of the replaced pod's sandbox %s left: %q", sandbox1, tr)
	}
}

// ---- 3. a failing init container under restartPolicy Never ----

func TestPipelineInitFailureRollsBack(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	_, stdout, stderr, code := runUp(t, "initfail", `apiVersion: v1
kind: Pod
metadata:
  name: pl-initfail
spec:
  restartPolicy: Never
  initContainers:
  - name: boom
    image: `+H.Image+`
    command: ["sh", "-c", "echo pl-init-last-words; exit 3"]
  containers:
  - name: app
    image: `+H.Image+`
    command: ["echo", "never runs"]
`)
	checkRolledBack(t, "pl-initfail", "the failed pod", before, stdout, stderr, code,
		`"boom"`, "code 3", "pl-init-last-words", "pl-initfail")
	if row := psRow(t, "pl-initfail", "-a"); row != nil && row[3] == "Running" {
		t.Errorf("podrun ps -a shows the failed pod running: %q", row)
	}
}

// ---- 4. graceful termination ----

func TestPipelineGracePeriod(t *testing.T) {
	H.require(t)
	// ignoring is a pod whose app ignores SIGTERM, with the given grace period.
	ignoring := func(name string, grace int) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: ` + strconv.Itoa(grace) + `
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]
`
	}
	t.Run("ignores SIGTERM", func(t *testing.T) {
		file, _ := mustRunUp(t, "ignore", ignoring("pl-grace-ignore", 2))
		d := timeDown(t, file)
		if d < 1800*time.Millisecond || d >= 10*time.Second {
			t.Errorf("down of a pod ignoring SIGTERM with a 2 s grace period took %v, want >= 1.8 s and < 10 s", d)
		}
		if n := len(podContainers(t, "pl-grace-ignore")); n != 0 {
			t.Errorf("%d containers left after down", n)
		}
	})
	t.Run("exits on SIGTERM", func(t *testing.T) {
		// The default grace period of 30 s: down must not wait for it.
		file, _ := mustRunUp(t, "exits", `apiVersion: v1
kind: Pod
metadata:
  name: pl-grace-exits
spec:
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`)
		d := timeDown(t, file)
		if d >= 1500*time.Millisecond {
			t.Errorf("down of a pod that exits on SIGTERM took %v, want < 1.5 s", d)
		}
	})
	t.Run("a longer grace period is honoured", func(t *testing.T) {
		file, _ := mustRunUp(t, "ignore6", ignoring("pl-grace-ignore6", 6))
		d := timeDown(t, file)
		if d < 5800*time.Millisecond || d >= 15*time.Second {
			t.Errorf("down of a pod ignoring SIGTERM with a 6 s grace period took %v, want >= 5.8 s and < 15 s", d)
		}
	})
	t.Run("grace-period 0 is at least 2 s", func(t *testing.T) {
		// The pod's own 6 s grace period is overridden; the 2 s minimum is not.
		file, _ := mustRunUp(t, "ignore0", ignoring("pl-grace-ignore0", 6))
		d := timeDown(t, "--grace-period", "0", file)
		if d < 1800*time.Millisecond || d >= 5*time.Second {
			t.Errorf("down --grace-period 0 of a pod ignoring SIGTERM (own grace 6 s) took %v, want the 2 s minimum (>= 1.8 s, < 5 s)", d)
		}
	})
}

// ---- 5. podrun killed mid-pipeline ----

func TestPipelineKilledMidPipeline(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "killed.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: pl-killed
spec:
  initContainers:
  - name: slow
    image: `+H.Image+`
    command: ["sleep", "3"]
  containers:
  - name: app
    image: `+H.Image+`
    command: `+sleeperCommand+`
`)
	downOnCleanup(t, file)
	cmd := H.Start(t, "up", file)

	// Wait until the init container's task runs (the pipeline is in init/slow).
	var uid string
	deadline := time.Now().Add(15 * time.Second)
	for uid == "" && time.Now().Before(deadline) {
		if uid = initRunningUID(t, "pl-killed"); uid == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if uid == "" {
		t.Fatalf("the init container of pl-killed never ran; up's stderr:\n%s", cmd.Stderr.(*CmdOutput).String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", cmd.Process.Pid, err)
	}
	_ = cmd.Wait()
	if out := cmd.Stdout.(*CmdOutput).String(); strings.Contains(out, "created") {
		t.Fatalf("up finished before it was killed (stdout %q): the test did not kill it mid-pipeline", out)
	}
	ids := map[string]bool{}
	for _, ctr := range podContainers(t, "pl-killed") {
		ids[ctr.ID()] = true
	}
	t.Logf("killed up of pod %s mid-pipeline; containers left: %v", uid, ids)
	if !listNetns(t)["podrun-"+uid] {
		t.Errorf("netns podrun-%s missing while the pod is half-made (the test expects the sandbox to be up)", uid)
	}
	short := strings.ReplaceAll(uid, "-", "")[:12]
	sandboxID := short + "-pause"
	// The host end of the pod's veth: eth0@ifN in the pod's netns.
	vethIndex, vethName := 0, ""
	if out, err := exec.Command("ip", "-n", "podrun-"+uid, "-o", "link", "show", "eth0").Output(); err != nil {
		t.Errorf("ip -n podrun-%s link show eth0: %v", uid, err)
	} else if m := regexp.MustCompile(`eth0@if(\d+):`).FindSubmatch(out); m == nil {
		t.Errorf("cannot find the veth peer in %q", out)
	} else {
		vethIndex, _ = strconv.Atoi(string(m[1]))
		if i, err := net.InterfaceByIndex(vethIndex); err == nil {
			vethName = i.Name
		}
	}
	if tr := networkTraces(t, sandboxID); len(tr) == 0 {
		t.Errorf("no IP reservation for %s while the pod is half-made: the test cannot check its release", sandboxID)
	} else {
		t.Logf("network traces of %s before down: %q", sandboxID, tr)
	}

	stdout, stderr, code := H.Podrun(t, "", "down", file)
	if code != 0 {
		t.Fatalf("down after kill -9: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "pod/default/pl-killed deleted") {
		t.Errorf("down stdout = %q, want pod/default/pl-killed deleted", stdout)
	}
	if left := podContainers(t, "pl-killed"); len(left) != 0 {
		t.Errorf("%d containers of the pod left after down", len(left))
	}
	c, ctx := H.Client(t)
	for id := range ids {
		if _, err := c.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
			t.Errorf("container %s still exists after down (err %v)", id, err)
		}
	}
	if tasks := tasksOf(t, ids, uid); len(tasks) != 0 {
		t.Errorf("tasks left after down: %v", tasks)
	}
	if listNetns(t)["podrun-"+uid] {
		t.Errorf("netns /run/netns/podrun-%s left after down", uid)
	}
	if _, err := os.Lstat(filepath.Join(H.Root, "pods", uid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory %s left after down (err %v)", filepath.Join(H.Root, "pods", uid), err)
	}
	if tr := networkTraces(t, sandboxID); len(tr) != 0 {
		t.Errorf("network state of the pod left after down: %q", tr)
	}
	if vethName != "" {
		if i, err := net.InterfaceByIndex(vethIndex); err == nil && i.Name == vethName {
			t.Errorf("the pod's host veth %s (index %d) is still there after down", vethName, vethIndex)
		}
	}
	if m := mountPointsMatching(t, func(m mountEntry) bool {
		return e2eUnder(m.point, H.Root) || strings.Contains(m.point, uid) || strings.Contains(m.point, short)
	}); len(m) != 0 {
		t.Errorf("mounts left after down: %v", m)
	}
}

// ---- 6. run to completion ----

func TestPipelineRunToCompletion(t *testing.T) {
	H.require(t)
	t.Run("Never succeeds", func(t *testing.T) {
		_, stdout := mustRunUp(t, "done", `apiVersion: v1
kind: Pod
metadata:
  name: pl-done
spec:
  restartPolicy: Never
  containers:
  - name: say
    image: `+H.Image+`
    command: ["echo", "done"]
`)
		if !strings.Contains(stdout, "pod/default/pl-done created (Succeeded)") {
			t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
		}
		if row := psRow(t, "pl-done"); row != nil {
			t.Errorf("podrun ps without -a lists the finished pod: %q", row)
		}
		row := psRow(t, "pl-done", "-a")
		if row == nil || row[3] != "Completed" {
			t.Errorf("podrun ps -a row = %q, want STATUS Completed", row)
		}
		pod := podNamed(t, "pl-done")
		if pod.Status.Phase != corev1.PodSucceeded {
			t.Errorf("phase = %q, want Succeeded", pod.Status.Phase)
		}
		// A finished pod keeps its containers for ps -a, but nothing of it
		// runs and its sandbox's network is released.
		ctrs := podContainers(t, "pl-done")
		if len(ctrs) != 2 {
			t.Errorf("the finished pod has %d containers, want 2 (pause and say) kept until down", len(ctrs))
		}
		for id, pid := range runningTaskPIDs(t, ctrs) {
			if pid != 0 {
				t.Errorf("container %s of the finished pod still has a task (pid %d)", id, pid)
			}
		}
		if listNetns(t)["podrun-"+string(pod.UID)] {
			t.Errorf("the finished pod's netns podrun-%s is still there", pod.UID)
		}
		if len(ctrs) > 0 {
			if tr := networkTraces(t, findSandboxID(t, ctrs)); len(tr) != 0 {
				t.Errorf("the finished pod's network is not released: %q", tr)
			}
		}
		recs := containerLogRecords(t, pod, "say", 0)
		if len(recs) != 1 || recs[0] != (logRecord{stream: "stdout", tag: "F", text: "done"}) {
			t.Errorf("log of say = %+v, want one full stdout line \"done\"", recs)
		}
	})
	t.Run("Never fails", func(t *testing.T) {
		_, _, stderr, code := runUp(t, "fail4", `apiVersion: v1
kind: Pod
metadata:
  name: pl-fail4
spec:
  restartPolicy: Never
  containers:
  - name: bad
    image: `+H.Image+`
    command: ["sh", "-c", "echo pl-about-to-fail; exit 4"]
`)
		if code != 1 {
			t.Errorf("up: exit %d, want 1", code)
		}
		if !strings.Contains(stderr, "code 4") || !strings.Contains(stderr, "pl-fail4") {
			t.Errorf("up stderr does not name the pod and exit code 4")
		}
		row := psRow(t, "pl-fail4", "-a")
		if row == nil || row[3] != "Error" {
			t.Errorf("podrun ps -a row = %q, want STATUS Error", row)
		}
		pod := podNamed(t, "pl-fail4")
		if pod.Status.Phase != corev1.PodFailed {
			t.Errorf("phase = %q, want Failed", pod.Status.Phase)
		}
		if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 4 {
			t.Errorf("container statuses = %+v, want bad terminated with exit code 4", cs)
		}
		if listNetns(t)["podrun-"+string(pod.UID)] {
			t.Errorf("the failed pod's netns podrun-%s is still there", pod.UID)
		}
		for id, pid := range runningTaskPIDs(t, podContainers(t, "pl-fail4")) {
			if pid != 0 {
				t.Errorf("container %s of the failed pod still has a task (pid %d)", id, pid)
			}
		}
		if lines := containerLog(t, pod, "bad", 0); !containsLine(lines, "pl-about-to-fail") {
			t.Errorf("log of bad = %q, want pl-about-to-fail", lines)
		}
	})
	t.Run("OnFailure retries", func(t *testing.T) {
		_, stdout := mustRunUp(t, "retry", `apiVersion: v1
kind: Pod
metadata:
  name: pl-retry
spec:
  restartPolicy: OnFailure
  volumes:
  - name: scratch
    emptyDir: {}
  containers:
  - name: flaky
    image: `+H.Image+`
    command: ["sh", "-c", "if [ -e /data/marker ]; then echo pl-second-try; exit 0; fi; touch /data/marker; echo pl-first-try; exit 1"]
    volumeMounts:
    - {name: scratch, mountPath: /data}
`)
		if !strings.Contains(stdout, "pod/default/pl-retry created (Succeeded)") {
			t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
		}
		row := psRow(t, "pl-retry", "-a")
		if row == nil || row[3] != "Completed" || row[4] != "1" {
			t.Errorf("podrun ps -a row = %q, want STATUS Completed, RESTARTS 1", row)
		}
		pod := podNamed(t, "pl-retry")
		if lines := containerLog(t, pod, "flaky", 0); !containsLine(lines, "pl-first-try") {
			t.Errorf("0.log = %q, want pl-first-try", lines)
		}
		if lines := containerLog(t, pod, "flaky", 1); !containsLine(lines, "pl-second-try") {
			t.Errorf("1.log = %q, want pl-second-try", lines)
		}
	})
}

// ---- 7. hostNetwork ----

func TestPipelineHostNetwork(t *testing.T) {
	H.require(t)
	port := freePort(t)
	netnsBefore := listNetns(t)
	mustRunUp(t, "hostnet", `apiVersion: v1
kind: Pod
metadata:
  name: pl-hostnet
spec:
  hostNetwork: true
  containers:
  - name: web
    image: `+H.Image+`
    command: ["sh", "-c", "mkdir -p /tmp/www && echo pl-hostnet-page > /tmp/www/index.html && trap 'exit 0' TERM; httpd -f -p 127.0.0.1:`+strconv.Itoa(port)+` -h /tmp/www & wait"]
`)
	if body := httpGetRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); body != "pl-hostnet-page\n" {
		t.Errorf("GET 127.0.0.1:%d = %q, want the page the pod wrote", port, body)
	}
	pod := podNamed(t, "pl-hostnet")
	row := psRow(t, "pl-hostnet")
	if row == nil {
		t.Fatal("podrun ps does not list pl-hostnet")
	}
	hostIPs := map[string]string{} // ip -> interface
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				hostIPs[ipn.IP.String()] = i.Name
			}
		}
	}
	iface, ok := hostIPs[row[6]]
	switch {
	case !ok:
		t.Errorf("podrun ps shows IP %q for the hostNetwork pod, not one of the host's addresses %v", row[6], hostIPs)
	case strings.HasPrefix(iface, "podrun") || strings.HasPrefix(iface, "veth") || iface == "lo":
		t.Errorf("podrun ps shows IP %s of interface %s for the hostNetwork pod, want the node's address", row[6], iface)
	}
	if pod.Status.PodIP != row[6] {
		t.Errorf("ps -o json podIP %q differs from ps %q", pod.Status.PodIP, row[6])
	}
	if n := e2eNew(netnsBefore, listNetns(t)); len(n) != 0 {
		t.Errorf("network namespaces created for a hostNetwork pod: %v", n)
	}
}

// ---- 8. shims: the pod's, and up to two per core for app containers ----

// TestPipelineShimsPerPod: a shim creates one task at a time, so a pod's app
// containers are spread over up to two shims per
// core (containers i and j share one when i = j mod lanes).
func TestPipelineShimsPerPod(t *testing.T) {
	H.require(t)
	mustRunUp(t, "shim", `apiVersion: v1
kind: Pod
metadata:
  name: pl-shim
spec:
  initContainers:
  - name: setup
    image: `+H.Image+`
    command: ["true"]
  containers:
  - name: one
    image: `+H.Image+`
    command: `+sleeperCommand+`
  - name: two
    image: `+H.Image+`
    command: `+sleeperCommand+`
  - name: three
    image: `+H.Image+`
    command: `+sleeperCommand+`
`)
	_, ctx := H.Client(t)
	ctrs := podContainers(t, "pl-shim")
	names := map[string]bool{}
	shimOf := map[string]string{} // container -> its task's parent (the shim)
	pod := podNamed(t, "pl-shim")
	for _, ctr := range ctrs {
		l, err := ctr.Labels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		name := l[labelContainer]
		names[name] = true
		task, err := ctr.Task(ctx, nil)
		if name == "POD" {
			if !errdefs.IsNotFound(err) {
				t.Errorf("the sandbox of a plain pod has a task (err %v): no pause is needed", err)
			}
			continue
		}
		if name == "setup" {
			continue // exited, its task removed
		}
		if err != nil {
			t.Fatalf("task of %s: %v", ctr.ID(), err)
		}
		shimOf[name] = shimAddress(t, ctr.ID())
		ppid := procStatusField(t, task.Pid(), "PPid")
		cmdline, err := os.ReadFile("/proc/" + ppid + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cmdline), "containerd-shim") {
			t.Errorf("the parent %s of %s is %q, not a containerd shim", ppid, name, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
		// The containers are in the pod's pinned IPC and UTS namespaces.
		for _, ns := range []string{"ipc", "uts"} {
			pin := filepath.Join(H.Root, "pods", string(pod.UID), ns+"-ns")
			if got, want := nsInode(t, fmt.Sprintf("/proc/%d/ns/%s", task.Pid(), ns)), nsInode(t, pin); got != want {
				t.Errorf("container %s is in %s namespace %d, not the pod's pinned %d (%s)", name, ns, got, want, pin)
			}
		}
	}
	if len(names) != 5 || !names["POD"] || !names["setup"] {
		t.Fatalf("containers of pl-shim: %v, want POD, setup, one, two and three", names)
	}
	apps := []string{"one", "two", "three"}
	lanes := min(len(apps), 2*runtime.NumCPU())
	for i, a := range apps {
		for j, b := range apps[:i] {
			if same := shimOf[a] == shimOf[b]; same != (i%lanes == j%lanes) {
				t.Errorf("containers %s and %s share a shim: %v, want %v (%d lanes; shims %v)", a, b, same, !same, lanes, shimOf)
			}
		}
	}
}

// shimAddress is the address of the shim containerd runs container id's
// task in (the bundle's "address" file in containerd's state directory).
func shimAddress(t *testing.T, id string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(H.TmpDir, "containerd", "state", "io.containerd.runtime.v2.task", H.Namespace, id, "address"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("the shim address of %s: %v (%d found)", id, err, len(matches))
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// ---- 9. env expansion, workingDir, readOnly and subPath ----

func TestPipelineEnvArgsAndMounts(t *testing.T) {
	H.require(t)
	roDir, rwDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(roDir, "existing"), []byte("pl-ro-content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stdout := mustRunUp(t, "envargs", `apiVersion: v1
kind: Pod
metadata:
  name: pl-envargs
spec:
  restartPolicy: Never
  volumes:
  - name: ro
    hostPath: {path: `+roDir+`, type: Directory}
  - name: rw
    hostPath: {path: `+rwDir+`, type: Directory}
  containers:
  - name: expand
    image: `+H.Image+`
    command: ["echo", "$(B) $$(A)"]
    env:
    - {name: A, value: x}
    - {name: B, value: "$(A)-y"}
  - name: workdir
    image: `+H.Image+`
    workingDir: /var/www
    command: ["pwd"]
  - name: readonly
    image: `+H.Image+`
    command: ["sh", "-c", "cat /ro/existing; if touch /ro/new; then echo pl-ro-writable; else echo pl-ro-refused; fi"]
    volumeMounts:
    - {name: ro, mountPath: /ro, readOnly: true}
  - name: subpath
    image: `+H.Image+`
    command: ["sh", "-c", "echo pl-in-subpath > /sub/hello && ls /sub"]
    volumeMounts:
    - {name: rw, mountPath: /sub, subPath: deep/er}
`)
	if !strings.Contains(stdout, "pod/default/pl-envargs created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	pod := podNamed(t, "pl-envargs")
	if lines := containerLog(t, pod, "expand", 0); !containsLine(lines, "x-y $(A)") {
		t.Errorf("log of expand = %q, want \"x-y $(A)\"", lines)
	}
	if lines := containerLog(t, pod, "workdir", 0); !containsLine(lines, "/var/www") {
		t.Errorf("log of workdir (pwd) = %q, want /var/www", lines)
	}
	ro := containerLog(t, pod, "readonly", 0)
	if !containsLine(ro, "pl-ro-content") {
		t.Errorf("log of readonly = %q: the hostPath's file is not readable", ro)
	}
	if !containsLine(ro, "pl-ro-refused") || !strings.Contains(strings.Join(ro, "\n"), "Read-only file system") {
		t.Errorf("log of readonly = %q, want the write refused with Read-only file system", ro)
	}
	if _, err := os.Lstat(filepath.Join(roDir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was written through the readOnly mount (err %v)", err)
	}
	got, err := os.ReadFile(filepath.Join(rwDir, "deep", "er", "hello"))
	if err != nil || string(got) != "pl-in-subpath\n" {
		t.Errorf("the subPath write is not in <hostPath>/deep/er/hello: %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(rwDir); len(ents) != 1 || ents[0].Name() != "deep" {
		t.Errorf("hostPath root holds %v, want only the subPath tree deep/", ents)
	}
}

// ---- 10. emptyDir in memory ----

func TestPipelineEmptyDirMemory(t *testing.T) {
	H.require(t)
	_, stdout := mustRunUp(t, "memdir", `apiVersion: v1
kind: Pod
metadata:
  name: pl-memdir
spec:
  restartPolicy: Never
  volumes:
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
  containers:
  - name: df
    image: `+H.Image+`
    command: ["df", "-k", "/mnt"]
    volumeMounts:
    - {name: mem, mountPath: /mnt}
`)
	if !strings.Contains(stdout, "created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	pod := podNamed(t, "pl-memdir")
	lines := containerLog(t, pod, "df", 0)
	found := false
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 6 && f[len(f)-1] == "/mnt" {
			found = true
			kib, err := strconv.Atoi(f[1])
			if f[0] != "tmpfs" || err != nil || kib < 16000 || kib > 16800 {
				t.Errorf("df -k /mnt: %q, want a tmpfs of ~16384 KiB", l)
			}
		}
	}
	if !found {
		t.Errorf("df -k /mnt printed no line for /mnt: %q", lines)
	}
	volDir := filepath.Join(H.Root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "mem")
	if m := mountPointsMatching(t, func(m mountEntry) bool { return m.point == volDir && m.fstype == "tmpfs" }); len(m) != 1 {
		t.Errorf("tmpfs mounts at %s before down: %v, want 1", volDir, m)
	}

	timeDown(t, "pl-memdir")
	live := map[string]bool{}
	for _, p := range listPods(t) {
		live[string(p.UID)] = true
	}
	podsDir := filepath.Join(H.Root, "pods")
	if m := mountPointsMatching(t, func(m mountEntry) bool {
		if m.fstype != "tmpfs" || !e2eUnder(m.point, H.Root) {
			return false
		}
		if rest, ok := strings.CutPrefix(m.point, podsDir+"/"); ok {
			uid, _, _ := strings.Cut(rest, "/")
			return !live[uid] // another test's live pod is not this one's leak
		}
		return true
	}); len(m) != 0 {
		t.Errorf("tmpfs mounts under %s after down: %v", H.Root, m)
	}
}

// ---- 11. several pods in one file, one failing ----

func TestPipelineMultiPodPartialFailure(t *testing.T) {
	H.require(t)
	notADir := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(notADir, []byte("user data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := captureHostState(t)
	_, stdout, stderr, code := runUp(t, "multi", `apiVersion: v1
kind: Pod
metadata:
  name: pl-multi-good
spec:
  containers:
  - name: app
    image: `+H.Image+`
    command: `+sleeperCommand+`
---
apiVersion: v1
kind: Pod
metadata:
  name: pl-multi-bad
spec:
  volumes:
  - name: data
    hostPath: {path: `+notADir+`, type: Directory}
  containers:
  - name: app
    image: `+H.Image+`
    command: `+sleeperCommand+`
    volumeMounts:
    - {name: data, mountPath: /data}
`)
	if code != 1 {
		t.Errorf("up: exit %d, want 1", code)
	}
	if !strings.Contains(stdout, "pod/default/pl-multi-good created (Running)") {
		t.Errorf("up stdout = %q, want pl-multi-good created (Running)", stdout)
	}
	if strings.Contains(stdout, "pl-multi-bad") {
		t.Errorf("up stdout = %q reports the failed pod as a success", stdout)
	}
	if !strings.Contains(stderr, "pl-multi-bad") || !strings.Contains(stderr, notADir) {
		t.Errorf("up stderr does not name the failed pod and its hostPath")
	}
	row := psRow(t, "pl-multi-good")
	if row == nil || row[2] != "1/1" || row[3] != "Running" {
		t.Errorf("podrun ps row of the good pod = %q, want 1/1 Running", row)
	}
	if row := psRow(t, "pl-multi-bad", "-a"); row != nil {
		t.Errorf("podrun ps -a lists the failed pod: %q", row)
	}
	if n := len(podContainers(t, "pl-multi-bad")); n != 0 {
		t.Errorf("%d containers of the failed pod left", n)
	}
	goodIDs := map[string]bool{}
	for _, c := range podContainers(t, "pl-multi-good") {
		goodIDs[c.ID()] = true
	}
	for _, id := range e2eNew(before.tasks, allTasks(t)) {
		if !goodIDs[id] {
			t.Errorf("task %s is neither the good pod's nor was there before", id)
		}
	}
	good := podNamed(t, "pl-multi-good")
	if got := e2eNew(before.dirs, listPodDirs(t)); len(got) != 1 || got[0] != string(good.UID) {
		t.Errorf("new pod directories %v, want only the good pod's %s", got, good.UID)
	}
	if got := e2eNew(before.netns, listNetns(t)); len(got) != 1 || got[0] != "podrun-"+string(good.UID) {
		t.Errorf("new netns %v, want only the good pod's", got)
	}
	if b, err := os.ReadFile(notADir); err != nil || string(b) != "user data\n" {
		t.Errorf("the user's file at the bad hostPath was touched: %q, %v", b, err)
	}
}
