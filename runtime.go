package main

// The composition root: which containerd podrun talks to (starting its
// private one when allowed), and the real implementations of run's seams.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/cgroup"
	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/lock"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/volumes"
)

// dialTimeout bounds connecting to containerd.
const dialTimeout = 3 * time.Second

// openRuntime connects to containerd (starting podrun's private one when allowed
// and nothing answers at cfg.Address). hostIPs are the pods' host IPs
// (run.Deps.HostIPs; nil: the host's). Errors wrap engine.ErrUnavailable.
func openRuntime(ctx context.Context, cfg run.Config, report run.Reporter, hostIPs func() []net.IP) (*run.Host, error) {
	// The state root holds the daemon's status and the pods' state: root's
	// alone (0700), whatever an earlier podrun or a umask made it.
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	// Pod directories a killed podrun was removing (renamed first, so no
	// record is ever left without its data or the other way round).
	if err := volumes.SweepRemoved(cfg.Root, run.StateFile); err != nil {
		report(run.Event{Msg: fmt.Sprintf("removing what a cut-off pod removal left: %v", err)})
	}
	p := ctrd.Private{Root: filepath.Join(cfg.Root, "containerd"), RunDir: cfg.RunDir}
	addr, start, err := chooseRuntime(ctx, cfg, p.Address(), runtimeProbe{})
	if err != nil {
		return nil, err
	}
	if start {
		// One starter per state dir: whoever gets the lock looks again
		// (Ensure) and starts it only if nothing answers; the others wait
		// for the lock, then find it running.
		l, err := lock.Acquire(ctx, filepath.Join(cfg.Root, "locks", "containerd.lock"), func(pid int) {
			report(run.Event{Msg: fmt.Sprintf("waiting for podrun (pid %d), which is starting the private containerd", pid)})
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
		}
		defer l.Release()
		var started bool
		if addr, started, err = p.Ensure(ctx); err != nil {
			return nil, err
		}
		if started {
			report(run.Event{Msg: fmt.Sprintf("started podrun's private containerd at %s", addr)})
		}
	}
	images := lock.Images{Dir: filepath.Join(cfg.Root, "locks"), Waiting: func(what string, pid int) {
		report(run.Event{Msg: fmt.Sprintf("waiting for podrun (pid %d), which is %s", pid, what)})
	}}
	e, err := ctrd.Connect(ctx, ctrd.Options{Address: addr, Namespace: cfg.Namespace, Exe: cfg.Exe, LogRotation: cfg.LogRotation, IODir: ioDir(cfg), Timeout: dialTimeout,
		ImportLock: images.Import})
	if err != nil {
		return nil, err
	}
	d := run.Deps{
		Engine:     e,
		Network:    sandbox.NewNetwork(cfg.CNIConfDir, cfg.CNIBinDirs, filepath.Join(cfg.Root, "cni")),
		NetNS:      sandbox.Namespaces{},
		Pins:       sandbox.Pinner{},
		Cgroups:    cgroup.Manager{},
		Disk:       volumes.Disk{},
		Locks:      lock.Pods{Dir: filepath.Join(cfg.Root, "locks", "pods")},
		ImageHolds: images,
		Node:       cgroup.Node,                                                          // read once, when a pod first needs it
		Admission:  onceOK(func() (admission.Node, error) { return admissionNode(cfg) }), // read when a pod is first admitted
		Versions:   rollout.Open(cfg.Root),                                               // the versions that became Ready, for rollout and rollback
		HostIPs:    hostIPs,
	}
	return run.NewHost(cfg, d, report, e.Close), nil
}

// onceOK returns fn's first successful result from then on (the machine's
// capacity, like the kubelet's, is read once); a failure is tried again.
func onceOK[T any](fn func() (T, error)) func() (T, error) {
	var mu sync.Mutex
	var got *T
	return func() (T, error) {
		mu.Lock()
		defer mu.Unlock()
		if got != nil {
			return *got, nil
		}
		v, err := fn()
		if err == nil {
			got = &v
		}
		return v, err
	}
}

// admissionNode is this machine as the kubelet admits pods to it: its name,
// the well-known labels and --node-labels, and its allocatable (cpu,
// memory, the state directory's filesystem, huge pages, --max-pods pods).
func admissionNode(cfg run.Config) (admission.Node, error) {
	name, err := downward.NodeName()
	if err != nil {
		return admission.Node{}, err
	}
	alloc, err := downward.NodeAllocatable(cfg.Root)
	if err != nil {
		return admission.Node{}, err
	}
	maps.Copy(alloc, downward.Hugepages())
	alloc[corev1.ResourcePods] = *resource.NewQuantity(int64(cfg.MaxPods), resource.DecimalSI)
	labels := admission.WellKnownLabels(name)
	maps.Copy(labels, cfg.NodeLabels)
	return admission.Node{Name: name, Labels: labels, Allocatable: alloc}, nil
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
func chooseRuntime(ctx context.Context, cfg run.Config, private string, p prober) (addr string, start bool, err error) {
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

// ioDir holds the stream keeper's socket and a directory per container
// with the FIFOs of its streams (keeper package): root's only, under the
// run directory (they do not outlive a reboot).
func ioDir(cfg run.Config) string { return filepath.Join(cfg.RunDir, "io") }
