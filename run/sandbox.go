// The pod's sandbox, made and ended here: the steps "pod cgroup"
// (createPodCgroup), "sandbox: netns" (createNetNS), "sandbox: pause" or
// "sandbox: namespaces" (startSandbox) and the network (addNetwork: CNI
// ADD), their undos, and stopSandbox, which ends the sandbox and its
// network when a pod completes or is taken down.

package run

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/spec"
)

func (r *podRun) createNetNS(context.Context) error {
	var err error
	r.netns, err = r.h.netns.Create(sandbox.NetNSName(r.pod.UID))
	return err
}

func (r *podRun) removeNetNS(context.Context) error {
	return r.h.netns.Remove(sandbox.NetNSName(r.pod.UID))
}

// pinnedSandbox reports whether the pod's sandbox is its IPC and UTS
// namespaces pinned to files, with no pause process (CRI-O's
// drop_infra_ctr): unless the pod needs a pause — with
// shareProcessNamespace it is the pod's PID 1, sysctls are set in its
// namespaces, with the host's network and IPC there is nothing of the pod's
// to hold — or one was asked for (pauseImage).
func pinnedSandbox(pod *corev1.Pod, pauseImage string) bool {
	share := pod.Spec.ShareProcessNamespace
	psc := pod.Spec.SecurityContext
	switch {
	case pauseImage != "", share != nil && *share, psc != nil && len(psc.Sysctls) > 0, pod.Spec.HostNetwork && pod.Spec.HostIPC:
		return false
	}
	return true
}

// pinsOf is where pod uid's namespaces are pinned: the IPC namespace unless
// hostIPC, the UTS namespace unless hostNetwork (a nil pod: both, to remove).
func (h *Host) pinsOf(uid string, pod *corev1.Pod) sandbox.Pins {
	l := h.layout(uid)
	var p sandbox.Pins
	if pod == nil || !pod.Spec.HostIPC {
		p.IPC = l.File("ipc-ns")
	}
	if pod == nil || !pod.Spec.HostNetwork {
		p.UTS = l.File("uts-ns")
	}
	return p
}

// pinnedID is the identity of pod uid's pinned sandbox (the inode of the
// namespace at its pins' Identity); false when it has none (a pause's pod,
// or one whose sandbox was stopped). With a nil pod, a hostNetwork pod's
// unpinned UTS path is passed over for its IPC pin.
func (h *Host) pinnedID(uid string, pod *corev1.Pod) (uint64, bool) {
	p := h.pinsOf(uid, pod)
	for _, path := range []string{p.UTS, p.IPC} { // Identity's order
		if path == "" {
			continue
		}
		if id, ok := h.pins.ID(path); ok {
			return id, true
		}
	}
	return 0, false
}

func (r *podRun) unpin(context.Context) error { return r.h.pins.Unpin(r.pins) }

// startSandbox makes the pod's sandbox: its pinned namespaces and a
// container that records it (never started), or its pause container.
func (r *podRun) startSandbox(ctx context.Context) error {
	var err error
	if r.hostname, err = sandbox.Hostname(r.pod.Pod, r.h.cfg.ClusterDomain); err != nil {
		return err
	}
	in := spec.PauseInput{ID: r.sandboxID, Pod: r.pod.Pod, NetNSPath: r.netns, Hostname: r.hostname,
		Security:  spec.DetectHost(r.h.cfg.Root), // seccomp on this host (spec/security.go)
		ShimGroup: shimGroup(r.pod.Pod, "", labels.KindInit, runtime.NumCPU())}
	if r.pinned {
		if err := r.h.pins.Pin(r.pins, r.hostname); err != nil {
			return err
		}
		var ok bool
		if r.pinID, ok = r.h.pinnedID(r.pod.UID, r.pod.Pod); !ok {
			return fmt.Errorf("the pod's namespaces are not pinned at %s", r.pins.Identity())
		}
		in.IPC, in.UTS = r.pins.IPC, r.pins.UTS
	}
	in.Cgroup = r.h.podCgroup(r.pod.UID)
	in.Resources, in.OOMScoreAdj = r.h.pauseResources()
	image := r.h.cfg.PauseImage
	in.Args = []string{"/pause", "pause"}
	switch {
	case image != "":
		cfg := r.images[image].Config
		in.Args, in.Env = append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...), cfg.Env
	case !r.pinned: // a pinned sandbox's record never runs: no root
		if in.Rootfs, err = r.h.pauseRootfs(); err != nil {
			return err
		}
		in.ExtraMounts = []spec.Mount{{Source: r.h.cfg.Exe, Destination: "/pause", ReadOnly: true}}
	}
	s, err := spec.Pause(ctx, in)
	if err != nil {
		return err
	}
	l := r.labels(labels.SandboxName, labels.KindSandbox, 0, "")
	if err := r.h.engine.Create(ctx, engine.ContainerSpec{ID: r.sandboxID, Image: image, Labels: l, Spec: s}); err != nil {
		return err
	}
	if r.pinned {
		return nil
	}
	r.pausePID, err = r.h.engine.Start(ctx, r.sandboxID, "")
	return err
}

