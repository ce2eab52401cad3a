package e2e

// End-to-end tests of the node's admission rules and the host namespaces:
// --policy (Pod Security Standards) on validate and up, --allowed-host-paths,
// --allowed-unsafe-sysctls, shareProcessNamespace, hostPID and hostIPC.
// Helpers are prefixed po; the pl helpers of pipeline_test.go are reused.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podrun/podrun/internal/testimage"
)

// notRestrictedPod breaks the restricted level: no runAsNonRoot, no seccompProfile,
// allowPrivilegeEscalation and capabilities left to the defaults.
const notRestrictedPod = `apiVersion: v1
kind: Pod
metadata:
  name: po-loose
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: IMAGE
    command: ["id"]
`

// checkRefusedAtValidation runs `podrun up ARGS... FILE` for a pod that must be refused at
// validation, and checks exit 2, that stderr holds every line of want, and
// that nothing was created: no container, netns, pod directory or task.
func checkRefusedAtValidation(t *testing.T, name, yaml string, args []string, want ...string) {
	t.Helper()
	before := captureHostState(t)
	_, stdout, stderr, code := runUp(t, name, yaml, args...)
	if code != 2 {
		t.Errorf("up %v: exit %d, want 2; stderr:\n%s", args, code, stderr)
	}
	if stdout != "" {
		t.Errorf("up %v: stdout = %q, want nothing", args, stdout)
	}
	for _, w := range append(want, "nothing was changed") {
		if !strings.Contains(stderr, w) {
			t.Errorf("up %v: stderr does not contain %q:\n%s", args, w, stderr)
		}
	}
	if ctrs := podContainers(t, name); len(ctrs) != 0 {
		t.Errorf("up %v: %d containers of %s exist, want none", args, len(ctrs), name)
	}
	checkNothingLeft(t, before, fmt.Sprintf("up %v", args))
}

