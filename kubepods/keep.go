package kubepods

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/kubenode/kept"
	"github.com/podrun/podrun/manifest"
)

// The node's autonomy: what the API server told it to run is kept on the
// device (package kept) as the source reads it, and stands for the API's
// pods at start until the API server answers (docs/node.md, "What is kept
// on the device, and when the API wins").

// Keeper is the node's kept state (*kept.Store).
type Keeper interface {
	Load() ([]kept.Pod, []*kept.Problem, error)
	Save(p kept.Pod) error
	Remove(uid types.UID) error
	Reconcile(live []*corev1.Pod) (removed []types.UID, aside []*kept.Problem, err error)
}

// FirstListWait bounds how long the source waits at start for the API
// server's first list before it runs the kept pods instead. An API server
// that answers lists the node's pods within it (a pod deleted while the
// node was down is then never started again); one that refuses the
// connection ends the wait at once; one that does not answer at all costs
// this much of a reboot's start.
const FirstListWait = time.Second

// startKept reads the kept pods and, unless the API server lists the
// node's pods first (synced closes) within FirstListWait, makes them what
// the source wants until it does. listFailed receives when a list or
// watch of the API server failed.
func (s *Source) startKept(ctx context.Context, synced, listFailed <-chan struct{}) {
	pods, problems, err := s.Kept.Load()
	for _, p := range problems {
		s.Log.Warn("kept state not run", "err", p.Error())
		s.keptProblems = append(s.keptProblems, p.Error())
	}
	if err != nil {
		s.Log.Error("kept state not read: the pods bound to the node run once the API server answers", "err", err)
		s.keptProblems = append(s.keptProblems, fmt.Sprintf("%v: not read", err))
	}
	s.keptMu.Lock()
	for _, p := range pods {
		s.kept[p.Pod.UID], s.keptAs[p.Pod.UID] = p, versions(p)
	}
	s.keptMu.Unlock()
	if len(pods) == 0 && len(s.keptProblems) == 0 {
		return
	}
	t := s.Clock.NewTimer(FirstListWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-synced:
		s.Log.Info("the API server listed the node's pods: its view stands, not the kept state", "kept", len(pods))
		return
	case <-listFailed:
	case <-t.C():
	}
	if s.informer.HasSynced() {
		return // the list came meanwhile: the loop reads it next
	}
	w := s.fromKept(ctx, pods)
	s.Log.Info("running the pods bound to the node from the kept state until the API server answers", "pods", len(w.Pods), "kept", len(pods))
	s.publish(w)
}

// fromKept is what the kept pods make the node run: as read (the same
// rules: a pod being deleted or finished is not started) against the
// objects kept with them, which also stand as the last read of those
// objects (read again from the API server as soon as it answers, kept
// when it does not). Nothing of it is the API's yet (not Synced, no API
// pods for the status writer).
func (s *Source) fromKept(ctx context.Context, pods []kept.Pod) Wanted {
	objects := map[types.UID]*manifest.Set{}
	api := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		set := p.Objects()
		objects[p.Pod.UID] = set
		api = append(api, p.Pod)
		for _, cm := range set.ConfigMaps {
			k := objectKey{kind: "ConfigMap", namespace: p.Pod.Namespace, name: cm.Name}
			if _, ok := s.objects[k]; !ok {
				s.objects[k] = object{cm: cm} // until its watch lists
			}
		}
		for _, sec := range set.Secrets {
			k := objectKey{kind: "Secret", namespace: p.Pod.Namespace, name: sec.Name}
			if _, ok := s.objects[k]; !ok {
				s.objects[k] = object{sec: sec}
			}
		}
	}
	w := s.convert(ctx, api, func(pod *corev1.Pod) *manifest.Set { return objects[pod.UID] }, false)
	w.Synced, w.API, w.Rejected = false, nil, nil
	return w
}

// keptTokens are the projected service-account tokens kept with the pod of
// uid (nil: none), for a kept pod run while the API server is away.
func (s *Source) keptTokens(uid types.UID) map[string]*authenticationv1.TokenRequest {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	return s.kept[uid].Tokens
}

