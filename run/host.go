package run

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/eviction"
	"github.com/podrun/podrun/history"
	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/supervisor"
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
	clock      probes.Clock
	hostIPs    func() []net.IP    // the node's addresses, cached (cacheHostIPs)
	closeExits context.CancelFunc // ends the exit router, which starts with the first supervised container

	observeProbe func(probes.Kind, probes.Outcome, time.Duration)

	mu      sync.Mutex
	workers map[string]*podRun // by pod UID: the pods this process supervises
	images  *images.Manager
	history *history.Store // the versions of the pods that became Ready (history.go)

	said sync.Map // notes about the host already reported (sayOnce, network.go)
}

// NewHost builds a Host on the implementations in d.
func NewHost(cfg Config, d Deps, report Reporter, closer func() error) *Host {
	if report == nil {
		report = func(Event) {}
	}
	if d.Clock == nil {
		d.Clock = probes.RealClock{}
	}
	if d.Node == nil {
		d.Node = func() resources.Node { return resources.Node{} }
	}
	if d.HostIPs == nil {
		d.HostIPs = sandbox.HostIPs
	}
	if d.Locks == nil {
		d.Locks = &localLocks{} // this process only
	}
	if d.ImageHolds == nil {
		d.ImageHolds = &imagegc.LocalHolds{} // this process only
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
		hostIPs:    cacheHostIPs(d.HostIPs, d.Clock.Now),
		workers:    map[string]*podRun{},
		history:    newHistory(cfg.Root),
	}
	h.images = images.New(d.Engine, cfg.Images, d.Clock.Now)
	var ctx context.Context
	ctx, h.closeExits = context.WithCancel(context.Background())
	h.exits = supervisor.NewExits(ctx, d.Engine)
	return h
}

// hostIPsTTL is how long the node's addresses are reused: the kubelet
// reports a pod's hostIP(s) (and a hostNetwork pod's IPs) from its node
// object's addresses, refreshed every 10 s (nodeStatusUpdateFrequency). A
// lookup dumps every link of the host, a veth per pod among them, and a
// daemon's resync lists each of its pods.
const hostIPsTTL = 10 * time.Second

// cacheHostIPs is lookup, called at most once per hostIPsTTL of now.
func cacheHostIPs(lookup func() []net.IP, now func() time.Time) func() []net.IP {
	var mu sync.Mutex
	var at time.Time
	var ips []net.IP
	return func() []net.IP {
		mu.Lock()
		defer mu.Unlock()
		if t := now(); at.IsZero() || t.Sub(at) >= hostIPsTTL || t.Before(at) {
			ips, at = lookup(), t
		}
		return slices.Clone(ips)
	}
}

// ObserveProbes has every probe attempt reported to fn (for metrics). Call
// it before starting or adopting pods.
func (h *Host) ObserveProbes(fn func(kind probes.Kind, o probes.Outcome, took time.Duration)) {
	h.observeProbe = fn
}

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
