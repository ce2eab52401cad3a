// Package engine is podrun's one seam over the container runtime. It speaks
// podrun's own plain types so that the in-memory fake (engine/fake) imports
// nothing from containerd; engine/ctrd is the only code that knows the
// containerd client.
package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podrun/podrun/pullnet"
	"github.com/podrun/podrun/spec"
)

// ErrNotFound is returned (wrapped) when an image, container or task does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is returned (wrapped) when the runtime cannot be reached.
var ErrUnavailable = errors.New("container runtime unavailable")

// ErrInvalidImageName is returned (wrapped) for an image reference that does
// not parse (the kubelet's reason InvalidImageName).
var ErrInvalidImageName = errors.New("invalid image name")

// ErrUnauthorized is returned (wrapped) when a registry refuses a pull for
// want of valid credentials (401/403, or a challenge without credentials).
var ErrUnauthorized = errors.New("unauthorized")

// ErrOutputHeld is returned (wrapped) by Exec when the command exited but
// its output stayed open past a drain timeout, held by a process it left
// running (`sh -c 'daemon &'`): the output was cut there and the exec
// removed, as containerd's CRI does (drainExecSyncIO). Exec returns the
// command's exit code with it.
var ErrOutputHeld = errors.New("output held open by a process the command left running")

// ErrTemporary is returned (wrapped) by a pull that failed for a reason
// that may pass by itself: the registry could not be reached or timed out,
// or it answered 429 Too Many Requests or a 5xx status.
var ErrTemporary = errors.New("temporary registry failure")

// StartError is a failure of Start once the container exists: its task
// could not be created or started (the process not found, a mount that
// fails, ...). Containerd's CRI records such a container exited with code
// 128 and reason StartError, and the kubelet restarts it as a crashed one.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// PullOptions are how Pull reaches the registry. They are plain data from
// podrun's point of view: the caller finds the credentials (registry
// package); the engine only answers the registry's challenges with them.
type PullOptions struct {
	// Auth returns the user name and password to answer host's challenge
	// with (host as the engine connects to it: registry-1.docker.io for
	// docker.io). "" for both: none. nil: pull anonymously.
	Auth func(host string) (username, secret string)
	// Insecure lists registries (HOST or HOST:PORT, see
	// registry.IsInsecure) that may be reached over plain HTTP or with an
	// unverified certificate. Loopback registries always may.
	Insecure []string
	// HostsDirs are searched, in order, for a registry's host directory in
	// containerd's layout (<dir>/<host>/hosts.toml: mirrors, server,
	// capabilities, CA and client certificates, skip_verify; or Docker's
	// certs.d files). A registry with one is configured by it alone.
	HostsDirs []string
	// Progress, when set, is called a few times a second during the
	// download with how far it is.
	Progress func(PullProgress)
	// Link, when set, carries the pull's registry traffic: it cancels a
	// pull that reads nothing for its deadline (the pull is then tried
	// again at once, resuming, while each try reads something), and caps
	// the bytes per second of all pulls.
	Link *pullnet.Link
}

// Attachment is an image's manifest and its sigstore signature
// attachment, as FetchAttachment read them.
type Attachment struct {
	Tag      string          // the attachment's tag: sha256-HEX.sig
	Manifest string          // the attachment manifest's digest; "": none
	Blobs    map[string]Blob // by digest: the image's manifest, the attachment's manifest and layers
}

// Blob is a blob held in memory.
type Blob struct {
	MediaType string // "" when unknown
	Data      []byte
}

// Attachment bounds: a manifest, a signature layer, how many layers, and
// their bytes together (what a registry can make podrun hold in memory).
const (
	MaxAttachmentManifest = 4 << 20
	MaxAttachmentLayer    = 4 << 20 // c/image's iolimits.MaxSignatureBodySize
	MaxAttachmentLayers   = 64
	MaxAttachmentBytes    = 16 << 20
)

