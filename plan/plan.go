// Package plan decides what must happen to each pod, as the kubelet's
// computePodActions does: from the pods wanted, the pods on the node and
// what the supervisor knows of them, it returns every action, and nothing
// overrides it afterwards. It is pure (no I/O, no clock); run carries the
// actions out.
package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
)

// Op is what is done with one pod.
type Op string

// Ops.
const (
	// Create runs a pod that is not on the node.
	Create Op = "create"
	// Keep leaves a pod that runs as wanted as it is; its config volumes
	// are refreshed (ConfigMaps and Secrets are not part of a pod's identity).
	Keep Op = "keep"
	// Adopt keeps a pod as it is and takes over its supervision (left by a
	// podrun that exited); config volumes refreshed when it is wanted.
	Adopt Op = "adopt"
	// Replace removes the pods in Remove (gracefully), then creates Pod.
	Replace Op = "replace"
	// Remove takes down a pod no one wants any more.
	Remove Op = "remove"
	// Wait leaves a pod Pending: its image is in the pull back-off.
	Wait Op = "wait"
	// Reject refuses a pod (Err says why) and touches nothing.
	Reject Op = "reject"
)

// Existing is a pod found on the node.
type Existing struct {
	UID, Namespace, Name string
	Source               string      // the file, URL or "stdin" it was applied from
	Pod                  *corev1.Pod // as applied, with its status; nil when its state is lost
	Complete             bool        // its pipeline finished
	Supervised           bool        // this process supervises it
	// NotAdoptable says why a complete pod that nobody supervises cannot be
	// taken over as it is ("" if it can, or was not asked).
	NotAdoptable string
	// Owned: the caller's sources applied it (only owned pods are pruned).
	Owned bool
	// Yield: it belongs to another owner (a running daemon): a wanted pod
	// of its name that is not the same is rejected, never replaces it.
	Yield bool
}

// Key is namespace/name.
func (e Existing) Key() string { return e.Namespace + "/" + e.Name }

// Desired is a pod wanted on the node.
type Desired struct {
	Pod *manifest.Pod
	// ImageWait is set when one of the pod's images is in the pull
	// back-off (only asked of pods the caller retries with a back-off).
	ImageWait error
}

// Input is everything Decide looks at.
type Input struct {
	Desired []Desired
	Node    []Existing // every pod on the node
	// Broken are sources that could not be read: their pods stay as last
	// applied, never pruned.
	Broken map[string]bool
	// Supervise: the caller supervises the pods it keeps (up -f, the
	// daemon), so unchanged pods nobody supervises are adopted.
	Supervise bool
	// Prune removes owned pods that no desired pod names (the daemon).
	Prune bool
	// PullFirst pulls a replacement's images before the running pod is
	// stopped (the daemon: a pod is never stopped for an image that cannot
	// be pulled).
	PullFirst bool
}

// Action is what must happen to one pod.
type Action struct {
	Op  Op
	Key string        // namespace/name
	Pod *manifest.Pod // the desired pod; nil for Remove, and for Adopt of a pod no source names
	// UID is the existing pod acted on (Keep, Adopt, Remove), or the
	// desired pod's.
	UID string
	// Remove are the pods taken down before Pod is created (Replace), with
	// why each goes, by UID.
	Remove []string
	Why    map[string]string
	// PullFirst: make Pod's images present before anything is removed.
	PullFirst bool
	// Phase is the kept pod's phase (Keep, Adopt).
	Phase corev1.PodPhase
	// Err is why a pod is rejected or waits.
	Err error
}

// Decide returns every action, removals of unwanted pods first, then one
// action per desired pod in the order given, then adoptions of pods whose
// source is broken.
func Decide(in Input) []Action {
	byKey := map[string][]Existing{}
	for _, e := range in.Node {
		byKey[e.Key()] = append(byKey[e.Key()], e)
	}
	wanted := map[string]bool{}
	for _, d := range in.Desired {
		wanted[d.Pod.Key()] = true
	}
	var removals, kept []Action
	for _, e := range in.Node {
		if wanted[e.Key()] || !e.Owned {
			continue
		}
		switch {
		case in.Broken[e.Source]:
			if in.Supervise && e.Complete && !e.Supervised && e.NotAdoptable == "" {
				kept = append(kept, Action{Op: Adopt, Key: e.Key(), UID: e.UID, Phase: phase(e)})
			}
		case in.Prune:
			removals = append(removals, Action{Op: Remove, Key: e.Key(), UID: e.UID})
		}
	}
	var staying []Existing // pods that keep their host ports: not removed now
	for _, e := range in.Node {
		if wanted[e.Key()] || !e.Owned || in.Broken[e.Source] || !in.Prune {
			staying = append(staying, e)
		}
	}
	conflicts := hostPortConflicts(in.Desired, staying)
	out := removals
	for i, d := range in.Desired {
		if err := conflicts[i]; err != nil {
			out = append(out, Action{Op: Reject, Key: d.Pod.Key(), Pod: d.Pod, UID: d.Pod.UID, Err: err})
			continue
		}
		out = append(out, decideOne(in, d, byKey[d.Pod.Key()]))
	}
	return append(out, kept...)
}

