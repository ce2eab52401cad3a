package ctrd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/remotes"
	remotedocker "github.com/containerd/containerd/remotes/docker"
	remoteconfig "github.com/containerd/containerd/remotes/docker/config"
	remoteerrors "github.com/containerd/containerd/remotes/errors"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/pullnet"
	"github.com/podrun/podrun/registry"
)

// Pull fetches an image with containerd's docker resolver, answering the
// registry's challenges with o.Auth, and unpacks it. With o.Link, a
// request that reads nothing for the link's deadline is given up: a
// download goes on from where it stopped (containerd's fetcher asks for the
// rest), and a try that failed that way is made again at once when it read
// something: containerd's content store keeps what each try fetched (its
// ingests), and the next try asks the registry for the rest.
func (e *Engine) Pull(ctx context.Context, ref string, o engine.PullOptions) (engine.Image, error) {
	ctx = e.ns(ctx)
	ref, err := Normalize(ref)
	if err != nil {
		return engine.Image{}, err
	}
	var t *tracker
	if o.Progress != nil {
		t = &tracker{}
		stop := t.watch(ctx, e.client.ContentStore(), o.Progress)
		defer stop()
	}
	for try := 1; ; try++ {
		img, stalled, read, err := e.pullOnce(ctx, ref, o, t)
		if err == nil {
			return e.describe(ctx, img)
		}
		var deadline time.Duration
		if o.Link != nil {
			deadline = o.Link.Deadline()
		}
		if again, err := afterTry(err, stalled && ctx.Err() == nil, read, try, deadline); !again {
			return engine.Image{}, err
		}
	}
}

// afterTry decides what Pull does after try number try failed with err:
// try again at once when a request was given up for want of progress
// (stalled) after the try read something, up to stalledTries in a row;
// otherwise fail, a stall as a temporary failure (the back-off of up and the
// daemon tries again later, resuming too).
func afterTry(err error, stalled bool, read int64, try int, deadline time.Duration) (again bool, _ error) {
	switch {
	case !stalled:
		return false, classifyPull(err)
	case read == 0 || try >= stalledTries:
		return false, marked{fmt.Errorf("no progress for %v (--image-pull-progress-deadline), %d tries: %w", deadline, try, err), engine.ErrTemporary}
	}
	return true, nil
}

// stalledTries is how many tries in a row a pull makes while each stalls
// after reading something.
const stalledTries = 5

// pullOnce is one try of Pull, its blobs told to t when not nil; stalled
// says the link gave up a request of it for reading nothing for its
// deadline, read the bytes it read.
func (e *Engine) pullOnce(ctx context.Context, ref string, o engine.PullOptions, t *tracker) (img containerd.Image, stalled bool, read int64, err error) {
	wrap := func(rt http.RoundTripper) http.RoundTripper { return rt }
	if o.Link != nil {
		p := o.Link.Watch(ctx)
		wrap = p.Transport
		defer func() { stalled, read = p.Stop() }()
	}
	resolver := remotedocker.NewResolver(remotedocker.ResolverOptions{Hosts: registryHosts(ctx, o, wrap)})
	opts := []containerd.RemoteOpt{
		containerd.WithResolver(resolver),
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(snapshotter),
	}
	if t != nil {
		opts = append(opts, containerd.WithImageHandler(images.HandlerFunc(t.add)))
	}
	if o.Link != nil && o.Link.Capped() {
		// Under a cap, blobs one at a time: more at once go no faster, and
		// each connection's receive buffer (a quarter second of the rate)
		// fills at the link's speed when it opens, so that N layers at once
		// would take N of them over the cap; and a pull cut off leaves one
		// partial blob, not N.
		opts = append(opts, containerd.WithMaxConcurrentDownloads(1))
	}
	img, err = e.client.Pull(ctx, ref, opts...)
	return img, false, 0, err
}

// registryHosts configures each registry as containerd's CRI plugin does by
// default: HTTPS with verified certificates, Docker Hub at
// registry-1.docker.io, loopback registries over plain HTTP; hosts listed in
// o.Insecure are tried over HTTPS without verifying the certificate and
// then over plain HTTP, as Docker's insecure-registries.
//
// A registry with a host directory under o.HostsDirs is configured by it
// alone, with containerd's own reader of hosts.toml (mirrors, server,
// capabilities, TLS), as containerd and nerdctl configure it: a device set
// up for containerd pulls the same way with podrun.
//
// Every client's transport is wrapped with wrap (the link's counting, stall
// watch and rate).
func registryHosts(ctx context.Context, o engine.PullOptions, wrap func(http.RoundTripper) http.RoundTripper) remotedocker.RegistryHosts {
	configured := remoteconfig.ConfigureHosts(ctx, remoteconfig.HostOptions{
		HostDir: hostDir(o.HostsDirs),
		Credentials: func(h string) (string, string, error) {
			if o.Auth == nil {
				return "", "", nil
			}
			user, secret := o.Auth(h)
			return user, secret, nil
		},
		UpdateClient: func(c *http.Client) error {
			if c.Transport == nil {
				c.Transport = http.DefaultTransport.(*http.Transport).Clone()
			}
			if tr, ok := c.Transport.(*http.Transport); ok && o.Link != nil {
				tr.DialContext = o.Link.Dial(dialer(tr))
			}
			c.Transport = wrap(c.Transport)
			return nil
		},
	})
	return func(host string) ([]remotedocker.RegistryHost, error) {
		if dir, _ := hostDir(o.HostsDirs)(host); dir != "" {
			return configured(host)
		}
		transport := http.DefaultTransport.(*http.Transport).Clone()
		if o.Link != nil {
			transport.DialContext = o.Link.Dial(dialer(transport))
		}
		client := &http.Client{Transport: transport}
		authOpts := []remotedocker.AuthorizerOpt{remotedocker.WithAuthClient(client)}
		if o.Auth != nil {
			authOpts = append(authOpts, remotedocker.WithAuthCreds(func(h string) (string, string, error) {
				user, secret := o.Auth(h)
				return user, secret, nil
			}))
		}
		h := remotedocker.RegistryHost{
			Client:       client,
			Authorizer:   remotedocker.NewDockerAuthorizer(authOpts...),
			Host:         registry.APIHost(host),
			Scheme:       "https",
			Path:         "/v2",
			Capabilities: remotedocker.HostCapabilityPull | remotedocker.HostCapabilityResolve,
		}
		switch {
		case registry.IsLocalhost(host):
			h.Scheme = "http"
		case registry.IsInsecure(o.Insecure, host):
			transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user listed it with --insecure-registry
			client.Transport = remotedocker.NewHTTPFallback(transport)
		}
		client.Transport = wrap(client.Transport)
		return []remotedocker.RegistryHost{h}, nil
	}
}

