// Package ctrd implements engine.Engine on containerd's Go client. It is the
// only package that imports the containerd client.
package ctrd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/archive/compression"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/log"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"

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
	return &Engine{client: client, namespace: o.Namespace, rotation: o.LogRotation, streams: &keeper.Client{Dir: o.IODir, Exe: o.Exe},
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

// Image returns a local image, unpacking it first if needed.
func (e *Engine) Image(ctx context.Context, ref string) (engine.Image, error) {
	ctx = e.ns(ctx)
	ref, err := Normalize(ref)
	if err != nil {
		return engine.Image{}, err
	}
	img, err := e.client.GetImage(ctx, ref)
	if err != nil {
		return engine.Image{}, mapErr(err)
	}
	return e.describe(ctx, img)
}

func (e *Engine) describe(ctx context.Context, img containerd.Image) (engine.Image, error) {
	unpacked, err := img.IsUnpacked(ctx, snapshotter)
	if err != nil {
		return engine.Image{}, fmt.Errorf("checking unpacked layers of %q: %w", img.Name(), err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, snapshotter); err != nil {
			return engine.Image{}, fmt.Errorf("unpacking %q: %w", img.Name(), err)
		}
	}
	oci, err := img.Spec(ctx)
	if err != nil {
		return engine.Image{}, fmt.Errorf("reading config of %q: %w", img.Name(), err)
	}
	c := oci.Config
	return engine.Image{
		Ref:    img.Name(),
		Digest: img.Target().Digest.String(),
		Config: spec.Image{
			Ref:        img.Name(),
			Entrypoint: c.Entrypoint,
			Cmd:        c.Cmd,
			Env:        c.Env,
			WorkingDir: c.WorkingDir,
			User:       c.User,
			StopSignal: c.StopSignal,
		},
	}, nil
}

// Import loads an OCI or docker archive, plain or compressed (gzip, zstd:
// containerd's own detection).
func (e *Engine) Import(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	ctx = e.ns(ctx)
	if e.importLock != nil {
		unlock, err := e.importLock(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	dr, err := compression.DecompressStream(r)
	if err != nil {
		return nil, err
	}
	defer dr.Close()
	imgs, err := e.client.Import(ctx, dr,
		containerd.WithImportPlatform(platforms.Default()),
		containerd.WithSkipDigestRef(func(name string) bool { return name != "" }))
	if err != nil {
		return nil, err
	}
	var out []engine.Image
	for _, i := range imgs {
		d, err := e.describe(ctx, containerd.NewImageWithPlatform(e.client, i, platforms.Default()))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Images lists the local images.
func (e *Engine) Images(ctx context.Context) ([]engine.Image, error) {
	ctx = e.ns(ctx)
	imgs, err := e.client.ImageService().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.Image
	for _, i := range imgs {
		img := containerd.NewImageWithPlatform(e.client, i, platforms.Default())
		size, err := img.Size(ctx)
		if err != nil {
			size = -1 // content missing for this platform: still list it
		}
		out = append(out, engine.Image{Ref: i.Name, Digest: i.Target.Digest.String(), Size: size, CreatedAt: i.CreatedAt})
	}
	return out, nil
}

// ImageFS is the snapshotter's root, as containerd's introspection reports
// it (what the CRI's ImageFsInfo measures).
func (e *Engine) ImageFS(ctx context.Context) (string, error) {
	// One filter: its comma-separated terms must all match.
	resp, err := e.client.IntrospectionService().Plugins(ctx, []string{fmt.Sprintf(`type=="io.containerd.snapshotter.v1",id==%q`, snapshotter)})
	if err != nil {
		return "", err
	}
	for _, p := range resp.Plugins {
		if root := p.Exports["root"]; root != "" {
			return root, nil
		}
	}
	return "", fmt.Errorf("containerd reports no root for the %s snapshotter", snapshotter)
}

// RemoveImage deletes an image record and waits for containerd's garbage
// collector to free what only it used.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	ctx = e.ns(ctx)
	err := e.client.ImageService().Delete(ctx, ref, images.SynchronousDelete())
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// Create creates a container, with a snapshot of its image as the root
// filesystem when c.Image is set.
func (e *Engine) Create(ctx context.Context, c engine.ContainerSpec) error {
	ctx = e.ns(ctx)
	ls := c.Labels
	if v := streamsLabel(c); v != "" {
		ls = maps.Clone(c.Labels)
		ls[streamsKey] = v
	}
	opts := []containerd.NewContainerOpts{
		containerd.WithContainerLabels(ls),
		containerd.WithRuntime(runtimeName, nil),
	}
	if c.Image != "" {
		ref, err := Normalize(c.Image)
		if err != nil {
			return err
		}
		img, err := e.client.GetImage(ctx, ref)
		if err != nil {
			return mapErr(err)
		}
		opts = append(opts,
			containerd.WithImageName(img.Name()),
			containerd.WithSnapshotter(snapshotter),
			containerd.WithNewSnapshot(c.ID, img, snapshots.WithLabels(map[string]string{})))
		if c.ImageGroups {
			opts = append(opts, withImageGroups(c.Spec))
		}
	}
	opts = append(opts, withSpec(c))
	start := time.Now()
	err := e.create(ctx, c.ID, opts)
	if errdefs.IsAlreadyExists(err) {
		// A create cut off between its snapshot and its container left the
		// snapshot (and its lease): they go, and the create is done again.
		// (A container of that id is left alone: the retry fails as it did.)
		if rerr := e.removeOrphan(ctx, c.ID); rerr != nil {
			return fmt.Errorf("creating container %q: %w", c.ID, rerr)
		}
		err = e.create(ctx, c.ID, opts)
	}
	slog.Debug("container created", "id", c.ID, "took", time.Since(start))
	if err != nil {
		return fmt.Errorf("creating container %q: %w", c.ID, err)
	}
	return nil
}

// Normalize turns a reference into its full Docker form
// (busybox -> docker.io/library/busybox:latest).
func Normalize(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", engine.ErrInvalidImageName, ref, err)
	}
	return n.String(), nil
}

// withSpec stores the prebuilt OCI spec.
func withSpec(c engine.ContainerSpec) containerd.NewContainerOpts {
	return func(ctx context.Context, _ *containerd.Client, ctr *containers.Container) error {
		return containerd.WithSpec(c.Spec)(ctx, nil, ctr)
	}
}

// Start creates and starts the task. Its streams go to the node's stream
// keeper, which writes its log (as containerd's CRI does in containerd).
func (e *Engine) Start(ctx context.Context, id, logPath string) (uint32, error) {
	ctx = e.ns(ctx)
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, mapErr(err)
	}
	streams := ""
	if logPath != "" {
		info, err := ctr.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			return 0, mapErr(err)
		}
		streams = info.Labels[streamsKey]
	}
	t0 := time.Now()
	var task containerd.Task
	for attempt := 0; ; attempt++ {
		task, err = e.createTask(ctx, ctr, streams, logPath)
		if errdefs.IsAlreadyExists(err) && attempt == 0 {
			// A task of this id that its shim no longer knows (its delete
			// cut off by a killed podrun): it goes, and the create is done
			// again.
			if rerr := e.removeStaleTask(ctx, id); rerr != nil {
				return 0, fmt.Errorf("creating task: %w", errors.Join(err, rerr))
			}
			continue
		}
		// Pods share shims (run's shim pool): a create that reached a shim
		// exiting with its last other task failed with the connection, and
		// containerd removed what it made. Again, on a shim started anew.
		if err == nil || attempt == 2 || !shimGone(err) || !taskGone(ctx, ctr) {
			break
		}
		slog.Debug("task create reached an exiting shim: again", "id", id, "err", err)
	}
	if err != nil {
		return 0, fmt.Errorf("creating task: %w", err)
	}
	t1 := time.Now()
	defer func() { slog.Debug("task started", "id", id, "create", t1.Sub(t0), "start", time.Since(t1)) }()
	if err := task.Start(ctx); err != nil {
		if _, derr := task.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill); derr != nil && !errdefs.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("deleting failed task: %w", derr))
		}
		return 0, fmt.Errorf("starting task: %w", err)
	}
	return task.Pid(), nil
}

