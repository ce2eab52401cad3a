package e2e

// End-to-end tests of the container environment: env from every valueFrom
// kind and envFrom, compared in full with what Kubernetes would set, and
// subPathExpr (a per-pod directory, and a symlink escape refused). Helpers
// are prefixed env; the pl helpers of pipeline_test.go are reused.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// envNode returns this machine's node name and allocatable cpu, memory (in
// bytes) and ephemeral-storage (in bytes), as podrun computes them for
// limits left unset.
func envNode(t *testing.T) (name string, cpu int, memory, storage int64) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) == 3 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			memory = kb * 1024
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(H.Root, &st); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(host), runtime.NumCPU(), memory, int64(st.Blocks) * int64(st.Bsize)
}

// envLines returns the sorted output lines of a container that ran `env`.
func envLines(t *testing.T, pod, container string) []string {
	t.Helper()
	lines := slices.Clone(containerLog(t, podNamed(t, pod), container, 0))
	slices.Sort(lines)
	return lines
}

// envCompare fails the test unless got and want (both sorted) are equal,
// naming the missing and unexpected variables.
func envCompare(t *testing.T, container string, got, want []string) {
	t.Helper()
	slices.Sort(want)
	if slices.Equal(got, want) {
		return
	}
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	t.Errorf("env of %s differs:\n missing:    %q\n unexpected: %q\n got: %q", container, missing, extra, got)
}

