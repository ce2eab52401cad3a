package manifest

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// osNotSupported is why a windows pod is refused: the kubelet of a Linux
// node refuses it at admission (PodOSNotSupported), and podrun is that node.
const osNotSupported = "podrun runs pods on this Linux node only; the kubelet refuses such a pod at admission " +
	"(PodOSNotSupported: Failed to admit pod as the OS field doesn't match node OS)"

// validateNodeFields checks the fields the node acts on rather than the
// runtime: the active deadline (enforced while supervised, package eviction),
// the pod's OS, and the containers' resizePolicy (accepted and ignored, but
// checked as the API server checks it).
func validateNodeFields(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if os := spec.OS; os != nil {
		ofld := fld.Child("os", "name")
		switch os.Name {
		case "":
			errs = append(errs, field.Required(ofld, "cannot be empty"))
		case corev1.Linux:
		case corev1.Windows:
			errs = append(errs, field.Forbidden(ofld, osNotSupported))
		default:
			errs = append(errs, field.NotSupported(fld.Child("os"), os.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	for i := range spec.InitContainers {
		c, f := &spec.InitContainers[i], fld.Child("initContainers").Index(i).Child("resizePolicy")
		if len(c.ResizePolicy) > 0 && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			errs = append(errs, field.Forbidden(f, "must not be set for init containers"))
			continue
		}
		errs = append(errs, validateResizePolicy(c.ResizePolicy, f, spec.RestartPolicy)...)
	}
	for i := range spec.Containers {
		f := fld.Child("containers").Index(i).Child("resizePolicy")
		errs = append(errs, validateResizePolicy(spec.Containers[i].ResizePolicy, f, spec.RestartPolicy)...)
	}
	return errs
}

// validateResizePolicy is the API server's check of a container's
// resizePolicy: cpu and memory at most once each, with a known policy.
func validateResizePolicy(policies []corev1.ContainerResizePolicy, fld *field.Path, podPolicy corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(fld.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		errs = append(errs, validateEnum(p.ResourceName, fld, corev1.ResourceCPU, corev1.ResourceMemory)...)
		errs = append(errs, validateEnum(p.RestartPolicy, fld, corev1.NotRequired, corev1.RestartContainer)...)
		if podPolicy == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fld, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}
