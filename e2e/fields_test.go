package e2e

// Fields of today's API that podrun implements, one case each.

import (
	"strings"
	"testing"
)

// TestEmptyDirMode: the docs' emptyDir.mode example, 01777, is seen in the
// container as drwxrwxrwt.
func TestEmptyDirMode(t *testing.T) {
	H.require(t)
	_, _, stderr, code := plUp(t, "fd-mode", `apiVersion: v1
kind: Pod
metadata:
  name: fd-mode
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "ls -ld /scratch /mem"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
  volumes:
  - name: scratch
    emptyDir: {mode: 01777}
  - name: mem
    emptyDir: {medium: Memory, mode: 01777}
`)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	out, _, _ := H.Podrun(t, "", "logs", "fd-mode")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "drwxrwxrwt") {
			t.Errorf("ls -ld: %q, want drwxrwxrwt", line)
		}
	}
	if n := strings.Count(out, "drwxrwxrwt"); n != 2 {
		t.Errorf("ls -ld output %q: want both volumes drwxrwxrwt", out)
	}
}