// Resize sets the size of the task's terminal.
func (e *Engine) Resize(ctx context.Context, id string, width, height uint32) error {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return err
	}
	return mapErr(task.Resize(ctx, width, height))
}

// Wait blocks until the task exits or ctx is done.
func (e *Engine) Wait(ctx context.Context, id string) (engine.Exit, error) {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return engine.Exit{}, err
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return engine.Exit{}, mapErr(err)
	}
	select {
	case st := <-ch:
		code, at, err := st.Result()
		if err != nil {
			return engine.Exit{}, mapErr(err)
		}
		return engine.Exit{Code: code, ExitedAt: at}, nil
	case <-ctx.Done():
		return engine.Exit{}, ctx.Err()
	}
}

func (e *Engine) task(ctx context.Context, id string) (containerd.Task, error) {
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, mapErr(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return nil, mapErr(err)
	}
	return task, nil
}

// Kill signals the task; a missing or finished task is not an error.
func (e *Engine) Kill(ctx context.Context, id string, sig syscall.Signal) error {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) && !isFinished(err) {
		return fmt.Errorf("signalling %q: %w", id, err)
	}
	return nil
}

func isFinished(err error) bool {
	return errdefs.IsFailedPrecondition(err) || strings.Contains(err.Error(), "process already finished")
}

