package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// basePod is a minimal valid pod for tests to mutate.
func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"docker.io/library/nginx", corev1.PullAlways},
		{"registry.local:5000/team/app", corev1.PullAlways}, // a registry port is not a tag
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.local:5000/team/app:v2", corev1.PullIfNotPresent},
		{"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"nginx:1.27@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		// As in the kubelet, the tag decides even with a digest.
		{"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			pod := basePod()
			pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: tt.image}}
			pod.Spec.Containers[0].Image = tt.image
			Default(pod)
			if got := pod.Spec.Containers[0].ImagePullPolicy; got != tt.want {
				t.Errorf("container: got %s, want %s", got, tt.want)
			}
			if got := pod.Spec.InitContainers[0].ImagePullPolicy; got != tt.want {
				t.Errorf("init container: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDefaultKeepsExplicitPullPolicy(t *testing.T) {
	pod := basePod()
	pod.Spec.Containers[0].Image = "nginx:latest"
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	Default(pod)
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != corev1.PullNever {
		t.Errorf("got %s, want Never", got)
	}
}

func TestDefaultPodFields(t *testing.T) {
	pod := basePod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 53}}}}
	Default(pod)

	s := pod.Spec
	checks := []struct {
		field     string
		got, want any
	}{
		{"metadata.namespace", pod.Namespace, "default"},
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"containers[0].terminationMessagePath", s.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"containers[0].terminationMessagePolicy", s.Containers[0].TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"initContainers[0].terminationMessagePath", s.InitContainers[0].TerminationMessagePath, "/dev/termination-log"},
		{"initContainers[0].ports[0].protocol", s.InitContainers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		{"initContainers[0].ports[0].hostPort", s.InitContainers[0].Ports[0].HostPort, int32(0)},
		{"volumes[0].hostPath.type", *s.Volumes[0].HostPath.Type, corev1.HostPathUnset},
		{"volumes[1].emptyDir.medium", s.Volumes[1].EmptyDir.Medium, corev1.StorageMediumDefault},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func TestDefaultHostNetworkHostPort(t *testing.T) {
	pod := basePod()
	pod.Spec.HostNetwork = true
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 443, HostPort: 443}}
	Default(pod)
	for _, got := range []corev1.ContainerPort{pod.Spec.InitContainers[0].Ports[0], pod.Spec.Containers[0].Ports[0], pod.Spec.Containers[0].Ports[1]} {
		if got.HostPort != got.ContainerPort {
			t.Errorf("port %d: hostPort %d, want it equal to containerPort", got.ContainerPort, got.HostPort)
		}
	}
	if errs := Validate(pod); len(errs) != 0 {
		t.Errorf("Validate: %v", errs)
	}
}

func TestDefaultIsIdempotent(t *testing.T) {
	once := basePod()
	Default(once)
	twice := once.DeepCopy()
	Default(twice)
	h1, _ := Identity(once)
	h2, _ := Identity(twice)
	if h1 != h2 {
		t.Errorf("defaulting twice changed the pod")
	}
}
