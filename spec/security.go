package spec

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/apparmor"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	ctrdapparmor "github.com/containerd/containerd/pkg/apparmor"
	"github.com/containerd/containerd/pkg/cap"
	ctrdseccomp "github.com/containerd/containerd/pkg/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/selinux/go-selinux/label"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
)

// HostSecurity is what the host offers for confining containers. The zero
// value is a host with seccomp and without AppArmor, and no directory for
// Localhost seccomp profiles.
type HostSecurity struct {
	// SeccompProfileRoot is the directory Localhost seccomp profiles are
	// read from, as the kubelet's --seccomp-profile-root (podrun: <root>/seccomp).
	SeccompProfileRoot string
	// NoSeccomp: the kernel has no seccomp filters. The default profile is
	// then left out, and asking for a profile is an error.
	NoSeccomp bool
	// AppArmor: AppArmor is enabled and apparmor_parser present. Then, as
	// with containerd's CRI plugin, containers get containerd's default
	// AppArmor profile unless they ask for another or for Unconfined.
	AppArmor bool
}

// DetectHost returns what this host offers, with Localhost seccomp
// profiles under <root>/seccomp. It reads /proc and /sys (once; the answers
// are cached) and changes nothing.
func DetectHost(root string) HostSecurity {
	return HostSecurity{
		SeccompProfileRoot: filepath.Join(root, "seccomp"),
		NoSeccomp:          !ctrdseccomp.IsEnabled(),
		AppArmor:           ctrdapparmor.HostSupports(),
	}
}

// ReasonCreateContainerConfigError is the kubelet's Waiting reason for a
// container whose configuration cannot be honoured.
const ReasonCreateContainerConfigError = "CreateContainerConfigError"

// ConfigError is a container the kubelet would leave Waiting with reason
// CreateContainerConfigError, e.g. runAsNonRoot with an image that runs as
// root. The message is the kubelet's; Container names the container.
type ConfigError struct {
	Container string
	Msg       string
}

func (e *ConfigError) Error() string { return ReasonCreateContainerConfigError + ": " + e.Msg }

// appArmorDefaultProfile is the name containerd's CRI plugin loads its
// default AppArmor profile under.
const appArmorDefaultProfile = "cri-containerd.apparmor.d"

// Hooks into the host, replaced in tests: the capabilities "ALL" and
// privileged mean (the CRI plugin's: podrun's own effective set), the host's
// devices a privileged container gets, and loading the default AppArmor
// profile.
var (
	allCapabilities = func() []string {
		if caps, err := cap.Current(); err == nil && len(caps) > 0 {
			return caps
		}
		return cap.Known()
	}
	hostDevices            = oci.HostDevices
	appArmorRuntimeDefault = apparmor.WithDefaultProfile
)

// effectiveSecurity is a container's securityContext merged with its pod's
// as the kubelet merges them: the container's fields win; supplemental
// groups, fsGroup and sysctls are pod-level only.
type effectiveSecurity struct {
	runAsUser, runAsGroup *int64
	runAsNonRoot          *bool
	seccomp               *corev1.SeccompProfile
	appArmor              *corev1.AppArmorProfile
	supplementalGroups    []int64
	fsGroup               *int64
	seLinux               *corev1.SELinuxOptions
	// container only
	privileged   *bool
	capabilities *corev1.Capabilities
	procMount    *corev1.ProcMountType
}

func effective(pod *corev1.Pod, c *corev1.Container) effectiveSecurity {
	var e effectiveSecurity
	if psc := podSecurityContext(pod); psc != nil {
		e.runAsUser, e.runAsGroup, e.runAsNonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
		e.seccomp, e.appArmor = psc.SeccompProfile, psc.AppArmorProfile
		e.supplementalGroups, e.fsGroup, e.seLinux = psc.SupplementalGroups, psc.FSGroup, psc.SELinuxOptions
	}
	sc := c.SecurityContext
	if sc == nil {
		return e
	}
	if sc.RunAsUser != nil {
		e.runAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		e.runAsGroup = sc.RunAsGroup
	}
	if sc.RunAsNonRoot != nil {
		e.runAsNonRoot = sc.RunAsNonRoot
	}
	if sc.SeccompProfile != nil {
		e.seccomp = sc.SeccompProfile
	}
	if sc.AppArmorProfile != nil {
		e.appArmor = sc.AppArmorProfile
	}
	if sc.SELinuxOptions != nil {
		e.seLinux = sc.SELinuxOptions
	}
	e.privileged, e.capabilities, e.procMount = sc.Privileged, sc.Capabilities, sc.ProcMount
	return e
}

