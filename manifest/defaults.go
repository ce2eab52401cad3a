package manifest

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default sets the defaults the API server and the kubelet would set and that
// podrun relies on (k8s.io/kubernetes pkg/apis/core/v1/defaults.go). It
// changes only fields left unset, so it is idempotent.
func Default(pod *corev1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	defaultSpec(&pod.Spec)
	for i := range pod.Spec.InitContainers {
		defaultContainer(&pod.Spec.InitContainers[i], pod.Spec.HostNetwork)
		defaultProbes(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		defaultContainer(&pod.Spec.Containers[i], pod.Spec.HostNetwork)
		defaultProbes(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.Volumes {
		defaultVolume(&pod.Spec.Volumes[i])
	}
	defaultResources(pod) // resources.go
}

func defaultSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// The following change nothing podrun does; they are set as the API
	// server sets them, so that a manifest and its `kubectl get -o yaml`
	// output default to the same pod, with the same Hash.
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	defaultEnv(c) // env.go
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
}

// defaultPullPolicy is Always for an image tagged latest or not tagged at
// all, IfNotPresent otherwise (a digest counts as a tag), as in the kubelet:
// "nginx" and "nginx:latest" pull every time, "nginx:1.27" and
// "nginx@sha256:..." only when missing, "nginx:latest@sha256:..." every time.
func defaultPullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent // Validate reports the image
	}
	tagged, isTagged := named.(reference.Tagged)
	_, isDigested := named.(reference.Digested)
	if (isTagged && tagged.Tag() == "latest") || (!isTagged && !isDigested) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultVolume(v *corev1.Volume) {
	if v.HostPath != nil && v.HostPath.Type == nil {
		v.HostPath.Type = ptr(corev1.HostPathUnset)
	}
	defaultConfigVolume(v) // configvolumes.go
}

func ptr[T any](v T) *T { return &v }
