package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/sandbox"
)

// Host is podrun on this machine: the runtime, the network and the state dir.
type Host struct {
	cfg        Config
	engine     engine.Engine
	network    *sandbox.Network
	report     Reporter
	closer     func() error
	exits      *exitRouter
	clock      probes.Clock
	closeExits context.CancelFunc // ends the exit router, which starts with the first supervised container

	observeProbe func(probes.Kind, probes.Outcome, time.Duration)

	mu      sync.Mutex
	workers map[string]*podWorker // by pod UID: the pods this process supervises
	pulls   pullBackoffs          // image back-offs of the pods started with UpOptions.PullBackOff

	said sync.Map // notes about the host already reported (sayOnce, network.go)
}

// dialTimeout bounds connecting to containerd.
const dialTimeout = 3 * time.Second

// Open connects to containerd (starting podrun's private one when allowed
// and nothing answers at cfg.Address). Errors wrap engine.ErrUnavailable.
func Open(ctx context.Context, cfg Config, report Reporter) (*Host, error) {
	// The state root holds the daemon's status and the pods' state: root's
	// alone (0700), whatever an earlier podrun or a umask made it.
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	p := ctrd.Private{Root: filepath.Join(cfg.Root, "containerd"), RunDir: cfg.RunDir}
	addr, start, err := chooseRuntime(ctx, cfg, p.Address(), runtimeProbe{})
	if err != nil {
		return nil, err
	}
	if start {
		var started bool
		if addr, started, err = p.Ensure(ctx); err != nil {
			return nil, err
		}
		if started {
			report(Event{Msg: fmt.Sprintf("started podrun's private containerd at %s", addr)})
		}
	}
	e, err := ctrd.Connect(ctx, ctrd.Options{Address: addr, Namespace: cfg.Namespace, Logger: cfg.Exe, LogRotation: cfg.LogRotation, Timeout: dialTimeout})
	if err != nil {
		return nil, err
	}
	return NewHost(cfg, e, report, e.Close), nil
}

// NewHost builds a Host on an existing engine (tests use a fake one).
func NewHost(cfg Config, e engine.Engine, report Reporter, closer func() error) *Host {
	if report == nil {
		report = func(Event) {}
	}
	h := &Host{
		cfg:     cfg,
		engine:  e,
		network: sandbox.NewNetwork(cfg.CNIConfDir, cfg.CNIBinDirs, filepath.Join(cfg.Root, "cni")),
		report:  report,
		closer:  closer,
		clock:   probes.RealClock{},
		workers: map[string]*podWorker{},
	}
	var ctx context.Context
	ctx, h.closeExits = context.WithCancel(context.Background())
	h.exits = newExitRouter(ctx, e)
	return h
}

// ObserveProbes has every probe attempt reported to fn (for metrics). Call
// it before starting or adopting pods.
func (h *Host) ObserveProbes(fn func(kind probes.Kind, o probes.Outcome, took time.Duration)) {
	h.observeProbe = fn
}

// Engine exposes the runtime for image commands.
func (h *Host) Engine() engine.Engine { return h.engine }

// Close releases the runtime connection.
func (h *Host) Close() error {
	h.StopSupervising()
	h.closeExits()
	if h.closer == nil {
		return nil
	}
	return h.closer()
}

// prober tells whether a socket exists and whether a containerd answers
// on it within a time.
type prober interface {
	Exists(addr string) bool
	Answers(ctx context.Context, addr string, timeout time.Duration) bool
}

type runtimeProbe struct{}

func (runtimeProbe) Exists(addr string) bool {
	st, err := os.Stat(addr)
	return err == nil && st.Mode().Type() == os.ModeSocket
}

func (runtimeProbe) Answers(ctx context.Context, addr string, timeout time.Duration) bool {
	return ctrd.Answers(ctx, addr, timeout)
}

// busyRuntimeWait is how long a containerd whose socket exists is given to
// answer (a busy one at boot, or under load) before podrun gives up on it.
const busyRuntimeWait = 10 * time.Second

// chooseRuntime decides which containerd to use: the configured one when
// it answers; when its socket exists, it is waited for (busyRuntimeWait)
// and never replaced by the private one, so that pods are never split
// across two runtimes; otherwise podrun's private one, which only
// commands that create pods (cfg.StartPrivate) may start (start true).
func chooseRuntime(ctx context.Context, cfg Config, private string, p prober) (addr string, start bool, err error) {
	if !cfg.AutoStart || p.Answers(ctx, cfg.Address, time.Second) {
		return cfg.Address, false, nil // an explicit --address is used as it is
	}
	if p.Exists(cfg.Address) {
		deadline := time.Now().Add(busyRuntimeWait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if p.Answers(ctx, cfg.Address, 2*time.Second) {
				return cfg.Address, false, nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
		return "", false, fmt.Errorf("%w: containerd at %s does not answer", engine.ErrUnavailable, cfg.Address)
	}
	if p.Answers(ctx, private, 2*time.Second) {
		return private, false, nil
	}
	if !cfg.StartPrivate {
		return "", false, fmt.Errorf("%w: no containerd runs (at %s, or podrun's private one: `podrun up` or `podrun daemon` starts it)", engine.ErrUnavailable, cfg.Address)
	}
	return private, true, nil
}
