// The cluster the daemon joins as a node (daemon --kubeconfig): its client
// and the facts its node agent (kubenode) reports.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
)

// clusterClient is the client of the kubeconfig file (the node's
// credentials, system:node:NAME), checked before anything starts.
func clusterClient(file string) (kubenode.Client, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		return nil, usageError{fmt.Sprintf("daemon: --kubeconfig: %v", err)}
	}
	rc.UserAgent = "podrun/" + buildVersion().GitVersion
	// As the kubelet's heartbeat client: no call outlives an update period.
	rc.Timeout = kubenode.StatusUpdateFrequency
	cs, err := kubenode.NewClient(rc)
	if err != nil {
		return nil, usageError{fmt.Sprintf("daemon: --kubeconfig: %v", err)}
	}
	return cs, nil
}

// runtimeVersioner is containerd's version (ctrd.Engine's).
type runtimeVersioner interface {
	RuntimeVersion(ctx context.Context) (string, error)
}

// nodeAgent is this machine as a node of client's cluster: its facts from
// the host (admissionNode's name, labels and allocatable, its address,
// containerd's version), Ready while containerd
// answers. The node is tainted until the pods bound to it are run
// (kubenode.NotRunningPodsTaint).
func nodeAgent(cfg run.Config, h *run.Host, client kubenode.Client) (*kubenode.Agent, error) {
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
		// One InternalIP, the kubelet's without --node-ip: the address of
		// the default route's interface; else every address the pods see.
		var ips []string
		if ip, err := utilnet.ChooseHostInterface(); err == nil {
			ips = append(ips, ip.String())
		} else {
			for _, ip := range sandbox.HostIPs() {
				ips = append(ips, ip.String())
			}
		}
		return kubenode.Facts{
			Name: n.Name, Labels: n.Labels, Taints: []corev1.Taint{kubenode.NotRunningPodsTaint},
			Capacity: n.Allocatable, Allocatable: n.Allocatable,
			InternalIPs: ips, Hostname: n.Name, Port: kubenode.DefaultPort,
			Info: kubenode.SystemInfo(os.ReadFile, v, buildVersion().GitVersion),
		}, nil
	}
	health := func(ctx context.Context) kubenode.Health {
		if _, err := rt.RuntimeVersion(ctx); err != nil {
			return kubenode.Health{NotReady: fmt.Sprintf("container runtime is down: %v", err)}
		}
		return kubenode.Health{}
	}
	return &kubenode.Agent{Client: client, Clock: clock.RealClock{}, Log: slog.Default(), Facts: facts, Health: health}, nil
}
