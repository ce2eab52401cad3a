// Containers: Create, Delete, SetLabels, List, and the snapshots and leases
// a create leaves behind.

package ctrd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/snapshots"

	"github.com/podrun/podrun/engine"
)

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

// withSpec stores the prebuilt OCI spec.
func withSpec(c engine.ContainerSpec) containerd.NewContainerOpts {
	return func(ctx context.Context, _ *containerd.Client, ctr *containers.Container) error {
		return containerd.WithSpec(c.Spec)(ctx, nil, ctr)
	}
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
