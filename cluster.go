// The cluster the daemon joins as a node (daemon --kubeconfig): its client
// and the facts its node agent (kubenode) reports.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/kubenode/kept"
	"github.com/podrun/podrun/kubepods"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/mirror"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
)

// clusterClients are the clients of the kubeconfig file (the node's
// credentials, system:node:NAME), checked before anything starts: as the
// kubelet's, one for the heartbeats (no call outlives an update period)
// and one for the pods (watches, which a client timeout would cut).
// rc is the kubeconfig's configuration (its server and CA name the
// cluster of the kept state).
func clusterClients(file string) (heartbeat, pods kubenode.Client, rc *rest.Config, err error) {
	rc, err = clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		return nil, nil, nil, usageError{fmt.Sprintf("daemon: --kubeconfig: %v", err)}
	}
	rc.UserAgent = "podrun/" + buildVersion().GitVersion
	hc, pc := clientConfigs(rc)
	if pods, err = kubenode.NewClient(pc); err != nil {
		return nil, nil, nil, usageError{fmt.Sprintf("daemon: --kubeconfig: %v", err)}
	}
	if heartbeat, err = kubenode.NewClient(hc); err != nil {
		return nil, nil, nil, usageError{fmt.Sprintf("daemon: --kubeconfig: %v", err)}
	}
	return heartbeat, pods, rc, nil
}

// clientConfigs are the two client configurations of rc, as the kubelet's:
// the heartbeat's, with the status update period as its timeout, and the
// one of everything else (watches: no timeout), limited to kubenode.APIQPS
// requests a second, bursts of kubenode.APIBurst (the kubelet's
// --kube-api-qps/--kube-api-burst defaults; client-go's own, 5 and 10,
// paced 50 pods' status writes). The heartbeat's keeps client-go's limit
// (the kubelet's has none, but podrun's node API asks its reviews with it
// too). rc is not changed.
func clientConfigs(rc *rest.Config) (heartbeat, pods *rest.Config) {
	pods = rest.CopyConfig(rc)
	pods.QPS, pods.Burst = kubenode.APIQPS, kubenode.APIBurst
	heartbeat = rest.CopyConfig(rc)
	heartbeat.Timeout = kubenode.StatusUpdateFrequency
	return heartbeat, pods
}

// nodeIPs reads --node-ip (the kubelet's), its addresses checked against
// this host's now: each one of them, or loopback.
func nodeIPs(c *cli.Context) ([]net.IP, error) {
	ips, err := kubenode.ParseNodeIPs(c.String("node-ip"))
	if err != nil {
		return nil, usageError{fmt.Sprintf("daemon: --node-ip %q: %v", c.String("node-ip"), err)}
	}
	host := hostAddrs()
	for _, ip := range ips {
		if ip.IsUnspecified() {
			continue // the default route's of its family
		}
		if err := kubenode.CheckNodeIP(ip, host, true); err != nil {
			return nil, usageError{fmt.Sprintf("daemon: --node-ip %s: %v (an address of this host's interfaces, or loopback)", ip, err)}
		}
	}
	return ips, nil
}

// nodeLookupTimeout bounds the look-up of the node's name, so that a DNS
// server that does not answer does not hold the node's status back.
const nodeLookupTimeout = 2 * time.Second

// internalIPs are node's InternalIP addresses now, as the kubelet chooses
// them (kubenode.InternalIPs): nodeIPs (--node-ip) when given, else what
// node resolves to, else the default route's interface's address, else
// every address the pods see.
func internalIPs(ctx context.Context, nodeIPs []net.IP, node string) ([]net.IP, error) {
	return kubenode.InternalIPs(nodeIPs, node, kubenode.Host{
		Addrs: hostAddrs(),
		Lookup: func(name string) []net.IP {
			ctx, cancel := context.WithTimeout(ctx, nodeLookupTimeout)
			defer cancel()
			addrs, _ := net.DefaultResolver.LookupIPAddr(ctx, name) // none found: the default route's
			var ips []net.IP
			for _, a := range addrs {
				ips = append(ips, a.IP)
			}
			return ips
		},
		Default:  utilnet.ResolveBindAddress,
		Fallback: sandbox.HostIPs(),
	})
}

