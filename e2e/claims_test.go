package e2e

import (
	"strings"
	"testing"
)

// TestVolumeClaim: a persistentVolumeClaim volume is a local volume made
// the first time a pod uses it and kept across down and up, listed by
// `podrun volume ls` with its pods; `volume rm` refuses while a pod uses
// it and removes it, data and all, after.
func TestVolumeClaim(t *testing.T) {
	H.require(t)
	t.Cleanup(func() { H.Podrun(t, "", "volume", "rm", "vc-data") })
	pod := `apiVersion: v1
kind: Pod
metadata: {name: vc-pod}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: vc-data}
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "cat /data/f 2>/dev/null || echo first; echo kept > /data/f"]
    volumeMounts: [{name: data, mountPath: /data}]
`
	file, _ := mustRunUp(t, "vc-pod", pod)
	if log := finishedLog(t, "vc-pod", "app"); log != "first" {
		t.Errorf("first run: log %q, want first", log)
	}
	out, _, code := H.Podrun(t, "", "volume", "ls")
	if code != 0 || !strings.Contains(out, "vc-data") || !strings.Contains(out, "default/vc-pod") {
		t.Errorf("volume ls: exit %d:\n%s", code, out)
	}
	if _, stderr, code := H.Podrun(t, "", "volume", "rm", "vc-data"); code == 0 || !strings.Contains(stderr, "used by pod default/vc-pod") {
		t.Errorf("volume rm of a volume in use: exit %d:\n%s", code, stderr)
	}
	if _, _, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d", code)
	}
	mustRunUp(t, "vc-pod", pod)
	if log := finishedLog(t, "vc-pod", "app"); log != "kept" {
		t.Errorf("after down and up: log %q, want what the first run wrote (kept)", log)
	}
	if _, _, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d", code)
	}
	if out, stderr, code := H.Podrun(t, "", "volume", "rm", "vc-data"); code != 0 || out != "volume/default/vc-data removed\n" {
		t.Errorf("volume rm: exit %d, %q:\n%s", code, out, stderr)
	}
	if out, _, _ := H.Podrun(t, "", "volume", "ls"); strings.Contains(out, "vc-data") {
		t.Errorf("volume ls after rm:\n%s", out)
	}
}
