package run

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

// PodFailedError is a pod that ran to completion and failed.
type PodFailedError struct {
	Pod    string
	Reason string
}

func (e *PodFailedError) Error() string { return fmt.Sprintf("pod %s failed: %s", e.Pod, e.Reason) }

// podRun is one pod's pipeline and what its steps learn along the way.
type podRun struct {
	h      *Host
	pod    *manifest.Pod
	key    string
	layout volumes.Layout
	source string // for labels and listings: "stdin" or a file's absolute path
	wait   Wait
	w      *supervisor.Worker
	// objMu guards pod.ConfigMaps and pod.Secrets, which a supervised pod's
	// container starts read and UpdateConfigVolumes replaces.
	objMu sync.Mutex
	// prepared are the specs of the containers prepareApps created, by id,
	// until their start takes them; prepMu guards it.
	prepMu   sync.Mutex
	prepared map[string]*specs.Spec

	state  *State
	vols   *volumes.Prepared
	images map[string]engine.Image // by image reference as written
	netns  string
	// pinned: the pod's sandbox is its pinned IPC and UTS namespaces (pins),
	// the namespace at pins.Identity() being pinID; else a pause process,
	// pausePID.
	pinned    bool
	pins      sandbox.Pins
	pinID     uint64
	pausePID  uint32
	ips       []net.IP
	hostname  string
	sandboxID string
	// pullBackOff: image failures go into the host's back-off (UpOptions.PullBackOff).
	pullBackOff bool
	// keepFailed: an init container failing under restartPolicy Never
	// leaves the pod's status in final (UpOptions.RecordFailures).
	keepFailed bool
	final      *corev1.PodStatus
}

func (r *podRun) hostNetwork() bool { return r.pod.Spec.HostNetwork }

// plan lists the pod's steps; which steps appear depends only on the spec.
func (r *podRun) plan() []Step {
	r.sandboxID = SandboxID(r.pod.UID)
	steps := []Step{
		{Name: "pod directory", Do: r.createDirs, Undo: r.removeDirs},
		{Name: "volumes", Do: r.setupVolumes, Undo: r.undoVolumes},
		{Name: "images", Do: r.ensureImages},
		{Name: "pod cgroup", Do: r.createPodCgroup, Undo: r.removePodCgroup}, // cgroups.go
	}
	if !r.hostNetwork() {
		steps = append(steps, Step{Name: "sandbox: netns", Do: r.createNetNS, Undo: r.removeNetNS})
	}
	name := "sandbox: pause"
	if r.pinned {
		name = "sandbox: namespaces"
	}
	if r.hostNetwork() {
		steps = append(steps, Step{Name: name, Do: r.startSandbox, Undo: inOrder(r.undoContainer(labels.SandboxName), r.unpin)})
	} else {
		// The network namespace exists already, so the sandbox and CNI ADD
		// do not wait for each other.
		// The app containers are created meanwhile, in the sandbox's
		// namespaces (prepareApps).
		steps = append(steps, Step{Name: name + " + network", Do: both(then(r.startSandbox, r.prepareApps), r.addNetwork),
			Undo: inOrder(r.delNetwork, r.undoPrepared, r.undoContainer(labels.SandboxName), r.unpin)})
	}
	steps = append(steps, Step{Name: "sandbox: files", Do: r.writeFiles})
	for i := range r.pod.Spec.InitContainers {
		c := &r.pod.Spec.InitContainers[i]
		if status.IsSidecar(c) {
			steps = append(steps, Step{Name: "sidecar/" + c.Name, Do: r.startSidecar(c), Undo: r.undoContainer(c.Name)})
			continue
		}
		steps = append(steps, Step{Name: "init/" + c.Name, Do: r.runInit(c), Undo: r.undoContainer(c.Name)})
	}
	// The app containers start together: Kubernetes gives them no order
	// (beyond the init containers and sidecars before them), and each one's
	// postStart hook holds up only its own container.
	var apps []*corev1.Container
	var names []string
	var undo []func(context.Context) error
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		apps, names = append(apps, c), append(names, c.Name)
		undo = append([]func(context.Context) error{r.undoContainer(c.Name)}, undo...) // in reverse
	}
	steps = append(steps, Step{Name: "container/" + strings.Join(names, ","), Do: r.startApps(apps), Undo: inOrder(undo...)})
	switch r.wait {
	case WaitRunning:
		steps = append(steps, Step{Name: "record", Do: r.recordRunning})
	case WaitCompletion:
		steps = append(steps, Step{Name: "wait: completion", Do: r.waitCompletion})
	default:
		steps = append(steps, Step{Name: "wait: ready", Do: r.waitReady})
	}
	return steps
}

