// Listing: the pods on the node, found from containerd's labels and their
// records, with the status computed from what is found (Pods, Pod, PodOf,
// Named), and what is read of them (their logs, a Failed pod's failure).

package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/status"
)

// PodInfo is a pod found on the node: its containers (from containerd's
// labels, the source of truth) and its state file, when either exists.
type PodInfo struct {
	UID        string
	Namespace  string
	Name       string
	Source     string
	State      *State // nil when the state dir is gone
	Containers []engine.Container
	Pod        *corev1.Pod       // the applied manifest with its computed status; nil without state
	messages   map[string]string // termination messages, by container id
}

// Key is the pod's namespace/name.
func (p *PodInfo) Key() string { return p.Namespace + "/" + p.Name }

// Pods lists every pod podrun knows in its namespace, sorted by namespace/name.
// Whoever looks at the node this way (ps, status, down, the daemon's
// re-scans) also starts a stream keeper that was killed.
func (h *Host) Pods(ctx context.Context) ([]*PodInfo, error) {
	if err := h.engine.KeepStreams(ctx); err != nil {
		h.report(Event{Msg: fmt.Sprintf("the containers' output is not being logged: %v", err)})
	}
	uids, err := h.stateUIDs()
	if err != nil {
		return nil, err
	}
	return h.list(ctx, nil, uids)
}

// podsNamed lists the pods named key ("namespace/name"): their containers
// (a filtered listing), and the records of those and of uids (the pods of
// that name an earlier listing found, which may have no container).
func (h *Host) podsNamed(ctx context.Context, key string, uids []string) ([]*PodInfo, error) {
	ns, name, _ := strings.Cut(key, "/")
	pods, err := h.list(ctx, map[string]string{labels.PodNamespace: ns, labels.PodName: name}, slices.Clone(uids))
	if err != nil {
		return nil, err
	}
	var out []*PodInfo
	for _, p := range pods {
		if p.Namespace == ns && p.Name == name {
			out = append(out, p)
		}
	}
	return out, nil
}

// PodOf is pod uid, named key, as listed now; nil when it is not on the
// node. It lists that pod's containers alone.
func (h *Host) PodOf(ctx context.Context, key, uid string) (*PodInfo, error) {
	pods, err := h.podsNamed(ctx, key, []string{uid})
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.UID == uid && p.Pod != nil {
			return p, nil
		}
	}
	return nil, nil
}

// list lists the pods of the containers matching match and of the records
// of uids and of those containers.
func (h *Host) list(ctx context.Context, match map[string]string, uids []string) ([]*PodInfo, error) {
	ctrs, err := h.engine.List(ctx, match)
	if err != nil {
		return nil, err
	}
	byUID := map[string]*PodInfo{}
	get := func(uid string) *PodInfo {
		if byUID[uid] == nil {
			byUID[uid] = &PodInfo{UID: uid}
		}
		return byUID[uid]
	}
	for _, c := range ctrs {
		uid := c.Labels[labels.PodUID]
		if uid == "" {
			continue // not podrun's
		}
		if c.Task.State == engine.TaskStopped && c.Labels[labels.Reason] == "" && h.oomKilled(uid, c.ID) {
			// Ended while no podrun watched: its cgroup still tells an OOM kill.
			c.Labels[labels.Reason] = status.ReasonOOMKilled
		}
		if c.Labels[labels.Container] == labels.SandboxName && c.Task.State == "" {
			if _, ok := h.pinnedID(uid, nil); ok {
				c.Task.State = engine.TaskRunning // no pause: the sandbox runs while its namespaces are pinned
			}
		}
		p := get(uid)
		p.Containers = append(p.Containers, c)
		p.Namespace, p.Name, p.Source = c.Labels[labels.PodNamespace], c.Labels[labels.PodName], c.Labels[labels.Source]
	}
	for uid := range byUID {
		if !slices.Contains(uids, uid) {
			uids = append(uids, uid)
		}
	}
	for _, uid := range uids {
		st, err := h.loadState(uid)
		if err != nil || st == nil {
			if byUID[uid] == nil {
				byUID[uid] = &PodInfo{UID: uid} // a crash left a directory without state
			}
			continue
		}
		p := get(uid)
		p.State = st
		p.Namespace, p.Name, p.Source = st.Pod.Namespace, st.Pod.Name, st.Source
		if st.Pod != nil {
			p.messages = h.messages(st.Pod, uid, p.Containers)
		}
	}
	hostIP := "" // the node's address (looked up at most every hostIPsTTL)
	if ips := h.hostIPs(); len(ips) > 0 {
		hostIP = ips[0].String()
	}
	var out []*PodInfo
	for _, p := range byUID {
		p.Pod = p.withStatus(hostIP)
		h.markRolledBack(p) // a rollback's condition
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key(), out[j].Key()
		if a != b {
			return a < b
		}
		return out[i].UID < out[j].UID
	})
	return out, nil
}

// withStatus returns the applied pod with its status computed from the node.
func (p *PodInfo) withStatus(hostIP string) *corev1.Pod {
	if p.State == nil || p.State.Pod == nil {
		return nil
	}
	if p.State.Final != nil {
		pod := p.State.Pod.DeepCopy()
		pod.Status = *p.State.Final.DeepCopy()
		return pod
	}
	o := status.Observed{Containers: map[string][]engine.Container{}, PodIPs: p.State.PodIPs, HostIP: hostIP,
		Ended: p.State.Ended, ImageWait: p.State.ImagePull, ConfigWait: p.State.ConfigWait, Messages: p.messages}
	for i, c := range p.Containers {
		if o.Created.IsZero() || c.CreatedAt.Before(o.Created) {
			o.Created = c.CreatedAt
		}
		name := c.Labels[labels.Container]
		if name == labels.SandboxName {
			o.Sandbox = &p.Containers[i]
			if ips := c.Labels[labels.PodIPs]; ips != "" {
				o.PodIPs = strings.Split(ips, ",")
			}
			continue
		}
		o.Containers[name] = append(o.Containers[name], c)
	}
	pod := p.State.Pod.DeepCopy()
	pod.Status = status.Compute(pod, o)
	return pod
}

