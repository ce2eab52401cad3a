package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
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
func validateInitLifecycle(c *corev1.Container, grace *int64, fld *field.Path) field.ErrorList {
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return validateLifecycle(c, grace, fld)
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

// validateLifecycle checks a container's probes and hooks; grace is the
// pod's terminationGracePeriodSeconds, which a sleep hook may not exceed.
func validateLifecycle(c *corev1.Container, grace *int64, fld *field.Path) field.ErrorList {
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
		for _, h := range []struct {
			name    string
			handler *corev1.LifecycleHandler
		}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
			if h.handler != nil {
				errs = append(errs, validateHook(h.handler, c.Ports, grace, fld.Child("lifecycle", h.name))...)
			}
		}
	}
	return errs
}

// handler is one kind of action a probe or hook may name, and the check
// of its fields (called only when set).
type handler struct {
	name     string
	set      bool
	validate func(fld *field.Path) field.ErrorList
}

// validateHandler is the API server's validateHandler: exactly one kind of
// action, in its words; only the first one set is checked further.
func validateHandler(handlers []handler, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, h := range handlers {
		switch {
		case !h.set:
		case n > 0:
			errs = append(errs, field.Forbidden(fld.Child(h.name), "may not specify more than 1 handler type"))
		default:
			n++
			errs = append(errs, h.validate(fld.Child(h.name))...)
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(fld, "must specify a handler type"))
	}
	return errs
}

func validateExec(e *corev1.ExecAction) func(*field.Path) field.ErrorList {
	return func(fld *field.Path) field.ErrorList {
		if len(e.Command) == 0 {
			return field.ErrorList{field.Required(fld.Child("command"), "")}
		}
		return nil
	}
}

func validateHTTPGet(h *corev1.HTTPGetAction, ports []corev1.ContainerPort) func(*field.Path) field.ErrorList {
	return func(fld *field.Path) field.ErrorList {
		errs := validatePort(h.Port, ports, fld.Child("port"))
		return append(errs, validateEnum(h.Scheme, fld.Child("scheme"), corev1.URISchemeHTTP, corev1.URISchemeHTTPS)...)
	}
}

func validateTCPSocket(t *corev1.TCPSocketAction, ports []corev1.ContainerPort) func(*field.Path) field.ErrorList {
	return func(fld *field.Path) field.ErrorList { return validatePort(t.Port, ports, fld.Child("port")) }
}

func validateGRPC(g *corev1.GRPCAction, ports []corev1.ContainerPort) func(*field.Path) field.ErrorList {
	return func(fld *field.Path) field.ErrorList {
		return validatePort(intstr.FromInt32(g.Port), ports, fld.Child("port"))
	}
}

func validateProbe(p *corev1.Probe, ports []corev1.ContainerPort, fld *field.Path, singleSuccess, graceAllowed bool) field.ErrorList {
	errs := validateHandler([]handler{
		{"exec", p.Exec != nil, validateExec(p.Exec)},
		{"httpGet", p.HTTPGet != nil, validateHTTPGet(p.HTTPGet, ports)},
		{"tcpSocket", p.TCPSocket != nil, validateTCPSocket(p.TCPSocket, ports)},
		{"grpc", p.GRPC != nil, validateGRPC(p.GRPC, ports)},
	}, fld)
	// The defaults made every one of them but initialDelaySeconds at least 1.
	for _, v := range []struct {
		name  string
		value int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v.value), fld.Child(v.name))...)
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
		default:
			errs = append(errs, validateDuration(*g, fld.Child("terminationGracePeriodSeconds"))...)
		}
	}
	return errs
}

// validateHook checks a postStart or preStop hook. A tcpSocket hook counts
// as a handler, as the API server counts it, and is refused as not
// supported by podrun (allowlist.go).
func validateHook(h *corev1.LifecycleHandler, ports []corev1.ContainerPort, grace *int64, fld *field.Path) field.ErrorList {
	return validateHandler([]handler{
		{"exec", h.Exec != nil, validateExec(h.Exec)},
		{"httpGet", h.HTTPGet != nil, validateHTTPGet(h.HTTPGet, ports)},
		{"tcpSocket", h.TCPSocket != nil, validateTCPSocket(h.TCPSocket, ports)},
		{"sleep", h.Sleep != nil, validateSleep(h.Sleep, grace)},
	}, fld)
}

// validateSleep is the API server's validateSleepAction with
// AllowPodLifecycleSleepActionZeroValue on (the default of Kubernetes 1.34): from 0 to
// the pod's grace period.
func validateSleep(s *corev1.SleepAction, grace *int64) func(*field.Path) field.ErrorList {
	return func(fld *field.Path) field.ErrorList {
		if grace != nil && (s.Seconds < 0 || s.Seconds > *grace) {
			return field.ErrorList{field.Invalid(fld, s.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	}
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
