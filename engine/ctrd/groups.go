package ctrd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/mount"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// withImageGroups adds to the spec's supplementary groups those the image's
// /etc/group gives the process's user, as containerd's CRI does for the
// supplementalGroupsPolicy Merge (oci.WithAdditionalGIDs, which reads the
// files inside the root by continuity's RootPath, at most a bounded size).
//
// It runs between the snapshot and the container record. The snapshot is
// mounted read-only in a mount namespace of one locked thread that is
// discarded afterwards: a podrun killed while it reads leaves no mount, and
// a mount never reaches the host's namespace.
func withImageGroups(s *specs.Spec) containerd.NewContainerOpts {
	return func(ctx context.Context, client *containerd.Client, c *containers.Container) error {
		if s.Process == nil {
			return nil
		}
		mounts, err := client.SnapshotService(c.Snapshotter).Mounts(ctx, c.SnapshotKey)
		if err != nil {
			return fmt.Errorf("image groups: %w", err)
		}
		var image []uint32
		err = inPrivateMountNS(func(dir string) error {
			if err := mountReadOnly(mounts, dir); err != nil {
				return err
			}
			probe := specs.Spec{Root: &specs.Root{Path: dir}, Process: &specs.Process{User: s.Process.User}}
			uid := fmt.Sprint(s.Process.User.UID)
			if err := oci.WithAdditionalGIDs(uid)(ctx, nil, &containers.Container{}, &probe); err != nil {
				return err
			}
			image = probe.Process.User.AdditionalGids
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the image's /etc/group: %w", err)
		}
		gids := append(slices.Clone(s.Process.User.AdditionalGids), image...)
		slices.Sort(gids)
		s.Process.User.AdditionalGids = slices.Compact(gids)
		return nil
	}
}

// inPrivateMountNS runs fn on a locked thread that has its own mount
// namespace (nothing propagates back), with dir a directory fn may mount
// over: the temp directory, covered in that namespace only (a layer under
// it is still reachable by its path at mount time, resolved before the
// mount covers it). The thread is never unlocked: the runtime ends it when
// fn returns, and its namespace and mounts with it.
func inPrivateMountNS(fn func(dir string) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded
		if unix.Gettid() == unix.Getpid() {
			// The main thread is never discarded (the runtime parks it
			// for good), and /proc/self shows its namespace: keep it
			// locked here while another thread does the work.
			errc <- inPrivateMountNS(fn)
			runtime.UnlockOSThread()
			return
		}
		errc <- func() error {
			// CLONE_NEWNS also unshares the thread's filesystem attributes
			// (cwd, root), so a chdir below stays on this thread.
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("new mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return fmt.Errorf("making the mount namespace private: %w", err)
			}
			return fn(os.TempDir())
		}()
	}()
	return <-errc
}

// mountReadOnly mounts a snapshot's mounts on target, read-only, on the
// calling thread (containerd's mount.All may move a long overlay mount to
// another thread, outside this namespace). An overlay loses its upper and
// work directories (the upper one becomes the top layer), as containerd's
// readonly temp mounts do; a long list of layers is given relative to their
// common directory, this thread's working directory.
func mountReadOnly(mounts []mount.Mount, target string) error {
	for _, m := range mounts {
		switch m.Type {
		case "bind", "rbind":
			if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("bind mount of %s: %w", m.Source, err)
			}
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("read-only remount of %s: %w", m.Source, err)
			}
		case "overlay":
			var upper string
			var lower, other []string
			for _, o := range m.Options {
				switch k, v, _ := strings.Cut(o, "="); k {
				case "upperdir":
					upper = v
				case "lowerdir":
					lower = strings.Split(v, ":")
				case "workdir", "ro", "rw":
				default:
					other = append(other, o)
				}
			}
			if upper != "" {
				lower = append([]string{upper}, lower...)
			}
			if len(lower) == 1 {
				if err := mountReadOnly([]mount.Mount{{Type: "bind", Source: lower[0]}}, target); err != nil {
					return err
				}
				continue
			}
			if common := commonDir(lower); common != "" && pageLimit(lower, other) {
				if err := unix.Chdir(common); err != nil {
					return err
				}
				for i, l := range lower {
					lower[i] = strings.TrimPrefix(l, common+"/")
				}
			}
			data := strings.Join(append(other, "lowerdir="+strings.Join(lower, ":")), ",")
			if err := unix.Mount("overlay", target, "overlay", unix.MS_RDONLY, data); err != nil {
				return fmt.Errorf("overlay mount of %d layers: %w", len(lower), err)
			}
		default:
			return fmt.Errorf("mount type %q not supported", m.Type)
		}
	}
	return nil
}

// pageLimit says whether an overlay's options are too long for mount(2)'s
// one page of data (containerd compacts them past page size - 512).
func pageLimit(lower, other []string) bool {
	n := len("lowerdir=") + len(strings.Join(lower, ":")) + len(strings.Join(other, ","))
	return n >= os.Getpagesize()-512
}

// commonDir is the deepest directory every path is under, or "".
func commonDir(paths []string) string {
	common := filepath.Dir(paths[0])
	for _, p := range paths[1:] {
		for common != "/" && !strings.HasPrefix(p, common+"/") {
			common = filepath.Dir(common)
		}
	}
	if common == "/" {
		return ""
	}
	return common
}
