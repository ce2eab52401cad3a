package run

import (
	"context"
	"net"
	"os"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/volumes"
)

// The side effects a Host makes on the machine, behind small interfaces
// and funcs (Deps). The composition root (next to the CLI) hands in the
// real ones; unit tests hand in fakes (seams_test.go, fakes_test.go) that
// record calls and fail or cancel on demand. Outside them: podrun's own
// files under its state and log directories, and a few reads of the host
// (spec.DetectHost, downward's node facts, the pause binary's ELF header).

// Network attaches pods to the pod network (sandbox.Network: libcni).
type Network interface {
	// Config is the network configuration list to attach a pod with.
	Config() ([]byte, error)
	Add(ctx context.Context, conf []byte, a sandbox.Attachment) ([]net.IP, error)
	// Del detaches; a pod that is not attached is success.
	Del(ctx context.Context, conf []byte, a sandbox.Attachment) error
}

// NetNS makes and removes named network namespaces (sandbox.Namespaces).
type NetNS interface {
	// Create makes (or finds) the namespace and returns its path.
	Create(name string) (string, error)
	// Remove unmounts and removes it; gone is success.
	Remove(name string) error
}

// Pins pin a pod's IPC and UTS namespaces to files, so that no pause
// process has to hold them (sandbox.Pinner).
type Pins interface {
	// Pin makes the namespaces (the UTS one with hostname) and pins them.
	Pin(p sandbox.Pins, hostname string) error
	// Unpin unmounts and removes the pins; gone is success.
	Unpin(p sandbox.Pins) error
	// ID is the inode of the namespace pinned at path; false when none is.
	ID(path string) (uint64, bool)
}

// Cgroups makes and removes pod cgroups (cgroup.Manager).
type Cgroups interface {
	Create(path string, r *specs.LinuxResources) error
	// Remove removes an empty cgroup; gone is success.
	Remove(path string) error
	// OOMKills is how many processes of a cgroup the OOM killer has killed
	// (0 when it is gone).
	OOMKills(path string) (uint64, error)
}

// Disk lays pods out on the host (volumes.Disk): the pod directory with its
// /dev/shm, the volumes with their mounts, and the files written into the
// pod directory.
type Disk interface {
	// Make makes the pod directory with its record (the file record
	// holding data) in it, or replaces the record of one there.
	Make(l volumes.Layout, record string, data []byte) error
	// Create mounts the tmpfs of a pod directory Make made.
	Create(l volumes.Layout) error
	// Remove unmounts and deletes the pod directory; gone is success.
	Remove(l volumes.Layout) error
	Setup(l volumes.Layout, pod *corev1.Pod, cfg *volumes.Config, o volumes.Options) (*volumes.Prepared, error)
	Locate(l volumes.Layout, pod *corev1.Pod, o volumes.Options) (*volumes.Prepared, error)
	// Undo reverts what Setup made outside the pod directory.
	Undo(p *volumes.Prepared) error
	// WriteFile replaces a file atomically.
	WriteFile(path string, data []byte, perm os.FileMode) error
	// RemoveFile removes a file; gone is success.
	RemoveFile(path string) error
}

// Locks serializes the processes that change pods (lock.Pods): one owner
// of a pod, by namespace/name, at a time.
type Locks interface {
	// Lock takes pod key's lock, waiting until ctx ends; waiting is told
	// once which pid holds it. unlock(gone) releases it; gone: no pod of
	// that name is left, and the lock's file may go.
	Lock(ctx context.Context, key string, waiting func(holder int)) (unlock func(gone bool), err error)
}

// ImageHolds keep image collection, this process's and any other's, away
// from the images a pod being made has made present or found, before its
// containers use them (lock.Images).
type ImageHolds interface {
	// Hold records refs as in use until release (or the process's end).
	Hold(ctx context.Context, refs []string) (release func(), err error)
	// Collect runs fn with the references held, while no hold is taken.
	Collect(ctx context.Context, fn func(held []string) error) error
}

// Deps are the implementations a Host works with.
type Deps struct {
	Engine  engine.Engine
	Network Network
	NetNS   NetNS
	Pins    Pins
	Cgroups Cgroups
	Disk    Disk
	// Locks is lock.Pods on a host; nil serializes within this process only.
	Locks Locks
	// ImageHolds is lock.Images on a host; nil holds within this process
	// only.
	ImageHolds ImageHolds
	// Node is what the machine offers (cgroup.Node, read once when first
	// needed); it shapes containers' limits. nil: nothing known.
	Node func() resources.Node
	// Clock is the Host's one clock: probes, back-offs, the times recorded
	// and the durations reported; nil is the real one.
	Clock clock.Clock
	// Admission reads the node pods are admitted to (its name, labels and
	// allocatable), when a pod not yet running is decided on.
	Admission func() (admission.Node, error)
	// HostIPs looks up the node's addresses; nil is sandbox.HostIPs. The
	// Host looks them up at most once per hostIPsTTL.
	HostIPs func() []net.IP
	// Versions keeps the versions of pods that became Ready (rollout.History);
	// nil keeps none.
	Versions Versions
	// HostFile reads a file of the host's that a pod's files are made from
	// (dns.go): /etc/hosts (a hostNetwork pod's), /etc/resolv.conf and
	// systemd-resolved's upstream resolv.conf; nil is os.ReadFile. A file
	// that is not there is an error that is os.ErrNotExist.
	HostFile func(path string) ([]byte, error)
}

// Versions keeps the versions of the node's pods that became Ready
// (rollout.History, under the state root; nil in Deps keeps none): the
// hook through which the lifecycle tells it of a version Ready (up_wait.go)
// and of a pod removed for good, and asks it the condition a rollback
// shows on a listed pod and the version a changed pod that failed goes
// back to (UpOptions.Rollback). The history itself, and the rollout verbs
// on it, are package rollout's.
type Versions interface {
	// Ready records p, as applied from source, as pod p's newest version
	// that became Ready, at at.
	Ready(p *manifest.Pod, source string, at time.Time) error
	// Forget drops what is kept of pod key (removed for good: its source
	// gone, `podrun down`); none kept is success.
	Forget(key string) error
	// Condition is the condition shown on the listed pod key of uid (a
	// rollback's Progressing=False), nil if none.
	Condition(key, uid string) *corev1.PodCondition
	// Before is the newest version of pod key that became Ready other than
	// version hash, with its revision; nil when none is kept.
	Before(key, hash string) (*manifest.Pod, int, error)
}

// noVersions keeps nothing.
type noVersions struct{}

func (noVersions) Ready(*manifest.Pod, string, time.Time) error      { return nil }
func (noVersions) Forget(string) error                               { return nil }
func (noVersions) Condition(string, string) *corev1.PodCondition     { return nil }
func (noVersions) Before(string, string) (*manifest.Pod, int, error) { return nil, 0, nil }
