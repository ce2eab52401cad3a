package e2e

// Image garbage collection (issue 11): `podrun image prune` removes the
// images no container uses, with the kubelet's thresholds forced low, or
// all of them with -a; an image a pod uses is kept.

import (
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/internal/testimage"
)

func TestImagePrune(t *testing.T) {
	H.require(t)
	mustRunUp(t, "ig-user", `apiVersion: v1
kind: Pod
metadata: {name: ig-user}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`, "--wait=running")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"thresholds forced low", []string{"image", "prune", "--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0", "--image-minimum-gc-age", "0s"}},
		{"-a", []string{"image", "prune", "-a", "--image-minimum-gc-age", "0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := H.ImportImage(t, testimage.Config{Ref: "podrun.test/ig-a:1"})
			b := H.ImportImage(t, testimage.Config{Ref: "podrun.test/ig-b:1"})
			t.Cleanup(func() { deleteImage(t, a); deleteImage(t, b) })
			out, stderr, code := H.Podrun(t, "", tc.args...)
			if code != 0 || !strings.Contains(out, "deleted "+a+"\n") || !strings.Contains(out, "deleted "+b+"\n") || strings.Contains(out, H.Image) {
				t.Errorf("%v: exit %d, %q; want %s and %s deleted, not %s\n%s", tc.args, code, out, a, b, H.Image, stderr)
			}
			for _, ref := range []string{a, b} {
				if hasImage(t, ref) {
					t.Errorf("%s is still there", ref)
				}
			}
			if !hasImage(t, H.Image) {
				t.Fatalf("%s, used by a running pod, was removed", H.Image)
			}
		})
	}
}

// TestDaemonImageGC: the daemon, with the thresholds forced low, removes an
// image nothing uses and keeps the image of a pod its directory wants,
// though no container was ever made of it (the pod's init container fails).
func TestDaemonImageGC(t *testing.T) {
	H.require(t)
	unused := H.ImportImage(t, testimage.Config{Ref: "podrun.test/ig-unused:1"})
	wanted := H.ImportImage(t, testimage.Config{Ref: "podrun.test/ig-wanted:1"})
	t.Cleanup(func() { deleteImage(t, unused); deleteImage(t, wanted) })
	dir := t.TempDir()
	downOnCleanup(t, "ig-daemon", "ig-waiting")
	writeInPlace(t, dir, "ig.yaml", `apiVersion: v1
kind: Pod
metadata: {name: ig-daemon}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: ig-waiting}
spec:
  restartPolicy: Never
  initContainers:
  - name: fail
    image: `+H.Image+`
    command: ["sh", "-c", "exit 1"]
  containers:
  - name: app
    image: `+wanted+`
`)
	d := startDaemon(t, dir, nil, "--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0", "--image-minimum-gc-age", "0s")
	waitDaemonLog(t, d, "removed an unused image", 60*time.Second)
	if hasImage(t, unused) {
		t.Errorf("%s, used by nothing, is still there", unused)
	}
	for _, ref := range []string{wanted, H.Image} {
		if !hasImage(t, ref) {
			t.Errorf("%s was removed: a pod of the directory wants it", ref)
		}
	}
}
