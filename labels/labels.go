// Package labels holds the containerd label and annotation keys podrun puts on
// the objects it creates. Labels are podrun's source of truth: any later podrun
// process (or a restarted daemon) finds and adopts pods through them.
package labels

import (
	"strings"
	"unicode/utf8"
)

const (
	prefix = "io.podrun."

	// PodUID is the pod's deterministic UID (see manifest.Identity).
	PodUID = prefix + "pod.uid"
	// PodName and PodNamespace are the pod's metadata.name and metadata.namespace.
	PodName      = prefix + "pod.name"
	PodNamespace = prefix + "pod.namespace"
	// PodHash is the hash of the defaulted pod; equal hashes mean an unchanged pod.
	PodHash = prefix + "pod.hash"
	// Source says where the pod came from: a file path, "stdin" or "cli".
	Source = prefix + "source"
	// Container is the container's name in the pod spec; "POD" for the sandbox.
	Container = prefix + "container.name"
	// Kind is "sandbox", "init" or "app".
	Kind = prefix + "container.kind"
	// RestartCount counts the restarts of this container in the pod.
	RestartCount = prefix + "container.restart-count"
	// ImageID is the image's reference by digest (repo@sha256:...), the imageID of the container status.
	ImageID = prefix + "container.image-id"
	// User is the identity the container's process runs with,
	// "UID:GID:GROUP,GROUP..." (its status's user.linux).
	User = prefix + "container.user"
	// StartedAt is the RFC 3339 time the container's task was started.
	StartedAt = prefix + "container.started-at"

	// ExitCode and FinishedAt record how a container's task ended, so that
	// the task can be deleted (and its shim exit) without losing its status.
	ExitCode   = prefix + "container.exit-code"
	FinishedAt = prefix + "container.finished-at"
	// StopSignal is the image's STOPSIGNAL ("" means SIGTERM).
	StopSignal = prefix + "container.stop-signal"
	// Ready ("true"/"false") is the container's readiness as its supervisor
	// last saw it, ReadyAt when it last changed; Started ("true") is set once
	// its startup probe and postStart hook have passed.
	Ready   = prefix + "container.ready"
	ReadyAt = prefix + "container.ready-at"
	Started = prefix + "container.started"
	// PostStart ("running") marks an attempt whose postStart hook has not
	// returned yet; it is set when the attempt is created and cleared when
	// the hook succeeds (status shows such an attempt as the kubelet does,
	// not running yet).
	PostStart = prefix + "container.post-start"
	// Waiting is the reason an exited attempt waits to be restarted
	// (CrashLoopBackOff, PostStartHookError after its hook failed, or
	// CreateContainerConfigError when the next attempt could not be made), WaitingMessage the latter's message, and
	// BackoffUntil when the restart is due, Backoff the back-off's window
	// (10s, 20s, ... 5m0s).
	Waiting        = prefix + "container.waiting"
	WaitingMessage = prefix + "container.waiting-message"
	BackoffUntil   = prefix + "container.backoff-until"
	Backoff        = prefix + "container.backoff"
	// LastProbe is the last failed probe's kind and output, for errors and status.
	LastProbe = prefix + "container.last-probe"
	// Reason is why a container's task ended when its exit code does not
	// say it: "OOMKilled" once the kernel's OOM killer killed in it,
	// "StartError" when it could not be started, Message then why.
	Reason  = prefix + "container.reason"
	Message = prefix + "container.message"
	// PodIPs is the comma-separated list of the pod's IPs, on the sandbox.
	PodIPs = prefix + "pod.ips"

	// PostStartRunning is the value of PostStart.
	PostStartRunning = "running"

	// KindSandbox, KindInit and KindApp are the values of Kind.
	KindSandbox = "sandbox"
	KindInit    = "init"
	KindApp     = "app"
	// SandboxName is the Container label value of the pause container, as the
	// kubelet names it.
	SandboxName = "POD"

	// SandboxID is the CRI plugin's annotation of a container's sandbox id.
	SandboxID = "io.kubernetes.cri.sandbox-id"
	// ShimGroup is the annotation the runc v2 shim groups containers by
	// (before SandboxID): the containers carrying the same value share one
	// shim process.
	ShimGroup = "io.containerd.runc.v2.group"
)

// MaxMessage bounds the messages podrun keeps in labels (containerd refuses
// a label over 4096 bytes).
const MaxMessage = 2048

// Clip is message msg as a label keeps it: trimmed, at most MaxMessage
// bytes, cut at a character's start and valid UTF-8 (containerd's API
// refuses a label that is not, and with it the whole update).
func Clip(msg string) string {
	msg = strings.ToValidUTF8(strings.TrimSpace(msg), "\uFFFD")
	if len(msg) > MaxMessage {
		n := MaxMessage
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n]
	}
	return msg
}
