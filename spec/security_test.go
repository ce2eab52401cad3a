package spec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

func secPtr[T any](v T) *T { return &v }

// secWithSC sets the container's securityContext.
func secWithSC(sc corev1.SecurityContext) func(*ContainerInput) {
	return func(in *ContainerInput) { in.Container.SecurityContext = &sc }
}

// secWithPodSC sets the pod's securityContext.
func secWithPodSC(sc corev1.PodSecurityContext) func(*ContainerInput) {
	return func(in *ContainerInput) { in.Pod.Spec.SecurityContext = &sc }
}

func secInput(mutate ...func(*ContainerInput)) ContainerInput {
	in := baseInput()
	for _, m := range mutate {
		m(&in)
	}
	return in
}

// secStubHost replaces the host hooks for one test.
func secStubHost(t *testing.T) {
	t.Helper()
	caps, devs, aa := allCapabilities, hostDevices, appArmorRuntimeDefault
	t.Cleanup(func() { allCapabilities, hostDevices, appArmorRuntimeDefault = caps, devs, aa })
	allCapabilities = func() []string { return []string{"CAP_CHOWN", "CAP_NET_RAW", "CAP_SYS_ADMIN"} }
	hostDevices = func() ([]specs.LinuxDevice, error) {
		return []specs.LinuxDevice{{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0}}, nil
	}
	appArmorRuntimeDefault = func(name string) oci.SpecOpts {
		return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
			s.Process.ApparmorProfile = name + " (loaded)"
			return nil
		}
	}
}

// secDefaultCaps is containerd's default set (KUBELET.md).
var secDefaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

func secWithout(list []string, drop ...string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

func secSorted(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return out
}

// secCheckCaps compares the bounding, effective and permitted sets with want.
func secCheckCaps(t *testing.T, s *specs.Spec, want []string) {
	t.Helper()
	c := s.Process.Capabilities
	for name, got := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "permitted": c.Permitted} {
		if !reflect.DeepEqual(secSorted(got), secSorted(want)) {
			t.Errorf("%s capabilities = %v, want %v", name, secSorted(got), secSorted(want))
		}
	}
	if len(c.Ambient) != 0 || len(c.Inheritable) != 0 {
		t.Errorf("ambient %v, inheritable %v, want none", c.Ambient, c.Inheritable)
	}
}

// secAllows reports whether a seccomp profile allows name without conditions.
func secAllows(sc *specs.LinuxSeccomp, name string) bool {
	for _, s := range sc.Syscalls {
		if s.Action == specs.ActAllow && len(s.Args) == 0 && slices.Contains(s.Names, name) {
			return true
		}
	}
	return false
}

func TestSecurityDefaults(t *testing.T) {
	s := mustContainer(t, baseInput())
	secCheckCaps(t, s, secWithout(secDefaultCaps, "CAP_NET_RAW"))
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Fatalf("seccomp = %+v, want containerd's default profile (default action errno)", s.Linux.Seccomp)
	}
	if !secAllows(s.Linux.Seccomp, "read") || secAllows(s.Linux.Seccomp, "mount") {
		t.Error("default seccomp profile: want read allowed and mount refused")
	}
	wantMasked := []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/sys/devices/virtual/powercap", "/proc/scsi"}
	if !reflect.DeepEqual(s.Linux.MaskedPaths, wantMasked) {
		t.Errorf("masked paths = %v, want %v", s.Linux.MaskedPaths, wantMasked)
	}
	if want := []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}; !reflect.DeepEqual(s.Linux.ReadonlyPaths, want) {
		t.Errorf("read-only paths = %v, want %v", s.Linux.ReadonlyPaths, want)
	}
	if s.Process.NoNewPrivileges {
		t.Error("no_new_privs set without allowPrivilegeEscalation: false")
	}
	if s.Process.ApparmorProfile != "" {
		t.Errorf("AppArmor profile %q on a host without AppArmor", s.Process.ApparmorProfile)
	}
	if want := []uint32{0}; !reflect.DeepEqual(s.Process.User.AdditionalGids, want) {
		t.Errorf("additional gids = %v, want %v", s.Process.User.AdditionalGids, want)
	}
	if len(s.Linux.Devices) != 0 {
		t.Errorf("devices = %v, want containerd's defaults only", s.Linux.Devices)
	}
}

