package manifest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/containerd/containerd/pkg/apparmor"
	"github.com/containerd/containerd/pkg/cap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// appArmorSupported reports whether the host can apply AppArmor profiles
// (AppArmor enabled in /sys/module/apparmor/parameters/enabled and
// apparmor_parser present); replaced in tests.
var appArmorSupported = apparmor.HostSupports

// SafeSysctls are the namespaced sysctls the kubelet allows by default
// (pkg/kubelet/sysctl/safe_sysctls.go); others only with
// Options.AllowedUnsafeSysctls (policy.go).
var SafeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
}

// validateSecurity checks the pod's and its containers' securityContexts the
// way the API server does, plus what podrun cannot honour on this host.
func validateSecurity(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	errs := validatePodSecurity(spec, fld.Child("securityContext"))
	if share := spec.ShareProcessNamespace; share != nil && *share && spec.HostPID {
		errs = append(errs, field.Invalid(fld.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		errs = append(errs, validateContainerSecurity(c.SecurityContext, fld.Child("initContainers").Index(i).Child("securityContext"))...)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		errs = append(errs, validateContainerSecurity(c.SecurityContext, fld.Child("containers").Index(i).Child("securityContext"))...)
	}
	return errs
}

func validatePodSecurity(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, fld)
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, invalid(fld.Child("supplementalGroups").Index(i), g, validation.IsValidGroupID(g))...)
	}
	if sc.FSGroup != nil {
		errs = append(errs, invalid(fld.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if p := sc.SupplementalGroupsPolicy; p != nil {
		errs = append(errs, validateEnum(*p, fld.Child("supplementalGroupsPolicy"), corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)...)
	}
	if p := sc.FSGroupChangePolicy; p != nil {
		errs = append(errs, validateEnum(*p, fld.Child("fsGroupChangePolicy"), corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways)...)
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, fld.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmor(sc.AppArmorProfile, fld.Child("appArmorProfile"))...)
	return append(errs, validateSysctls(sc.Sysctls, spec.HostNetwork, spec.HostIPC, fld.Child("sysctls"))...)
}

func validateContainerSecurity(sc *corev1.SecurityContext, fld *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, fld)
	errs = append(errs, validateCapabilities(sc.Capabilities, fld.Child("capabilities"))...)
	if ape := sc.AllowPrivilegeEscalation; ape != nil && !*ape {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fld.Child("allowPrivilegeEscalation"), false, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool { return capName(c) == "SYS_ADMIN" }) {
			errs = append(errs, field.Invalid(fld.Child("allowPrivilegeEscalation"), false, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	if pm := sc.ProcMount; pm != nil {
		switch *pm {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			errs = append(errs, field.Invalid(fld.Child("procMount"), *pm,
				"Unmasked needs `hostUsers: false` (a user namespace), which podrun does not support; only Default is possible"))
		default:
			errs = append(errs, field.NotSupported(fld.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, fld.Child("seccompProfile"))...)
	return append(errs, validateAppArmor(sc.AppArmorProfile, fld.Child("appArmorProfile"))...)
}

// validateIDs checks runAsUser and runAsGroup (0 to 2^31-1, as the API server).
func validateIDs(uid, gid *int64, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if uid != nil {
		errs = append(errs, invalid(fld.Child("runAsUser"), *uid, validation.IsValidUserID(*uid))...)
	}
	if gid != nil {
		errs = append(errs, invalid(fld.Child("runAsGroup"), *gid, validation.IsValidGroupID(*gid))...)
	}
	return errs
}

// capName returns a capability as written ("net_admin", "NET_ADMIN",
// "CAP_NET_ADMIN") without its prefix, upper-case: "NET_ADMIN".
func capName(c corev1.Capability) string {
	return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
}

// validateCapabilities checks that each capability is ALL or a Linux
// capability, with or without the CAP_ prefix, in any case.
func validateCapabilities(caps *corev1.Capabilities, fld *field.Path) field.ErrorList {
	if caps == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(list []corev1.Capability, fld *field.Path) {
		for i, c := range list {
			if capName(c) != "ALL" && !slices.Contains(cap.Known(), "CAP_"+capName(c)) {
				errs = append(errs, field.Invalid(fld.Index(i), c, "not a Linux capability (write e.g. NET_ADMIN or CAP_NET_ADMIN, or ALL)"))
			}
		}
	}
	check(caps.Add, fld.Child("add"))
	check(caps.Drop, fld.Child("drop"))
	return errs
}

// validateLocalhostProfile checks a profile's type and localhostProfile as
// the API server does (localhostProfile exactly with Localhost).
func validateLocalhostProfile(typ string, localhost *string, fld *field.Path, kind string) field.ErrorList {
	lfld := fld.Child("localhostProfile")
	switch {
	case typ == "Localhost" && (localhost == nil || *localhost == ""):
		return field.ErrorList{field.Required(lfld, fmt.Sprintf("must be set when %s type is Localhost", kind))}
	case typ != "Localhost" && localhost != nil:
		return field.ErrorList{field.Invalid(lfld, *localhost, fmt.Sprintf("can only be set when %s type is Localhost", kind))}
	}
	return nil
}

// validateSeccomp checks a seccompProfile; Localhost profiles are files
// relative to podrun's seccomp profile root (<root>/seccomp).
func validateSeccomp(p *corev1.SeccompProfile, fld *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateEnum(p.Type, fld.Child("type"),
		corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost)
	errs = append(errs, validateLocalhostProfile(string(p.Type), p.LocalhostProfile, fld, "seccomp")...)
	if l := p.LocalhostProfile; p.Type == corev1.SeccompProfileTypeLocalhost && l != nil && *l != "" {
		switch {
		case path.IsAbs(*l):
			errs = append(errs, field.Invalid(fld.Child("localhostProfile"), *l, "must be a relative path (to <root>/seccomp)"))
		case hasBacksteps(*l):
			errs = append(errs, field.Invalid(fld.Child("localhostProfile"), *l, "must not contain '..'"))
		}
	}
	return errs
}

// validateAppArmor checks an appArmorProfile; on a host without AppArmor
// only Unconfined can be honoured, and anything else is refused.
func validateAppArmor(p *corev1.AppArmorProfile, fld *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateEnum(p.Type, fld.Child("type"),
		corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost)
	errs = append(errs, validateLocalhostProfile(string(p.Type), p.LocalhostProfile, fld, "AppArmor")...)
	if p.Type != corev1.AppArmorProfileTypeUnconfined && len(errs) == 0 && !appArmorSupported() {
		errs = append(errs, field.Invalid(fld.Child("type"), p.Type,
			"AppArmor is not enabled on this host (/sys/module/apparmor/parameters/enabled, apparmor_parser): only Unconfined is possible"))
	}
	return errs
}

// SysctlName returns a sysctl name in the dotted form: the kubelet accepts
// "net/ipv4/ip_local_port_range" too (a name whose first separator is a
// slash has its slashes and dots swapped).
func SysctlName(name string) string {
	if i := strings.IndexAny(name, "./"); i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// validateSysctls checks sysctl names as the API server does: well-formed,
// each once, and none of the network (IPC) namespace with hostNetwork
// (hostIPC). Which sysctls the node allows is Options.admit's (policy.go).
func validateSysctls(sysctls []corev1.Sysctl, hostNetwork, hostIPC bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range sysctls {
		nfld := fld.Index(i).Child("name")
		name := SysctlName(s.Name)
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(nfld, ""))
			continue
		case seen[name]:
			errs = append(errs, field.Duplicate(nfld, s.Name))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRE.MatchString(s.Name):
			errs = append(errs, field.Invalid(nfld, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameFmt)))
		case hostNetwork && sysctlNamespace(name) == "net":
			errs = append(errs, field.Invalid(nfld, s.Name, "may not be specified when 'hostNetwork' is true"))
		case hostIPC && sysctlNamespace(name) == "ipc":
			errs = append(errs, field.Invalid(nfld, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		seen[name] = true
	}
	return errs
}
