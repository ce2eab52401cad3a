// Package run is the pod's lifecycle on this node. It observes the pods
// wanted and those on the node (sync.go), decides through package plan what
// must happen to each (pure), and does it: the pipeline of a pod's named
// steps, each with its undo (steps.go, up.go, and the files of what the
// steps make: volumes.go, sandbox.go, dns.go, containers.go, shims.go,
// wait.go), the adoption of pods an earlier podrun left running (adopt.go),
// their teardown (teardown.go, down.go), the bridge to their supervision
// (supervise.go, exits.go), the listing of what is on the node (list.go,
// await.go) and the locks that keep one owner per pod (locks.go). The Host
// (host.go) reaches the machine through the seams of seams.go, with one
// injected clock; this file is the configuration it is opened with.
package run

import (
	"time"

	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/logs"
)

// Config is everything podrun's commands need to know about the host. main
// fills it from flags and environment variables.
type Config struct {
	// Address is containerd's socket. When nothing answers there and
	// AutoStart is set, podrun starts (or reuses) its own private containerd.
	Address   string
	AutoStart bool
	// StartPrivate: the command creates pods or images and may start the
	// private containerd; commands that only look use it when it runs.
	StartPrivate bool
	// Namespace is the containerd namespace podrun's containers live in.
	Namespace string
	// Root is podrun's state directory (pods/<uid>, cni/, containerd/).
	Root string
	// RunDir holds runtime files: the private containerd's socket and state.
	RunDir string
	// LogDir is where container logs go, as <ns>_<pod>_<uid>/<container>/<n>.log.
	LogDir string
	// LogRotation is how the log driver rotates each container's log.
	LogRotation logs.Rotation
	// CNIConfDir is read for a network configuration; when it has none,
	// podrun's default bridge network is used.
	CNIConfDir string
	// CNIBinDirs are searched for CNI plugins, in order.
	CNIBinDirs []string
	// PauseImage is the sandbox image; "" means podrun's built-in pause.
	PauseImage string
	// ClusterDomain is the kubelet's --cluster-domain: the suffix of a pod's
	// FQDN (hostname.subdomain.namespace.svc.<ClusterDomain>).
	ClusterDomain string
	// Exe is podrun's own (static) binary: the built-in pause and the log driver.
	Exe string
	// Images are the node's registry settings (credentials, insecure
	// registries, hosts.toml directories, pull progress).
	Images images.Options
	// AllowedHostPaths, when not empty, are the only host path prefixes a
	// hostPath volume may resolve under (--allowed-host-paths), checked on
	// what is opened, symlinks resolved, when a pod's volumes are set up.
	AllowedHostPaths []string
	// Debug repeats the notes a host was given already (sayOnce).
	Debug bool
	// NodeLabels are the node's labels besides the well-known ones
	// (--node-labels), matched by pods' nodeSelector and node affinity.
	NodeLabels map[string]string
	// MaxPods is how many pods the node admits (--max-pods).
	MaxPods int
}

// Wait says when Up returns.
type Wait string

// Wait modes.
const (
	// WaitReady: the pod is Ready (every app container and sidecar ready:
	// readiness probes pass; without a probe, once started), or finished
	// first (every app container done under Never or OnFailure: Succeeded
	// or Failed), as `kubectl wait --for=condition=Ready`.
	WaitReady Wait = "ready"
	// WaitRunning: every container is started (postStart done).
	WaitRunning Wait = "running"
	// WaitCompletion: a run-to-completion pod has Succeeded or Failed.
	WaitCompletion Wait = "completion"
)

// UpOptions tune Up.
type UpOptions struct {
	Timeout       time.Duration // for each pod, from start to up (or done)
	Wait          Wait
	KeepOnFailure bool // do not undo the steps of a failed pod
	// Foreground keeps supervising the pods after Up returns, until
	// Supervise's context ends.
	Foreground bool
	// PullBackOff, for a caller that syncs again later, keeps a failed
	// pull's image in the kubelet's back-off for the pod: Sync fails at
	// once while it lasts, a pod whose image failed stays listed as Pending
	// with the reason, and a replacement's images are pulled before the
	// running pod is stopped. Without it, pulls that failed for a reason
	// that may pass are retried with the same back-off until Timeout
	// (imagepull.go).
	PullBackOff bool
	// RecordRefusals records a pod the node refuses at admission as Failed
	// with the kubelet's reason and message (the daemon); otherwise a
	// refused pod leaves nothing.
	RecordRefusals bool
	// RecordConfigErrors records a pod whose container could not be
	// created from its configuration (spec.ConfigError) as Pending with
	// that container waiting in CreateContainerConfigError (the daemon,
	// which tries it again at its next sync); otherwise it leaves nothing.
	RecordConfigErrors bool
	// RecordFailures records a pod whose init container failed under
	// restartPolicy Never as Failed, with the status it had (the daemon):
	// kept so until its manifest changes, as the kubelet keeps a failed
	// static pod; otherwise it leaves nothing.
	RecordFailures bool
	// RetryStartErrors leaves a container that was made but could not be
	// started (engine.StartError: its command not found, ...) to its
	// restarts with the back-off, as the kubelet restarts it (the daemon):
	// the pod comes up with that container waiting in RunContainerError.
	// Otherwise the pod's start fails.
	RetryStartErrors bool
	// Rollback: a changed pod that fails to come up (not Ready within
	// Timeout, with Wait ready) is replaced by its last version that
	// became Ready (Deps.Versions), and Sync still reports the failure
	// (`up`; the daemon rolls back on its own).
	Rollback bool
	minReady time.Duration // a replacing pod's (readySettle, with Rollback)
}

// DownOptions tune Down.
type DownOptions struct {
	// GracePeriod overrides the pods' terminationGracePeriodSeconds when set.
	GracePeriod *time.Duration
}