func TestSecurityNoNewPrivileges(t *testing.T) {
	for _, tc := range []struct {
		ape  *bool
		want bool
	}{{nil, false}, {secPtr(true), false}, {secPtr(false), true}} {
		s := mustContainer(t, secInput(secWithSC(corev1.SecurityContext{AllowPrivilegeEscalation: tc.ape})))
		if s.Process.NoNewPrivileges != tc.want {
			t.Errorf("allowPrivilegeEscalation %v: no_new_privs = %v, want %v", tc.ape, s.Process.NoNewPrivileges, tc.want)
		}
	}
}

func TestSecurityUser(t *testing.T) {
	cases := []struct {
		name      string
		image     string
		mutate    []func(*ContainerInput)
		uid, gid  uint32
		gids      []uint32
		errSubstr string
	}{
		{name: "image user", image: "1000:50", uid: 1000, gid: 50, gids: []uint32{50}},
		{name: "pod runAsUser and runAsGroup", image: "1000:50",
			mutate: []func(*ContainerInput){secWithPodSC(corev1.PodSecurityContext{RunAsUser: secPtr[int64](2000), RunAsGroup: secPtr[int64](3000)})},
			uid:    2000, gid: 3000, gids: []uint32{3000}},
		{name: "container wins over pod", image: "",
			mutate: []func(*ContainerInput){
				secWithPodSC(corev1.PodSecurityContext{RunAsUser: secPtr[int64](2000), RunAsGroup: secPtr[int64](3000)}),
				secWithSC(corev1.SecurityContext{RunAsUser: secPtr[int64](4000)}),
			},
			uid: 4000, gid: 3000, gids: []uint32{3000}},
		{name: "runAsUser alone gives group 0", image: "1000:50",
			mutate: []func(*ContainerInput){secWithSC(corev1.SecurityContext{RunAsUser: secPtr[int64](2000)})},
			uid:    2000, gid: 0, gids: []uint32{0}},
		{name: "runAsGroup alone keeps the image's uid", image: "1000:50",
			mutate: []func(*ContainerInput){secWithSC(corev1.SecurityContext{RunAsGroup: secPtr[int64](7)})},
			uid:    1000, gid: 7, gids: []uint32{7}},
		{name: "runAsUser makes a named image user irrelevant", image: "nginx",
			mutate: []func(*ContainerInput){secWithSC(corev1.SecurityContext{RunAsUser: secPtr[int64](101), RunAsGroup: secPtr[int64](101)})},
			uid:    101, gid: 101, gids: []uint32{101}},
		{name: "supplementalGroups and fsGroup join the primary group", image: "1000:50",
			mutate: []func(*ContainerInput){secWithPodSC(corev1.PodSecurityContext{SupplementalGroups: []int64{9000, 50, 10}, FSGroup: secPtr[int64](2000)})},
			uid:    1000, gid: 50, gids: []uint32{10, 50, 2000, 9000}},
		{name: "named image user without runAsUser", image: "nginx", errSubstr: `image user "nginx": only numeric users are supported`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := secInput(tc.mutate...)
			in.Image.User = tc.image
			s, err := Container(context.Background(), in)
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err = %v, want %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := s.Process.User
			if u.UID != tc.uid || u.GID != tc.gid || !reflect.DeepEqual(u.AdditionalGids, tc.gids) {
				t.Errorf("user = %d:%d groups %v, want %d:%d groups %v", u.UID, u.GID, u.AdditionalGids, tc.uid, tc.gid, tc.gids)
			}
		})
	}
}