func podSecurityContext(pod *corev1.Pod) *corev1.PodSecurityContext {
	if pod == nil {
		return nil
	}
	return pod.Spec.SecurityContext
}

func isTrue(b *bool) bool { return b != nil && *b }

// securityOpts returns the spec options of a container's user, groups,
// capabilities, no_new_privs, devices, masked paths, AppArmor and seccomp
// profiles; they go after the mounts (privileged makes the cgroup mount
// writable). Containerd's CRI plugin is the model (buildLinuxSpec,
// containerSpecOpts), with podrun's secure defaults: no NET_RAW and the
// runtime's default seccomp profile unless the manifest says otherwise.
func securityOpts(in ContainerInput) (oci.SpecOpts, error) {
	e := effective(in.Pod, in.Container)
	uid, gid, err := containerUser(in.Image, e)
	if err != nil {
		return nil, err
	}
	if err := checkNonRoot(in.Pod, in.Container.Name, in.Image, e); err != nil {
		return nil, err
	}
	if e.procMount != nil && *e.procMount != corev1.DefaultProcMount {
		return nil, fmt.Errorf("procMount %s: not supported (it needs hostUsers: false)", *e.procMount)
	}
	opts := []oci.SpecOpts{
		oci.WithUIDGID(uid, gid),
		withAdditionalGIDs(additionalGIDs(gid, e)),
		withNoNewPrivileges(noNewPrivileges(in.Container)),
		oci.WithDroppedCapabilities([]string{"CAP_NET_RAW"}),
		withCapabilities(e.capabilities),
		withoutAmbientCapabilities,
	}
	if isTrue(e.privileged) {
		opts = append(opts, withPrivileged)
	}
	aa, err := appArmorOpts(e.appArmor, isTrue(e.privileged), in.Security)
	if err != nil {
		return nil, err
	}
	sc, err := seccompOpts(e.seccomp, isTrue(e.privileged), in.Security)
	if err != nil {
		return nil, err
	}
	sel, err := seLinuxOpts(e.seLinux)
	if err != nil {
		return nil, err
	}
	// seccomp last: the default profile depends on the capabilities.
	return oci.Compose(append(opts, aa, sel, sc)...), nil
}

// seLinuxOpts labels the container's process and mounts from its
// seLinuxOptions as containerd's CRI does (InitLabels: the host's container
// labels with the options' user, role, type and level); on a host without
// SELinux there is nothing to label, as for the kubelet.
func seLinuxOpts(o *corev1.SELinuxOptions) (oci.SpecOpts, error) {
	var options []string
	if o != nil {
		for _, kv := range [][2]string{{"user", o.User}, {"role", o.Role}, {"type", o.Type}, {"level", o.Level}} {
			if kv[1] != "" {
				options = append(options, kv[0]+":"+kv[1])
			}
		}
	}
	process, mount, err := label.InitLabels(options)
	if err != nil {
		return nil, fmt.Errorf("seLinuxOptions: %w", err)
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if process != "" {
			s.Process.SelinuxLabel = process
		}
		if mount != "" && s.Linux != nil {
			s.Linux.MountLabel = mount
		}
		return nil
	}, nil
}

// containerUser returns the uid and gid a container runs as: runAsUser and
// runAsGroup when set, else the image's. With runAsUser and no runAsGroup
// the group is 0 (the CRI plugin would look the user up in the image's
// /etc/passwd; podrun supports numeric users only and does not).
func containerUser(img Image, e effectiveSecurity) (uid, gid uint32, err error) {
	if e.runAsUser != nil {
		uid = uint32(*e.runAsUser)
	} else if uid, gid, err = parseUser(img.User); err != nil {
		return 0, 0, err
	}
	if e.runAsGroup != nil {
		gid = uint32(*e.runAsGroup)
	}
	return uid, gid, nil
}

