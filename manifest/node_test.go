package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidateNodeFields: activeDeadlineSeconds, os.name and resizePolicy
// are checked as the API server checks them; a windows pod is refused with
// the kubelet's admission reason.
func TestValidateNodeFields(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(30)) }, nil},
		{"zero deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"}},
		{"negative deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(-5)) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: -5: must be between 1 and 2147483647, inclusive"}},
		{"deadline over int32", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(1 << 31)) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 1 and 2147483647, inclusive"}},
		{"linux", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} }, nil},
		{"windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
			[]string{"spec.os.name: Forbidden: " + osNotSupported}},
		{"empty os name", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{} },
			[]string{"spec.os.name: Required value: cannot be empty"}},
		{"unknown os", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} },
			[]string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{"resizePolicy", func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, nil},
		{"resizePolicy values", func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
				{ResourceName: corev1.ResourceCPU, RestartPolicy: "Sometimes"},
				{ResourceName: "nvidia.com/gpu", RestartPolicy: corev1.NotRequired}}
		}, []string{
			`spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"`,
			`spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"`,
			`spec.containers[0].resizePolicy: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "memory"`}},
		{"resizePolicy under restartPolicy Never", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, []string{`spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when ` + "`restartPolicy`" + ` is 'Never'`}},
		{"resizePolicy of init containers", func(p *corev1.Pod) {
			policy := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "init", Image: "busybox:1", ResizePolicy: policy},
				{Name: "side", Image: "busybox:1", RestartPolicy: &sidecar, ResizePolicy: policy}}
		}, []string{"spec.initContainers[0].resizePolicy: Forbidden: must not be set for init containers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}
