package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidateSecurity applies one securityContext mutation to a valid pod
// and checks the errors of the defaulted result, in order. The host has no
// AppArmor unless the case says so.
func TestValidateSecurity(t *testing.T) {
	seccomp := func(typ corev1.SeccompProfileType, local *string) *corev1.SeccompProfile {
		return &corev1.SeccompProfile{Type: typ, LocalhostProfile: local}
	}
	appArmor := func(typ corev1.AppArmorProfileType, local *string) *corev1.AppArmorProfile {
		return &corev1.AppArmorProfile{Type: typ, LocalhostProfile: local}
	}
	sysctls := func(kv ...string) []corev1.Sysctl {
		var out []corev1.Sysctl
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.Sysctl{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		appArmor bool
		mutate   func(p *corev1.Pod)
		want     []string
	}{
		{"everything supported", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{
				RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)), RunAsNonRoot: ptr(true),
				SupplementalGroups: []int64{4, 0}, FSGroup: ptr(int64(2000)),
				FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch),
				Sysctls:             sysctls("net.ipv4.ip_unprivileged_port_start", "0", "kernel/shm_rmid_forced", "1"),
				SeccompProfile:      seccomp(corev1.SeccompProfileTypeLocalhost, ptr("profiles/audit.json")),
				AppArmorProfile:     appArmor(corev1.AppArmorProfileTypeUnconfined, nil),
			}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
				RunAsUser: ptr(int64(0)), RunAsGroup: ptr(int64(0)), RunAsNonRoot: ptr(false), Privileged: ptr(false),
				Capabilities: &corev1.Capabilities{
					Add:  []corev1.Capability{"NET_ADMIN", "CAP_SYS_TIME", "net_raw"},
					Drop: []corev1.Capability{"ALL", "cap_chown"},
				},
				ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
				SeccompProfile: seccomp(corev1.SeccompProfileTypeRuntimeDefault, nil), ProcMount: ptr(corev1.DefaultProcMount),
			}
		}, nil},
		{"ids out of range", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(-1)), RunAsGroup: ptr(int64(1 << 31)),
				SupplementalGroups: []int64{5, -2}, FSGroup: ptr(int64(-3))}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1 << 32))}
		}, []string{
			"spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.supplementalGroups[1]: Invalid value: -2: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.fsGroup: Invalid value: -3: must be between 0 and 2147483647, inclusive",
			"spec.containers[0].securityContext.runAsUser: Invalid value: 4294967296: must be between 0 and 2147483647, inclusive",
		}},
		{"fsGroupChangePolicy", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroupChangePolicy: ptr(corev1.PodFSGroupChangePolicy("Never"))}
		}, []string{`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Never": supported values: "OnRootMismatch", "Always"`}},
		{"capabilities", false, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: &corev1.SecurityContext{
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "SUPERPOWER"}, Drop: []corev1.Capability{"CAP_"}}}}}
		}, []string{
			`spec.initContainers[0].securityContext.capabilities.add[1]: Invalid value: "SUPERPOWER": not a Linux capability (write e.g. NET_ADMIN or CAP_NET_ADMIN, or ALL)`,
			`spec.initContainers[0].securityContext.capabilities.drop[0]: Invalid value: "CAP_": not a Linux capability (write e.g. NET_ADMIN or CAP_NET_ADMIN, or ALL)`,
		}},
		{"allowPrivilegeEscalation false with privileged or CAP_SYS_ADMIN", false, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), Privileged: ptr(true),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"cap_sys_admin"}}}
		}, []string{
			"spec.containers[0].securityContext.allowPrivilegeEscalation: Invalid value: false: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
			"spec.containers[0].securityContext.allowPrivilegeEscalation: Invalid value: false: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
		}},
		{"procMount", false, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{ProcMount: ptr(corev1.ProcMountType("Half"))}})
		}, []string{
			`spec.containers[0].securityContext.procMount: Invalid value: "Unmasked": Unmasked needs ` + "`hostUsers: false`" + ` (a user namespace), which podrun does not support; only Default is possible`,
			`spec.containers[1].securityContext.procMount: Unsupported value: "Half": supported values: "Default", "Unmasked"`,
		}},
		{"seccompProfile", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: seccomp(corev1.SeccompProfileTypeLocalhost, nil)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: seccomp(corev1.SeccompProfileTypeRuntimeDefault, ptr("x.json"))}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "a", Image: "busybox", SecurityContext: &corev1.SecurityContext{SeccompProfile: seccomp(corev1.SeccompProfileTypeLocalhost, ptr("/etc/x.json"))}},
				{Name: "b", Image: "busybox", SecurityContext: &corev1.SecurityContext{SeccompProfile: seccomp(corev1.SeccompProfileTypeLocalhost, ptr("a/../../x.json"))}},
				{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{SeccompProfile: seccomp("Docker", nil)}},
			}
		}, []string{
			"spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
			`spec.initContainers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/x.json": must be a relative path (to <root>/seccomp)`,
			`spec.initContainers[1].securityContext.seccompProfile.localhostProfile: Invalid value: "a/../../x.json": must not contain '..'`,
			`spec.initContainers[2].securityContext.seccompProfile.type: Unsupported value: "Docker": supported values: "RuntimeDefault", "Unconfined", "Localhost"`,
			`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "x.json": can only be set when seccomp type is Localhost`,
		}},
		{"appArmorProfile on a host without AppArmor", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeRuntimeDefault, nil)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeUnconfined, nil)}
			p.Spec.InitContainers = []corev1.Container{{Name: "a", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeLocalhost, ptr("k8s-x"))}}}
		}, []string{
			`spec.securityContext.appArmorProfile.type: Invalid value: "RuntimeDefault": AppArmor is not enabled on this host (/sys/module/apparmor/parameters/enabled, apparmor_parser): only Unconfined is possible`,
			`spec.initContainers[0].securityContext.appArmorProfile.type: Invalid value: "Localhost": AppArmor is not enabled on this host (/sys/module/apparmor/parameters/enabled, apparmor_parser): only Unconfined is possible`,
		}},
		{"appArmorProfile on a host with AppArmor", true, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeRuntimeDefault, nil)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeLocalhost, nil)}
			p.Spec.InitContainers = []corev1.Container{{Name: "a", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{AppArmorProfile: appArmor(corev1.AppArmorProfileTypeLocalhost, ptr("k8s-x"))}}}
		}, []string{
			"spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost",
		}},
		{"sysctls", false, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: sysctls(
				"net.ipv4.tcp_syncookies", "1",
				"net/ipv4/tcp_syncookies", "0",
				"kernel.msgmax", "65536", // unsafe: the node's admission decides (policy.go)
				"", "x",
				"net.ipv4.ip_local_port_range", "1024 65000",
				"Kernel.Panic", "1",
			)}
		}, []string{
			`spec.securityContext.sysctls[1].name: Duplicate value: "net/ipv4/tcp_syncookies"`,
			"spec.securityContext.sysctls[3].name: Required value",
			`spec.securityContext.sysctls[5].name: Invalid value: "Kernel.Panic": must have at most 253 characters and match regex ` + sysctlNameFmt,
		}},
		{"net sysctls with hostNetwork", false, func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: sysctls("net.ipv4.tcp_syncookies", "1", "kernel.shm_rmid_forced", "1")}
		}, []string{`spec.securityContext.sysctls[0].name: Invalid value: "net.ipv4.tcp_syncookies": may not be specified when 'hostNetwork' is true`}},
		{"IPC sysctls with hostIPC", false, func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: sysctls(
				"net.ipv4.tcp_syncookies", "1", "kernel.shm_rmid_forced", "1", "kernel/msgmax", "8192", "fs.mqueue.msg_max", "10", "kernel.sem", "1 2 3 4")}
		}, []string{
			`spec.securityContext.sysctls[1].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`,
			`spec.securityContext.sysctls[2].name: Invalid value: "kernel/msgmax": may not be specified when 'hostIPC' is true`,
			`spec.securityContext.sysctls[3].name: Invalid value: "fs.mqueue.msg_max": may not be specified when 'hostIPC' is true`,
			`spec.securityContext.sysctls[4].name: Invalid value: "kernel.sem": may not be specified when 'hostIPC' is true`,
		}},
		{"shareProcessNamespace with hostPID", false, func(p *corev1.Pod) {
			p.Spec.HostPID = true
			p.Spec.ShareProcessNamespace = ptr(true)
		}, []string{"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{"host namespaces", false, func(p *corev1.Pod) {
			p.Spec.HostPID = true
			p.Spec.HostIPC = true
			p.Spec.ShareProcessNamespace = ptr(false)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := appArmorSupported
			defer func() { appArmorSupported = saved }()
			appArmorSupported = func() bool { return tt.appArmor }
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}

// TestLoadSecurity loads a pod using every supported securityContext field
// without problems (no --policy: the kubelet admits it).
func TestLoadSecurity(t *testing.T) {
	saved := appArmorSupported
	defer func() { appArmorSupported = saved }()
	appArmorSupported = func() bool { return false } // Unconfined only
	set, err := Load([]string{"testdata/security/restricted.yaml"}, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(set.Pods) != 1 {
		t.Fatalf("%d pods, want 1", len(set.Pods))
	}
	spec := set.Pods[0].Spec
	if sc := spec.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != 2000 || len(sc.Sysctls) != 1 {
		t.Errorf("pod securityContext = %+v", sc)
	}
	if sc := spec.InitContainers[0].SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("init container securityContext = %+v, want runAsUser 0", sc)
	}
}

func TestSysctlName(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_local_port_range":     "net.ipv4.ip_local_port_range",
		"net/ipv4/ip_local_port_range":     "net.ipv4.ip_local_port_range",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel":                           "kernel",
	} {
		if got := SysctlName(in); got != want {
			t.Errorf("SysctlName(%q) = %q, want %q", in, got, want)
		}
	}
}
