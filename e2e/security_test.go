package e2e

// End-to-end tests of securityContext and podrun's secure defaults: users,
// groups and fsGroup seen from inside the container, a read-only root,
// capabilities, seccomp and no_new_privs in /proc/self/status, sysctls,
// runAsNonRoot refusing a root image, and validation of what podrun cannot
// honour. Helpers are prefixed sc; the pl helpers of pipeline_test.go are
// reused for up/down, pods and logs.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/podrun/podrun/internal/testimage"
)

// procStatusFields returns the "Field:\tvalue" lines of /proc/self/status a
// container printed, as a map.
func procStatusFields(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// finishedLog returns the log of container c of the finished pod default/pod as one string.
func finishedLog(t *testing.T, pod, c string) string {
	t.Helper()
	return strings.Join(containerLog(t, podNamed(t, pod), c, 0), "\n")
}

// wantInLog fails the test unless log holds every string of want.
func wantInLog(t *testing.T, container, log string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("log of %s does not contain %q:\n%s", container, w, log)
		}
	}
}

// TestSecurityUsersGroupsAndFSGroup: runAsUser, runAsGroup,
// supplementalGroups and fsGroup as `id` and `stat` see them inside the
// container, the container's securityContext winning over the pod's, an
// emptyDir given to the fsGroup (setgid, so new files get the group), and
// readOnlyRootFilesystem refusing writes while volumes stay writable.
func TestSecurityUsersGroupsAndFSGroup(t *testing.T) {
	H.require(t)
	_, stdout := mustRunUp(t, "sc-ids", `apiVersion: v1
kind: Pod
metadata:
  name: sc-ids
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [4000]
    fsGroup: 2000
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: ids
    image: `+H.Image+`
    command: ["sh", "-c", "id; echo x > /data/f && stat -c 'file %u %g' /data/f; stat -c 'dir %g %a' /data"]
    volumeMounts:
    - {name: data, mountPath: /data}
  - name: override
    image: `+H.Image+`
    command: ["id"]
    securityContext:
      runAsUser: 1001
      runAsGroup: 5000
  - name: rofs
    image: `+H.Image+`
    command: ["sh", "-c", "if touch /sc-probe; then echo sc-root-writable; else echo sc-root-refused; fi; echo y > /data/rofs && echo sc-volume-writable"]
    securityContext:
      readOnlyRootFilesystem: true
    volumeMounts:
    - {name: data, mountPath: /data}
`)
	if !strings.Contains(stdout, "pod/default/sc-ids created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	// busybox prints numeric ids without names: the image's /etc/group has none of these.
	wantInLog(t, "ids", finishedLog(t, "sc-ids", "ids"), "uid=1000 gid=3000 groups=2000,3000,4000", "file 1000 2000", "dir 2000 2777")
	wantInLog(t, "override", finishedLog(t, "sc-ids", "override"), "uid=1001 gid=5000 groups=2000,4000,5000")
	rofs := finishedLog(t, "sc-ids", "rofs")
	wantInLog(t, "rofs", rofs, "sc-root-refused", "Read-only file system", "sc-volume-writable")
	if strings.Contains(rofs, "sc-root-writable") {
		t.Errorf("readOnlyRootFilesystem: a write to / succeeded:\n%s", rofs)
	}
}

// TestSecuritySupplementalGroupsPolicy: the groups an image's /etc/group
// gives the container's user are among its groups under Merge (the
// default) and not under Strict, as `id -G` and the status's user.linux
// show them.
func TestSecuritySupplementalGroupsPolicy(t *testing.T) {
	H.require(t)
	img := H.ImportImage(t, testimage.Config{Ref: "podrun.test/sc-groups:1", Files: []testimage.File{
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/tmp:/bin/sh\n")},
		{Path: "/etc/group", Data: []byte("root:x:0:\nalice:x:1000:\nvideo:x:44:alice\nbackup:x:34:bob,alice\nstaff:x:50:bob\n")},
	}})
	t.Cleanup(func() { deleteImage(t, img) })
	for _, tc := range []struct{ policy, want string }{
		{"", "1000 2000 34 44"},
		{"Merge", "1000 2000 34 44"},
		{"Strict", "1000 2000"},
	} {
		name := "sc-groups-" + strings.ToLower(tc.policy)
		if tc.policy == "" {
			name = "sc-groups-default"
		}
		policy := ""
		if tc.policy != "" {
			policy = "\n    supplementalGroupsPolicy: " + tc.policy
		}
		mustRunUp(t, name, `apiVersion: v1
kind: Pod
metadata:
  name: `+name+`
spec:
  restartPolicy: Never
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    supplementalGroups: [2000]`+policy+`
  containers:
  - name: ids
    image: `+img+`
    command: ["sh", "-c", "id -G | tr ' ' '\\n' | sort | tr '\\n' ' '"]
`)
		if got := strings.TrimSpace(finishedLog(t, name, "ids")); got != tc.want {
			t.Errorf("%s: id -G = %q, want %q", name, got, tc.want)
		}
		st := podStatus(t, name)
		var got []string
		if u := st.Status.ContainerStatuses[0].User; u != nil && u.Linux != nil {
			for _, g := range u.Linux.SupplementalGroups {
				got = append(got, fmt.Sprint(g))
			}
		}
		slices.Sort(got) // as id -G's, sorted as text
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: status user.linux.supplementalGroups = %v, want %s", name, got, tc.want)
		}
	}
}

