package downward

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testInfo() Info {
	return Info{
		Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "web", Namespace: "shop", UID: "0b7c1a2e-1111-4222-8333-944455556666",
				Labels:      map[string]string{"app": "web", "tier": "front"},
				Annotations: map[string]string{"example.com/note": "say \"hi\"\nbye", "b": ""},
			},
			Spec: corev1.PodSpec{
				NodeName:           "ignored-by-podrun",
				ServiceAccountName: "builder",
				InitContainers:     []corev1.Container{{Name: "init"}},
				Containers: []corev1.Container{
					{Name: "app", Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{
							corev1.ResourceCPU:                   resource.MustParse("250m"),
							corev1.ResourceMemory:                resource.MustParse("64Mi"),
							corev1.ResourceName("hugepages-2Mi"): resource.MustParse("4Mi"),
						},
						Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("100m"),
							corev1.ResourceMemory: resource.MustParse("1000"),
						},
					}},
					{Name: "bare"},
				},
			},
		},
		PodIPs:   []string{"10.85.0.7", "fd00::7"},
		HostIP:   "192.168.1.20",
		NodeName: "node-a",
		Node: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("8"),
			corev1.ResourceMemory:           resource.MustParse("16Gi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		},
	}
}

func TestFieldValue(t *testing.T) {
	info := testInfo()
	cases := map[string]string{
		"metadata.name":                            "web",
		"metadata.namespace":                       "shop",
		"metadata.uid":                             "0b7c1a2e-1111-4222-8333-944455556666",
		"metadata.labels":                          "app=\"web\"\ntier=\"front\"",
		"metadata.annotations":                     "b=\"\"\nexample.com/note=\"say \\\"hi\\\"\\nbye\"",
		"metadata.labels['tier']":                  "front",
		"metadata.labels['missing']":               "",
		"metadata.annotations['example.com/note']": "say \"hi\"\nbye",
		"spec.nodeName":                            "node-a",
		"spec.host":                                "node-a",
		"spec.serviceAccountName":                  "builder",
		"status.podIP":                             "10.85.0.7",
		"status.podIPs":                            "10.85.0.7,fd00::7",
		"status.hostIP":                            "192.168.1.20",
		"status.hostIPs":                           "192.168.1.20",
	}
	for path, want := range cases {
		got, err := FieldValue(info, &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path})
		if err != nil || got != want {
			t.Errorf("FieldValue(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
}

func TestFieldValueErrors(t *testing.T) {
	info := testInfo()
	cases := []struct{ version, path, want string }{
		{"v2", "metadata.name", "unsupported pod version: v2"},
		{"v1", "spec.restartPolicy", "unsupported fieldPath: spec.restartPolicy"},
		{"v1", "metadata.name['x']", "field label does not support subscript: metadata.name['x']"},
		{"v1", "metadata.labels['a b']", "invalid key subscript in metadata.labels['a b']"},
		{"", "status.phase", "unsupported fieldPath"},
	}
	for _, c := range cases {
		_, err := FieldValue(info, &corev1.ObjectFieldSelector{APIVersion: c.version, FieldPath: c.path})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FieldValue(%s %s) error = %v; want %q", c.version, c.path, err, c.want)
		}
	}
}

func TestFieldValueNoPodIP(t *testing.T) {
	info := testInfo()
	info.PodIPs = nil
	for _, path := range []string{"status.podIP", "status.podIPs"} {
		if got, err := FieldValue(info, &corev1.ObjectFieldSelector{FieldPath: path}); err != nil || got != "" {
			t.Errorf("FieldValue(%s) = %q, %v; want empty", path, got, err)
		}
	}
}

func TestFormatMap(t *testing.T) {
	if got := FormatMap(nil); got != "" {
		t.Errorf("FormatMap(nil) = %q", got)
	}
	got := FormatMap(map[string]string{"z": "1", "a": "tab\there", "m": "ü"})
	if want := "a=\"tab\\there\"\nm=\"ü\"\nz=\"1\""; got != want {
		t.Errorf("FormatMap = %q; want %q", got, want)
	}
}

func TestResourceValue(t *testing.T) {
	info := testInfo()
	cases := []struct {
		container, selName, res, divisor, want string
	}{
		{"app", "", "limits.cpu", "", "1"},       // 250m rounds up to 1 core
		{"app", "", "limits.cpu", "1m", "250"},   // millicores
		{"app", "", "requests.cpu", "1m", "100"}, // requests as set
		{"app", "", "limits.memory", "", "67108864"},
		{"app", "", "limits.memory", "1Mi", "64"},
		{"app", "", "requests.memory", "1k", "1"},
		{"app", "", "requests.memory", "1Ki", "1"}, // 1000 bytes round up to 1Ki
		{"app", "", "limits.ephemeral-storage", "1Gi", "100"},
		{"app", "", "limits.hugepages-2Mi", "1Mi", "4"},
		{"app", "", "requests.ephemeral-storage", "", "0"},
		{"bare", "", "limits.cpu", "", "8"},        // the node's allocatable
		{"bare", "", "limits.memory", "1Gi", "16"}, // the node's allocatable
		{"bare", "", "requests.cpu", "", "0"},      // requests are never defaulted here
		{"bare", "app", "limits.cpu", "1m", "250"}, // the selector's container wins
		{"app", "bare", "limits.memory", "1Gi", "16"},
		{"init", "", "limits.cpu", "", "8"},
	}
	for _, c := range cases {
		sel := &corev1.ResourceFieldSelector{ContainerName: c.selName, Resource: c.res}
		if c.divisor != "" {
			sel.Divisor = resource.MustParse(c.divisor)
		}
		got, err := ResourceValue(info, c.container, sel)
		if err != nil || got != c.want {
			t.Errorf("ResourceValue(%s, %+v) = %q, %v; want %q", c.container, sel, got, err, c.want)
		}
	}
}

func TestResourceValuePodLevelLimits(t *testing.T) {
	info := testInfo()
	info.Pod.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("2Gi"),
	}}
	sel := func(r string) *corev1.ResourceFieldSelector {
		return &corev1.ResourceFieldSelector{Resource: r, Divisor: resource.MustParse("1Mi")}
	}
	if got, _ := ResourceValue(info, "bare", sel("limits.memory")); got != "2048" {
		t.Errorf("limits.memory with a pod-level limit = %s; want 2048", got)
	}
	if got, _ := ResourceValue(info, "app", sel("limits.memory")); got != "64" {
		t.Errorf("limits.memory of a container with its own limit = %s; want 64", got)
	}
	if got, _ := ResourceValue(info, "bare", &corev1.ResourceFieldSelector{Resource: "limits.cpu"}); got != "8" {
		t.Errorf("limits.cpu without a pod-level cpu limit = %s; want the node's 8", got)
	}
	if _, ok := info.Node[corev1.ResourceMemory]; !ok || info.Node.Memory().String() != "16Gi" {
		t.Errorf("the node's allocatable was changed: %v", info.Node)
	}
}