// both runs two actions concurrently and returns both errors.
func both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- a(ctx) }()
		errB := b(ctx)
		return errors.Join(<-errc, errB)
	}
}

// then runs b after a, when a succeeded.
func then(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := a(ctx); err != nil {
			return err
		}
		return b(ctx)
	}
}

// inOrder runs undo actions one after the other, all of them, joining errors.
func inOrder(fns ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, fn := range fns {
			errs = append(errs, fn(ctx))
		}
		return errors.Join(errs...)
	}
}

func (r *podRun) createDirs(context.Context) error {
	if err := r.h.disk.Create(r.layout); err != nil {
		return err
	}
	if err := r.archiveLogs(); err != nil {
		return err
	}
	r.state = &State{UID: r.pod.UID, Hash: r.pod.Hash, Source: r.source, Pod: r.pod.Pod}
	return r.h.saveState(r.state)
}

// archiveLogs moves aside the logs of an earlier pod with the same UID (the
// same manifest, run again after `down`), so that its files are kept but not
// appended to: each run starts at 0.log like a new pod on Kubernetes.
func (r *podRun) archiveLogs() error {
	dir := logs.PodDir(r.h.cfg.LogDir, r.pod.Namespace, r.pod.Name, r.pod.UID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	old := fmt.Sprintf("%s.%s", dir, time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("keeping the logs of the previous run: %w", err)
	}
	return nil
}

func (r *podRun) removeDirs(context.Context) error { return r.h.disk.Remove(r.layout) }

func (r *podRun) setupVolumes(context.Context) error {
	var err error
	cfg, err := r.h.configFor(r.pod) // configvolumes.go
	if err != nil {
		return err
	}
	r.vols, err = r.h.disk.Setup(r.layout, r.pod.Pod, cfg, r.h.volumeOptions())
	return err
}

func (r *podRun) undoVolumes(context.Context) error {
	if r.vols == nil {
		return nil
	}
	return r.h.disk.Undo(r.vols)
}

func (r *podRun) ensureImages(ctx context.Context) error {
	r.images = map[string]engine.Image{}
	for _, c := range resources.Containers(r.pod.Pod) {
		if _, ok := r.images[c.Image]; ok {
			continue
		}
		img, err := r.image(ctx, c.Image, c.ImagePullPolicy, r.pod.PullSecrets) // with back-off (imagepull.go)
		if err != nil {
			return fmt.Errorf("container %q: %w", c.Name, err)
		}
		r.images[c.Image] = img
	}
	if r.h.cfg.PauseImage != "" {
		// The node's credentials only, as the CRI pulls the sandbox image.
		img, err := r.image(ctx, r.h.cfg.PauseImage, corev1.PullIfNotPresent, nil)
		if err != nil {
			return fmt.Errorf("pause image: %w", err)
		}
		r.images[r.h.cfg.PauseImage] = img
	}
	return nil
}

func (r *podRun) createNetNS(context.Context) error {
	var err error
	r.netns, err = r.h.netns.Create(sandbox.NetNSName(r.pod.UID))
	return err
}

func (r *podRun) removeNetNS(context.Context) error {
	return r.h.netns.Remove(sandbox.NetNSName(r.pod.UID))
}

func (r *podRun) labels(name, kind string, restart int, stopSignal string) map[string]string {
	l := podLabels(r.pod.UID, r.pod.Namespace, r.pod.Name, r.pod.Hash, r.source)
	l[labels.Container] = name
	l[labels.Kind] = kind
	l[labels.RestartCount] = strconv.Itoa(restart)
	if stopSignal != "" {
		l[labels.StopSignal] = stopSignal
	}
	return l
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
	in.Resources, in.OOMScoreAdj = r.h.pauseResources() // cgroups.go
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

func (r *podRun) attachment() sandbox.Attachment { return attachment(r.pod.UID, r.pod.Pod) } // network.go

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

// writeFiles writes the pod's hostname, hosts and resolv.conf files, and
// records its IPs on the sandbox container.
func (r *podRun) writeFiles(ctx context.Context) error {
	if r.hostNetwork() {
		r.ips = r.h.hostIPs()
		r.state.PodIPs = ipStrings(r.ips)
		if err := r.h.saveState(r.state); err != nil {
			return err
		}
	}
	ipLabel := map[string]string{labels.PodIPs: strings.Join(r.state.PodIPs, ",")}
	if err := r.h.engine.SetLabels(ctx, r.sandboxID, ipLabel); err != nil {
		return err
	}
	hosts, err := r.hostsFile() // network.go
	if err != nil {
		return err
	}
	resolv, err := r.resolvConf()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"etc-hosts":   hosts,
		"resolv.conf": resolv,
		"hostname":    []byte(r.hostname + "\n"),
	} {
		if err := r.h.disk.WriteFile(r.layout.File(name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// shimGroup is the shim container name (of kind) of pod runs in. A node's
// pods share a pool of shims, two per core: containerd's CRI gives each pod
// a shim of its own, and a shim (about 3 MiB of the node's memory) costs
// more than the rest of what a small pod does (docs/benchmarks.md). A
// pod's lane comes from its uid; its pause, init containers and sidecars,
// which start one at a time, run in it; its app containers, which start
// together, in the lanes from there on, one each while there are lanes (a
// shim creates one task at a time; a create waits on runc's processes as
// much as it computes).
func shimGroup(pod *corev1.Pod, name, kind string, cores int) string {
	lanes := uint32(max(2*cores, 1))
	h := fnv.New32a()
	h.Write([]byte(pod.UID))
	lane := h.Sum32() % lanes
	if kind == labels.KindApp {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		lane = (lane + uint32(max(i, 0))) % lanes
	}
	return "podrun-shim-" + strconv.Itoa(int(lane))
}

// startContainer creates (unless prepareApps did) and starts attempt
// `restart` of container c.
func (r *podRun) startContainer(ctx context.Context, c *corev1.Container, kind string, restart int) (string, error) {
	id := ContainerID(r.pod.UID, c.Name, restart)
	s := r.takePrepared(id)
	if s == nil {
		var err error
		if s, err = r.createContainer(ctx, c, kind, restart); err != nil {
			return "", err
		}
	}
	logPath := r.logPath(c.Name, restart)
	if _, err := r.h.engine.Start(ctx, id, logPath); err != nil {
		return "", withLogTail(err, logPath)
	}
	// The container runs: failing to label it must not count as a failed
	// start. Its identity is known now (Create added the image's groups).
	started := map[string]string{labels.StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if s.Process != nil {
		started[labels.User] = status.UserLabel(s.Process.User.UID, s.Process.User.GID, s.Process.User.AdditionalGids)
	}
	if err := r.h.engine.SetLabels(ctx, id, started); err != nil {
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("recording the start of %s: %v", id, err)})
	}
	return id, nil
}

// createContainer creates attempt `restart` of container c and returns
// its spec.
func (r *podRun) createContainer(ctx context.Context, c *corev1.Container, kind string, restart int) (*specs.Spec, error) {
	id := ContainerID(r.pod.UID, c.Name, restart)
	img := r.images[c.Image]
	sources, err := r.envSources(c) // env.go
	if err != nil {
		return nil, err
	}
	// The kubelet's GenerateRunContainerOptions: its failures (a ConfigMap
	// or key gone, a subPath that escapes) leave the container Waiting in
	// CreateContainerConfigError, like spec's runAsNonRoot check.
	env, err := spec.ResolveEnv(c, sources)
	if err != nil {
		return nil, &spec.ConfigError{Container: c.Name, Msg: err.Error()}
	}
	mounts, err := r.vols.Mounts(c, spec.VarMap(env))
	if err != nil {
		return nil, &spec.ConfigError{Container: c.Name, Msg: err.Error()}
	}
	termLog := r.layout.TerminationLog(c.Name, id)
	if err := os.MkdirAll(filepath.Dir(termLog), 0o750); err != nil {
		return nil, err
	}
	if err := r.h.disk.WriteFile(termLog, nil, 0o666); err != nil {
		return nil, err
	}
	limits, oomScoreAdj := resources.Container(r.pod.Pod, c, r.h.node())
	ipc, uts := r.sandboxNamespaces()
	s, err := spec.Container(ctx, spec.ContainerInput{
		ID: id, Pod: r.pod.Pod, Container: c, Image: img.Config, Env: env, Mounts: mounts, TerminationLog: termLog,
		Security:  spec.DetectHost(r.h.cfg.Root), // seccomp, AppArmor, <root>/seccomp profiles (spec/security.go)
		Resources: limits, OOMScoreAdj: oomScoreAdj, ShimGroup: shimGroup(r.pod.Pod, c.Name, kind, runtime.NumCPU()),
		Sandbox: spec.Sandbox{
			ID: r.sandboxID, IPC: ipc, UTS: uts, PID: int(r.pausePID), NetNSPath: r.netns, HostNetwork: r.hostNetwork(), Hostname: r.hostname,
			EtcHosts: r.layout.File("etc-hosts"), ResolvConf: r.layout.File("resolv.conf"),
			HostnameFile: r.layout.File("hostname"), Shm: r.layout.Shm(), Cgroup: r.h.podCgroup(r.pod.UID),
		},
	})
	if err != nil {
		return nil, err
	}
	l := r.labels(c.Name, kind, restart, stopSignal(c, img))
	l[labels.ImageID] = imageID(img)
	if err := r.h.engine.Create(ctx, engine.ContainerSpec{ID: id, Image: img.Ref, Labels: l, Spec: s, ImageGroups: spec.MergeImageGroups(r.pod.Pod),
		Stdin: c.Stdin, StdinOnce: c.StdinOnce}); err != nil {
		return nil, err
	}
	return s, nil
}

// prepareApps creates the first attempts of the app containers while CNI
// ADD runs, when nothing starts before them (no init containers) and
// their environment does not read the downward API (the pod's IPs are not
// known yet): their start then only starts their tasks. A container it
// cannot create is left to its start, which reports why.
func (r *podRun) prepareApps(ctx context.Context) error {
	if len(r.pod.Spec.InitContainers) > 0 {
		return nil
	}
	var wg sync.WaitGroup
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		if usesDownward(c) {
			continue
		}
		wg.Go(func() {
			if s, err := r.createContainer(ctx, c, labels.KindApp, 0); err == nil {
				r.prepMu.Lock()
				if r.prepared == nil {
					r.prepared = map[string]*specs.Spec{}
				}
				r.prepared[ContainerID(r.pod.UID, c.Name, 0)] = s
				r.prepMu.Unlock()
			}
		})
	}
	wg.Wait()
	return nil
}

// takePrepared returns the spec of container id if prepareApps created it
// (once).
func (r *podRun) takePrepared(id string) *specs.Spec {
	r.prepMu.Lock()
	defer r.prepMu.Unlock()
	s := r.prepared[id]
	delete(r.prepared, id)
	return s
}

// undoPrepared removes the app containers prepareApps created and nothing
// started.
func (r *podRun) undoPrepared(ctx context.Context) error {
	var undo []func(context.Context) error
	for i := range r.pod.Spec.Containers {
		if id := ContainerID(r.pod.UID, r.pod.Spec.Containers[i].Name, 0); r.takePrepared(id) != nil {
			undo = append(undo, r.undoContainer(r.pod.Spec.Containers[i].Name))
		}
	}
	return inOrder(undo...)(ctx)
}

// imageID is an image's reference by digest, as the kubelet reports imageID.
func imageID(img engine.Image) string {
	repo, _, _ := strings.Cut(img.Ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo + "@" + img.Digest
}

// logPath is the log file of attempt restart of a container.
func (r *podRun) logPath(container string, restart int) string {
	return logs.Path(r.h.cfg.LogDir, r.pod.Namespace, r.pod.Name, r.pod.UID, container, restart)
}

// logTailLines is how many log lines an error message quotes.
const logTailLines = 10

func withLogTail(err error, logPath string) error {
	tail := readTail(logPath)
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w; last log lines:\n%s", err, tail)
}

func readTail(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	lines := logs.Tail(f, logTailLines)
	for i := range lines {
		lines[i] = "  | " + lines[i]
	}
	return strings.Join(lines, "\n")
}

// finish records how attempt id of pod uid ended on its labels and deletes
// its task, so that the shim can go once nothing runs. An OOM kill nobody
// saw the event of is read from the container's cgroup first.
func (h *Host) finish(ctx context.Context, uid, id string, exit engine.Exit) error {
	l := map[string]string{
		labels.ExitCode:   strconv.Itoa(int(exit.Code)),
		labels.FinishedAt: exit.ExitedAt.UTC().Format(time.RFC3339Nano),
	}
	// The exit router has labelled an OOM kill it saw too; this is for certain.
	if exit.OOMKilled || h.oomKilled(uid, id) {
		l[labels.Reason] = status.ReasonOOMKilled
	}
	if err := h.engine.SetLabels(ctx, id, l); err != nil {
		return err
	}
	if _, err := h.engine.DeleteTask(ctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	return nil
}

// ExitError is a container that exited with a non-zero code where that fails the pod.
type ExitError struct {
	Container string
	Code      uint32
	OOMKilled bool
	Tail      string
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("container %q exited with code %d", e.Container, e.Code)
	if e.OOMKilled {
		s += " (" + status.ReasonOOMKilled + ")"
	}
	if e.Tail != "" {
		s += "; last log lines:\n" + e.Tail
	}
	return s
}

// runInit runs init container c to completion in the pod's supervisor,
// which restarts a failed one with the kubelet's back-off unless the policy
// is Never. A final failure is an *ExitError; when ctx ends first, the
// error says how its last attempt ended.
func (r *podRun) runInit(c *corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		l := r.w.Start(c, supervisor.RoleInit, 0, nil)
		err := r.w.WaitFor(ctx, func() (bool, error) {
			st := l.State()
			if err := st.Failed(); err != nil {
				return false, err
			}
			return st.Done, nil
		})
		st := l.State()
		exit := &ExitError{Container: c.Name, Code: st.LastCode, OOMKilled: st.OOMKilled, Tail: readTail(r.logPath(c.Name, st.Restarts))}
		switch {
		case err != nil && st.Exited && ctx.Err() != nil:
			return fmt.Errorf("init %w; gave up: %w", exit, err)
		case err != nil:
			return err
		case st.ExitCode != 0:
			exit.Code = st.ExitCode
			r.final = r.finalStatus(ctx)
			return fmt.Errorf("init %w", exit)
		}
		return nil
	}
}

// finalStatus is the status of a pod whose init container failed for good
// under restartPolicy Never, taken before its steps are undone: the
// kubelet keeps such a pod Failed, its init containers' states shown. Nil
// without keepFailed, under another policy, or when it cannot be listed.
func (r *podRun) finalStatus(ctx context.Context) *corev1.PodStatus {
	if !r.keepFailed || r.pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return nil
	}
	pods, err := r.h.podsNamed(ctx, r.key, []string{r.pod.UID})
	if err != nil {
		return nil
	}
	for _, p := range pods {
		if p.UID == r.pod.UID && p.Pod != nil && p.Pod.Status.Phase == corev1.PodFailed {
			return p.Pod.Status.DeepCopy()
		}
	}
	return nil
}

// startApp starts supervising app container c and waits until it has
// started (postStart done), or failed to.
func (r *podRun) startApps(cs []*corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		loops := make([]*supervisor.Loop, len(cs))
		for i, c := range cs {
			loops[i] = r.w.Start(c, supervisor.RoleApp, 0, nil)
		}
		return r.w.WaitFor(ctx, func() (bool, error) {
			all := true
			for _, l := range loops {
				st := l.State()
				if err := st.Failed(); err != nil {
					return false, err
				}
				all = all && (st.RanOnce || st.Done)
			}
			return all, nil
		})
	}
}

// startSidecar starts a native sidecar and waits until it has started (its
// startup probe passed), as the next init container does.
func (r *podRun) startSidecar(c *corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		l := r.w.Start(c, supervisor.RoleSidecar, 0, nil)
		err := r.w.WaitFor(ctx, func() (bool, error) {
			st := l.State()
			if err := st.Failed(); err != nil {
				return false, err
			}
			return st.Started, nil
		})
		if err != nil && ctx.Err() != nil {
			return r.notReady(err, []*supervisor.Loop{l})
		}
		return err
	}
}

func (r *podRun) recordRunning(context.Context) error {
	r.state.Complete = true
	return r.h.saveState(r.state)
}

// waitReady waits until the pod is Ready (every app container and sidecar
// ready), or has finished first (a run-to-completion pod whose app
// containers are all done, which is then completed), or its active deadline
// ends it (deadline.go): `kubectl wait --for=condition=Ready`, which never
// kills a healthy pod for not finishing.
func (r *podRun) waitReady(ctx context.Context) error {
	var loops []*supervisor.Loop
	for _, l := range r.w.Loops() {
		if l.Role() != supervisor.RoleInit { // done before any app started
			loops = append(loops, l)
		}
	}
	dctx, passed, cancel := r.untilDeadline(ctx)
	defer cancel()
	err := r.w.WaitFor(dctx, func() (bool, error) { return r.allReady(loops) || r.appsDone(), nil })
	switch {
	case err != nil && passed():
		return r.failDeadline(ctx)
	case err != nil:
		return r.notReady(err, loops)
	case r.appsDone():
		return r.complete(ctx)
	}
	return r.recordRunning(ctx)
}

func (r *podRun) allReady(loops []*supervisor.Loop) bool {
	for _, l := range loops {
		if !l.State().Ready {
			return false
		}
	}
	return true
}

// appsDone reports whether a run-to-completion pod's app containers have
// all exited for good (Succeeded or Failed).
func (r *podRun) appsDone() bool {
	if r.pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || r.w == nil {
		return false
	}
	for _, l := range r.w.Loops() {
		if l.Role() == supervisor.RoleApp && !l.State().Done {
			return false
		}
	}
	return true
}

// notReady explains a wait that ended: for each container that is not
// ready, its state, its last probe or hook failure and its last log lines.
func (r *podRun) notReady(cause error, loops []*supervisor.Loop) error {
	var b strings.Builder
	for _, l := range loops {
		st := l.State()
		if st.Ready {
			continue
		}
		fmt.Fprintf(&b, "\n  container %q: %s", l.Container().Name, st.Describe())
		if st.LastFail != "" {
			fmt.Fprintf(&b, "; %s", st.LastFail)
		}
		logPath := r.logPath(l.Container().Name, st.Restarts)
		if tail := readTail(logPath); tail != "" {
			fmt.Fprintf(&b, "; last log lines:\n%s", tail)
		}
	}
	return fmt.Errorf("not ready: %w%s", cause, b.String())
}

// waitCompletion waits for a Never/OnFailure pod's app containers to finish
// (their loops restart failures under OnFailure), then stops its sidecars,
// sandbox and network (killPod): a finished pod keeps its containers and directory
// for status and logs until `down`, and nothing of it keeps running.
func (r *podRun) waitCompletion(ctx context.Context) error {
	var apps []*supervisor.Loop
	for _, l := range r.w.Loops() {
		if l.Role() == supervisor.RoleApp {
			apps = append(apps, l)
		}
	}
	dctx, passed, cancel := r.untilDeadline(ctx) // deadline.go
	defer cancel()
	if err := r.w.WaitAll(dctx, apps, func(s supervisor.State) bool { return s.Done }); err != nil {
		if passed() {
			return r.failDeadline(ctx)
		}
		return r.notReady(err, apps)
	}
	return r.complete(ctx)
}

// complete ends a pod that has finished: its sidecars and sandbox end
// (killPod), nothing of it runs any more; its containers and directory
// stay for status and logs until `down`.
func (r *podRun) complete(ctx context.Context) error {
	if err := r.h.killPod(ctx, r.teardown(teardown{sandbox: true})); err != nil {
		return err
	}
	r.state.Complete = true
	return r.h.saveState(r.state)
}

// outcome is the phase of a pod whose pipeline has run, from what the node
// says: Failed when the node ended it (its deadline), Succeeded or Failed
// when it ran to completion (with its app containers' failures), else
// Running. A Failed pod's error is a *PodFailedError.
func (r *podRun) outcome() (corev1.PodPhase, error) {
	if r.state.Ended == nil && (r.wait == WaitRunning || !r.appsDone()) {
		return corev1.PodRunning, nil
	}
	return r.result()
}

// result is the phase of a pod that has ended: Failed when the node ended
// it, else Succeeded, or Failed with its app containers' failures.
func (r *podRun) result() (corev1.PodPhase, error) {
	key := r.pod.Key()
	if e := r.state.Ended; e != nil {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: e.Reason + ": " + e.Message}
	}
	var failures []string
	for _, l := range r.w.Loops() {
		if st := l.State(); l.Role() == supervisor.RoleApp && st.ExitCode != 0 {
			logPath := r.logPath(l.Container().Name, st.Restarts)
			failures = append(failures, (&ExitError{Container: l.Container().Name, Code: st.ExitCode, OOMKilled: st.OOMKilled, Tail: readTail(logPath)}).Error())
		}
	}
	if len(failures) > 0 {
		return corev1.PodFailed, &PodFailedError{Pod: key, Reason: strings.Join(failures, "; ")}
	}
	return corev1.PodSucceeded, nil
}

// teardown fills in what killPod needs to know of this pod.
func (r *podRun) teardown(t teardown) teardown {
	t.uid, t.pod, t.w = r.pod.UID, r.pod.Pod, r.w
	if t.grace == 0 {
		t.grace = podGrace(r.pod.Pod)
	}
	if r.state != nil {
		t.ips = r.state.PodIPs
	}
	return t
}

// undoContainer is the undo of a container step (the pause's too): every
// attempt of the container is stopped and removed.
func (r *podRun) undoContainer(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return r.h.killPod(ctx, r.teardown(teardown{only: name, remove: true}))
	}
}