// AttachmentTag is the sigstore attachment's tag of the manifest digest
// ALG:HEX: ALG-HEX.sig.
func AttachmentTag(digest string) string {
	return strings.Replace(digest, ":", "-", 1) + ".sig"
}

// PullProgress is how far a pull is.
type PullProgress struct {
	Done, Total int64 // bytes fetched, of the blobs known so far
	// Layers are the image's layers known so far, LayersDone those in the
	// store; Layer is the first layer being fetched (a short digest), or "".
	Layers, LayersDone int
	Layer              string
}

// Image is an image present in the runtime's store.
type Image struct {
	Ref    string // normalized reference, e.g. docker.io/library/busybox:latest
	Digest string // digest of the image's manifest or index ("imageID")
	Size   int64  // bytes of content in the store (set by Images only)
	// CreatedAt is when the image came to the store (pulled or imported;
	// set by Images only).
	CreatedAt time.Time
	Config    spec.Image // what podrun needs from the image's config
}

// ContainerSpec is everything needed to create a container.
type ContainerSpec struct {
	ID     string
	Image  string // reference of an image to snapshot as the root; "" when Spec.Root.Path is a host directory
	Labels map[string]string
	Spec   *specs.Spec
	// ImageGroups: the groups the image's /etc/group gives the process's
	// user are added to Spec.Process.User.AdditionalGids (in place, by
	// Create), as supplementalGroupsPolicy Merge says.
	ImageGroups bool
	// Stdin keeps the container's stdin open for `podrun attach`; with
	// StdinOnce it closes when the first attach ends. With Stdin or a
	// terminal (Spec.Process.Terminal) the container's streams are held by
	// a keeper process that writes the log and serves attach.
	Stdin, StdinOnce bool
}

// TaskState is the state of a container's task.
type TaskState string

// Task states. TaskNone means the container has no task.
const (
	TaskNone    TaskState = ""
	TaskCreated TaskState = "created"
	TaskRunning TaskState = "running"
	TaskStopped TaskState = "stopped"
	TaskPaused  TaskState = "paused"
	TaskUnknown TaskState = "unknown"
)

// Task is what is known of a container's task.
type Task struct {
	State    TaskState
	PID      uint32
	ExitCode uint32
	ExitedAt time.Time
}

// Container is a container as the runtime reports it.
type Container struct {
	ID        string
	Image     string
	Labels    map[string]string
	CreatedAt time.Time
	Task      Task
}

// Exit is how a task ended.
type Exit struct {
	Code     uint32
	ExitedAt time.Time
	// OOMKilled: the kernel's OOM killer killed a process of the container
	// before it exited. Only known from the Exits stream.
	OOMKilled bool
}

// ExecSpec is a process to run inside a running container. The process
// inherits the container's user, environment and working directory unless
// overridden.
type ExecSpec struct {
	Args   []string
	Env    []string // added to the container's environment
	TTY    bool
	Stdin  io.Reader // nil: no stdin
	Stdout io.Writer // nil: discarded
	Stderr io.Writer // nil: discarded (ignored with TTY)
	// Resize, with TTY, carries the terminal's new sizes while the
	// command runs (kubectl exec -t); nil: the size stays.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint32
}

// TaskExit is an event: a container's main process exited, or, with OOM
// set, the kernel's OOM killer killed a process of the container
// (containerd's /tasks/oom, which carries no code or time; the exit it
// causes follows as its own event).
type TaskExit struct {
	ContainerID string
	Code        uint32
	ExitedAt    time.Time
	OOM         bool
}