// Delete removes the task, the container and its snapshot.
func (e *Engine) Delete(ctx context.Context, id string) error {
	ctx = e.ns(ctx)
	ctr, err := e.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		// A task its shim no longer knows goes from containerd's list; a
		// create that a killed podrun left in flight in containerd would
		// make the task (and its cgroups) after this delete: it is waited
		// out.
		if err := e.removeStaleTask(ctx, id); err != nil {
			return err
		}
		task, err = e.settleCreate(ctx, ctr)
	}
	if err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) && !taskGone(ctx, ctr) {
			return fmt.Errorf("deleting task of %q: %w", id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("loading task of %q: %w", id, err)
	}
	if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting container %q: %w", id, err)
	}
	// The keeper lets its streams go once their end is written.
	return e.streams.Remove(ctx, id, drainWait)
}

// createTask creates ctr's task, its streams (with logPath) kept by the
// stream keeper; a failed create lets them go.
func (e *Engine) createTask(ctx context.Context, ctr containerd.Container, streams, logPath string) (containerd.Task, error) {
	if logPath == "" {
		return ctr.NewTask(ctx, cio.NullIO)
	}
	s, err := e.keepStreams(ctx, ctr.ID(), streams, logPath)
	if err != nil {
		return nil, err
	}
	release := keeper.Hold(s)
	defer release()
	task, err := ctr.NewTask(ctx, keptIO(s).new)
	if err != nil {
		return nil, errors.Join(err, e.streams.Remove(context.WithoutCancel(ctx), ctr.ID(), 0))
	}
	// The task holds its streams: their end is the end of its output.
	if err := e.streams.Commit(ctx, ctr.ID()); err != nil {
		slog.Debug("stream keeper: commit", "id", ctr.ID(), "err", err) // a keeper taking over reads the record
	}
	return task, nil
}

// removeStaleTask removes from containerd's task list a task of id that
// ctr.Task does not find (containerd asks the shim for its state, and the
// shim has no such task): a delete whose podrun was killed after the shim
// had deleted the task but before containerd heard back leaves that entry,
// its bundle and its shim, and every later create of id fails with "already
// exists". The task service's delete goes by containerd's list alone, and
// a shim that answers NotFound has the entry removed. Nothing to do is
// success. A create in flight is deleted once made: its creator is gone.
func (e *Engine) removeStaleTask(ctx context.Context, id string) error {
	_, err := e.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id})
	if err = errdefs.FromGRPC(err); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing the stale task of %q: %w", id, err)
	}
	if err == nil {
		slog.Debug("stale task removed", "id", id)
	}
	return nil
}