// podHostIPs are the host IPs of the pods of a node of a cluster
// (run.Deps.HostIPs: their status.hostIP, a hostNetwork pod's IPs, the
// downward API's status.hostIP), as the kubelet's getHostIPsAnyWay: those
// of the Node as its agent last read or sent it (kubenode.HostIPs of
// Agent.Node), else, before the agent has one (the API server away at
// start), those of the Node it registers (the kubelet's initialNode):
// local, internalIPs.
type podHostIPs struct {
	agent atomic.Pointer[kubenode.Agent] // set once the agent is made
	local func() ([]net.IP, error)
}

// newPodHostIPs are the pods' host IPs of the node cfg names, with
// --node-ip's nodeIPs, until ctx ends (it bounds the look-up of the
// node's name).
func newPodHostIPs(ctx context.Context, cfg run.Config, nodeIPs []net.IP) *podHostIPs {
	return &podHostIPs{local: func() ([]net.IP, error) {
		n, err := admissionNode(cfg)
		if err != nil {
			return nil, err
		}
		return internalIPs(ctx, nodeIPs, n.Name)
	}}
}

// get is run.Deps.HostIPs; none known is none (the kubelet then leaves a
// pod's hostIP unset).
func (p *podHostIPs) get() []net.IP {
	if a := p.agent.Load(); a != nil {
		if n := a.Node(); n != nil {
			if ips, err := kubenode.HostIPs(n); err == nil {
				return ips
			}
		}
	}
	ips, err := p.local()
	if err == nil {
		node := &corev1.Node{}
		for _, ip := range ips {
			node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
		if ips, err = kubenode.HostIPs(node); err == nil {
			return ips
		}
	}
	slog.Debug("the pods' host IPs are not known", "err", err)
	return nil
}

// hostAddrs are the addresses of this host's interfaces.
func hostAddrs() []net.IP {
	addrs, _ := net.InterfaceAddrs() // none: every --node-ip is refused
	var ips []net.IP
	for _, a := range addrs {
		switch v := a.(type) {
		case *net.IPNet:
			ips = append(ips, v.IP)
		case *net.IPAddr:
			ips = append(ips, v.IP)
		}
	}
	return ips
}

// runtimeVersioner is containerd's version (ctrd.Engine's).
type runtimeVersioner interface {
	RuntimeVersion(ctx context.Context) (string, error)
}

// nodeAgent is this machine as a node of client's cluster: its facts from
// the host (admissionNode's name, labels and allocatable, its address,
// containerd's version), Ready while containerd
// answers. It runs the pods bound to it (podSource), so it is not tainted
// (kubenode.NotRunningPodsTaint was, before). It reads its Node from a
// watch of watcher (a client that does not cut watches), sends with client
// (the heartbeat's). port is the node API's; nodeIPs are --node-ip's
// (internalIPs); explain is apiExplain's.
func nodeAgent(cfg run.Config, h *run.Host, client, watcher kubenode.Client, port int32, nodeIPs []net.IP, explain func(error) string) (*kubenode.Agent, error) {
	node, err := admissionNode(cfg)
	if err != nil {
		return nil, err
	}
	rt, ok := h.Engine().(runtimeVersioner)
	if !ok {
		return nil, fmt.Errorf("daemon: --kubeconfig: the engine %T has no runtime version", h.Engine())
	}
	facts := func(ctx context.Context) (kubenode.Facts, error) {
		n, err := admissionNode(cfg)
		if err != nil {
			return kubenode.Facts{}, err
		}
		v, _ := rt.RuntimeVersion(ctx) // a runtime that does not answer is the Ready condition's
		addrs, err := internalIPs(ctx, nodeIPs, n.Name)
		if err != nil {
			return kubenode.Facts{}, err
		}
		var ips []string
		for _, ip := range addrs {
			ips = append(ips, ip.String())
		}
		return kubenode.Facts{
			Name: n.Name, Labels: n.Labels,
			Capacity: n.Allocatable, Allocatable: n.Allocatable,
			InternalIPs: ips, Hostname: n.Name, Port: port,
			Info: kubenode.SystemInfo(os.ReadFile, v, buildVersion().GitVersion),
		}, nil
	}
	health := func(ctx context.Context) kubenode.Health {
		if _, err := rt.RuntimeVersion(ctx); err != nil {
			return kubenode.Health{NotReady: fmt.Sprintf("container runtime is down: %v", err)}
		}
		return kubenode.Health{}
	}
	return &kubenode.Agent{Client: client, Nodes: kubenode.NodeInformer(watcher, node.Name),
		Clock: clock.RealClock{}, Log: slog.Default(), Facts: facts, Health: health, Explain: explain}, nil
}

// apiExplain says what a call to the API server of kubeconfig file
// (whose configuration is rc) that failed means of the node's input: the
// file, its server, its CA, the node's client certificate
// (kubenode.Creds.Explain).
func apiExplain(file string, rc *rest.Config) func(error) string {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	creds, clk := kubenode.CredsOf(file, rc), clock.RealClock{}
	return func(err error) string { return creds.Explain(err, clk.Now()) }
}

// podSource is the pods client's cluster binds to this node, read with the
// daemon's admission (kubepods.Source, the daemon's third source), kept
// under the root (keptState), and the writer of their status; both run
// until ctx ends. rc is the kubeconfig's (the cluster kept pods are of);
// explain is apiExplain's.
func podSource(ctx context.Context, cfg run.Config, admit manifest.Options, h *run.Host, client kubenode.Client, rc *rest.Config, explain func(error) string) (*kubepods.Source, error) {
	n, err := admissionNode(cfg)
	if err != nil {
		return nil, err
	}
	src := kubepods.NewSource(client, n.Name, admit, clock.RealClock{}, slog.Default())
	src.Kept, src.KeptProblems = keptState(cfg, rc, n.Name)
	src.Explain = explain
	go src.Run(ctx)
	w := &kubepods.Writer{Client: client, Source: src, Node: h, Clock: clock.RealClock{}, Log: slog.Default()}
	go w.Run(ctx)
	if src.Kept != nil {
		go w.KeepFinished(ctx)
	}
	return src, nil
}

// mirrorKeeper keeps the mirror pods of the daemon's static pods on node in
// client's cluster until ctx ends, seeing the API's pods through src's
// informer (one watch of the node's pods). client is the pods client (no
// overall timeout, which would cut its watch every 10 s: the kubelet's
// kubeClient beside its heartbeat client).
func mirrorKeeper(ctx context.Context, client kubenode.Client, node string, src *kubepods.Source) (*mirror.Keeper, error) {
	k, err := mirror.NewKeeper(client, node, src.Informer(), clock.RealClock{}, slog.Default())
	if err != nil {
		return nil, err
	}
	go k.Run(ctx)
	return k, nil
}

// keptState is the node's kept copy of its API pods (kept.Dir under the
// root), of the cluster rc names for node. One that cannot be opened (a
// directory someone else than root may write) is a problem the daemon
// shows and logs, never a reason not to start: the node then keeps
// nothing, and its API pods run once the API server answers.
func keptState(cfg run.Config, rc *rest.Config, node string) (kubepods.Keeper, []string) {
	c, err := kept.ClusterOf(rc, node)
	var store *kept.Store
	if err == nil {
		store, err = kept.Open(kept.Options{Dir: kept.Dir(cfg.Root), Cluster: c, MaxPods: cfg.MaxPods, Clock: clock.RealClock{}})
	}
	if err != nil {
		msg := fmt.Sprintf("%v: the pods bound to this node are not kept on the device, and do not come back after a reboot until the API server answers", err)
		slog.Error(msg)
		return nil, []string{msg}
	}
	slog.Info("keeping the pods bound to the node", "dir", kept.Dir(cfg.Root), "cluster", c.String())
	return store, nil
}