// TestSecurityDefaultsInProcStatus: the default capability set is
// containerd's without NET_RAW (bit 13) and the runtime's default seccomp
// profile is on (Seccomp: 2); Unconfined turns seccomp off;
// allowPrivilegeEscalation: false sets NoNewPrivs; capabilities add and
// drop (with and without CAP_, ALL) change CapEff; the pod's sysctls are set
// in its namespaces.
func TestSecurityDefaultsInProcStatus(t *testing.T) {
	H.require(t)
	const status = `["grep", "-E", "^(CapEff|CapBnd|Seccomp|NoNewPrivs):", "/proc/self/status"]`
	_, stdout := mustRunUp(t, "sc-defaults", `apiVersion: v1
kind: Pod
metadata:
  name: sc-defaults
spec:
  restartPolicy: Never
  securityContext:
    sysctls:
    - {name: net.ipv4.ip_unprivileged_port_start, value: "80"}
    - {name: kernel.shm_rmid_forced, value: "1"}
  containers:
  - name: defaults
    image: `+H.Image+`
    command: `+status+`
  - name: unconfined
    image: `+H.Image+`
    command: `+status+`
    securityContext:
      seccompProfile: {type: Unconfined}
  - name: hardened
    image: `+H.Image+`
    command: `+status+`
    securityContext:
      allowPrivilegeEscalation: false
      capabilities:
        drop: [ALL]
        add: [CAP_NET_BIND_SERVICE]
  - name: netraw
    image: `+H.Image+`
    command: `+status+`
    securityContext:
      capabilities:
        add: [NET_RAW]
        drop: [CAP_CHOWN]
  - name: sysctls
    image: `+H.Image+`
    command: ["cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start", "/proc/sys/kernel/shm_rmid_forced"]
`)
	if !strings.Contains(stdout, "pod/default/sc-defaults created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	// containerd's 14 default capabilities are 0xa80425fb; without NET_RAW
	// (bit 13, 0x2000) 0xa80405fb.
	for _, tc := range []struct {
		container string
		want      map[string]string
	}{
		{"defaults", map[string]string{"CapEff": "00000000a80405fb", "CapBnd": "00000000a80405fb", "Seccomp": "2", "NoNewPrivs": "0"}},
		{"unconfined", map[string]string{"CapEff": "00000000a80405fb", "Seccomp": "0"}},
		{"hardened", map[string]string{"CapEff": "0000000000000400", "CapBnd": "0000000000000400", "Seccomp": "2", "NoNewPrivs": "1"}},
		{"netraw", map[string]string{"CapEff": "00000000a80425fa", "Seccomp": "2"}},
	} {
		got := procStatusFields(containerLog(t, podNamed(t, "sc-defaults"), tc.container, 0))
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: /proc/self/status %s = %q, want %q (all: %v)", tc.container, k, got[k], v, got)
			}
		}
	}
	if got := containerLog(t, podNamed(t, "sc-defaults"), "sysctls", 0); strings.Join(got, " ") != "80 1" {
		t.Errorf("sysctls seen in the pod = %q, want [80 1]", got)
	}
}