func TestResourceValueErrors(t *testing.T) {
	info := testInfo()
	for _, c := range []struct{ container, res, want string }{
		{"nope", "limits.cpu", "container nope not found"},
		{"app", "limits.gpu", "unsupported container resource: limits.gpu"},
		{"app", "cpu", "unsupported container resource: cpu"},
	} {
		_, err := ResourceValue(info, c.container, &corev1.ResourceFieldSelector{Resource: c.res})
		if err == nil || err.Error() != c.want {
			t.Errorf("ResourceValue(%s, %s) error = %v; want %q", c.container, c.res, err, c.want)
		}
	}
}

func TestMemTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(path, []byte("MemFree:  100 kB\nMemTotal:       16303828 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := memTotal(path); err != nil || got != 16303828*1024 {
		t.Errorf("memTotal = %d, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("MemFree:  100 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := memTotal(path); err == nil {
		t.Error("memTotal without a MemTotal line: no error")
	}
}

func TestNodeAllocatable(t *testing.T) {
	got, err := NodeAllocatable(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range limitDefaulted {
		if q := got[r]; q.Sign() <= 0 {
			t.Errorf("allocatable %s = %s; want > 0", r, q.String())
		}
	}
}

// TestHugepages: hugepages-<size> is nr_hugepages pages of each size.
func TestHugepages(t *testing.T) {
	dir := t.TempDir()
	for name, n := range map[string]string{"hugepages-2048kB": "4\n", "hugepages-1048576kB": "0\n", "other": "9\n"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "nr_hugepages"), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := hugepages(dir)
	two, one := got["hugepages-2Mi"], got["hugepages-1Gi"]
	if len(got) != 2 || two.Value() != 8<<20 || one.Value() != 0 {
		t.Errorf("hugepages = %v", got)
	}
}
