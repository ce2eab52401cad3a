package spec

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/labels"
	corev1 "k8s.io/api/core/v1"
)

// PauseInput is everything Pause needs to build a sandbox container's spec.
type PauseInput struct {
	ID  string
	Pod *corev1.Pod
	// NetNSPath is the pod's network namespace; "" means the host's network
	// (hostNetwork), and then also the host's UTS namespace.
	NetNSPath string
	// Hostname is set in the sandbox's new UTS namespace; ignored with the
	// host network.
	Hostname string
	// Rootfs is an absolute host directory used as the read-only root, or ""
	// when an image snapshot provides the root.
	Rootfs string
	// Args are the process arguments, e.g. ["/pause"] (podrun's built-in
	// pause, whose binary the caller bind-mounts through ExtraMounts) or the
	// image's entrypoint.
	Args []string
	// Env is the pause image's environment, as the CRI plugin gives it.
	Env         []string
	ExtraMounts []Mount
	// Security is what the host offers for confining the pause (seccomp).
	Security HostSecurity
	// Cgroup is the pod cgroup (PodCgroup), the parent of the pause's.
	Cgroup string
	// Resources are the pause's cgroup limits and OOMScoreAdj its
	// oom_score_adj (the CRI plugin's: 2 cpu shares, -998); nil: no limits.
	Resources   *specs.LinuxResources
	OOMScoreAdj int
	// IPC and UTS are namespaces pinned for the pod (sandbox.Pins) that the
	// sandbox joins instead of making its own ("": its own, or the host's).
	IPC, UTS string
	// ShimGroup is the shim its task runs in (labels.ShimGroup; "": one of
	// the pod's own, by its sandbox id).
	ShimGroup string
}

// Pause builds the spec of a pod's sandbox (pause) container: new IPC, UTS and
// PID namespaces, the given network namespace (or, with NetNSPath "", the
// host's network and UTS namespaces, as the CRI plugin does for hostNetwork
// pods; likewise the host's PID namespace with hostPID and the host's IPC
// namespace with hostIPC), the hostname, a read-only root, no capabilities, the runtime's
// default seccomp profile, the pod's sysctls, and the ShimGroup annotation.
func Pause(ctx context.Context, in PauseInput) (*specs.Spec, error) {
	if err := checkPauseInput(in); err != nil {
		return nil, err
	}
	cgroups, err := cgroupsPath(in.Pod, in.Cgroup, in.ID)
	if err != nil {
		return nil, err
	}
	opts := []oci.SpecOpts{
		oci.WithoutRunMount,
		withoutRlimits,
		oci.WithProcessArgs(in.Args...),
		oci.WithEnv(in.Env),
		oci.WithRootFSReadonly(),
		withNoCapabilities,
		pauseSecurityOpts(in.Pod, in.Security),
		withPauseNetwork(in.NetNSPath, in.Hostname),
		withHostNamespaces(in.Pod),
		withPinnedNamespaces(in.IPC, in.UTS),
		oci.WithCgroup(cgroups),
		withResources(in.Resources, in.OOMScoreAdj),
		oci.WithAnnotations(pauseAnnotations(in)),
	}
	if in.Rootfs != "" {
		opts = append(opts, oci.WithRootFSPath(in.Rootfs))
	}
	for _, m := range in.ExtraMounts {
		opts = append(opts, oci.WithMounts([]specs.Mount{bindMount(m)}))
	}
	return generate(ctx, in.ID, opts...)
}

// checkPauseInput rejects inputs Pause cannot build a spec from.
func checkPauseInput(in PauseInput) error {
	switch {
	case in.Pod == nil:
		return errors.New("no pod")
	case len(in.Args) == 0:
		return errors.New("pause: no process args")
	case in.Rootfs != "" && !path.IsAbs(in.Rootfs):
		return fmt.Errorf("pause rootfs %q is not absolute", in.Rootfs)
	case in.NetNSPath != "" && in.Hostname == "":
		return errors.New("pause: hostname is empty")
	}
	for _, m := range in.ExtraMounts {
		if !path.IsAbs(m.Destination) {
			return fmt.Errorf("mount destination %q is not absolute", m.Destination)
		}
	}
	return nil
}

// withNoCapabilities gives the process an empty capability set.
func withNoCapabilities(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	s.Process.Capabilities = &specs.LinuxCapabilities{
		Bounding:    []string{},
		Effective:   []string{},
		Permitted:   []string{},
		Inheritable: []string{},
		Ambient:     []string{},
	}
	return nil
}

// withPauseNetwork puts the sandbox into the network namespace at netnsPath
// with its own UTS namespace and hostname, or with netnsPath "" into the
// host's network and UTS namespaces (runc cannot set a hostname there).
func withPauseNetwork(netnsPath, hostname string) oci.SpecOpts {
	if netnsPath == "" {
		return oci.Compose(
			oci.WithHostNamespace(specs.NetworkNamespace),
			oci.WithHostNamespace(specs.UTSNamespace),
			oci.WithHostname(""),
		)
	}
	return oci.Compose(
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath}),
		oci.WithHostname(hostname),
	)
}

// withHostNamespaces leaves the sandbox in the host's PID namespace with
// hostPID and in its IPC namespace with hostIPC, as the CRI plugin does; the
// containers then join them through the pause (withSandboxNamespaces).
func withHostNamespaces(pod *corev1.Pod) oci.SpecOpts {
	var opts []oci.SpecOpts
	if pod.Spec.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if pod.Spec.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	return oci.Compose(opts...)
}

// withPinnedNamespaces joins the namespaces pinned at ipc and uts ("": not
// pinned); the pinned UTS namespace has the pod's hostname already.
func withPinnedNamespaces(ipc, uts string) oci.SpecOpts {
	var opts []oci.SpecOpts
	if ipc != "" {
		opts = append(opts, join(specs.IPCNamespace, ipc))
	}
	if uts != "" {
		opts = append(opts, join(specs.UTSNamespace, uts), oci.WithHostname(""))
	}
	return oci.Compose(opts...)
}

// pauseAnnotations are the CRI plugin's sandbox annotations, and the shim
// group.
func pauseAnnotations(in PauseInput) map[string]string {
	a := podAnnotations(in.Pod, in.ID, containerTypeSandbox)
	if in.ShimGroup != "" {
		a[labels.ShimGroup] = in.ShimGroup
	}
	return a
}
