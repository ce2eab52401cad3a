package ctrd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/keeper"
)

// streamsKey is the engine's own label on a container with stdin or a
// terminal: "stdin", "stdin-once", "tty", comma-separated.
const streamsKey = "io.podrun.engine.streams"

// drainWait bounds the wait for the keeper to write the end of a task's
// output once its streams are closed (a process that kept the container's
// stdout open past its end holds it up to there).
const drainWait = 2 * time.Second

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

// keepStreams has the node's stream keeper take container id's streams
// (streams: its streamsKey label) into the CRI log at logPath, and returns
// the FIFOs the task is to be connected to, as containerd's CRI sets them
// up.
func (e *Engine) keepStreams(ctx context.Context, id, streams, logPath string) (keeper.Streams, error) {
	set := strings.Split(streams, ",")
	has := func(s string) bool { return slices.Contains(set, s) }
	cfg := keeper.Config{ID: id, Log: logPath, MaxSize: e.rotation.MaxSize, MaxFiles: e.rotation.MaxFiles,
		Stdin: has("stdin"), StdinOnce: has("stdin-once"), TTY: has("tty"),
		Address: e.address, Namespace: e.namespace}
	// An earlier start of the same container left its streams: they go.
	if err := e.streams.Remove(ctx, id, 0); err != nil {
		return keeper.Streams{}, err
	}
	s, err := e.streams.Prepare(cfg)
	if err != nil {
		return keeper.Streams{}, fmt.Errorf("container %q: %w", id, err)
	}
	if err := e.streams.Add(ctx, id); err != nil {
		return keeper.Streams{}, fmt.Errorf("container %q: %w", id, err)
	}
	return s, nil
}

// KeepStreams starts the stream keeper again when containers have streams
// and none answers (it was killed).
func (e *Engine) KeepStreams(ctx context.Context) error { return e.streams.Ensure(ctx) }

// keptIO is a task's I/O held by the stream keeper: podrun holds nothing.
type keptIO keeper.Streams

func (k keptIO) new(string) (cio.IO, error) { return k, nil }

func (k keptIO) Config() cio.Config {
	return cio.Config{Stdin: k.Stdin, Stdout: k.Stdout, Stderr: k.Stderr, Terminal: k.Terminal}
}
func (keptIO) Cancel()      {}
func (keptIO) Wait()        {}
func (keptIO) Close() error { return nil }

// CloseStdin closes the stdin of container id's task at the shim, for the
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
