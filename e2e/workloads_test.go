package e2e

import (
	"os"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wlDeployment is a Deployment of replicas pods of the test image, VALUE in
// its template, with a Service beside it (a bundle as people have them).
func wlDeployment(replicas, value string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: wl-web}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: wl-web}}
  template:
    metadata: {labels: {app: wl-web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: ` + H.Image + `
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
        env: [{name: VALUE, value: "` + value + `"}]
---
apiVersion: v1
kind: Service
metadata: {name: wl-web}
spec:
  selector: {app: wl-web}
  ports: [{port: 80}]
`
}

// wlPods lists the pods of Deployment wl-web by name, with VALUE.
func wlPods(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range plPods(t) {
		if ref := metav1.GetControllerOf(&p); ref != nil && strings.HasPrefix(ref.Name, "wl-web-") && p.Status.Phase == corev1.PodRunning {
			out[p.Name] = dmValue(p)
		}
	}
	return out
}

func wlNames(m map[string]string) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestWorkloadDeployment: a Deployment runs replicas pods named as its
// controllers name them, owned by it (ps -o wide OWNER); a Service beside
// it is skipped with a note; applying the file again changes nothing,
// scaling adds or removes only the difference, a changed template
// replaces the pods, and down FILE removes them all.
func TestWorkloadDeployment(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "wl-web.yaml", wlDeployment("2", "v1"))
	plDownOnCleanup(t, file)
	stdout, stderr, code := H.Podrun(t, "", "up", file)
	if code != 0 || strings.Count(stdout, " created (Running)") != 2 {
		t.Fatalf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `note: `+file+` (document 2): Service "wl-web" skipped`) {
		t.Errorf("up stderr lacks the note on the skipped Service:\n%s", stderr)
	}
	two := wlPods(t)
	if len(two) != 2 {
		t.Fatalf("pods of wl-web: %v, want 2", two)
	}
	for _, name := range wlNames(two) {
		if row := plPsRow(t, name, "-o", "wide"); len(row) < 10 || row[9] != "Deployment/wl-web" {
			t.Errorf("ps -o wide row %q: want OWNER Deployment/wl-web", row)
		}
	}

	up := func(doc string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if stdout, stderr, code := H.Podrun(t, "", "up", file); code != 0 {
			t.Fatalf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
	}
	up(wlDeployment("2", "v1"))
	if again := wlPods(t); strings.Join(wlNames(again), ",") != strings.Join(wlNames(two), ",") {
		t.Errorf("the same file applied again: pods %v, were %v", wlNames(again), wlNames(two))
	}
	up(wlDeployment("3", "v1"))
	three := wlPods(t)
	kept := 0
	for n := range two {
		if _, ok := three[n]; ok {
			kept++
		}
	}
	if len(three) != 3 || kept != 2 {
		t.Errorf("scaled to 3: pods %v (%d of the 2 kept)", wlNames(three), kept)
	}
	up(wlDeployment("1", "v1"))
	one := wlPods(t)
	if len(one) != 1 {
		t.Errorf("scaled to 1: pods %v", wlNames(one))
	}
	for n := range one {
		if _, ok := three[n]; !ok {
			t.Errorf("scaled to 1: pod %s is new", n)
		}
	}
	up(wlDeployment("1", "v2"))
	changed := wlPods(t)
	for n, v := range changed {
		if _, old := one[n]; old || v != "v2" {
			t.Errorf("after a template change: pod %s VALUE %s (old: %v), want a new pod with v2", n, v, old)
		}
	}
	if len(changed) != 1 {
		t.Errorf("after a template change: pods %v, want 1", wlNames(changed))
	}
	if stdout, stderr, code := H.Podrun(t, "", "down", file); code != 0 || len(wlPods(t)) != 0 {
		t.Errorf("down: exit %d, stdout %q, pods left %v; stderr:\n%s", code, stdout, wlPods(t), stderr)
	}
}

// TestWorkloadStatefulSet: a StatefulSet's pods are <name>-<ordinal>, with
// that hostname.
func TestWorkloadStatefulSet(t *testing.T) {
	H.require(t)
	plMustUp(t, "wl-db", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: wl-db}
spec:
  serviceName: wl-db
  replicas: 2
  selector: {matchLabels: {app: wl-db}}
  template:
    metadata: {labels: {app: wl-db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: `+H.Image+`
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`)
	for _, name := range []string{"wl-db-0", "wl-db-1"} {
		if out, _, code := H.Podrun(t, "", "exec", name, "--", "hostname"); code != 0 || strings.TrimSpace(out) != name {
			t.Errorf("exec %s -- hostname: %q (exit %d)", name, out, code)
		}
	}
}