// TestEnvAllSources: a ConfigMap and a Secret in the pod's file; env from
// configMapKeyRef, secretKeyRef (optional ones missing set nothing),
// fieldRef for every path Kubernetes allows in env, resourceFieldRef with
// limits set (requests defaulted from limits) and unset (the node's
// allocatable), envFrom with a prefix and an optional missing source, and
// $(VAR) expansion: each container sees exactly the variables Kubernetes
// would give it, without the service links variables (podrun has no
// Services).
func TestEnvAllSources(t *testing.T) {
	H.require(t)
	_, stdout := mustRunUp(t, "env-all", `apiVersion: v1
kind: ConfigMap
metadata:
  name: env-cfg
data:
  mode: prod
  greeting: hello world
  url: http://$(mode)
---
apiVersion: v1
kind: Secret
metadata:
  name: env-sec
type: Opaque
data:
  password: czNjcjN0
stringData:
  user: admin
  token: tok-1
---
apiVersion: v1
kind: Pod
metadata:
  name: env-all
  labels: {app: env-all, tier: test}
  annotations: {example.com/owner: team-a}
spec:
  restartPolicy: Never
  serviceAccountName: builder
  containers:
  - name: limited
    image: `+H.Image+`
    command: ["env"]
    resources:
      limits: {cpu: 250m, memory: 64Mi}
      requests: {cpu: 100m}
    envFrom:
    - prefix: CFG_
      configMapRef: {name: env-cfg}
    - secretRef: {name: env-sec}
    - configMapRef: {name: env-absent, optional: true}
    env:
    - {name: MODE, valueFrom: {configMapKeyRef: {name: env-cfg, key: mode}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: env-sec, key: password}}}
    - {name: OPT_KEY, valueFrom: {secretKeyRef: {name: env-sec, key: absent, optional: true}}}
    - {name: OPT_SECRET, valueFrom: {secretKeyRef: {name: env-absent, key: k, optional: true}}}
    - {name: OPT_CM_KEY, valueFrom: {configMapKeyRef: {name: env-cfg, key: absent, optional: true}}}
    - {name: user, value: "overridden-$(MODE)"}
    - {name: EMPTY}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: OWNER, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['example.com/owner']"}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: spec.serviceAccountName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_LIMIT_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: CPU_REQUEST_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: MEM_REQUEST_MI, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
    - {name: URL, value: "http://$(POD_IP):8080/$(CFG_mode)/$(LATER)"}
    - {name: LATER, value: later}
  - name: unlimited
    image: `+H.Image+`
    command: ["env"]
    env:
    - {name: NODE_CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: NODE_MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: NODE_STORAGE_KI, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1Ki}}}
    - {name: REQ_CPU, valueFrom: {resourceFieldRef: {resource: requests.cpu}}}
    - {name: OTHER_MEM_MI, valueFrom: {resourceFieldRef: {containerName: limited, resource: limits.memory, divisor: 1Mi}}}
`)
	if !strings.Contains(stdout, "pod/default/env-all created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	pod := podNamed(t, "env-all")
	podIP, hostIP := pod.Status.PodIP, pod.Status.HostIP
	var podIPs []string
	for _, ip := range pod.Status.PodIPs {
		podIPs = append(podIPs, ip.IP)
	}
	if podIP == "" || hostIP == "" || pod.UID == "" {
		t.Fatalf("podrun ps shows podIP %q, hostIP %q, uid %q: want all set", podIP, hostIP, pod.UID)
	}
	node, cpu, memory, storage := envNode(t)
	base := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=env-all", "HOME=/root"}

	envCompare(t, "limited", envLines(t, "env-all", "limited"), append(slices.Clone(base),
		"CFG_greeting=hello world", "CFG_mode=prod", "CFG_url=http://$(mode)",
		"password=s3cr3t", "token=tok-1", "user=overridden-prod",
		"MODE=prod", "PASSWORD=s3cr3t", "EMPTY=",
		"POD_NAME=env-all", "POD_NAMESPACE=default", "POD_UID="+string(pod.UID),
		"APP=env-all", "OWNER=team-a", "NODE_NAME="+node, "SA=builder",
		"POD_IP="+podIP, "POD_IPS="+strings.Join(podIPs, ","), "HOST_IP="+hostIP, "HOST_IPS="+hostIP,
		"CPU_LIMIT=1", "CPU_LIMIT_M=250", "MEM_LIMIT=67108864", "CPU_REQUEST_M=100", "MEM_REQUEST_MI=64",
		"URL=http://"+podIP+":8080/prod/$(LATER)", "LATER=later",
	))
	envCompare(t, "unlimited", envLines(t, "env-all", "unlimited"), append(slices.Clone(base),
		"NODE_CPU="+strconv.Itoa(cpu), "NODE_MEM="+strconv.FormatInt(memory, 10),
		fmt.Sprintf("NODE_STORAGE_KI=%d", (storage+1023)/1024), "REQ_CPU=0", "OTHER_MEM_MI=64",
	))
}

// TestEnvSubPathExpr: a subPathExpr naming $(POD_NAME), a fieldRef
// variable, gives the pod its own directory inside a hostPath, created on
// start.
func TestEnvSubPathExpr(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	_, stdout := mustRunUp(t, "env-subpath", `apiVersion: v1
kind: Pod
metadata:
  name: env-subpath
spec:
  restartPolicy: Never
  volumes:
  - name: logs
    hostPath: {path: `+dir+`, type: Directory}
  containers:
  - name: writer
    image: `+H.Image+`
    command: ["sh", "-c", "echo env-in-subpath > /logs/out"]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts:
    - {name: logs, mountPath: /logs, subPathExpr: "pods/$(POD_NAME)"}
`)
	if !strings.Contains(stdout, "pod/default/env-subpath created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	got, err := os.ReadFile(filepath.Join(dir, "pods", "env-subpath", "out"))
	if err != nil || string(got) != "env-in-subpath\n" {
		t.Errorf("the write is not in <hostPath>/pods/env-subpath/out: %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "pods")); len(ents) != 1 || ents[0].Name() != "env-subpath" {
		t.Errorf("<hostPath>/pods holds %v, want only env-subpath", ents)
	}
}

// TestEnvSubPathExprSymlinkEscape: a subPathExpr that resolves through a
// symlink out of its volume is refused with the reason, the pod is rolled
// back, and nothing is created outside the volume.
func TestEnvSubPathExprSymlinkEscape(t *testing.T) {
	H.require(t)
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	before := captureHostState(t)
	_, stdout, stderr, code := runUp(t, "env-escape", `apiVersion: v1
kind: Pod
metadata:
  name: env-escape
spec:
  restartPolicy: Never
  volumes:
  - name: vol
    hostPath: {path: `+dir+`, type: Directory}
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "echo env-escaped > /v/out"]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts:
    - {name: vol, mountPath: /v, subPathExpr: "escape/$(POD_NAME)"}
`)
	checkRolledBack(t, "env-escape", "the refused pod", before, stdout, stderr, code,
		"env-escape", `volumeMounts[0] (/v): subPathExpr "escape/$(POD_NAME)": subPath "escape/env-escape" resolves to`, "outside its volume")
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
		t.Errorf("the symlink's target outside the volume holds %v (err %v), want nothing", ents, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "escape" {
		t.Errorf("the volume holds %v, want only the symlink", ents)
	}
}