// checkNonRoot is the kubelet's verifyRunAsNonRoot: with runAsNonRoot, a
// runAsUser of 0, or no runAsUser and an image user that is root (empty or
// 0), refuses the container.
func checkNonRoot(pod *corev1.Pod, container string, img Image, e effectiveSecurity) error {
	if !isTrue(e.runAsNonRoot) {
		return nil
	}
	where := fmt.Sprintf("(pod: %q, container: %s)", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), container)
	if e.runAsUser != nil {
		if *e.runAsUser == 0 {
			return &ConfigError{Container: container, Msg: "container's runAsUser breaks non-root policy " + where}
		}
		return nil
	}
	user, _, _ := strings.Cut(img.User, ":")
	switch uid, err := parseID(user); {
	case user == "" || err == nil && uid == 0:
		return &ConfigError{Container: container, Msg: "container has runAsNonRoot and image will run as root " + where}
	case err != nil:
		return &ConfigError{Container: container, Msg: fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", user, where)}
	}
	return nil
}

// additionalGIDs are the process's supplementary groups as the CRI plugin
// sets them: the primary group, the pod's supplementalGroups and fsGroup,
// sorted and without duplicates. The image's /etc/group memberships are
// added by the engine when MergeImageGroups says so.
func additionalGIDs(gid uint32, e effectiveSecurity) []uint32 {
	gids := []uint32{gid}
	for _, g := range e.supplementalGroups {
		gids = append(gids, uint32(g))
	}
	if e.fsGroup != nil {
		gids = append(gids, uint32(*e.fsGroup))
	}
	slices.Sort(gids)
	return slices.Compact(gids)
}

// MergeImageGroups says whether the groups the image's /etc/group gives a
// container's user join its supplementary groups: supplementalGroupsPolicy
// Merge, the default; Strict keeps only the pod's.
func MergeImageGroups(pod *corev1.Pod) bool {
	psc := podSecurityContext(pod)
	return psc == nil || psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict
}

func withAdditionalGIDs(gids []uint32) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Process.User.AdditionalGids = gids
		return nil
	}
}

// capName turns a capability as written in a manifest ("net_admin",
// "NET_ADMIN" or "CAP_NET_ADMIN") into the OCI spec's "CAP_NET_ADMIN".
func capName(c string) string {
	c = strings.ToUpper(c)
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	return c
}

// withCapabilities applies capabilities.add and drop the CRI plugin's way:
// "ALL" first (add ALL: every capability; drop ALL: none), then the named
// ones, added before dropped.
func withCapabilities(caps *corev1.Capabilities) oci.SpecOpts {
	if caps == nil {
		return oci.Compose()
	}
	var opts []oci.SpecOpts
	var add, drop []string
	for _, c := range caps.Add {
		if strings.EqualFold(string(c), "ALL") {
			opts = append(opts, func(ctx context.Context, cl oci.Client, ctr *containers.Container, s *specs.Spec) error {
				return oci.WithCapabilities(allCapabilities())(ctx, cl, ctr, s)
			})
			continue
		}
		add = append(add, capName(string(c)))
	}
	for _, c := range caps.Drop {
		if strings.EqualFold(string(c), "ALL") {
			opts = append(opts, oci.WithCapabilities(nil))
			continue
		}
		drop = append(drop, capName(string(c)))
	}
	return oci.Compose(append(opts, oci.WithAddedCapabilities(add), oci.WithDroppedCapabilities(drop))...)
}

func withoutAmbientCapabilities(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	if s.Process.Capabilities != nil {
		s.Process.Capabilities.Ambient = nil
	}
	return nil
}

// withPrivileged is oci.WithPrivileged plus the host's devices, as the CRI
// plugin runs privileged containers: every capability, no masked or
// read-only paths, writable /sys and cgroupfs, no AppArmor or seccomp
// profile, all devices.
func withPrivileged(ctx context.Context, cl oci.Client, c *containers.Container, s *specs.Spec) error {
	devices, err := hostDevices()
	if err != nil {
		return fmt.Errorf("privileged: listing the host's devices: %w", err)
	}
	s.Linux.Devices = append(s.Linux.Devices, devices...)
	return oci.Compose(
		oci.WithCapabilities(allCapabilities()),
		oci.WithMaskedPaths(nil),
		oci.WithReadonlyPaths(nil),
		oci.WithWriteableSysfs,
		oci.WithWriteableCgroupfs,
		oci.WithApparmorProfile(""),
		oci.WithSeccompUnconfined,
		oci.WithAllDevicesAllowed,
	)(ctx, cl, c, s)
}

