package e2e

// Termination messages as the kubelet reports them.

import (
	"testing"
)

// TestTerminationMessages: a message written to the default path, one
// written by a non-root user to a custom path, and with
// FallbackToLogsOnError the end of the log of a failed container (`printf
// DONE; exit 1` gives "DONE"); each shown in state.terminated.message by a
// `podrun status` run after `up` has exited.
func TestTerminationMessages(t *testing.T) {
	H.require(t)
	_, stdout, stderr, code := runUp(t, "tm.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: tm
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: `+H.Image+`
    command: ["sh", "-c", "printf 'written to the file' > /dev/termination-log"]
  - name: custom
    image: `+H.Image+`
    command: ["sh", "-c", "id -u > /tmp/msg/custom; echo done >> /tmp/msg/custom"]
    terminationMessagePath: /tmp/msg/custom
    securityContext: {runAsUser: 1000, runAsGroup: 1000}
  - name: fallback
    image: `+H.Image+`
    command: ["sh", "-c", "echo first; printf DONE; exit 1"]
    terminationMessagePolicy: FallbackToLogsOnError
`)
	if code != 1 {
		t.Fatalf("up: exit %d, want 1 (container fallback fails); stdout %q stderr:\n%s", code, stdout, stderr)
	}
	pod := podStatus(t, "tm")
	want := map[string]string{"file": "written to the file", "custom": "1000\ndone\n", "fallback": "first\nDONE"}
	if u := mustContainerStatus(t, pod, "custom").User; u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 1000 ||
		len(u.Linux.SupplementalGroups) != 1 || u.Linux.SupplementalGroups[0] != 1000 {
		t.Errorf("container custom: user %+v, want user.linux uid 1000, gid 1000, groups [1000]", u)
	}
	for name, msg := range want {
		cs := mustContainerStatus(t, pod, name)
		if tm := cs.State.Terminated; tm == nil || tm.Message != msg {
			t.Errorf("container %s: state %+v, want terminated with message %q", name, cs.State, msg)
		}
	}
}