// shimGone reports whether err is a shim's connection lost or refused.
func shimGone(err error) bool {
	for _, s := range []string{"ttrpc: closed", "connection refused", "connection reset by peer", "broken pipe"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// taskGone reports whether ctr has no task any more: a delete whose shim
// closed its connection meanwhile (it exits with its last task) fails with
// "ttrpc: closed", yet containerd has removed the task and the shim.
func taskGone(ctx context.Context, ctr containerd.Container) bool {
	_, err := ctr.Task(ctx, nil)
	return errdefs.IsNotFound(err)
}

// settleWait bounds the wait for a task create in flight, and settlePoll
// is how often it looks.
const (
	settleWait = 30 * time.Second
	settlePoll = 20 * time.Millisecond
)

// settleCreate waits while a create of ctr's task is in flight in
// containerd: from its start, containerd's runtime keeps a work directory
// for the task (<runtime root>/<namespace>/<id>), removed when the create
// fails; the task is returned when it is made, an error wrapping NotFound
// when none is. Without the runtime's root (an older containerd), nothing
// is waited for.
func (e *Engine) settleCreate(ctx context.Context, ctr containerd.Container) (containerd.Task, error) {
	root := e.taskRoot(ctx)
	if root == "" {
		return nil, errdefs.ErrNotFound
	}
	work := filepath.Join(root, e.namespace, ctr.ID())
	deadline := time.Now().Add(settleWait)
	for {
		task, err := ctr.Task(ctx, nil)
		if !errdefs.IsNotFound(err) {
			return task, err
		}
		if _, serr := os.Lstat(work); errors.Is(serr, os.ErrNotExist) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}

// taskRoot is the root of containerd's runtime v2 task plugin, as its
// introspection reports it (containerd 1.7), or else beside the
// snapshotter's (every plugin's root is <containerd root>/<plugin>); ""
// when neither is there. Looked up once.
func (e *Engine) taskRoot(ctx context.Context) string {
	e.rootMu.Lock()
	defer e.rootMu.Unlock()
	if e.rootKnown {
		return e.runtimeRoot
	}
	resp, err := e.client.IntrospectionService().Plugins(ctx, []string{`type=="io.containerd.runtime.v2",id=="task"`})
	if err != nil {
		return "" // asked again next time
	}
	var root string
	for _, p := range resp.Plugins {
		root = p.Exports["root"]
	}
	if root == "" {
		fs, err := e.ImageFS(ctx)
		if err != nil {
			return ""
		}
		root = filepath.Join(filepath.Dir(fs), "io.containerd.runtime.v2.task")
	}
	e.rootKnown = true
	if st, err := os.Stat(root); err == nil && st.IsDir() && filepath.IsAbs(root) {
		e.runtimeRoot = root
	}
	return e.runtimeRoot
}

// RemoveSnapshots removes the snapshots whose key starts with prefix and
// that no container has, with their creates' leases: those of creates cut
// off before the container was made (a container's snapshot is keyed by
// its id).
func (e *Engine) RemoveSnapshots(ctx context.Context, prefix string) error {
	ctx = e.ns(ctx)
	// Filtered by containerd (prefix is a container id's start: hex, name
	// characters and dashes, nothing a regexp reads otherwise), not the
	// image layers' snapshots and every lease sent over.
	keys := map[string]bool{}
	err := e.client.SnapshotService(snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if strings.HasPrefix(info.Name, prefix) {
			keys[info.Name] = true
		}
		return nil
	}, fmt.Sprintf(`name~="^%s"`, prefix))
	if err != nil {
		return fmt.Errorf("listing snapshots: %w", err)
	}
	// A create killed before its snapshot left only its lease.
	ls, err := e.client.LeasesService().List(ctx, fmt.Sprintf(`id~="^%s"`, createLease(prefix)))
	if err != nil {
		return fmt.Errorf("listing leases: %w", err)
	}
	for _, l := range ls {
		if k, ok := strings.CutPrefix(l.ID, createLease("")); ok && strings.HasPrefix(k, prefix) {
			keys[k] = true
		}
	}
	var errs []error
	for k := range keys {
		errs = append(errs, e.removeOrphan(ctx, k))
	}
	return errors.Join(errs...)
}

// create makes container id under a lease named after it (which keeps its
// snapshot from the garbage collector until the container holds it), so
// that a later podrun finds the lease when this one is killed mid-create.
func (e *Engine) create(ctx context.Context, id string, opts []containerd.NewContainerOpts) error {
	ls := e.client.LeasesService()
	lease, err := ls.Create(ctx, leases.WithID(createLease(id)), leases.WithExpiration(24*time.Hour))
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	defer ls.Delete(context.WithoutCancel(ctx), lease) // it expires anyway
	_, err = e.client.NewContainer(leases.WithLease(ctx, lease.ID), id, opts...)
	return err
}

// createLease is the id of the lease of container id's create.
func createLease(id string) string { return "podrun-create-" + id }

// removeOrphan removes snapshot key, and the lease of its create, unless a
// container of that id exists.
func (e *Engine) removeOrphan(ctx context.Context, key string) error {
	if _, err := e.client.LoadContainer(ctx, key); !errdefs.IsNotFound(err) {
		return err // nil: a container's own, removed with it
	}
	if err := e.client.LeasesService().Delete(ctx, leases.Lease{ID: createLease(key)}); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing the lease of a create cut off, %q: %w", key, err)
	}
	if err := e.client.SnapshotService(snapshotter).Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing the snapshot %q of a create cut off: %w", key, err)
	}
	return nil
}

