package e2e

// kubectl habits (issue 11): -n is the pods' namespace for ps, status,
// logs, exec and down; ps lists every namespace by default or with -A.

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestNamespaceFlag(t *testing.T) {
	H.require(t)
	mustRunUp(t, "kc-web", `apiVersion: v1
kind: Pod
metadata: {name: kc-web, namespace: kc-ns}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "echo hello-kc; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`, "--wait=running")
	listed := func(args ...string) bool {
		out, stderr, code := H.Podrun(t, "", append([]string{"ps", "-o", "name"}, args...)...)
		if code != 0 {
			t.Fatalf("ps %v: exit %d\n%s", args, code, stderr)
		}
		return strings.Contains(out, "pod/kc-web\n")
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"-A"}, true}, {[]string{"-n", "kc-ns"}, true}, {[]string{"-n", "default"}, false}} {
		if got := listed(tc.args...); got != tc.want {
			t.Errorf("ps %v lists kc-web: %v, want %v", tc.args, got, tc.want)
		}
	}
	// A global flag after the command is read, as kubectl's, and wins over
	// the same flag before it.
	if _, stderr, code := H.Podrun(t, "", "ps", "--max-pods", "0"); code != 2 || !strings.Contains(stderr, "--max-pods 0: want at least 1") {
		t.Errorf("ps --max-pods 0: exit %d, want 2 saying --max-pods 0 is too few\n%s", code, stderr)
	}
	if out, stderr, code := H.Podrun(t, "", "--max-pods", "0", "ps", "-o", "name", "--max-pods=110"); code != 0 || !strings.Contains(out, "pod/kc-web\n") {
		t.Errorf("--max-pods 0 ps --max-pods=110: exit %d, want 0 listing kc-web\n%s", code, stderr)
	}
	if _, _, code := H.Podrun(t, "", "status", "kc-web"); code == 0 {
		t.Error("status kc-web found it in namespace default")
	}
	if out, stderr, code := H.Podrun(t, "", "status", "-n", "kc-ns", "kc-web", "-o", "json"); code != 0 || !strings.Contains(out, `"namespace": "kc-ns"`) {
		t.Errorf("status -n kc-ns kc-web: exit %d\n%s%s", code, e2eClip(out), stderr)
	}
	eventually(t, 10*time.Second, "logs -n kc-ns kc-web shows the app's line", func() (bool, string) {
		out, stderr, code := H.Podrun(t, "", "logs", "-n", "kc-ns", "kc-web")
		return code == 0 && strings.Contains(out, "hello-kc"), out + stderr
	})
	if out, stderr, code := H.Podrun(t, "", "exec", "-n", "kc-ns", "kc-web", "--", "echo", "in-kc"); code != 0 || strings.TrimSpace(out) != "in-kc" {
		t.Errorf("exec -n kc-ns kc-web: exit %d, %q\n%s", code, out, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "logs", "-n", "other", "kc-ns/kc-web"); code != 2 || !strings.Contains(stderr, `-n says "other"`) {
		t.Errorf("logs -n other kc-ns/kc-web: exit %d, want 2 and the conflict\n%s", code, stderr)
	}
	if out, stderr, code := H.Podrun(t, "", "down", "-n", "kc-ns", "kc-web"); code != 0 || !strings.Contains(out, "pod/kc-ns/kc-web deleted") {
		t.Errorf("down -n kc-ns kc-web: exit %d, %q\n%s", code, out, stderr)
	}
	if listed("-A") {
		t.Error("kc-web still listed after down -n")
	}
}

// TestShellCompletion: the bash script podrun prints completes commands
// and a command's flags.
func TestShellCompletion(t *testing.T) {
	H.require(t)
	script, stderr, code := H.Podrun(t, "", "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: exit %d\n%s", code, stderr)
	}
	for words, want := range map[string]string{"lo": "logs", "logs --ta": "--tail", "ps --all-n": "--all-namespaces"} {
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=("$BIN" `+words+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _podrun; echo "${COMPREPLY[*]}"`)
		cmd.Env = append(os.Environ(), "BIN="+H.Bin)
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("completing %q: %q, %v; want %q", words, out, err, want)
		}
	}
}