// TestSecurityRunAsNonRootRefusesRootImage: runAsNonRoot with an image that
// runs as root fails the pod with the kubelet's reason and message, exit 1,
// and rolls everything back; an image whose user is 1000 runs.
func TestSecurityRunAsNonRootRefusesRootImage(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	_, stdout, stderr, code := runUp(t, "sc-nonroot", `apiVersion: v1
kind: Pod
metadata:
  name: sc-nonroot
spec:
  securityContext:
    runAsNonRoot: true
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sleep", "3600"]
`)
	checkRolledBack(t, "sc-nonroot", "the refused pod", before, stdout, stderr, code,
		"CreateContainerConfigError", "container has runAsNonRoot and image will run as root", `"sc-nonroot_default(`, "container: app")

	image := H.ImportImage(t, testimage.Config{Ref: "podrun.test/sc-user1000:1", User: "1000:1000"})
	_, stdout = mustRunUp(t, "sc-nonroot-ok", `apiVersion: v1
kind: Pod
metadata:
  name: sc-nonroot-ok
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
  containers:
  - name: app
    image: `+image+`
    imagePullPolicy: Never
    command: ["id"]
`)
	if !strings.Contains(stdout, "pod/default/sc-nonroot-ok created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	wantInLog(t, "app", finishedLog(t, "sc-nonroot-ok", "app"), "uid=1000 gid=1000")
}

// TestSecurityValidation: what podrun cannot honour is refused before
// anything runs, with the field path (exit 2).
func TestSecurityValidation(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "sc-invalid.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: sc-invalid
spec:
  securityContext:
    sysctls:
    - {name: kernel.msgmax, value: "65536"}
    supplementalGroupsPolicy: Loose
  containers:
  - name: app
    image: `+H.Image+`
    securityContext:
      procMount: Unmasked
      capabilities:
        add: [SUPERPOWER]
`)
	_, stderr, code := H.Podrun(t, "", "up", file)
	if code != 2 {
		t.Errorf("up: exit %d, want 2", code)
	}
	for _, want := range []string{
		`spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"`,
		`spec.securityContext.sysctls[0].name: Invalid value: "kernel.msgmax": forbidden sysctl: not allowlisted (not one of the safe sysctls: allow an unsafe one with --allowed-unsafe-sysctls)`,
		`spec.containers[0].securityContext.procMount: Invalid value: "Unmasked"`,
		`spec.containers[0].securityContext.capabilities.add[0]: Invalid value: "SUPERPOWER"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up stderr does not contain %q", want)
		}
	}
	if ctrs := podContainers(t, "sc-invalid"); len(ctrs) != 0 {
		t.Errorf("an invalid pod created %d containers", len(ctrs))
	}
}

// TestSELinuxOptionsOnAHostWithout: seLinuxOptions (pod and container) are
// accepted; on a host without SELinux (as CI's) nothing is labelled and the
// pod runs, as on a kubelet.
func TestSELinuxOptionsOnAHostWithout(t *testing.T) {
	H.require(t)
	_, stdout, stderr, code := runUp(t, "sc-selinux", `apiVersion: v1
kind: Pod
metadata:
  name: sc-selinux
spec:
  restartPolicy: Never
  securityContext:
    seLinuxOptions: {level: "s0:c123,c456"}
  containers:
  - name: app
    image: `+H.Image+`
    command: ["true"]
    securityContext:
      seLinuxOptions: {type: container_t, level: "s0:c1,c2"}
`)
	if code != 0 || !strings.Contains(stdout, "created (Succeeded)") {
		t.Errorf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
}
