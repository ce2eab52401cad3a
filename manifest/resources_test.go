package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func rlist(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestDefaultResources(t *testing.T) {
	pod := basePod()
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits:   rlist("cpu", "500m", "memory", "64Mi"),
		Requests: rlist("cpu", "100m"),
	}
	Default(pod)
	got := pod.Spec.Containers[0].Resources.Requests
	if q := got[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("cpu request %s, want 100m (kept)", q.String())
	}
	if q := got[corev1.ResourceMemory]; q.String() != "64Mi" {
		t.Errorf("memory request %s, want 64Mi (from the limit)", q.String())
	}

	// Pod-level requests default to the containers' aggregate, else to the
	// pod-level limits.
	pod = basePod()
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "busybox:1",
		Resources: corev1.ResourceRequirements{Requests: rlist("cpu", "200m")}})
	pod.Spec.Containers[0].Resources.Requests = rlist("cpu", "100m")
	pod.Spec.Resources = &corev1.ResourceRequirements{Limits: rlist("cpu", "1", "memory", "1Gi")}
	Default(pod)
	reqs := pod.Spec.Resources.Requests
	if q := reqs[corev1.ResourceCPU]; q.String() != "300m" {
		t.Errorf("pod cpu request %s, want 300m", q.String())
	}
	if q := reqs[corev1.ResourceMemory]; q.String() != "1Gi" {
		t.Errorf("pod memory request %s, want 1Gi", q.String())
	}
}

func TestValidateResources(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"cpu and memory", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: rlist("cpu", "100m", "memory", "32Mi"), Limits: rlist("cpu", "1", "memory", "64Mi")}
		}, nil},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: rlist("memory", "128Mi"), Limits: rlist("memory", "64Mi")}
		}, []string{`spec.containers[0].resources.requests[memory]: Invalid value: "128Mi": must be less than or equal to memory limit of 64Mi`}},
		{"negative", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
				Resources: corev1.ResourceRequirements{Requests: rlist("cpu", "-1")}}}
		}, []string{`spec.initContainers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`}},
		{"other resources by name", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits: rlist("hugepages-2Mi", "4Mi", "nvidia.com/gpu", "1", "ephemeral-storage", "1Gi", "memory", "64Mi")}
		}, []string{
			`spec.containers[0].resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory"`,
			`spec.containers[0].resources.limits[hugepages-2Mi]: Unsupported value: "hugepages-2Mi": supported values: "cpu", "memory"`,
			`spec.containers[0].resources.limits[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "memory"`,
			`spec.containers[0].resources.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory"`,
			`spec.containers[0].resources.requests[hugepages-2Mi]: Unsupported value: "hugepages-2Mi": supported values: "cpu", "memory"`,
			`spec.containers[0].resources.requests[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "memory"`,
		}},
		{"pod-level below the containers", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rlist("cpu", "2", "memory", "64Mi")}
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1"), Limits: rlist("cpu", "1")}
		}, []string{
			`spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 2`,
			`spec.resources.limits[cpu]: Invalid value: "1": must be greater than or equal to container limit of 2`,
		}},
		{"pod-level", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "1"), Limits: rlist("memory", "1Gi")}
		}, nil},
		// Past what the cgroup arithmetic holds (resources.MaxMemory,
		// MaxCPULimit, MaxCPURequest): on cbe04fe memory 2^63 became
		// memory.max -2^63 and cpu 1e13 a wrapped quota.
		{"memory 2^63, cpu 1e13", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rlist("cpu", "1e13", "memory", "9223372036854775808")}
		}, []string{
			`spec.containers[0].resources.limits[cpu]: Invalid value: "10e12": must be less than or equal to 175921860444m, the largest CFS quota the kernel takes, over a 100ms period`,
			`spec.containers[0].resources.limits[memory]: Invalid value: "9223372036854775808": must be less than or equal to 9223372036854775807, the most bytes memory.max holds`,
			`spec.containers[0].resources.requests[cpu]: Invalid value: "10e12": must be less than or equal to 9007199254740991m, the most whose cpu shares can be computed`,
			`spec.containers[0].resources.requests[memory]: Invalid value: "9223372036854775808": must be less than or equal to 9223372036854775807, the most bytes memory.max holds`,
		}},
		{"the largest", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: rlist("cpu", "175921860444m", "memory", "8Ei"), Limits: rlist("cpu", "175921860444m", "memory", "9223372036854775807")}
			p.Spec.Containers[0].Resources.Requests = rlist("cpu", "175921860444m", "memory", "9223372036854775807")
		}, nil},
		{"a request past its bound, no limit", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rlist("cpu", "9007199254740992m")}
		}, []string{
			`spec.resources.requests[cpu]: Invalid value: "9007199254740992m": must be less than or equal to 9007199254740991m, the most whose cpu shares can be computed`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			tt.mutate(pod)
			Default(pod)
			var got []string
			for _, e := range validateResources(&pod.Spec, field.NewPath("spec")) {
				got = append(got, e.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors:\n%q\nwant %d:\n%q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("error %d:\n got %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestResourceWarnings: a fractional number of bytes is warned of in the
// API server's words (pkg/api/pod/warnings.go), not refused.
func TestResourceWarnings(t *testing.T) {
	pod := basePod()
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
		Resources: corev1.ResourceRequirements{Requests: rlist("memory", "1.5")}}}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rlist("memory", "100m", "cpu", "100m")}
	Default(pod)
	if errs := validateResources(&pod.Spec, field.NewPath("spec")); len(errs) != 0 {
		t.Fatalf("refused: %v", errs)
	}
	got := resourceWarnings(&pod.Spec, field.NewPath("spec"))
	want := []string{
		`spec.initContainers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.containers[0].resources.limits[memory]: fractional byte value "100m" is invalid, must be an integer`,
		`spec.containers[0].resources.requests[memory]: fractional byte value "100m" is invalid, must be an integer`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Load carries them in Set.Warnings, with file and document.
	set, err := Parse("frac.yaml", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox:1","resources":{"limits":{"memory":"100m"}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 2 || set.Warnings[0] != `frac.yaml (document 1): spec.containers[0].resources.limits[memory]: fractional byte value "100m" is invalid, must be an integer` {
		t.Errorf("Set.Warnings = %q", set.Warnings)
	}
}
