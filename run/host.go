// The Host (podrun on this machine: its runtime, network and state dir,
// reached through the seams of seams.go) and the podRun (one pod's pipeline
// on it, and what its steps learn), the two receivers of this package, with
// the registry of the pods this process supervises.

package run

import (
	"context"
	"net"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

// Host is podrun on this machine: the runtime, the network and the state dir.
type Host struct {
	cfg        Config
	engine     engine.Engine
	network    Network
	netns      NetNS
	pins       Pins
	cgroups    Cgroups
	disk       Disk
	locks      Locks
	imageHolds ImageHolds
	podLocks   podLocks
	node       func() resources.Node
	admitTo    func() (admission.Node, error)
	report     Reporter
	closer     func() error
	exits      *supervisor.Exits
	evictions  *eviction.Manager // ends the supervised pods that fail on the node (end.go)
	clock      clock.Clock
	hostIPs    func() []net.IP    // the node's addresses, cached (sandbox.CacheHostIPs)
	closeExits context.CancelFunc // ends the exit router, which starts with the first supervised container

	observeProbe func(probes.Kind, probes.Outcome, time.Duration)
	hostFile     func(path string) ([]byte, error) // reads the host's /etc/hosts and resolv.conf (Deps.HostFile)

	mu       sync.Mutex
	workers  map[string]*podRun // by pod UID: the pods this process supervises
	images   *images.Manager
	versions Versions // the versions of the pods that became Ready (seams.go)

	said sync.Map // notes about the host already reported (sayOnce, dns.go)
}

// NewHost builds a Host on the implementations in d.
func NewHost(cfg Config, d Deps, report Reporter, closer func() error) *Host {
	if report == nil {
		report = func(Event) {}
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Node == nil {
		d.Node = func() resources.Node { return resources.Node{} }
	}
	if d.HostIPs == nil {
		d.HostIPs = sandbox.HostIPs
	}
	if d.HostFile == nil {
		d.HostFile = os.ReadFile
	}
	if d.Locks == nil {
		d.Locks = &localLocks{} // this process only
	}
	if d.ImageHolds == nil {
		d.ImageHolds = &imagegc.LocalHolds{} // this process only
	}
	if d.Versions == nil {
		d.Versions = noVersions{}
	}
	h := &Host{
		cfg:        cfg,
		engine:     d.Engine,
		network:    d.Network,
		netns:      d.NetNS,
		pins:       d.Pins,
		cgroups:    d.Cgroups,
		disk:       d.Disk,
		locks:      d.Locks,
		imageHolds: d.ImageHolds,
		podLocks:   podLocks{owners: map[string]*owners{}, held: map[string]*heldLock{}},
		node:       d.Node,
		admitTo:    d.Admission,
		report:     report,
		closer:     closer,
		clock:      d.Clock,
		evictions:  eviction.NewManager(d.Clock),
		hostIPs:    sandbox.CacheHostIPs(d.HostIPs, d.Clock.Now),
		hostFile:   d.HostFile,
		workers:    map[string]*podRun{},
		versions:   d.Versions,
	}
	h.images = images.New(d.Engine, cfg.Images, d.Clock.Now)
	var ctx context.Context
	ctx, h.closeExits = context.WithCancel(context.Background())
	h.exits = supervisor.NewExits(ctx, d.Engine)
	return h
}

// ObserveProbes has every probe attempt reported to fn (for metrics). Call
// it before starting or adopting pods.
func (h *Host) ObserveProbes(fn func(kind probes.Kind, o probes.Outcome, took time.Duration)) {
	h.observeProbe = fn
}

// Report tells the host's Reporter what happened outside a pod's steps
// (the Job and CronJob controllers).
func (h *Host) Report(e Event) { h.report(e) }

// Engine exposes the runtime for image commands.
func (h *Host) Engine() engine.Engine { return h.engine }

// ImageCollector removes the node's unused images (imagegc), never one a
// container uses or a pod being made holds (holdImages).
func (h *Host) ImageCollector() *imagegc.Collector {
	return imagegc.NewCollector(h.engine, h.imageHolds, h.clock)
}

// Images is the image manager (pulls, imports, their back-offs).
func (h *Host) Images() *images.Manager { return h.images }

// Close releases the runtime connection.
func (h *Host) Close() error {
	h.StopSupervising()
	h.closeExits()
	if h.closer == nil {
		return nil
	}
	return h.closer()
}

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
	// retryStarts: a container that could not start is left to its
	// restarts (UpOptions.RetryStartErrors).
	retryStarts bool
	// minReady: waitReady waits until the pod has stayed Ready this long
	// (a changed pod that may be rolled back: readySettle).
	minReady time.Duration
}

func (r *podRun) hostNetwork() bool { return r.pod.Spec.HostNetwork }

// unsupervise stops supervising a pod (not its containers).
func (h *Host) unsupervise(uid string) {
	h.mu.Lock()
	r := h.workers[uid]
	delete(h.workers, uid)
	h.mu.Unlock()
	if r != nil {
		r.w.Stop()
	}
}

// Supervised reports whether this process supervises the pod.
func (h *Host) Supervised(uid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.workers[uid] != nil
}

// supervisedUIDs lists the pods this process supervises.
func (h *Host) supervisedUIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var uids []string
	for uid := range h.workers {
		uids = append(uids, uid)
	}
	return uids
}

func (h *Host) supervisedPods() []*podRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	pods := make([]*podRun, 0, len(h.workers))
	for _, r := range h.workers {
		pods = append(pods, r)
	}
	return pods
}

// StopSupervising ends supervision without touching the containers.
func (h *Host) StopSupervising() {
	for _, uid := range h.supervisedUIDs() {
		h.unsupervise(uid)
	}
}
