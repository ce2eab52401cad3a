// Package plan decides what must happen to each pod, as the kubelet's
// computePodActions does: from the pods wanted, the pods on the node and
// what the supervisor knows of them, it returns every action, and nothing
// overrides it afterwards. It is pure (no I/O, no clock); run carries the
// actions out.
package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/manifest"
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
	// Refused: the node refused it at admission and recorded it Failed; it
	// stays so until its content changes.
	Refused bool
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
	// Admit is the node a pod not yet running must be admitted to.
	Admit admission.Node
}

// Action is what must happen to one pod.
type Action struct {
	Op  Op
	Key string        // namespace/name
	Pod *manifest.Pod // the desired pod; nil for Remove, for Adopt of a pod no source names, and for Keep of a refused pod
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
	// Refusal is set when the node refused the pod at admission.
	Refusal *admission.Refusal
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
			// A refused pod has nothing running to adopt: it stays listed.
			if in.Supervise && e.Complete && !e.Supervised && e.NotAdoptable == "" && !e.Refused {
				kept = append(kept, Action{Op: Adopt, Key: e.Key(), UID: e.UID, Phase: phase(e)})
			}
		case in.Prune:
			removals = append(removals, Action{Op: Remove, Key: e.Key(), UID: e.UID})
		}
	}
	// The pods the node runs, as the kubelet counts them at admission: not
	// finished, not removed now; those of a desired pod's name are counted
	// as its action leaves them.
	var admitted []*corev1.Pod
	for _, e := range in.Node {
		if !wanted[e.Key()] && (!e.Owned || in.Broken[e.Source] || !in.Prune) {
			admitted = appendActive(admitted, e.Pod)
		}
	}
	out := removals
	for _, d := range in.Desired {
		existing := byKey[d.Pod.Key()]
		a := decideOne(in, d, existing)
		switch a.Op {
		case Create, Replace:
			// Admitted as the kubelet admits a pod it has not run yet:
			// the pods already running are never touched by it.
			if r := admission.Check(d.Pod.Pod, in.Admit, admitted); r != nil {
				a = Action{Op: Reject, Key: a.Key, Pod: d.Pod, UID: d.Pod.UID, Refusal: r,
					Err: fmt.Errorf("pod %s refused by the node: %w; nothing was started", a.Key, r)}
				for _, e := range existing {
					admitted = appendActive(admitted, e.Pod) // they stay
				}
				break
			}
			admitted = append(admitted, d.Pod.Pod)
		case Reject:
			for _, e := range existing {
				admitted = appendActive(admitted, e.Pod)
			}
		default: // kept, adopted or waiting: the pod there is the desired one
			for _, e := range existing {
				if e.UID == a.UID {
					admitted = appendActive(admitted, e.Pod)
				}
			}
		}
		out = append(out, a)
	}
	return append(out, kept...)
}

// appendActive appends p unless it is finished (or unknown): the kubelet
// admits against the pods that have not terminated.
func appendActive(pods []*corev1.Pod, p *corev1.Pod) []*corev1.Pod {
	if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return pods
	}
	return append(pods, p)
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
		case e.Refused:
			a.Op, a.Pod = Keep, nil // nothing of it runs: nothing to update
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