// DeleteTask removes the task and returns its exit; a missing task returns
// an error wrapping engine.ErrNotFound.
func (e *Engine) DeleteTask(ctx context.Context, id string) (engine.Exit, error) {
	ctx = e.ns(ctx)
	task, err := e.task(ctx, id)
	if err != nil {
		return engine.Exit{}, err
	}
	st, err := task.Delete(ctx, containerd.WithProcessKill)
	if err != nil {
		return engine.Exit{}, mapErr(err)
	}
	// The shim has closed the task's streams: the keeper writes what was
	// left in them (a last line without a newline too) before the exit is
	// reported, so whoever reads the log next sees all of it.
	if err := e.streams.Commit(ctx, id); err == nil {
		e.streams.WaitDrained(ctx, id, drainWait)
	}
	return engine.Exit{Code: st.ExitCode(), ExitedAt: st.ExitTime()}, nil
}

// SetLabels adds or replaces labels.
func (e *Engine) SetLabels(ctx context.Context, id string, l map[string]string) error {
	ctx = e.ns(ctx)
	ctr, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return mapErr(err)
	}
	_, err = ctr.SetLabels(ctx, l)
	return err
}

// List returns the containers carrying all the labels in match.
func (e *Engine) List(ctx context.Context, match map[string]string) ([]engine.Container, error) {
	ctx = e.ns(ctx)
	var filters []string
	for k, v := range match {
		filters = append(filters, fmt.Sprintf("labels.%q==%q", k, v))
	}
	ctrs, err := e.client.Containers(ctx, strings.Join(filters, ","))
	if err != nil {
		return nil, err
	}
	out := make([]engine.Container, 0, len(ctrs))
	for _, c := range ctrs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, engine.Container{
			ID: info.ID, Image: info.Image, Labels: info.Labels, CreatedAt: info.CreatedAt,
			Task: e.taskOf(ctx, c),
		})
	}
	return out, nil
}

// Task returns the state of the container's task.
func (e *Engine) Task(ctx context.Context, id string) (engine.Task, error) {
	ctx = e.ns(ctx)
	c, err := e.client.LoadContainer(ctx, id)
	if err != nil {
		return engine.Task{}, mapErr(err)
	}
	return e.taskOf(ctx, c), nil
}

func (e *Engine) taskOf(ctx context.Context, c containerd.Container) engine.Task {
	task, err := c.Task(ctx, nil)
	if err != nil {
		return engine.Task{}
	}
	st, err := task.Status(ctx)
	if err != nil {
		return engine.Task{State: engine.TaskUnknown, PID: task.Pid()}
	}
	return engine.Task{
		State:    engine.TaskState(st.Status),
		PID:      task.Pid(),
		ExitCode: st.ExitStatus,
		ExitedAt: st.ExitTime,
	}
}

var _ engine.Engine = (*Engine)(nil)