// sandboxNamespaces are the IPC and UTS namespaces the pod's containers
// join ("": the host's).
func (r *podRun) sandboxNamespaces() (ipc, uts string) {
	if r.pinned {
		return r.pins.IPC, r.pins.UTS
	}
	if !r.pod.Spec.HostIPC {
		ipc = spec.ProcNS(int(r.pausePID), "ipc")
	}
	if !r.hostNetwork() {
		uts = spec.ProcNS(int(r.pausePID), "uts")
	}
	return ipc, uts
}

// pauseRootfs is the empty directory the built-in pause runs in; podrun's
// own binary is bind-mounted into it, so it must be statically linked.
func (h *Host) pauseRootfs() (string, error) {
	if err := checkStatic(h.cfg.Exe); err != nil {
		return "", err
	}
	dir := filepath.Join(h.cfg.Root, "pause", "rootfs")
	return dir, os.MkdirAll(dir, 0o755)
}

func checkStatic(exe string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("built-in pause: reading %s: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("built-in pause: %s is dynamically linked; build podrun with CGO_ENABLED=0 or pass --pause-image", exe)
		}
	}
	return nil
}

func (r *podRun) attachment() sandbox.Attachment { return attachment(r.pod.UID, r.pod.Pod) }

func (r *podRun) addNetwork(ctx context.Context) error {
	conf, err := r.h.network.Config()
	if err != nil {
		return err
	}
	// Saved before ADD so that DEL (now or after a crash) uses the same config.
	if err := r.h.disk.WriteFile(r.layout.File(cniFile), conf, 0o640); err != nil {
		return err
	}
	if r.ips, err = r.h.network.Add(ctx, conf, r.attachment()); err != nil {
		return err
	}
	r.state.PodIPs = ipStrings(r.ips)
	return r.h.saveState(r.state)
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func (r *podRun) delNetwork(ctx context.Context) error {
	return r.h.delNetwork(ctx, r.pod.UID, r.attachment())
}

// delNetwork detaches a pod with the configuration it was attached with;
// when none was saved, ADD never ran and there is nothing to do.
func (h *Host) delNetwork(ctx context.Context, uid string, a sandbox.Attachment) error {
	conf, err := os.ReadFile(h.layout(uid).File(cniFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return h.network.Del(ctx, conf, a)
}

// attachment is the pod's CNI attachment. Its port mappings are passed to
// DEL as well as ADD: the portmap plugin removes the rules of the mappings
// it is given. pod is nil when its state is lost.
func attachment(uid string, pod *corev1.Pod) sandbox.Attachment {
	a := sandbox.Attachment{ContainerID: SandboxID(uid), NetNS: sandbox.NetNSPath(sandbox.NetNSName(uid)), PodUID: uid}
	if pod == nil {
		return a
	}
	a.PodNamespace, a.PodName = pod.Namespace, pod.Name
	for _, c := range resources.Containers(pod) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				a.Ports = append(a.Ports, sandbox.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort,
					Protocol: strings.ToLower(string(p.Protocol)), HostIP: p.HostIP})
			}
		}
	}
	return a
}

// createPodCgroup is the "pod cgroup" step: the pod's cgroup with its limits
// (resources.Pod), before the pause starts in it.
func (r *podRun) createPodCgroup(context.Context) error {
	return r.h.cgroups.Create(r.h.podCgroup(r.pod.UID), resources.Pod(r.pod.Pod))
}

func (r *podRun) removePodCgroup(context.Context) error {
	return r.h.cgroups.Remove(r.h.podCgroup(r.pod.UID))
}

// pauseResources are the pause container's limits and oom_score_adj: those
// the CRI plugin gives every sandbox.
func (h *Host) pauseResources() (*specs.LinuxResources, int) {
	shares := uint64(resources.SandboxCPUShares)
	return &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}, resources.SandboxOOMScoreAdj(h.node())
}

// stopSandbox ends a finished pod's sandbox: the pause task or the pinned
// namespaces, the network and the network namespace. Containers and the
// pod directory stay until `down`.
// Each part is tried whatever the others did; CNI DEL runs from the pod's
// record even when the sandbox or its namespace are gone.
func (h *Host) stopSandbox(ctx context.Context, uid string, a sandbox.Attachment) error {
	id := SandboxID(uid)
	// The pause task and the network go together: CNI DEL needs the
	// namespace, which is a file of podrun's, not the pause's.
	var killed error
	var wg sync.WaitGroup
	wg.Go(func() {
		kctx, cancel := stepContext(ctx)
		defer cancel()
		var errs []error
		if err := h.engine.Kill(kctx, id, unix.SIGKILL); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
		}
		if _, err := h.engine.DeleteTask(kctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
		}
		killed = errors.Join(errs...)
	})
	nctx, cancel := stepContext(ctx)
	defer cancel()
	netErr := h.delNetwork(nctx, uid, a)
	wg.Wait()
	return errors.Join(killed, netErr, h.netns.Remove(sandbox.NetNSName(uid)), h.pins.Unpin(h.pinsOf(uid, nil)))
}