// Engine is the container runtime as podrun uses it. Every method that
// removes something treats "already gone" as success.
type Engine interface {
	// Image returns a local image, or an error wrapping ErrNotFound.
	Image(ctx context.Context, ref string) (Image, error)
	// Pull fetches an image from its registry and unpacks it. A reference
	// that does not parse is an error wrapping ErrInvalidImageName; a
	// refusal for want of credentials wraps ErrUnauthorized.
	Pull(ctx context.Context, ref string, o PullOptions) (Image, error)
	// FetchAttachment reads what the signature policy needs of image ref
	// pulled at digest: its manifest from the local store, and its sigstore
	// signature attachment (the tag sha256-HEX.sig of ref's repository)
	// fetched as Pull fetches, with o (hosts, credentials, link), into
	// memory, within bounds, keeping nothing. A registry that has no
	// attachment is no error: Attachment.Manifest is "".
	FetchAttachment(ctx context.Context, ref, digest string, o PullOptions) (Attachment, error)
	// Import loads the images of an OCI or docker archive (plain, gzip or
	// zstd) and unpacks them; sigstore attachments in the archive (tags
	// sha256-HEX.sig, .att, .sbom) are not images: not kept.
	Import(ctx context.Context, r io.Reader) ([]Image, error)
	// Images lists the local images.
	Images(ctx context.Context) ([]Image, error)
	// Tag names the local image ref also name (replacing what name named).
	Tag(ctx context.Context, ref, name string) (Image, error)
	// RemoveImage removes a local image and, once nothing else uses it,
	// its content and snapshots.
	RemoveImage(ctx context.Context, ref string) error
	// ImageFS is a directory on the filesystem that holds the unpacked
	// images (the snapshotter's root), whose use image GC watches.
	ImageFS(ctx context.Context) (string, error)

	// Create creates a container (and its root snapshot when Image is set).
	Create(ctx context.Context, c ContainerSpec) error
	// Start creates and starts the container's task; its stdout and stderr go
	// to a CRI-format log file at logPath ("" discards them). Returns the pid.
	Start(ctx context.Context, id, logPath string) (uint32, error)
	// Wait blocks until the container's task has exited or ctx is done.
	Wait(ctx context.Context, id string) (Exit, error)
	// DeleteTask removes the container's task (killing it if needed) and
	// returns how it ended, once the task's output is in its log; the
	// container stays.
	DeleteTask(ctx context.Context, id string) (Exit, error)
	// Task returns the state of the container's task (State TaskNone when it
	// has none); a missing container is an error wrapping ErrNotFound.
	Task(ctx context.Context, id string) (Task, error)
	// Kill sends a signal to the container's task.
	Kill(ctx context.Context, id string, sig syscall.Signal) error
	// Delete removes the task (killing it if needed), the container and its snapshot.
	Delete(ctx context.Context, id string) error
	// RemoveSnapshots removes the snapshots keyed with prefix that no
	// container has (creates cut off between snapshot and container).
	RemoveSnapshots(ctx context.Context, prefix string) error
	// Exec runs a process in the container's running task until it exits
	// or ctx ends (then it is killed), and returns its exit code. Once it
	// has exited, its output is drained for a bounded time (an error
	// wrapping ErrOutputHeld past it); the exec is removed in every case.
	Exec(ctx context.Context, id string, p ExecSpec) (int, error)
	// Exits streams the exits of containers' main processes and the OOM
	// kills in containers, in the order the runtime saw them, until ctx
	// ends. The error channel reports a broken stream (e.g. containerd
	// restarted).
	Exits(ctx context.Context) (<-chan TaskExit, <-chan error)
	// SetLabels adds or replaces labels on a container.
	SetLabels(ctx context.Context, id string, labels map[string]string) error
	// KeepStreams makes sure the containers' streams are kept (their output
	// copied to their logs): a stream keeper that was killed is started
	// again and takes over what waited meanwhile.
	KeepStreams(ctx context.Context) error
	// Resize sets the size of the terminal of container id's task (a
	// container with tty), as a terminal attached to it is resized.
	Resize(ctx context.Context, id string, width, height uint32) error
	// List returns the containers whose labels include all of match.
	List(ctx context.Context, match map[string]string) ([]Container, error)
}
