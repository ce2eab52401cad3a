// Package spec builds the OCI runtime specs of a pod's containers: the pause
// (sandbox) container and the init and app containers that join it.
//
// Everything here is pure: corev1 objects and resolved inputs in, an OCI spec
// out. Nothing talks to containerd, needs root or touches the host, with the
// exceptions the CRI plugin has too (security.go): a Localhost seccomp profile
// is read from its file, a privileged container lists the host's devices, and
// on an AppArmor host the default profile is loaded; DetectHost reads /proc
// and /sys. Specs start from containerd's defaults
// (oci.GenerateSpecWithPlatform with a nil client) and are shaped the way the
// kubelet and containerd's CRI plugin shape them.
package spec

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/platforms"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/labels"
)

// Annotation keys and values containerd's CRI plugin puts on every spec
// (pkg/cri/annotations). The sandbox id key is labels.SandboxID.
const (
	annContainerType    = "io.kubernetes.cri.container-type"
	annSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	annSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	annSandboxName      = "io.kubernetes.cri.sandbox-name"
	annContainerName    = "io.kubernetes.cri.container-name"
	annImageName        = "io.kubernetes.cri.image-name"

	containerTypeSandbox   = "sandbox"
	containerTypeContainer = "container"
)

// defaultNamespace is the containerd namespace assumed when ctx has none; the
// namespace only feeds the default cgroup path, which is always replaced.
const defaultNamespace = "podrun"

// generate builds a spec from containerd's default Unix spec plus opts.
func generate(ctx context.Context, id string, opts ...oci.SpecOpts) (*specs.Spec, error) {
	if id == "" {
		return nil, errors.New("empty container id")
	}
	if _, ok := namespaces.Namespace(ctx); !ok {
		ctx = namespaces.WithNamespace(ctx, defaultNamespace)
	}
	s, err := oci.GenerateSpecWithPlatform(ctx, nil, platforms.DefaultString(), &containers.Container{ID: id}, opts...)
	if err != nil {
		return nil, fmt.Errorf("generating spec: %w", err)
	}
	return s, nil
}

// PodCgroup is the cgroupfs path of the cgroup that holds the pause and
// every container of pod uid: /<containerd namespace>/pod<uid>, e.g.
// /podrun/pod<uid>, like the kubelet's kubepods/pod<uid> with the cgroupfs
// driver. The namespace keeps apart the same pod run in two namespaces, as
// containerd's default /<namespace>/<id> does.
func PodCgroup(namespace, uid string) string {
	return path.Join("/", namespace, "pod"+uid)
}

// KeeperCgroup is the cgroupfs path of the cgroup the node's stream
// keepers run in: /<containerd namespace>/keeper, beside the pods' cgroups
// (a pod's is "pod<uid>"), as containerd's shims may go to a cgroup of
// their own.
func KeeperCgroup(namespace string) string {
	return path.Join("/", namespace, "keeper")
}

// cgroupsPath returns the cgroupfs path of container id of pod, in the pod
// cgroup.
func cgroupsPath(pod *corev1.Pod, podCgroup, id string) (string, error) {
	if pod.UID == "" {
		return "", fmt.Errorf("pod %s/%s has no uid", pod.Namespace, pod.Name)
	}
	if !path.IsAbs(podCgroup) {
		return "", fmt.Errorf("pod cgroup %q is not an absolute path", podCgroup)
	}
	return path.Join(podCgroup, id), nil
}

// withResources sets the cgroup limits of r (keeping the default device
// rules) and the process's oom_score_adj, as the CRI plugin's WithResources
// and WithOOMScoreAdj do; a nil r sets no limits.
func withResources(r *specs.LinuxResources, oomScoreAdj int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Process.OOMScoreAdj = &oomScoreAdj
		if r == nil {
			return nil
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		s.Linux.Resources.CPU = r.CPU
		s.Linux.Resources.Memory = r.Memory
		s.Linux.Resources.Unified = r.Unified
		return nil
	}
}

// podAnnotations returns the annotations the CRI plugin sets on every
// container of a pod, sandbox or not.
func podAnnotations(pod *corev1.Pod, sandboxID, containerType string) map[string]string {
	return map[string]string{
		labels.SandboxID:    sandboxID,
		annContainerType:    containerType,
		annSandboxNamespace: pod.Namespace,
		annSandboxUID:       string(pod.UID),
		annSandboxName:      pod.Name,
	}
}

// withoutRlimits drops containerd's default RLIMIT_NOFILE of 1024, as the CRI
// plugin does, so containers inherit the runtime's limits like on Kubernetes.
func withoutRlimits(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	if s.Process != nil {
		s.Process.Rlimits = nil
	}
	return nil
}

// withProcessEnv sets the process environment to env exactly (oci.WithEnv
// merges, and in containerd 1.7 keeps duplicate keys that first appear in its
// overrides).
func withProcessEnv(env []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Process.Env = env
		return nil
	}
}

// bindMount returns the spec mount of one bind mount, with the options the CRI
// plugin uses for private propagation (and nodev when asked: runc remounts
// the bind with it).
func bindMount(m Mount) specs.Mount {
	mode := "rw"
	if m.ReadOnly {
		mode = "ro"
	}
	opts := []string{"rbind", "rprivate", mode}
	if m.NoDev {
		opts = append(opts, "nodev")
	}
	return specs.Mount{
		Destination: m.Destination,
		Type:        "bind",
		Source:      m.Source,
		Options:     opts,
	}
}
