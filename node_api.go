// The node's API (daemon --kubeconfig): the kubelet's paths on the port
// the Node advertises, for kubectl logs/exec/attach/port-forward through
// the API server.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v2"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/nodeapi"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
)

// nodeAPIFlags are the kubelet's flags for its API server.
func nodeAPIFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "node-api-address", Value: "0.0.0.0", EnvVars: []string{"PODRUN_NODE_API_ADDRESS"}, Usage: "with --kubeconfig: the address the node API (the kubelet's logs, exec, attach, port-forward paths; the kubelet's --address) listens on"},
		&cli.IntFlag{Name: "node-api-port", Value: kubenode.DefaultPort, EnvVars: []string{"PODRUN_NODE_API_PORT"}, Usage: "with --kubeconfig: the node API's port, advertised in the Node's daemonEndpoints (the kubelet's --port)"},
		&cli.StringFlag{Name: "client-ca-file", EnvVars: []string{"PODRUN_CLIENT_CA_FILE"}, Usage: "with --kubeconfig: accept the node API's clients with a certificate of these CAs (the API server's kubelet client certificate: the cluster's CA); without it only bearer tokens (TokenReview) are"},
		&cli.StringFlag{Name: "tls-cert-file", EnvVars: []string{"PODRUN_TLS_CERT_FILE"}, Usage: "with --kubeconfig: the node API's serving certificate (default: a self-signed one, made once under <root>/pki)"},
		&cli.StringFlag{Name: "tls-private-key-file", EnvVars: []string{"PODRUN_TLS_PRIVATE_KEY_FILE"}, Usage: "with --kubeconfig: the key of --tls-cert-file"},
	}
}

// nodeAPIPort is the node API's port (--node-api-port), checked.
func nodeAPIPort(c *cli.Context) (int32, error) {
	p := c.Int("node-api-port")
	if p < 1 || p > 65535 {
		return 0, usageError{fmt.Sprintf("daemon: --node-api-port %d is not a port", p)}
	}
	return int32(p), nil
}

// serveNodeAPI starts the node API of h's pods for client's cluster: its
// listener opened now (an error stops the daemon, as the kubelet), served
// until ctx ends. nodeIPs are --node-ip's.
func serveNodeAPI(ctx context.Context, c *cli.Context, cfg run.Config, h *run.Host, client kubenode.Client, nodeIPs []net.IP) error {
	n, err := admissionNode(cfg)
	if err != nil {
		return err
	}
	port, err := nodeAPIPort(c)
	if err != nil {
		return err
	}
	cas, err := nodeapi.ClientCAs(c.String("client-ca-file"))
	if err != nil {
		return usageError{fmt.Sprintf("daemon: --client-ca-file: %v", err)}
	}
	if cas == nil {
		slog.Warn("node API: no --client-ca-file: the API server's client certificate is refused (kubectl logs, exec, attach, port-forward fail); only bearer tokens are accepted")
	}
	ips, err := internalIPs(ctx, nodeIPs, n.Name) // the self-signed certificate's (made once)
	if err != nil {
		return err
	}
	cert, err := nodeapi.ServingCertificate(c.String("tls-cert-file"), c.String("tls-private-key-file"), filepath.Join(c.String("root"), "pki"), n.Name, ips)
	if err != nil {
		return usageError{fmt.Sprintf("daemon: %v", err)}
	}
	addr := net.JoinHostPort(c.String("node-api-address"), strconv.Itoa(int(port)))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("daemon: node API: %w", err)
	}
	clk := clock.RealClock{}
	s := nodeapi.New(nodeapi.Config{
		Pods: h, Engine: h.Engine(),
		Attach: func(ctx context.Context, id string, o attach.Options) error {
			return attach.Attach(ctx, filepath.Join(ioDir(cfg), id), o)
		},
		Dial:          dialPod,
		Authenticator: nodeapi.NewAuthenticator(cas, client.AuthenticationV1().TokenReviews(), clk),
		Authorizer:    nodeapi.NewAuthorizer(n.Name, client.AuthorizationV1().SubjectAccessReviews(), clk),
		Clock:         clk,
		Log:           slog.Default(),
	})
	go func() {
		if err := s.Serve(ctx, l, nodeapi.TLSConfig(cert, cas)); err != nil {
			slog.Error("node API stopped", "err", err)
		}
	}()
	slog.Info("node API listening", "address", l.Addr().String())
	return nil
}

// dialPod connects to localhost:port inside pod's network namespace (the
// host's for a hostNetwork pod), IPv4 first, as containerd's CRI
// port-forward: a port the pod's process bound to its loopback is
// reached too.
func dialPod(ctx context.Context, p *run.PodInfo, port int32) (net.Conn, error) {
	dial := func(network, addr string) (net.Conn, error) {
		if p.Pod != nil && p.Pod.Spec.HostNetwork {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		return sandbox.DialInNetNS(ctx, sandbox.NetNSPath(sandbox.NetNSName(p.UID)), network, addr)
	}
	p4 := strconv.Itoa(int(port))
	conn, err := dial("tcp4", net.JoinHostPort("127.0.0.1", p4))
	if err == nil {
		return conn, nil
	}
	if conn, err6 := dial("tcp6", net.JoinHostPort("::1", p4)); err6 == nil {
		return conn, nil
	}
	return nil, err
}