// seccompOpts returns the seccomp profile option: the runtime's default
// (containerd's, for the capabilities the container has) unless the
// manifest asks for Unconfined or a Localhost profile; none for privileged
// containers, as the CRI plugin does.
func seccompOpts(p *corev1.SeccompProfile, privileged bool, host HostSecurity) (oci.SpecOpts, error) {
	typ := corev1.SeccompProfileTypeRuntimeDefault
	if p != nil {
		typ = p.Type
	}
	switch {
	case privileged || typ == corev1.SeccompProfileTypeUnconfined:
		return oci.WithSeccompUnconfined, nil
	case host.NoSeccomp && p == nil:
		return oci.WithSeccompUnconfined, nil // the secure default, where the kernel cannot
	case host.NoSeccomp:
		return nil, fmt.Errorf("seccomp profile %s: this host's kernel has no seccomp", typ)
	case typ == corev1.SeccompProfileTypeRuntimeDefault:
		return withDefaultSeccomp, nil
	case typ == corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("seccomp profile Localhost: no localhostProfile")
		}
		if host.SeccompProfileRoot == "" {
			return nil, fmt.Errorf("seccomp profile Localhost: no seccomp profile root")
		}
		return seccomp.WithProfile(filepath.Join(host.SeccompProfileRoot, filepath.Clean("/"+*p.LocalhostProfile))), nil
	}
	return nil, fmt.Errorf("unknown seccomp profile type %q", typ)
}

func withDefaultSeccomp(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	s.Linux.Seccomp = seccomp.DefaultProfile(s)
	return nil
}

// appArmorOpts returns the AppArmor option as the CRI plugin chooses it:
// nothing on a host without AppArmor (asking for a profile there is refused
// by validation, and here too); with AppArmor, containerd's default profile
// unless the manifest says Unconfined or Localhost, and none for privileged
// containers.
func appArmorOpts(p *corev1.AppArmorProfile, privileged bool, host HostSecurity) (oci.SpecOpts, error) {
	typ := corev1.AppArmorProfileTypeRuntimeDefault
	if p != nil {
		typ = p.Type
	}
	switch {
	case !host.AppArmor && p != nil && typ != corev1.AppArmorProfileTypeUnconfined:
		return nil, fmt.Errorf("AppArmor profile %s: AppArmor is not enabled on this host", typ)
	case !host.AppArmor, typ == corev1.AppArmorProfileTypeUnconfined:
		return oci.Compose(), nil
	case typ == corev1.AppArmorProfileTypeRuntimeDefault:
		if privileged {
			return oci.Compose(), nil
		}
		return appArmorRuntimeDefault(appArmorDefaultProfile), nil
	case typ == corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("AppArmor profile Localhost: no localhostProfile")
		}
		return oci.WithApparmorProfile(*p.LocalhostProfile), nil
	}
	return nil, fmt.Errorf("unknown AppArmor profile type %q", typ)
}

// pauseSecurityOpts confines the sandbox's pause process: it already has no
// capabilities and a read-only root; it gets the runtime's default seccomp
// profile unless the pod's securityContext says Unconfined (a pod-level
// Localhost profile is written for the pod's own processes, so the pause
// keeps the default), and the pod's sysctls, which apply to the namespaces
// the pause holds.
func pauseSecurityOpts(pod *corev1.Pod, host HostSecurity) oci.SpecOpts {
	opts := []oci.SpecOpts{withPodSysctls(pod)}
	psc := podSecurityContext(pod)
	unconfined := psc != nil && psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined
	if !unconfined && !host.NoSeccomp {
		opts = append(opts, withDefaultSeccomp)
	}
	return oci.Compose(opts...)
}

// withPodSysctls sets the pod's securityContext.sysctls (validated to be
// safe and namespaced) on the spec.
func withPodSysctls(pod *corev1.Pod) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		psc := podSecurityContext(pod)
		if psc == nil || len(psc.Sysctls) == 0 {
			return nil
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for _, sc := range psc.Sysctls {
			s.Linux.Sysctl[manifest.SysctlName(sc.Name)] = sc.Value
		}
		return nil
	}
}
