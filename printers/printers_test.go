package printers

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/run"
)

// TestPrintStatusSource: `podrun status POD` names the pod's SOURCE (as ps
// shows it) in a comment before the YAML by default; -o yaml and -o json
// print the object alone.
func TestPrintStatusSource(t *testing.T) {
	p := &run.PodInfo{Namespace: "default", Name: "web", Source: "/etc/podrun/manifests/web.yaml",
		Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	for _, tc := range []struct{ format, first string }{
		{"", "# source: /etc/podrun/manifests/web.yaml"},
		{"yaml", "apiVersion: v1"},
		{"json", "{"},
	} {
		var out bytes.Buffer
		if err := Status(&out, p, tc.format); err != nil {
			t.Fatalf("-o %q: %v", tc.format, err)
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); first != tc.first {
			t.Errorf("-o %q: first line %q, want %q", tc.format, first, tc.first)
		}
		var pod corev1.Pod // JSON is YAML too
		if err := yaml.Unmarshal(out.Bytes(), &pod); err != nil || pod.Kind != "Pod" || pod.Name != "web" || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("-o %q: output does not decode to the pod (%v): %+v\n%s", tc.format, err, pod, out.String())
		}
	}
	var out bytes.Buffer
	if err := Status(&out, p, "wide"); err == nil || out.Len() != 0 {
		t.Errorf("-o wide: err %v, output %q; want a usage error and nothing printed", err, out.String())
	}
	p.Source = ""
	out.Reset()
	if err := Status(&out, p, ""); err != nil || !strings.HasPrefix(out.String(), "# source: <none>\n") {
		t.Errorf("no source: %v, %q", err, out.String())
	}
}

// TestObjects: as kubectl apply --dry-run=client -o: one object alone,
// several in a v1 List; a format other than json or yaml is refused.
func TestObjects(t *testing.T) {
	pod := func(name string) runtime.Object {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	var b bytes.Buffer
	if err := Objects(&b, []runtime.Object{pod("a")}, "yaml"); err != nil || !strings.HasPrefix(b.String(), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n") {
		t.Errorf("one pod: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := Objects(&b, []runtime.Object{pod("a"), pod("b")}, "yaml"); err != nil ||
		!strings.HasPrefix(b.String(), "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n") || !strings.HasSuffix(b.String(), "kind: List\nmetadata: {}\n") {
		t.Errorf("two pods: %v\n%s", err, b.String())
	}
	var fe *FormatError
	if err := Object(&b, pod("a"), "wide"); !errors.As(err, &fe) {
		t.Errorf("-o wide of an object: %v, want a FormatError", err)
	}
}
