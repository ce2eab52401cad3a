package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podrun/podrun/manifest"
)

// TestScanAdmission: a pod the node's admission refuses is its file's
// problem, like an invalid manifest; the other files' pods are wanted.
func TestScanAdmission(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", `apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  hostPID: true
  containers: [{name: app, image: busybox:1}]
`)
	write("b.yaml", `apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: app, image: busybox:1}]
`)
	s := NewSources(dir, "")
	s.Admission = manifest.Options{Policy: "baseline"}
	wants, broken, problems := s.Scan(context.Background(), nil)
	a := filepath.Join(dir, "a.yaml")
	if _, ok := wants["default/plain"]; !ok || len(wants) != 1 {
		t.Errorf("wants = %v, want default/plain only", wants)
	}
	if !broken[a] || len(broken) != 1 {
		t.Errorf("broken = %v, want %s", broken, a)
	}
	want := a + ` (document 1): violates PodSecurity "baseline:latest": host namespaces (hostPID=true)`
	if len(problems) != 1 || problems[0].Source != a || strings.TrimSpace(problems[0].Msg) != want {
		t.Errorf("problems = %+v, want one of %s: %s", problems, a, want)
	}
}