func TestSecurityRunAsNonRoot(t *testing.T) {
	const where = `(pod: "web_default(` + testPodUID + `)", container: app)`
	nonRoot := secWithPodSC(corev1.PodSecurityContext{RunAsNonRoot: secPtr(true)})
	cases := []struct {
		name   string
		image  string
		mutate []func(*ContainerInput)
		want   string // "" means allowed
	}{
		{name: "image without user", image: "", mutate: []func(*ContainerInput){nonRoot},
			want: "CreateContainerConfigError: container has runAsNonRoot and image will run as root " + where},
		{name: "image user 0", image: "0", mutate: []func(*ContainerInput){nonRoot},
			want: "CreateContainerConfigError: container has runAsNonRoot and image will run as root " + where},
		{name: "image user 0:1000", image: "0:1000", mutate: []func(*ContainerInput){nonRoot},
			want: "CreateContainerConfigError: container has runAsNonRoot and image will run as root " + where},
		{name: "image user 1000", image: "1000", mutate: []func(*ContainerInput){nonRoot}},
		{name: "root image with runAsUser", image: "", mutate: []func(*ContainerInput){nonRoot,
			secWithSC(corev1.SecurityContext{RunAsUser: secPtr[int64](1000)})}},
		{name: "runAsUser 0", image: "1000", mutate: []func(*ContainerInput){
			secWithSC(corev1.SecurityContext{RunAsNonRoot: secPtr(true), RunAsUser: secPtr[int64](0)})},
			want: "CreateContainerConfigError: container's runAsUser breaks non-root policy " + where},
		{name: "container says false", image: "", mutate: []func(*ContainerInput){nonRoot,
			secWithSC(corev1.SecurityContext{RunAsNonRoot: secPtr(false)})}},
		{name: "runAsNonRoot false", image: "", mutate: []func(*ContainerInput){
			secWithPodSC(corev1.PodSecurityContext{RunAsNonRoot: secPtr(false)})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := secInput(tc.mutate...)
			in.Image.User = tc.image
			_, err := Container(context.Background(), in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var cerr *ConfigError
			if !errors.As(err, &cerr) || err.Error() != tc.want {
				t.Fatalf("err = %v (%T), want *ConfigError %q", err, err, tc.want)
			}
		})
	}
}

func TestSecurityCapabilities(t *testing.T) {
	secStubHost(t)
	base := secWithout(secDefaultCaps, "CAP_NET_RAW")
	cases := []struct {
		name string
		caps corev1.Capabilities
		want []string
	}{
		{"add with and without prefix, any case", corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "CAP_SYS_TIME", "net_raw"}},
			append(slices.Clone(base), "CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_NET_RAW")},
		{"drop", corev1.Capabilities{Drop: []corev1.Capability{"CHOWN", "CAP_KILL"}},
			secWithout(base, "CAP_CHOWN", "CAP_KILL")},
		{"drop ALL, add one", corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
			[]string{"CAP_NET_BIND_SERVICE"}},
		{"drop ALL", corev1.Capabilities{Drop: []corev1.Capability{"all"}}, nil},
		{"add ALL, drop one", corev1.Capabilities{Add: []corev1.Capability{"ALL"}, Drop: []corev1.Capability{"CHOWN"}},
			[]string{"CAP_NET_RAW", "CAP_SYS_ADMIN"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustContainer(t, secInput(secWithSC(corev1.SecurityContext{Capabilities: &tc.caps})))
			secCheckCaps(t, s, tc.want)
		})
	}
}

// TestSecuritySeccompFollowsCapabilities: the default profile is computed
// for the final capabilities, as containerd requires.
func TestSecuritySeccompFollowsCapabilities(t *testing.T) {
	s := mustContainer(t, secInput(secWithSC(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}})))
	if !secAllows(s.Linux.Seccomp, "mount") {
		t.Error("with CAP_SYS_ADMIN the default seccomp profile should allow mount")
	}
}