// TestPolicyRestricted: validate --policy restricted lists each violation of
// a non-compliant pod with file and document, exit 2; up --policy restricted
// refuses it before touching anything; a compliant pod runs under it.
func TestPolicyRestricted(t *testing.T) {
	H.require(t)
	loose := strings.Replace(notRestrictedPod, "IMAGE", H.Image, 1)
	file := H.WriteManifest(t, "po-loose.yaml", loose)
	stdout, stderr, code := H.Podrun(t, "", "validate", "--policy", "restricted", file)
	if code != 2 {
		t.Errorf("validate --policy restricted: exit %d, want 2; stderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("validate --policy restricted: stdout = %q, want nothing", stdout)
	}
	src := file + " (document 1): "
	for _, want := range []string{
		src + `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`,
		src + `violates PodSecurity "restricted:latest": unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"])`,
		src + `violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)`,
		src + `violates PodSecurity "restricted:latest": seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		"podrun: 4 problem(s); nothing was changed",
	} {
		if !strings.Contains(stderr, want+"\n") {
			t.Errorf("validate stderr does not contain the line %q:\n%s", want, stderr)
		}
	}
	// The same pod meets baseline.
	if stdout, stderr, code := H.Podrun(t, "", "validate", "--policy", "baseline", file); code != 0 || !strings.Contains(stdout, "pod/default/po-loose valid") {
		t.Errorf("validate --policy baseline: exit %d, stdout %q, want 0 and valid; stderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "validate", "--policy", "strict", file); code != 2 || !strings.Contains(stderr, `validate: policy "strict": must be privileged, baseline or restricted`) {
		t.Errorf("validate --policy strict: exit %d, want 2 and the allowed levels; stderr:\n%s", code, stderr)
	}

	checkRefusedAtValidation(t, "po-loose", loose, []string{"--policy", "restricted"},
		`violates PodSecurity "restricted:latest": runAsNonRoot != true`)

	_, stdout = mustRunUp(t, "po-tight", `apiVersion: v1
kind: Pod
metadata:
  name: po-tight
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: app
    image: `+H.Image+`
    command: ["id"]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
`, "--policy", "restricted")
	if !strings.Contains(stdout, "pod/default/po-tight created (Succeeded)") {
		t.Errorf("up --policy restricted: stdout = %q, want created (Succeeded)", stdout)
	}
	if got := finishedLog(t, "po-tight", "app"); !strings.Contains(got, "uid=1000 gid=0") {
		t.Errorf("id in the restricted pod = %q, want uid=1000 gid=0", got)
	}
}

// TestPolicyAllowedHostPaths: with --allowed-host-paths, a hostPath volume
// on /etc is refused at validation; one under an allowed temp dir runs and
// its writes reach the host.
func TestPolicyAllowedHostPaths(t *testing.T) {
	H.require(t)
	allowed := t.TempDir()
	data := filepath.Join(allowed, "data")
	pod := func(name, path string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  restartPolicy: Never
  volumes:
  - name: host
    hostPath: {path: ` + path + `, type: DirectoryOrCreate}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "echo po-written > /host/f"]
    volumeMounts:
    - {name: host, mountPath: /host}
`
	}
	flag := []string{"--allowed-host-paths", "/srv/podrun-none," + allowed}
	checkRefusedAtValidation(t, "po-etc", pod("po-etc", "/etc"), flag,
		`spec.volumes[0].hostPath.path: Invalid value: "/etc": is not under an allowed host path (--allowed-host-paths /srv/podrun-none,`+allowed+`)`)
	// A sibling whose name merely starts with the allowed path is not under it.
	checkRefusedAtValidation(t, "po-sibling", pod("po-sibling", allowed+"x"), flag, `"`+allowed+`x": is not under an allowed host path`)

	_, stdout := mustRunUp(t, "po-hostpath", pod("po-hostpath", data), flag...)
	if !strings.Contains(stdout, "pod/default/po-hostpath created (Succeeded)") {
		t.Errorf("up: stdout = %q, want created (Succeeded)", stdout)
	}
	if b, err := os.ReadFile(filepath.Join(data, "f")); err != nil || string(b) != "po-written\n" {
		t.Errorf("the file the container wrote under the allowed path: %q, %v", b, err)
	}
}

// TestPolicyUnsafeSysctls: an unsafe namespaced sysctl is refused without
// --allowed-unsafe-sysctls and set in the pod's namespaces with it (by name
// and by prefix); a sysctl that is not namespaced cannot be allowed.
func TestPolicyUnsafeSysctls(t *testing.T) {
	H.require(t)
	yaml := `apiVersion: v1
kind: Pod
metadata:
  name: po-sysctls
spec:
  restartPolicy: Never
  securityContext:
    sysctls:
    - {name: kernel.msgmax, value: "65536"}
    - {name: net.core.somaxconn, value: "2048"}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["cat", "/proc/sys/kernel/msgmax", "/proc/sys/net/core/somaxconn"]
`
	checkRefusedAtValidation(t, "po-sysctls", yaml, nil,
		`spec.securityContext.sysctls[0].name: Invalid value: "kernel.msgmax": forbidden sysctl: not allowlisted`,
		`spec.securityContext.sysctls[1].name: Invalid value: "net.core.somaxconn": forbidden sysctl: not allowlisted`)
	checkRefusedAtValidation(t, "po-sysctls", yaml, []string{"--allowed-unsafe-sysctls", "kernel.msgmax"},
		`spec.securityContext.sysctls[1].name: Invalid value: "net.core.somaxconn": forbidden sysctl: not allowlisted`)
	if _, stderr, code := H.Podrun(t, yaml, "validate", "--allowed-unsafe-sysctls", "kernel.panic", "-"); code != 2 ||
		!strings.Contains(stderr, `unsafe sysctl pattern "kernel.panic": not known to be namespaced`) {
		t.Errorf("validate --allowed-unsafe-sysctls kernel.panic: exit %d, want 2 and not namespaced; stderr:\n%s", code, stderr)
	}

	_, stdout := mustRunUp(t, "po-sysctls", yaml, "--allowed-unsafe-sysctls", "kernel.msgmax,net.core.*")
	if !strings.Contains(stdout, "pod/default/po-sysctls created (Succeeded)") {
		t.Errorf("up: stdout = %q, want created (Succeeded)", stdout)
	}
	if got := containerLog(t, podNamed(t, "po-sysctls"), "app", 0); strings.Join(got, " ") != "65536 2048" {
		t.Errorf("sysctls seen in the pod = %q, want [65536 2048]", got)
	}
}

// execTrimmed is execIn that returns the trimmed stdout.
func execTrimmed(t *testing.T, pod, container string, cmd ...string) string {
	t.Helper()
	return strings.TrimSpace(execIn(t, pod, container, cmd...))
}

// hostNamespace is the host's namespace of a kind, as podrun's containers would
// see it: the test process runs in the host's namespaces (/proc/1 may not be
// readable, e.g. in a VM whose init is protected).
func hostNamespace(t *testing.T, kind string) string {
	t.Helper()
	ns, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestPolicyShareProcessNamespace: with shareProcessNamespace the containers
// share the pause's PID namespace, where the pause is PID 1, adopts and reaps
// orphans, and each container sees the other's processes; neither is in the
// host's PID or IPC namespace.
func TestPolicyShareProcessNamespace(t *testing.T) {
	H.require(t)
	mustRunUp(t, "po-share", `apiVersion: v1
kind: Pod
metadata:
  name: po-share
spec:
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: a
    image: `+H.Image+`
    command: ["sleep", "3601"]
  - name: b
    image: `+H.Image+`
    command: ["sleep", "3602"]
`, "--wait", "running")
	if got := execTrimmed(t, "po-share", "b", "sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline"); got != "/pause pause" {
		t.Errorf("PID 1 of the shared PID namespace runs %q, want the pause (/pause pause)", got)
	}
	procs := execTrimmed(t, "po-share", "b", "sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
	if !strings.Contains(procs, "sleep 3601") {
		t.Errorf("container b does not see container a's process; its processes:\n%s", procs)
	}
	// An orphan is adopted by the pause (PID 1), which reaps it once it exits.
	const orphan = `(sleep 2 &); sleep 1
for p in /proc/[0-9]*; do [ "$(tr '\0' ' ' < $p/cmdline)" = "sleep 2 " ] && grep ^PPid: $p/status; done
sleep 2; echo zombies: $(grep -l zombie /proc/[0-9]*/status | wc -l)`
	if got := strings.Fields(execTrimmed(t, "po-share", "b", "sh", "-c", orphan)); strings.Join(got, " ") != "PPid: 1 zombies: 0" {
		t.Errorf("orphan in the shared PID namespace: %q, want its parent PID 1 and no zombie left", got)
	}
	a, b := execTrimmed(t, "po-share", "a", "readlink", "/proc/self/ns/pid"), execTrimmed(t, "po-share", "b", "readlink", "/proc/self/ns/pid")
	if a != b || a == hostNamespace(t, "pid") {
		t.Errorf("PID namespaces: a %s, b %s, host %s: want a = b, not the host's", a, b, hostNamespace(t, "pid"))
	}
	if ipc := execTrimmed(t, "po-share", "a", "readlink", "/proc/self/ns/ipc"); ipc == hostNamespace(t, "ipc") {
		t.Errorf("IPC namespace %s is the host's without hostIPC", ipc)
	}
}

// TestPolicyHostPIDAndIPC: hostPID puts the containers in the host's PID
// namespace, hostIPC in its IPC namespace with the host's /dev/shm; another
// container of the pod without them keeps a PID namespace of its own.
func TestPolicyHostPIDAndIPC(t *testing.T) {
	H.require(t)
	shmFile := fmt.Sprintf("/dev/shm/podrun-e2e-%d", os.Getpid())
	t.Cleanup(func() { _ = os.Remove(shmFile) })
	mustRunUp(t, "po-hostns", `apiVersion: v1
kind: Pod
metadata:
  name: po-hostns
spec:
  hostPID: true
  hostIPC: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`, "--wait", "running")
	mustRunUp(t, "po-ownns", `apiVersion: v1
kind: Pod
metadata:
  name: po-ownns
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`, "--wait", "running")
	for _, kind := range []string{"pid", "ipc"} {
		host := hostNamespace(t, kind)
		if got := execTrimmed(t, "po-hostns", "app", "readlink", "/proc/self/ns/"+kind); got != host {
			t.Errorf("host%s pod: /proc/self/ns/%s = %s, want the host's %s", strings.ToUpper(kind), kind, got, host)
		}
		if got := execTrimmed(t, "po-ownns", "app", "readlink", "/proc/self/ns/"+kind); got == host {
			t.Errorf("default pod: /proc/self/ns/%s = %s, the host's", kind, got)
		}
	}
	execTrimmed(t, "po-hostns", "app", "sh", "-c", "echo po-shm > "+shmFile)
	if b, err := os.ReadFile(shmFile); err != nil || string(b) != "po-shm\n" {
		t.Errorf("hostIPC: the container's /dev/shm is not the host's: %q, %v", b, err)
	}
	var ownShm []string
	for _, p := range []string{"po-hostns", "po-ownns"} {
		ownShm = append(ownShm, execTrimmed(t, p, "app", "sh", "-c", "ls /dev/shm | grep -cx "+filepath.Base(shmFile)+" || true"))
	}
	if want := []string{"1", "0"}; !reflect.DeepEqual(ownShm, want) {
		t.Errorf("files of the host's /dev/shm seen by hostIPC and default pods: %v, want %v", ownShm, want)
	}
}

// TestPolicySandboxWithoutPause: a plain pod runs with no pause: its
// containers share the IPC and UTS namespaces pinned in the pod directory
// (with the pod's hostname), and down unpins them. With --pause-image every
// pod gets a pause of that image, whose namespaces its containers join.
func TestPolicySandboxWithoutPause(t *testing.T) {
	H.require(t)
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: a
    image: ` + e2eImage + `
    command: ["sleep", "3601"]
  - name: b
    image: ` + e2eImage + `
    command: ["sleep", "3602"]
`
	file, _ := mustRunUp(t, "po-pinned", fmt.Sprintf(pod, "po-pinned"), "--wait", "running")
	p := podNamed(t, "po-pinned")
	dir := filepath.Join(H.Root, "pods", string(p.UID))
	for _, ns := range []string{"ipc", "uts"} {
		pin := fmt.Sprintf("%d", nsInode(t, filepath.Join(dir, ns+"-ns")))
		for _, c := range []string{"a", "b"} {
			got := execTrimmed(t, "po-pinned", c, "readlink", "/proc/self/ns/"+ns)
			if !strings.Contains(got, "["+pin+"]") || got == hostNamespace(t, ns) {
				t.Errorf("container %s is in %s, want the pod's pinned %s namespace [%s]", c, got, ns, pin)
			}
		}
	}
	if got := execTrimmed(t, "po-pinned", "a", "hostname"); got != "po-pinned" {
		t.Errorf("hostname in the pinned UTS namespace = %q, want po-pinned", got)
	}
	if got := execTrimmed(t, "po-pinned", "b", "sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline"); got != "sleep 3602" {
		t.Errorf("PID 1 of container b runs %q, want its own sleep (a PID namespace of its own)", got)
	}
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	for _, ns := range []string{"ipc", "uts"} {
		if _, err := os.Lstat(filepath.Join(dir, ns+"-ns")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the %s pin is still there after down (err %v)", ns, err)
		}
	}

	// --pause-image: the sandbox is a pause container of that image.
	ref := H.ImportImage(t, testimage.Config{Ref: "podrun.test/pause:1", Cmd: []string{"sleep", "3603"}})
	t.Cleanup(func() {
		c, ctx := H.Client(t)
		_ = c.ImageService().Delete(ctx, ref)
	})
	file = H.WriteManifest(t, "po-paused.yaml", fmt.Sprintf(pod, "po-paused"))
	downOnCleanup(t, file)
	if _, stderr, code := H.Podrun(t, "", "--pause-image", ref, "up", "--wait", "running", file); code != 0 {
		t.Fatalf("up with --pause-image: exit %d\n%s", code, stderr)
	}
	p = podNamed(t, "po-paused")
	short := strings.ReplaceAll(string(p.UID), "-", "")[:12]
	pids := runningTaskPIDs(t, podContainers(t, "po-paused"))
	pause := pids[short+"-pause"]
	if pause == 0 {
		t.Fatalf("with --pause-image the sandbox has no running pause: %v", pids)
	}
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pause)); err != nil || strings.ReplaceAll(string(cmd), "\x00", " ") != "sleep 3603 " {
		t.Errorf("the pause runs %q (%v), want the image's command", cmd, err)
	}
	for _, ns := range []string{"ipc", "uts"} {
		want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pause, ns))
		if err != nil {
			t.Fatal(err)
		}
		if got := execTrimmed(t, "po-paused", "a", "readlink", "/proc/self/ns/"+ns); got != want {
			t.Errorf("container a is in %s, want the pause's %s", got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(H.Root, "pods", string(p.UID), "uts-ns")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a pod with a pause has a UTS pin (err %v)", err)
	}
	if got := execTrimmed(t, "po-paused", "a", "hostname"); got != "po-paused" {
		t.Errorf("hostname in the pause's UTS namespace = %q, want po-paused", got)
	}
}