// decideOne compares a desired pod with the pods on the node under its
// namespace/name: the same UID (same content) fully applied is kept (or
// adopted); anything else there is replaced.
func decideOne(in Input, d Desired, existing []Existing) Action {
	p := d.Pod
	a := Action{Key: p.Key(), Pod: p, UID: p.UID}
	for _, e := range existing {
		if e.UID != p.UID || !e.Complete {
			continue
		}
		a.Phase = phase(e)
		switch {
		case !in.Supervise || e.Supervised:
			a.Op = Keep
		case e.NotAdoptable == "":
			a.Op = Adopt
		default:
			a.Op, a.Remove, a.Why = Replace, []string{e.UID}, map[string]string{e.UID: e.NotAdoptable}
		}
		return a
	}
	if len(existing) == 0 {
		a.Op = Create
		return a
	}
	for _, e := range existing {
		if e.Yield {
			a.Op = Reject
			a.Err = fmt.Errorf("pod %s belongs to the running podrun daemon (from %s): change it there, or remove that file first; nothing was changed", a.Key, e.Source)
			return a
		}
	}
	if d.ImageWait != nil && len(existing) == 1 && existing[0].UID == p.UID {
		// The same pod, left Pending by an image failure: it stays so until
		// its back-off ends.
		a.Op, a.Err = Wait, d.ImageWait
		return a
	}
	a.Op, a.Why = Replace, map[string]string{}
	for _, e := range existing {
		a.Remove = append(a.Remove, e.UID)
		if e.UID == p.UID {
			a.Why[e.UID] = "left incomplete"
		} else {
			a.Why[e.UID] = "manifest changed"
			a.PullFirst = in.PullFirst
		}
	}
	return a
}

func phase(e Existing) corev1.PodPhase {
	if e.Pod == nil {
		return ""
	}
	return e.Pod.Status.Phase
}

// hostPort is one claim on a host port: the scheduler's NodePorts check,
// which podrun, having no scheduler, makes before it starts a pod.
type hostPort struct {
	protocol corev1.Protocol
	ip       string // "" and 0.0.0.0: every address
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" }
	return a.protocol == b.protocol && a.port == b.port && (a.ip == b.ip || wild(a.ip) || wild(b.ip))
}

func (a hostPort) String() string {
	ip := a.ip
	if ip == "" {
		ip = "0.0.0.0"
	}
	return fmt.Sprintf("%s:%d/%s", ip, a.port, a.protocol)
}

// hostPorts lists the host ports a pod claims (a hostNetwork pod's ports
// are host ports: defaulting set hostPort to containerPort).
func hostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	for _, c := range resources.Containers(p) {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				out = append(out, hostPort{protocol: port.Protocol, ip: port.HostIP, port: port.HostPort})
			}
		}
	}
	return out
}

// hostPortConflicts returns, by index in desired, the error of each pod
// that claims a host port held by a pod on the node or by an earlier
// desired pod. A pod on the node of the same namespace/name is left out: it
// is replaced (or left as it is); so is a finished pod, whose network is
// released (and which the scheduler no longer counts). node holds only the
// pods that stay: one being removed frees its ports first.
func hostPortConflicts(desired []Desired, node []Existing) map[int]error {
	type holder struct {
		key   string
		ports []hostPort
	}
	var held []holder
	names := map[string]bool{}
	for _, d := range desired {
		names[d.Pod.Key()] = true
	}
	for _, e := range node {
		if e.Pod == nil || names[e.Key()] || e.Pod.Status.Phase == corev1.PodSucceeded || e.Pod.Status.Phase == corev1.PodFailed {
			continue
		}
		held = append(held, holder{e.Key(), hostPorts(e.Pod)})
	}
	errs := map[int]error{}
	for i, d := range desired {
		mine := hostPorts(d.Pod.Pod)
		var clashes []string
		for _, h := range held {
			for _, a := range mine {
				for _, b := range h.ports {
					if a.conflicts(b) {
						clashes = append(clashes, fmt.Sprintf("%s (held by pod %s)", a, h.key))
					}
				}
			}
		}
		key := d.Pod.Key()
		if len(clashes) > 0 {
			errs[i] = fmt.Errorf("pod %s: host port already in use: %s; nothing was started", key, strings.Join(clashes, ", "))
			continue
		}
		held = append(held, holder{key, mine})
	}
	return errs
}
