package spec

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
)

// Image is what podrun needs from an image's config (the ocispec.ImageConfig
// fields, already resolved by the caller).
type Image struct {
	Ref        string
	Entrypoint []string
	Cmd        []string
	Env        []string // "K=V"
	WorkingDir string
	// User is "", "uid" or "uid:gid"; user and group names are not supported
	// yet. "" means root.
	User string
	// StopSignal is the image's STOPSIGNAL, e.g. "SIGQUIT"; "" means SIGTERM.
	// It is not part of the spec: the caller uses it when stopping.
	StopSignal string
}

// Mount is one resolved bind mount into a container.
type Mount struct {
	Source      string // host path
	Destination string // absolute path in the container
	ReadOnly    bool
	NoDev       bool // device nodes in it open nothing (a disk-backed volume)
}

// Sandbox describes the pod-level things a container joins.
type Sandbox struct {
	// ID is the sandbox container's id, set as the labels.SandboxID
	// annotation on every container of the pod (the CRI plugin's, which the
	// runc shim groups by when the container has no ShimGroup).
	ID string
	// IPC and UTS are the namespace files containers join: the pod's
	// pinned namespaces (sandbox.Pins) or its pause's (ProcNS); "" is the
	// host's (hostIPC; hostNetwork's UTS).
	IPC, UTS string
	// PID is the pause task's pid: with shareProcessNamespace containers
	// join /proc/<PID>/ns/pid, where the pause is PID 1.
	PID int
	// NetNSPath is the pod's network namespace (e.g. /run/netns/podrun-xxx);
	// "" with HostNetwork.
	NetNSPath   string
	HostNetwork bool
	// Hostname is the pod's hostname (the node's with HostNetwork); it becomes
	// the HOSTNAME variable.
	Hostname string
	// Cgroup is the pod cgroup (PodCgroup), the parent of the container's.
	Cgroup string
	// Host files bind-mounted into every init and app container; "" means
	// not mounted. Shm is a host tmpfs directory mounted at /dev/shm, shared
	// within the pod.
	EtcHosts, ResolvConf, HostnameFile, Shm string
}

// ContainerInput is everything Container needs to build an init or app
// container's spec.
type ContainerInput struct {
	ID        string
	Pod       *corev1.Pod
	Container *corev1.Container
	Image     Image
	Sandbox   Sandbox
	// Env is the container's variables, as ResolveEnv returns them.
	Env []EnvVar
	// Mounts are the container's resolved volume mounts, in volumeMounts order.
	Mounts []Mount
	// TerminationLog is the host file mounted read-write at the container's
	// terminationMessagePath; "" means not mounted.
	TerminationLog string
	// Security is what the host offers for confining the container (see
	// security.go); the zero value is a host with seccomp, without AppArmor.
	Security HostSecurity
	// Resources are the container's cgroup limits and OOMScoreAdj its
	// oom_score_adj, as package resources computes them; nil: no limits.
	Resources   *specs.LinuxResources
	OOMScoreAdj int
	// ShimGroup is the shim the container's task runs in (labels.ShimGroup);
	// "": the pod's (Sandbox.ID).
	ShimGroup string
}

// Paths of the files the kubelet and the CRI plugin mount into containers.
const (
	etcHosts      = "/etc/hosts"
	etcResolvConf = "/etc/resolv.conf"
	etcHostname   = "/etc/hostname"
	devShm        = "/dev/shm"
)