// ErrNoPod is returned when no pod has the given namespace/name.
var ErrNoPod = errors.New("pod not found")

// Pod returns the pod named t (the newest, if a replacement is half done).
func (h *Host) Pod(ctx context.Context, t Target) (*PodInfo, error) {
	pods, err := h.Pods(ctx)
	if err != nil {
		return nil, err
	}
	named, err := Named(pods, t)
	if err != nil {
		return nil, err
	}
	var found *PodInfo
	for _, p := range named {
		if p.Pod != nil && (found == nil || (p.State.Complete && !found.State.Complete)) {
			found = p
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoPod, t)
	}
	return found, nil
}

// Named picks the pods t names among pods: those of its namespace and
// name; when there is none, the daemon's static pods whose name in their
// file is t's (the kubelet names them <name>-<node>), if they are of one
// pod only.
func Named(pods []*PodInfo, t Target) ([]*PodInfo, error) {
	var exact, static []*PodInfo
	keys := map[string]bool{}
	for _, p := range pods {
		if p.Namespace != t.Namespace {
			continue
		}
		if p.Name == t.Name {
			exact = append(exact, p)
		} else if p.Pod != nil {
			if name, ok := manifest.StaticName(p.Pod); ok && name == t.Name {
				static = append(static, p)
				keys[p.Key()] = true
			}
		}
	}
	if len(exact) > 0 {
		return exact, nil
	}
	if len(keys) > 1 {
		return nil, fmt.Errorf("%s names several static pods (%s): name one in full", t, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
	}
	return static, nil
}

// ContainerName resolves -c: the named container (init or app), or, when
// name is "", the pod's first app container; defaulted tells the caller to
// say which one it picked when there are several.
func (p *PodInfo) ContainerName(name string) (resolved string, defaulted bool, err error) {
	spec := p.Pod.Spec
	if name == "" {
		return spec.Containers[0].Name, len(spec.Containers)+len(spec.InitContainers) > 1, nil
	}
	var names []string
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if c.Name == name {
			return name, false, nil
		}
		names = append(names, c.Name)
	}
	return "", false, fmt.Errorf("container %q is not in pod %s/%s (containers: %s)", name, p.Namespace, p.Name, strings.Join(names, ", "))
}

// Current is the latest attempt of a container, or nil.
func (p *PodInfo) Current(name string) *engine.Container {
	var attempts []engine.Container
	for _, c := range p.Containers {
		if c.Labels[labels.Container] == name {
			attempts = append(attempts, c)
		}
	}
	return status.Latest(attempts)
}

// LogDir is the directory of a container's log files.
func (h *Host) LogDir(p *PodInfo, container string) string {
	return filepath.Join(logs.PodDir(h.cfg.LogDir, p.Namespace, p.Name, p.UID), container)
}

// CollectLogs removes the logs of pods that are gone, per r (logs.GC). The
// pods that exist are asked of the runtime first: when it does not answer,
// nothing is removed.
func (h *Host) CollectLogs(ctx context.Context, r logs.Retention) ([]string, error) {
	pods, err := h.Pods(ctx)
	if err != nil {
		return nil, err
	}
	alive := map[string]bool{}
	for _, p := range pods {
		alive[filepath.Base(logs.PodDir(h.cfg.LogDir, p.Namespace, p.Name, p.UID))] = true
	}
	return logs.GC(h.cfg.LogDir, func(name string) bool { return alive[name] }, r, h.clock.Now())
}

// Failure explains a Failed pod as up does: why the node ended it, or each
// app container that failed, with its exit code and last log lines.
func (h *Host) Failure(p *PodInfo) error {
	if p.Pod == nil {
		return &PodFailedError{Pod: p.Key(), Reason: "its record is gone"}
	}
	if st := p.Pod.Status; st.Reason != "" {
		return &PodFailedError{Pod: p.Key(), Reason: st.Reason + ": " + st.Message}
	}
	var failures []string
	for _, cs := range p.Pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			tail := readTail(logs.Path(h.cfg.LogDir, p.Namespace, p.Name, p.UID, cs.Name, int(cs.RestartCount)))
			failures = append(failures, (&ExitError{Container: cs.Name, Code: uint32(t.ExitCode), OOMKilled: t.Reason == status.ReasonOOMKilled, Tail: tail}).Error())
		}
	}
	if len(failures) == 0 {
		failures = append(failures, "Failed")
	}
	return &PodFailedError{Pod: p.Key(), Reason: strings.Join(failures, "; ")}
}

// markRolledBack adds to a listed pod the condition Versions shows on it.
func (h *Host) markRolledBack(p *PodInfo) {
	if p.Pod == nil {
		return
	}
	if c := h.versions.Condition(p.Key(), p.UID); c != nil {
		p.Pod.Status.Conditions = append(p.Pod.Status.Conditions, *c)
	}
}

// PodFailedError is a pod that ran to completion and failed.
type PodFailedError struct {
	Pod    string
	Reason string
}

func (e *PodFailedError) Error() string { return fmt.Sprintf("pod %s failed: %s", e.Pod, e.Reason) }

// Target names a pod to take down.
type Target struct {
	Namespace, Name string
}

func (t Target) String() string { return t.Namespace + "/" + t.Name }
