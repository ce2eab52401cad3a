// The opening every command that acts on the node shares: the config of
// the flags, the host opened on it, who owns the node's pods, the pod or
// container the arguments name, and the host closed again.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/owner"
	"github.com/podrun/podrun/run"
)

// withHost opens the host (the config of c's flags, the runtime) on ctx,
// runs fn on it and closes it.
func withHost(ctx context.Context, c *cli.Context, fn func(h *run.Host) error) error {
	h, err := openHost(ctx, c)
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h)
}

// withPod opens the host, finds the pod named by the command's first
// argument, runs fn on them and closes the host.
func withPod(c *cli.Context, fn func(h *run.Host, p *run.PodInfo) error) error {
	h, p, err := onePod(c)
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h, p)
}

// withContainer is withPod with the container -c names (defaulted, saying
// so on stderr, as kubectl).
func withContainer(c *cli.Context, fn func(h *run.Host, p *run.PodInfo, name string) error) error {
	h, p, name, err := podContainer(c)
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h, p, name)
}

func openHost(ctx context.Context, c *cli.Context) (*run.Host, error) {
	return openHostIPs(ctx, c, nil)
}

// openHostIPs is openHost with hostIPs as the pods' host IPs (a node of a
// cluster's: podHostIPs); nil: the host's (sandbox.HostIPs).
func openHostIPs(ctx context.Context, c *cli.Context, hostIPs func() []net.IP) (*run.Host, error) {
	cfg, err := config(c)
	if err != nil {
		return nil, err
	}
	return openRuntime(ctx, cfg, progress(), hostIPs)
}

// openOwner opens who owns the pods of the host's state directory (c's
// --root): the podrun daemon running on it, or this command. Commands ask
// it, once the host is open, rather than the daemon's files or pid.
func openOwner(c *cli.Context) *owner.Owner { return owner.Open(c.String("root")) }

// openHostRetrying connects like openHostIPs, but waits for the runtime
// with back-off (a daemon may start before containerd).
func openHostRetrying(ctx context.Context, c *cli.Context, hostIPs func() []net.IP) (*run.Host, error) {
	delay := time.Second
	for {
		h, err := openHostIPs(ctx, c, hostIPs)
		if !errors.Is(err, engine.ErrUnavailable) {
			return h, err
		}
		slog.Error("container runtime unavailable; retrying", "in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// onePod opens the host and finds the pod named by the command's first
// argument; the caller closes the host.
func onePod(c *cli.Context) (*run.Host, *run.PodInfo, error) {
	if c.NArg() < 1 {
		return nil, nil, usageError{fmt.Sprintf("%s: name a POD (NAME or NAMESPACE/NAME)", c.Command.Name)}
	}
	h, err := openHost(c.Context, c)
	if err != nil {
		return nil, nil, err
	}
	target, err := podTarget(c, c.Args().First())
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	p, err := h.Pod(c.Context, target)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, p, nil
}

// podContainer opens the host, finds the pod named by the first argument
// and resolves -c, saying on stderr which container was defaulted. The
// caller closes the host.
func podContainer(c *cli.Context) (*run.Host, *run.PodInfo, string, error) {
	h, p, err := onePod(c)
	if err != nil {
		return nil, nil, "", err
	}
	name, defaulted, err := p.ContainerName(c.String("container"))
	if err != nil {
		h.Close()
		return nil, nil, "", usageError{err.Error()}
	}
	if defaulted {
		fmt.Fprintf(os.Stderr, "Defaulted container %q (use -c to choose another)\n", name)
	}
	return h, p, name, nil
}