// Container builds the OCI spec of an init or app container of a pod: it
// joins the sandbox's IPC and UTS namespaces and its network namespace (the
// host's with HostNetwork), gets its own mount and PID namespaces (see
// withSandboxNamespaces for hostPID and shareProcessNamespace), and runs
// with the process, user and mounts the kubelet and the CRI plugin would give
// it. Its securityContext (merged with the pod's) and podrun's secure
// defaults are applied by securityOpts (security.go).
func Container(ctx context.Context, in ContainerInput) (*specs.Spec, error) {
	if err := checkContainerInput(in); err != nil {
		return nil, err
	}
	c := in.Container
	env, vars := Env(in.Env, in.Image, in.Sandbox.Hostname)
	args, err := Args(c, in.Image, vars)
	if err != nil {
		return nil, err
	}
	security, err := securityOpts(in)
	if err != nil {
		return nil, err
	}
	cgroups, err := cgroupsPath(in.Pod, in.Sandbox.Cgroup, in.ID)
	if err != nil {
		return nil, err
	}
	readOnlyRoot := readOnlyRootFilesystem(c)
	annotations := podAnnotations(in.Pod, in.Sandbox.ID, containerTypeContainer)
	annotations[annContainerName] = c.Name
	if in.ShimGroup != "" {
		annotations[labels.ShimGroup] = in.ShimGroup
	}
	annotations[annImageName] = in.Image.Ref

	opts := []oci.SpecOpts{
		oci.WithoutRunMount,
		withoutRlimits,
		oci.WithProcessArgs(args...),
		withProcessEnv(env),
		oci.WithProcessCwd(workingDir(c, in.Image)),
		withPodMounts(containerMounts(in, readOnlyRoot)),
		withSandboxNamespaces(in.Sandbox, in.Pod),
		oci.WithCgroup(cgroups),
		withResources(in.Resources, in.OOMScoreAdj),
		oci.WithAnnotations(annotations),
	}
	if readOnlyRoot {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if c.TTY {
		opts = append(opts, oci.WithTTY) // a terminal and TERM=xterm, as containerd's CRI
	}
	opts = append(opts, security) // after the mounts: privileged makes cgroupfs writable
	return generate(ctx, in.ID, opts...)
}

// checkContainerInput rejects inputs Container cannot build a spec from.
func checkContainerInput(in ContainerInput) error {
	switch {
	case in.Pod == nil:
		return errors.New("no pod")
	case in.Container == nil:
		return errors.New("no container")
	case in.Sandbox.ID == "":
		return errors.New("sandbox id is empty")
	case shareProcessNamespace(in.Pod) && !in.Pod.Spec.HostPID && in.Sandbox.PID <= 0:
		return fmt.Errorf("sandbox pid %d is not a process id", in.Sandbox.PID)
	case in.Sandbox.IPC == "" && !in.Pod.Spec.HostIPC:
		return errors.New("sandbox IPC namespace is empty")
	case in.Sandbox.UTS == "" && !in.Sandbox.HostNetwork:
		return errors.New("sandbox UTS namespace is empty")
	case !in.Sandbox.HostNetwork && in.Sandbox.NetNSPath == "":
		return errors.New("sandbox network namespace path is empty")
	case in.Sandbox.Hostname == "":
		return errors.New("sandbox hostname is empty")
	}
	for _, m := range in.Mounts {
		if !path.IsAbs(m.Destination) {
			return fmt.Errorf("mount destination %q is not absolute", m.Destination)
		}
	}
	return nil
}

// workingDir returns the container's workingDir, else the image's, else "/".
func workingDir(c *corev1.Container, img Image) string {
	switch {
	case c.WorkingDir != "":
		return c.WorkingDir
	case img.WorkingDir != "":
		return img.WorkingDir
	}
	return "/"
}

// parseUser parses an image's numeric user: "" (root), "uid" (gid 0) or
// "uid:gid".
func parseUser(user string) (uid, gid uint32, err error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err = parseID(u)
	if err == nil && hasGroup {
		gid, err = parseID(g)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("image user %q: only numeric users are supported", user)
	}
	return uid, gid, nil
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}

// noNewPrivileges reports whether the process gets no_new_privs: as on
// Kubernetes, only when allowPrivilegeEscalation is false.
func noNewPrivileges(c *corev1.Container) bool {
	sc := c.SecurityContext
	return sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
}

func readOnlyRootFilesystem(c *corev1.Container) bool {
	sc := c.SecurityContext
	return sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
}

func withNoNewPrivileges(on bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Process.NoNewPrivileges = on
		return nil
	}
}

