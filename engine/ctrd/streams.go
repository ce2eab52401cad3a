package ctrd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/logs"
)

// streamsKey is the engine's own label on a container with stdin or a
// terminal: "stdin", "stdin-once", "tty", comma-separated.
const streamsKey = "io.podrun.engine.streams"

func streamsLabel(c engine.ContainerSpec) string {
	var v []string
	if c.Stdin {
		v = append(v, "stdin")
		if c.StdinOnce {
			v = append(v, "stdin-once")
		}
	}
	if c.Spec != nil && c.Spec.Process != nil && c.Spec.Process.Terminal {
		v = append(v, "tty")
	}
	return strings.Join(v, ",")
}

// keeperDir is the directory of container id's stream keeper: its FIFOs
// and its attach socket.
func (e *Engine) keeperDir(id string) string { return filepath.Join(e.ioDir, id) }

// startKeeper starts the stream keeper of container id (attach package)
// and returns the task's I/O: the keeper's FIFOs, as containerd's CRI sets
// them up for a container with stdin or a terminal.
func (e *Engine) startKeeper(id, streams, logPath string) (*attach.Keeper, cio.Creator, error) {
	set := strings.Split(streams, ",")
	has := func(s string) bool { return slices.Contains(set, s) }
	dir := e.keeperDir(id)
	if err := os.RemoveAll(dir); err != nil { // a killed keeper's
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	cfg := attach.Config{Dir: dir, Log: logs.DriverArg(logPath, e.rotation),
		Stdin: has("stdin"), StdinOnce: has("stdin-once"), TTY: has("tty"),
		Address: e.address, Namespace: e.namespace, ID: id}
	k, err := attach.Start(e.logger, cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("container %q: %w", id, err)
	}
	ioc := cio.Config{Terminal: cfg.TTY, Stdout: filepath.Join(dir, attach.StdoutFile)}
	if cfg.Stdin {
		ioc.Stdin = filepath.Join(dir, attach.StdinFile)
	}
	if !cfg.TTY {
		ioc.Stderr = filepath.Join(dir, attach.StderrFile)
	}
	return k, func(string) (cio.IO, error) { return keptIO{ioc}, nil }, nil
}

// keptIO is a task's I/O held by a keeper process: podrun holds nothing.
type keptIO struct{ cfg cio.Config }

func (k keptIO) Config() cio.Config { return k.cfg }
func (keptIO) Cancel()              {}
func (keptIO) Wait()                {}
func (keptIO) Close() error         { return nil }

// CloseStdin closes the stdin of container id's task at the shim, for its
// stream keeper (stdinOnce): a client of its own, for one call.
func CloseStdin(ctx context.Context, address, namespace, id string) error {
	client, err := containerd.New(address, containerd.WithDefaultNamespace(namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, namespace)
	ctr, err := client.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return err
	}
	return task.CloseIO(ctx, containerd.WithStdinCloser)
}