// keep saves pod as the API gave it with the objects read for it (nil:
// those kept before), when its resourceVersion or theirs changed since the
// last save; a terminal phase kept (Finished) is not left. A pod that
// cannot be kept is logged once per error.
func (s *Source) keep(pod *corev1.Pod, set *manifest.Set, tokens map[string]*authenticationv1.TokenRequest) {
	if s.Kept == nil {
		return
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	prev, had := s.kept[pod.UID]
	var p kept.Pod
	switch {
	case set != nil:
		p = kept.New(pod, set)
		p.Tokens = tokens
	case had:
		p = kept.Pod{Pod: pod, ConfigMaps: prev.ConfigMaps, Secrets: prev.Secrets, Tokens: prev.Tokens}
	default:
		p = kept.Pod{Pod: pod}
	}
	if had && terminal(prev.Pod.Status.Phase) && !terminal(pod.Status.Phase) {
		p.Pod = pod.DeepCopy()
		p.Pod.Status = prev.Pod.Status // as it finished on the node
	}
	print := versions(p)
	if had && s.keptAs[pod.UID] == print {
		return
	}
	if err := s.Kept.Save(p); err != nil {
		if s.keptErr[pod.UID] != err.Error() {
			s.Log.Warn("not kept: the pod would not come back after a reboot without the API server", "pod", key(pod), "uid", pod.UID, "err", err)
			s.keptErr[pod.UID] = err.Error()
		}
		return
	}
	delete(s.keptErr, pod.UID)
	s.kept[pod.UID], s.keptAs[pod.UID] = p, print
}

// versions are the resourceVersions of a kept pod, its objects and its
// phase: what tells a change worth a Save (kept writes only when the
// content changed).
func versions(p kept.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", p.Pod.ResourceVersion, p.Pod.Status.Phase)
	for _, name := range sortedKeys(keysOf(p.ConfigMaps)) {
		fmt.Fprintf(&b, " cm/%s@%s", name, p.ConfigMaps[name].ResourceVersion)
	}
	for _, name := range sortedKeys(keysOf(p.Secrets)) {
		fmt.Fprintf(&b, " secret/%s@%s", name, p.Secrets[name].ResourceVersion)
	}
	return b.String()
}

// reconcile is the API's view winning over the kept state, after a read
// of the full list of the node's pods: the kept copies of the pods it no
// longer has are forgotten, and the files of another cluster that waited
// for the API server to answer are set aside (their problems say so from
// then on).
func (s *Source) reconcile(api []*corev1.Pod) {
	if s.Kept == nil {
		return
	}
	removed, aside, err := s.Kept.Reconcile(api)
	for _, p := range aside {
		s.Log.Warn("kept state set aside", "err", p.Error())
		s.keptProblems = replaceProblem(s.keptProblems, p)
	}
	if err != nil {
		s.Log.Warn("forgetting the kept copies of pods the API server no longer has", "err", err)
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for _, uid := range removed {
		s.Log.Info("forgot the kept copy of a pod the API server no longer has", "uid", uid)
		s.forgetLocked(uid)
	}
}

// replaceProblem is problems with p's in the place of what they said of
// its file before (or added).
func replaceProblem(problems []string, p *kept.Problem) []string {
	prefix := "kept state " + p.Path + " "
	for i, old := range problems {
		if strings.HasPrefix(old, prefix) {
			problems[i] = p.Error()
			return problems
		}
	}
	return append(problems, p.Error())
}

// Forget removes the kept copy of the pod of uid: its object was deleted
// and nothing of it is left on the node (the status writer).
func (s *Source) Forget(uid types.UID) {
	if s.Kept == nil {
		return
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if err := s.Kept.Remove(uid); err != nil {
		s.Log.Warn("forgetting the kept copy of a deleted pod", "uid", uid, "err", err)
		return
	}
	s.forgetLocked(uid)
}

func (s *Source) forgetLocked(uid types.UID) {
	delete(s.kept, uid)
	delete(s.keptAs, uid)
	delete(s.keptErr, uid)
}

// Finished keeps the status of each pod of statuses (the node's, by UID)
// that reached a terminal phase, so that a pod that finished while the API
// server did not answer is not run again after a reboot, and its status
// is written once it answers (KeptFinished) even when nothing of it is
// left on the node. Once the API has the phase, the source keeps it as
// read.
func (s *Source) Finished(statuses map[types.UID]*corev1.PodStatus) {
	if s.Kept == nil {
		return
	}
	uids := make([]string, 0, len(statuses))
	for uid, st := range statuses {
		if st != nil && terminal(st.Phase) {
			uids = append(uids, string(uid))
		}
	}
	sort.Strings(uids)
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for _, u := range uids {
		uid := types.UID(u)
		prev, ok := s.kept[uid]
		if !ok || terminal(prev.Pod.Status.Phase) {
			continue
		}
		p := prev
		p.Pod = prev.Pod.DeepCopy()
		p.Pod.Status = Merge(prev.Pod.Status, *statuses[uid])
		if err := s.Kept.Save(p); err != nil {
			s.Log.Warn("keeping the phase a pod finished in: it may run again after a reboot without the API server", "pod", p.Key(), "uid", uid, "phase", p.Pod.Status.Phase, "err", err)
			continue
		}
		s.Log.Info("kept the phase the pod finished in", "pod", p.Key(), "uid", uid, "phase", p.Pod.Status.Phase)
		s.kept[uid], s.keptAs[uid] = p, versions(p)
	}
}

// KeptFinished are the statuses kept of the pods that finished on the
// node (by UID): the status writer writes them when the API does not have
// them yet and nothing of the pod is left on the node (a reboot).
func (s *Source) KeptFinished() map[types.UID]*corev1.PodStatus {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	out := map[types.UID]*corev1.PodStatus{}
	for uid, p := range s.kept {
		if terminal(p.Pod.Status.Phase) {
			out[uid] = p.Pod.Status.DeepCopy()
		}
	}
	return out
}

// keptTerminal reports whether the pod of uid is kept finished.
func (s *Source) keptTerminal(uid types.UID) bool {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	p, ok := s.kept[uid]
	return ok && terminal(p.Pod.Status.Phase)
}