// withSandboxNamespaces joins the sandbox's IPC, UTS and network namespaces
// (the host's with hostIPC, and the host's network and UTS namespaces with
// HostNetwork) and keeps a new mount namespace, as the CRI plugin does
// (WithPodNamespaces). The PID namespace is the container's own, or the
// host's with hostPID, or with shareProcessNamespace the pod's, where the
// pause is PID 1. Hostname stays empty: the joined UTS namespace already
// has it.
func withSandboxNamespaces(sb Sandbox, pod *corev1.Pod) oci.SpecOpts {
	opts := []oci.SpecOpts{join(specs.IPCNamespace, sb.IPC), join(specs.UTSNamespace, sb.UTS), oci.WithHostname("")}
	switch {
	case pod.Spec.HostPID:
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	case shareProcessNamespace(pod):
		opts = append(opts, join(specs.PIDNamespace, ProcNS(sb.PID, "pid")))
	}
	if sb.HostNetwork {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace))
	} else {
		opts = append(opts, join(specs.NetworkNamespace, sb.NetNSPath))
	}
	return oci.Compose(opts...)
}

// shareProcessNamespace reports whether the pod's containers share one PID
// namespace (the pause's).
func shareProcessNamespace(pod *corev1.Pod) bool {
	share := pod.Spec.ShareProcessNamespace
	return share != nil && *share
}

// join joins the namespace at path, or the host's when path is "".
func join(t specs.LinuxNamespaceType, path string) oci.SpecOpts {
	if path == "" {
		return oci.WithHostNamespace(t)
	}
	return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: t, Path: path})
}

// ProcNS is process pid's namespace file of kind ("ipc", "uts", "pid").
func ProcNS(pid int, kind string) string {
	return "/proc/" + strconv.Itoa(pid) + "/ns/" + kind
}

// containerMounts returns the bind mounts of a container in the order the
// kubelet and the CRI plugin produce them: the volume mounts, the kubelet's
// /etc/hosts and termination log, then the CRI plugin's /etc/hostname,
// /etc/resolv.conf and /dev/shm, each default left out when an earlier mount
// has its destination; finally stably sorted by path depth so that no mount
// shadows a deeper one.
func containerMounts(in ContainerInput, readOnlyRoot bool) []Mount {
	mounts := append([]Mount(nil), in.Mounts...)
	add := func(src, dst string, ro bool) {
		if src == "" || dst == "" || hasDestination(mounts, dst) {
			return
		}
		mounts = append(mounts, Mount{Source: src, Destination: dst, ReadOnly: ro})
	}
	// kubelet (makeMounts, kuberuntime makeMounts)
	add(in.Sandbox.EtcHosts, etcHosts, false)
	add(in.TerminationLog, in.Container.TerminationMessagePath, false)
	// CRI plugin (containerMounts)
	add(in.Sandbox.HostnameFile, etcHostname, readOnlyRoot)
	add(in.Sandbox.ResolvConf, etcResolvConf, readOnlyRoot)
	add(podShm(in), devShm, false)
	sort.SliceStable(mounts, func(i, j int) bool {
		return depth(mounts[i].Destination) < depth(mounts[j].Destination)
	})
	return mounts
}

// podShm is the host directory mounted at a container's /dev/shm: the
// pod's, or with hostIPC the host's /dev/shm, as the CRI plugin mounts it.
func podShm(in ContainerInput) string {
	if in.Pod.Spec.HostIPC {
		return devShm
	}
	return in.Sandbox.Shm
}

func hasDestination(mounts []Mount, dst string) bool {
	dst = filepath.Clean(dst)
	for _, m := range mounts {
		if filepath.Clean(m.Destination) == dst {
			return true
		}
	}
	return false
}

func depth(p string) int {
	return strings.Count(filepath.Clean(p), "/")
}

// withPodMounts adds mounts as the CRI plugin does (customopts.WithMounts):
// a read-only cgroup mount at /sys/fs/cgroup joins the default mounts, the
// defaults a mount replaces (same destination, or anything under /dev when
// /dev is mounted) are dropped, and the bind mounts follow.
func withPodMounts(mounts []Mount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		defaults := append(s.Mounts, specs.Mount{
			Destination: "/sys/fs/cgroup",
			Type:        "cgroup",
			Source:      "cgroup",
			Options:     []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
		})
		devMounted := hasDestination(mounts, "/dev")
		s.Mounts = nil
		for _, m := range defaults {
			dst := filepath.Clean(m.Destination)
			if hasDestination(mounts, dst) || devMounted && strings.HasPrefix(dst, "/dev/") {
				continue
			}
			s.Mounts = append(s.Mounts, m)
		}
		for _, m := range mounts {
			s.Mounts = append(s.Mounts, bindMount(m))
		}
		return nil
	}
}
