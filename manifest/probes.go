package manifest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultProbes applies the API server's probe defaults.
func defaultProbes(c *corev1.Container) {
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		setIfZero(&p.TimeoutSeconds, 1)
		setIfZero(&p.PeriodSeconds, 10)
		setIfZero(&p.SuccessThreshold, 1)
		setIfZero(&p.FailureThreshold, 3)
		defaultHTTPGet(p.HTTPGet)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func setIfZero(v *int32, d int32) {
	if *v == 0 {
		*v = d
	}
}

// validateInitLifecycle: only a native sidecar (restartPolicy Always) may
// have probes and hooks, as the API server enforces; another init
// container may have its own restartPolicy (OnFailure, Never) and
// restartPolicyRules (ContainerRestartRules). A sidecar's rules are
// accepted and have no effect (it restarts on any exit), as kubelet 1.34
// takes a static pod: with its default gates (ContainerRestartRules off)
// validateInitContainerRestartPolicy looks at no rule of a sidecar.
func validateInitLifecycle(c *corev1.Container, fld *field.Path) field.ErrorList {
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return validateLifecycle(c, fld)
	}
	errs := validateRestartRules(c, fld)
	forbid := func(set bool, name string) {
		if set {
			errs = append(errs, field.Forbidden(fld.Child(name), "may not be set for init containers without restartPolicy=Always"))
		}
	}
	forbid(c.LivenessProbe != nil, "livenessProbe")
	forbid(c.ReadinessProbe != nil, "readinessProbe")
	forbid(c.StartupProbe != nil, "startupProbe")
	forbid(c.Lifecycle != nil, "lifecycle")
	return errs
}

// validateLifecycle checks a container's probes and hooks.
func validateLifecycle(c *corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, p := range []struct {
		name       string
		probe      *corev1.Probe
		singleSucc bool
		graceOK    bool
	}{
		{"livenessProbe", c.LivenessProbe, true, true},
		{"readinessProbe", c.ReadinessProbe, false, false},
		{"startupProbe", c.StartupProbe, true, true},
	} {
		if p.probe != nil {
			errs = append(errs, validateProbe(p.probe, c.Ports, fld.Child(p.name), p.singleSucc, p.graceOK)...)
		}
	}
	if l := c.Lifecycle; l != nil {
		for name, h := range map[string]*corev1.LifecycleHandler{"postStart": l.PostStart, "preStop": l.PreStop} {
			if h != nil {
				errs = append(errs, validateHook(h, c.Ports, fld.Child("lifecycle", name))...)
			}
		}
	}
	return errs
}

func validateProbe(p *corev1.Probe, ports []corev1.ContainerPort, fld *field.Path, singleSuccess, graceAllowed bool) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if p.Exec != nil {
		n++
		if len(p.Exec.Command) == 0 {
			errs = append(errs, field.Required(fld.Child("exec", "command"), ""))
		}
	}
	if p.HTTPGet != nil {
		n++
		errs = append(errs, validatePort(p.HTTPGet.Port, ports, fld.Child("httpGet", "port"))...)
		errs = append(errs, validateEnum(p.HTTPGet.Scheme, fld.Child("httpGet", "scheme"), corev1.URISchemeHTTP, corev1.URISchemeHTTPS)...)
	}
	if p.TCPSocket != nil {
		n++
		errs = append(errs, validatePort(p.TCPSocket.Port, ports, fld.Child("tcpSocket", "port"))...)
	}
	if p.GRPC != nil {
		n++
		errs = append(errs, validatePort(intstr.FromInt32(p.GRPC.Port), ports, fld.Child("grpc", "port"))...)
	}
	if n != 1 {
		errs = append(errs, field.Invalid(fld, n, "must specify exactly one of exec, httpGet, tcpSocket, grpc"))
	}
	for name, v := range map[string]int32{"initialDelaySeconds": p.InitialDelaySeconds, "timeoutSeconds": p.TimeoutSeconds,
		"periodSeconds": p.PeriodSeconds, "successThreshold": p.SuccessThreshold, "failureThreshold": p.FailureThreshold} {
		if v < 0 || (v == 0 && name != "initialDelaySeconds") {
			errs = append(errs, field.Invalid(fld.Child(name), v, "must be greater than 0"))
		}
	}
	if singleSuccess && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fld.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case !graceAllowed:
			errs = append(errs, field.Invalid(fld.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		case *g <= 0:
			errs = append(errs, field.Invalid(fld.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		}
	}
	return errs
}

func validateHook(h *corev1.LifecycleHandler, ports []corev1.ContainerPort, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(fld.Child("exec", "command"), ""))
		}
	}
	if h.HTTPGet != nil {
		n++
		errs = append(errs, validatePort(h.HTTPGet.Port, ports, fld.Child("httpGet", "port"))...)
	}
	if h.Sleep != nil {
		n++
		if h.Sleep.Seconds < 0 {
			errs = append(errs, field.Invalid(fld.Child("sleep", "seconds"), h.Sleep.Seconds, "must be non-negative"))
		}
	}
	if n != 1 {
		errs = append(errs, field.Invalid(fld, n, "must specify exactly one of exec, httpGet, sleep"))
	}
	return errs
}

// validatePort checks a probe or hook port: a number in range, or the name
// of one of the container's ports (a misspelt name would never probe).
func validatePort(port intstr.IntOrString, ports []corev1.ContainerPort, fld *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return invalid(fld, port.IntVal, validation.IsValidPortNum(int(port.IntVal)))
	}
	for _, p := range ports {
		if p.Name == port.StrVal {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(fld, port.StrVal, "must be a port number or the name of one of the container's ports")}
}
