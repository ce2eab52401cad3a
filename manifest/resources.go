package manifest

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/resources"
)

// Compute resources: podrun turns cpu and memory requests and limits into
// cgroup settings (package resources). Other resources (ephemeral-storage,
// hugepages-<size>, extended resources such as nvidia.com/gpu) are refused
// by name: podrun enforces none of them.
var supportedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// defaultResources sets the API server's defaults for resources
// (pkg/apis/core/v1/defaults.go SetDefaults_Pod): a container's request
// defaults to its limit; with pod-level limits, a pod-level request defaults
// to the containers' aggregate request, else to the pod-level limit.
func defaultResources(pod *corev1.Pod) {
	for _, c := range resources.Containers(pod) {
		for name, lim := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; ok {
				continue
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = lim.DeepCopy()
		}
	}
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	reqs := corev1.ResourceList{}
	for name, q := range r.Requests {
		reqs[name] = q
	}
	for name, q := range resources.ContainerRequests(pod) {
		if _, ok := reqs[name]; !ok && isSupportedResource(name) {
			reqs[name] = q
		}
	}
	for name, q := range r.Limits {
		if _, ok := reqs[name]; !ok && isSupportedResource(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		r.Requests = reqs
	}
}

func isSupportedResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// validateResources checks the containers' and the pod's resources as the
// API server does (ValidateResourceRequirements, validatePodResources):
// supported names, non-negative quantities, requests not above limits, and
// pod-level resources that cover the containers'.
func validateResources(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.InitContainers {
		errs = append(errs, validateRequirements(&spec.InitContainers[i].Resources, fld.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateRequirements(&spec.Containers[i].Resources, fld.Child("containers").Index(i).Child("resources"))...)
	}
	if spec.Resources == nil {
		return errs
	}
	rfld := fld.Child("resources")
	errs = append(errs, validateRequirements(spec.Resources, rfld)...)
	if len(errs) > 0 {
		return errs
	}
	aggregate := resources.ContainerRequests(&corev1.Pod{Spec: *spec})
	for _, name := range sortedResourceNames(aggregate) {
		podReq, ok := spec.Resources.Requests[name]
		if q := aggregate[name]; ok && !podReq.IsZero() && q.Cmp(podReq) > 0 {
			errs = append(errs, field.Invalid(rfld.Child("requests").Key(string(name)), podReq.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", q.String())))
		}
	}
	for _, c := range spec.Containers {
		for _, name := range sortedResourceNames(c.Resources.Limits) {
			podLim, ok := spec.Resources.Limits[name]
			if q := c.Resources.Limits[name]; ok && q.Cmp(podLim) > 0 {
				errs = append(errs, field.Invalid(rfld.Child("limits").Key(string(name)), podLim.String(),
					fmt.Sprintf("must be greater than or equal to container limit of %s", q.String())))
			}
		}
	}
	return errs
}

// quantityBound is the largest quantity of resource name in part ("limits"
// or "requests") that podrun can turn into a cgroup setting, and why: past
// it the arithmetic would wrap (resources.MaxMemory, MaxCPULimit,
// MaxCPURequest).
func quantityBound(name corev1.ResourceName, part string) (resource.Quantity, string) {
	switch {
	case name == corev1.ResourceMemory:
		return resources.MaxMemory, "the most bytes memory.max holds"
	case part == "limits":
		return resources.MaxCPULimit, "the largest CFS quota the kernel takes, over a 100ms period"
	}
	return resources.MaxCPURequest, "the most whose cpu shares can be computed"
}

// validateRequirements checks one set of requests and limits.
func validateRequirements(r *corev1.ResourceRequirements, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sortedResourceNames(part.list) {
			f := fld.Child(part.name).Key(string(name))
			q := part.list[name]
			bound, why := quantityBound(name, part.name)
			switch {
			case !isSupportedResource(name):
				errs = append(errs, field.NotSupported(f, name, supportedResources))
			case q.Sign() < 0:
				errs = append(errs, field.Invalid(f, q.String(), "must be greater than or equal to 0"))
			case q.Cmp(bound) > 0:
				errs = append(errs, field.Invalid(f, q.String(), fmt.Sprintf("must be less than or equal to %s, %s", bound.String(), why)))
			}
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		lim, ok := r.Limits[name]
		if ok && isSupportedResource(name) && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(fld.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// resourceWarnings are the API server's warnings about a pod's resources
// (pkg/api/pod/warnings.go): a memory request or limit of a fractional
// number of bytes, which the cgroup rounds up.
func resourceWarnings(spec *corev1.PodSpec, fld *field.Path) []string {
	var warnings []string
	check := func(c *corev1.Container, cfld *field.Path) {
		for _, part := range []struct {
			name string
			list corev1.ResourceList
		}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
			if q, ok := part.list[corev1.ResourceMemory]; ok && q.MilliValue()%1000 != 0 {
				warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer",
					cfld.Child("resources", part.name).Key(string(corev1.ResourceMemory)), q.String()))
			}
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], fld.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], fld.Child("containers").Index(i))
	}
	return warnings
}
