package e2e

// `up --wait` and `podrun wait` as kubectl wait; `up -f` of pods that finish.

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestUpWaitsForReadyNotForTheEnd: the docs' downward-API env pod
// (restartPolicy Never, loops forever): `up` returns once it is Ready and
// the pod keeps running; `podrun wait --for ready` says so; `podrun wait
// --for delete` returns once a `down` has removed it.
func TestUpWaitsForReadyNotForTheEnd(t *testing.T) {
	H.require(t)
	file, stdout, stderr, code := runUp(t, "dapi-envars-fieldref", `apiVersion: v1
kind: Pod
metadata:
  name: dapi-envars-fieldref
spec:
  containers:
    - name: test-container
      image: `+H.Image+`
      command: [ "sh", "-c"]
      args:
      - while true; do
          echo -en '\n';
          printenv MY_NODE_NAME MY_POD_NAME MY_POD_NAMESPACE;
          printenv MY_POD_IP;
          sleep 10;
        done;
      env:
        - name: MY_NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: MY_POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: MY_POD_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        - name: MY_POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
  restartPolicy: Never
`, "--wait=ready", "--timeout", "30s")
	if code != 0 || !strings.Contains(stdout, "pod/default/dapi-envars-fieldref created (Running)") {
		t.Fatalf("up: exit %d, stdout %q, want created (Running); stderr:\n%s", code, stdout, stderr)
	}
	time.Sleep(2 * time.Second)
	if p := podStatus(t, "dapi-envars-fieldref"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s after up returned, want Running (a healthy pod is not killed for not finishing)", p.Status.Phase)
	}
	if out, stderr, code := H.Podrun(t, "", "wait", "dapi-envars-fieldref", "--for", "ready", "--timeout", "10s"); code != 0 ||
		out != "pod/default/dapi-envars-fieldref condition met\n" {
		t.Errorf("wait --for ready: exit %d, stdout %q; stderr:\n%s", code, out, stderr)
	}
	if _, _, code := H.Podrun(t, "", "wait", "dapi-envars-fieldref", "--for", "completion", "--timeout", "1s"); code != 1 {
		t.Errorf("wait --for completion of a pod that never ends: exit %d, want 1 (timed out)", code)
	}
	waiter := startPodrun(t, "wait", "dapi-envars-fieldref", "--for", "delete", "--timeout", "60s")
	if _, stderr, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, stderr)
	}
	if !waiter.wait(30*time.Second) || waiter.cmd.ProcessState.ExitCode() != 0 || !strings.Contains(waiter.stdout(), "pod/default/dapi-envars-fieldref deleted") {
		t.Errorf("wait --for delete: %v, stdout %q", waiter.cmd.ProcessState, waiter.stdout())
	}
}

// TestUpWaitCompletion: `up --wait=completion` of a job returns its
// result (exit 1 naming the container and its exit code), and an Always
// pod is refused for it before anything is made; `podrun wait --for
// completion` gives the result of a pod already finished.
func TestUpWaitCompletion(t *testing.T) {
	H.require(t)
	_, stdout, stderr, code := runUp(t, "wt-job", `apiVersion: v1
kind: Pod
metadata:
  name: wt-job
spec:
  restartPolicy: Never
  containers:
  - name: work
    image: `+H.Image+`
    command: ["sh", "-c", "sleep 1; echo wt-job-out; exit 3"]
`, "--wait=completion")
	if code != 1 || !strings.Contains(stderr, `container "work" exited with code 3`) || !strings.Contains(stderr, "wt-job-out") {
		t.Errorf("up --wait=completion: exit %d, stdout %q, want 1 naming the container, code and log; stderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "wait", "wt-job", "--for", "completion"); code != 1 || !strings.Contains(stderr, `container "work" exited with code 3`) {
		t.Errorf("wait --for completion: exit %d, want 1 naming the failure; stderr:\n%s", code, stderr)
	}
	_, _, stderr, code = runUp(t, "wt-always", admissionPod("wt-always", ""), "--wait=completion")
	if code != 2 || !strings.Contains(stderr, "restartPolicy Always: it never completes") || psRow(t, "wt-always", "-a") != nil {
		t.Errorf("up --wait=completion of an Always pod: exit %d, want 2 and nothing made; stderr:\n%s", code, stderr)
	}
}

// TestUpForegroundExitsWhenAllFinished: `up -f` of pods that finish and will
// not restart supervises nothing forever: it exits with their result.
func TestUpForegroundExitsWhenAllFinished(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "wt-f.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: wt-f-ok
spec:
  restartPolicy: Never
  containers:
  - {name: a, image: `+H.Image+`, command: ["sh", "-c", "sleep 2"]}
---
apiVersion: v1
kind: Pod
metadata:
  name: wt-f-bad
spec:
  restartPolicy: OnFailure
  containers:
  - {name: b, image: `+H.Image+`, command: ["sh", "-c", "sleep 3; exit 0"]}
`)
	downOnCleanup(t, file)
	start := time.Now()
	up := startPodrun(t, "up", "--foreground", file)
	if !up.wait(60 * time.Second) {
		t.Fatalf("up -f of pods that all finished did not exit; stderr:\n%s", up.stderr())
	}
	if code := up.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("up -f of pods that all Succeeded: exit %d, want 0; stderr:\n%s", code, up.stderr())
	}
	t.Logf("up -f returned after %v", time.Since(start))
	for _, name := range []string{"wt-f-ok", "wt-f-bad"} {
		if p := podStatus(t, name); p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("%s: phase %s, want Succeeded (kept for status and logs)", name, p.Status.Phase)
		}
	}
}