func TestSecurityPrivileged(t *testing.T) {
	secStubHost(t)
	in := secInput(secWithSC(corev1.SecurityContext{Privileged: secPtr(true)}))
	in.Security.AppArmor = true
	s := mustContainer(t, in)
	secCheckCaps(t, s, []string{"CAP_CHOWN", "CAP_NET_RAW", "CAP_SYS_ADMIN"})
	if s.Linux.Seccomp != nil {
		t.Errorf("privileged: seccomp = %+v, want none", s.Linux.Seccomp)
	}
	if s.Process.ApparmorProfile != "" {
		t.Errorf("privileged: AppArmor profile %q, want none", s.Process.ApparmorProfile)
	}
	if len(s.Linux.MaskedPaths)+len(s.Linux.ReadonlyPaths) != 0 {
		t.Errorf("privileged: masked %v, read-only %v, want none", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	if len(s.Linux.Devices) != 1 || s.Linux.Devices[0].Path != "/dev/sda" {
		t.Errorf("privileged: devices = %v, want the host's", s.Linux.Devices)
	}
	devs := s.Linux.Resources.Devices
	if last := devs[len(devs)-1]; !last.Allow || last.Access != "rwm" || last.Type != "" && last.Type != "a" {
		t.Errorf("privileged: device cgroup rules %v, want all allowed", devs)
	}
	for _, m := range s.Mounts {
		if (m.Type == "sysfs" || m.Type == "cgroup") && slices.Contains(m.Options, "ro") {
			t.Errorf("privileged: %s mount %v is read-only", m.Type, m.Options)
		}
	}
}

func TestSecuritySeccompProfiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction": "SCMP_ACT_LOG", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}`
	if err := os.WriteFile(filepath.Join(root, "profiles", "log.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	localhost := func(p string) *corev1.SeccompProfile {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &p}
	}
	cases := []struct {
		name   string
		pod    *corev1.SeccompProfile
		ctr    *corev1.SeccompProfile
		host   HostSecurity
		want   specs.LinuxSeccompAction // "" means no profile
		errSub string
	}{
		{name: "default", want: specs.ActErrno},
		{name: "pod Unconfined", pod: unconfined},
		{name: "container Unconfined", ctr: unconfined},
		{name: "container RuntimeDefault wins over pod Unconfined", pod: unconfined, ctr: runtimeDefault, want: specs.ActErrno},
		{name: "Localhost", ctr: localhost("profiles/log.json"), host: HostSecurity{SeccompProfileRoot: root}, want: specs.ActLog},
		{name: "Localhost missing", ctr: localhost("profiles/nope.json"), host: HostSecurity{SeccompProfileRoot: root}, errSub: "cannot load seccomp profile"},
		{name: "Localhost without root", ctr: localhost("profiles/log.json"), errSub: "no seccomp profile root"},
		{name: "no seccomp on the host: default left out", host: HostSecurity{NoSeccomp: true}},
		{name: "no seccomp on the host: Unconfined", ctr: unconfined, host: HostSecurity{NoSeccomp: true}},
		{name: "no seccomp on the host: RuntimeDefault refused", ctr: runtimeDefault, host: HostSecurity{NoSeccomp: true}, errSub: "this host's kernel has no seccomp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := secInput(secWithPodSC(corev1.PodSecurityContext{SeccompProfile: tc.pod}), secWithSC(corev1.SecurityContext{SeccompProfile: tc.ctr}))
			in.Security = tc.host
			s, err := Container(context.Background(), in)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("err = %v, want %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got specs.LinuxSeccompAction
			if s.Linux.Seccomp != nil {
				got = s.Linux.Seccomp.DefaultAction
			}
			if got != tc.want {
				t.Errorf("seccomp default action = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSecurityAppArmor(t *testing.T) {
	secStubHost(t)
	profile := func(typ corev1.AppArmorProfileType, name string) *corev1.AppArmorProfile {
		p := &corev1.AppArmorProfile{Type: typ}
		if name != "" {
			p.LocalhostProfile = &name
		}
		return p
	}
	cases := []struct {
		name       string
		pod, ctr   *corev1.AppArmorProfile
		privileged bool
		appArmor   bool
		want       string
		errSub     string
	}{
		{name: "no AppArmor on the host"},
		{name: "no AppArmor: Unconfined is fine", ctr: profile(corev1.AppArmorProfileTypeUnconfined, "")},
		{name: "no AppArmor: RuntimeDefault refused", ctr: profile(corev1.AppArmorProfileTypeRuntimeDefault, ""), errSub: "AppArmor is not enabled on this host"},
		{name: "no AppArmor: Localhost refused", pod: profile(corev1.AppArmorProfileTypeLocalhost, "k8s-x"), errSub: "AppArmor is not enabled on this host"},
		{name: "default profile", appArmor: true, want: "cri-containerd.apparmor.d (loaded)"},
		{name: "pod Unconfined", appArmor: true, pod: profile(corev1.AppArmorProfileTypeUnconfined, "")},
		{name: "container Localhost wins", appArmor: true, pod: profile(corev1.AppArmorProfileTypeUnconfined, ""),
			ctr: profile(corev1.AppArmorProfileTypeLocalhost, "k8s-apparmor-example"), want: "k8s-apparmor-example"},
		{name: "privileged gets no default", appArmor: true, privileged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := secInput(secWithPodSC(corev1.PodSecurityContext{AppArmorProfile: tc.pod}),
				secWithSC(corev1.SecurityContext{AppArmorProfile: tc.ctr, Privileged: &tc.privileged}))
			in.Security.AppArmor = tc.appArmor
			s, err := Container(context.Background(), in)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("err = %v, want %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.ApparmorProfile != tc.want {
				t.Errorf("AppArmor profile = %q, want %q", s.Process.ApparmorProfile, tc.want)
			}
		})
	}
}

func TestSecurityProcMount(t *testing.T) {
	for _, pm := range []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount} {
		in := secInput(secWithSC(corev1.SecurityContext{ProcMount: &pm}))
		s, err := Container(context.Background(), in)
		switch {
		case pm == corev1.DefaultProcMount && (err != nil || len(s.Linux.MaskedPaths) != 11):
			t.Errorf("procMount Default: err %v, want containerd's masked paths", err)
		case pm == corev1.UnmaskedProcMount && err == nil:
			t.Error("procMount Unmasked: no error")
		}
	}
}

func TestSecurityPause(t *testing.T) {
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
		{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"},
		{Name: "net/ipv4/ip_local_port_range", Value: "1024 65000"},
		{Name: "kernel.shm_rmid_forced", Value: "1"},
	}}
	in := basePause()
	in.Pod = pod
	s, err := Pause(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "net.ipv4.ip_local_port_range": "1024 65000", "kernel.shm_rmid_forced": "1"}
	if !reflect.DeepEqual(s.Linux.Sysctl, want) {
		t.Errorf("sysctls = %v, want %v", s.Linux.Sysctl, want)
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Errorf("pause seccomp = %+v, want the default profile", s.Linux.Seccomp)
	}
	// Container specs carry no sysctls: they join the pause's namespaces.
	cin := baseInput()
	cin.Pod = pod
	if c := mustContainer(t, cin); len(c.Linux.Sysctl) != 0 {
		t.Errorf("container sysctls = %v, want none", c.Linux.Sysctl)
	}

	pod.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	if s, err = Pause(context.Background(), in); err != nil || s.Linux.Seccomp != nil {
		t.Errorf("pod Unconfined: pause seccomp = %+v (err %v), want none", s.Linux.Seccomp, err)
	}
	pod.Spec.SecurityContext.SeccompProfile = nil
	in.Security.NoSeccomp = true
	if s, err = Pause(context.Background(), in); err != nil || s.Linux.Seccomp != nil {
		t.Errorf("host without seccomp: pause seccomp = %+v (err %v), want none", s.Linux.Seccomp, err)
	}
}

func TestDetectHost(t *testing.T) {
	h := DetectHost("/var/lib/podrun")
	if h.SeccompProfileRoot != "/var/lib/podrun/seccomp" {
		t.Errorf("SeccompProfileRoot = %q", h.SeccompProfileRoot)
	}
}