// dialer is tr's dial function (net.Dialer's when it has none).
func dialer(tr *http.Transport) pullnet.Dialer {
	if tr.DialContext != nil {
		return tr.DialContext
	}
	return (&net.Dialer{}).DialContext
}

// hostDir finds a registry's host directory in the first of dirs that has
// one (containerd's layout: <dir>/<host>/, with _default as a fallback).
func hostDir(dirs []string) func(string) (string, error) {
	return func(host string) (string, error) {
		for _, root := range dirs {
			if dir, err := remoteconfig.HostDirFromRoot(root)(host); err == nil && dir != "" {
				return dir, nil
			}
		}
		return "", errdefs.ErrNotFound
	}
}

// classifyPull marks registry refusals for want of credentials with
// engine.ErrUnauthorized, and failures that may pass by themselves (no
// answer, a timeout, 429, 5xx) with engine.ErrTemporary, keeping
// containerd's message (which quotes the registry's status, e.g. "401
// Unauthorized").
func classifyPull(err error) error {
	var status remoteerrors.ErrUnexpectedStatus
	var netErr net.Error
	switch {
	case errors.Is(err, remotedocker.ErrInvalidAuthorization),
		errors.As(err, &status) && (status.StatusCode == http.StatusUnauthorized || status.StatusCode == http.StatusForbidden):
		return marked{err, engine.ErrUnauthorized}
	case errors.As(err, &status) && (status.StatusCode == http.StatusTooManyRequests || status.StatusCode >= 500),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &netErr) && netErr.Timeout():
		return marked{err, engine.ErrTemporary}
	}
	return mapErr(err)
}

// marked is an error that also matches kind with errors.Is, without
// changing its message.
type marked struct{ err, kind error }

func (m marked) Error() string   { return m.err.Error() }
func (m marked) Unwrap() []error { return []error{m.err, m.kind} }

// tracker follows the blobs of one pull, for progress.
type tracker struct {
	mu    sync.Mutex
	descs []ocispec.Descriptor
	seen  map[string]bool
}

func (t *tracker) add(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if !t.seen[desc.Digest.String()] {
		t.seen[desc.Digest.String()] = true
		t.descs = append(t.descs, desc)
	}
	return nil, nil
}

// shortDigest is the first 12 hex digits of d's digest, as docker shows layers.
func shortDigest(d ocispec.Descriptor) string {
	e := d.Digest.Encoded()
	return e[:min(12, len(e))]
}

// progressEvery is how often progress is reported.
const progressEvery = 200 * time.Millisecond

// watch reports the bytes fetched so far (blobs in the store, plus the
// offsets of ongoing downloads) every progressEvery, and once more when
// stop is called, so that even a quick pull reports its end.
func (t *tracker) watch(ctx context.Context, cs content.Store, report func(engine.PullProgress)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	complete := map[string]bool{} // digests known to be in the store
	measure := func(ctx context.Context) {
		active := map[string]int64{}
		if sts, err := cs.ListStatuses(ctx); err == nil {
			for _, st := range sts {
				active[st.Ref] = st.Offset
			}
		}
		t.mu.Lock()
		descs := append([]ocispec.Descriptor(nil), t.descs...)
		t.mu.Unlock()
		var p engine.PullProgress
		for _, d := range descs {
			p.Total += d.Size
			key := d.Digest.String()
			layer := images.IsLayerType(d.MediaType)
			if layer {
				p.Layers++
			}
			off, fetching := active[remotes.MakeRefKey(ctx, d)]
			if !complete[key] && !fetching {
				if _, err := cs.Info(ctx, d.Digest); err == nil {
					complete[key] = true
				}
			}
			switch {
			case complete[key]:
				p.Done += d.Size
				if layer {
					p.LayersDone++
				}
			case fetching:
				p.Done += off
				if layer && p.Layer == "" {
					p.Layer = shortDigest(d)
				}
			}
		}
		if p.Total > 0 {
			report(p)
		}
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				measure(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-finished
		last, cancelLast := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancelLast()
		measure(last)
	}
}
