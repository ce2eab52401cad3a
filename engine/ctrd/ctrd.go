// Package ctrd implements engine.Engine on containerd's Go client. It is the
// only package that imports the containerd client.
package ctrd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/log"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/keeper"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/spec"
)

const (
	snapshotter = containerd.DefaultSnapshotter
	runtimeName = "io.containerd.runc.v2"
)

// SetLogging routes the containerd client's own log lines ("trying next
// host" ...) to stderr at debug level with debug, and nowhere otherwise:
// podrun prints its own lines only.
func SetLogging(debug bool) {
	if !debug {
		log.L.Logger.SetOutput(io.Discard)
		return
	}
	log.L.Logger.SetOutput(os.Stderr)
	_ = log.SetLevel("debug")
}

// Engine is engine.Engine on a containerd client.
type Engine struct {
	client     *containerd.Client
	namespace  string
	rotation   logs.Rotation
	streams    *keeper.Client // the node's stream keeper: every container's log, stdin and attach
	address    string         // containerd's, for the stream keeper (stdinOnce)
	importLock func(ctx context.Context) (unlock func(), err error)

	rootMu      sync.Mutex
	rootKnown   bool
	runtimeRoot string // taskRoot
}

// Options configure Connect.
type Options struct {
	Address   string
	Namespace string
	// Exe is the absolute path of podrun's own binary, run as the node's
	// stream keeper (`Exe cri-io`), which writes the containers' CRI-format
	// logs, rotated per LogRotation.
	Exe         string
	LogRotation logs.Rotation
	// IODir holds a directory per container: the FIFOs of its streams, and
	// the attach socket of one with stdin or a terminal (keeper package).
	IODir   string
	Timeout time.Duration // dial and health-check timeout
	// ImportLock, when set, is held around each Import: containerd's
	// import creates an image record after finding none, so two at once of
	// the same archive would race to create it.
	ImportLock func(ctx context.Context) (unlock func(), err error)
}

// Connect dials containerd and checks that it answers. Errors wrap
// engine.ErrUnavailable.
func Connect(ctx context.Context, o Options) (*Engine, error) {
	client, err := containerd.New(o.Address,
		containerd.WithDefaultNamespace(o.Namespace),
		containerd.WithTimeout(o.Timeout))
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to containerd at %q: %w", engine.ErrUnavailable, o.Address, err)
	}
	vctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if _, err := client.Version(vctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("%w: containerd at %q does not answer: %w", engine.ErrUnavailable, o.Address, err)
	}
	return &Engine{client: client, namespace: o.Namespace, rotation: o.LogRotation, streams: &keeper.Client{Dir: o.IODir, Exe: o.Exe, Cgroup: spec.KeeperCgroup(o.Namespace)},
		address: o.Address, importLock: o.ImportLock}, nil
}

// Close releases the client connection.
func (e *Engine) Close() error { return e.client.Close() }

func (e *Engine) ns(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, e.namespace)
}

// mapErr turns containerd's not-found errors into engine.ErrNotFound.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	}
	return err
}

var _ engine.Engine = (*Engine)(nil)
