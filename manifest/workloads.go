package manifest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Workload kinds (apps/v1) are read as the pods their controllers would
// make on one node: the pod template, replicas times (one for a DaemonSet),
// named and labelled as the controllers name and label them, each with its
// controller as owner. Names are derived from the template, not random, so
// that `up` of the same file is an idempotent apply.

// The labels the controllers put on their pods.
const (
	podTemplateHashLabel   = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"
	controllerRevisionHash = appsv1.ControllerRevisionHashLabelKey  // "controller-revision-hash"
	statefulSetPodName     = appsv1.StatefulSetPodNameLabel         // "statefulset.kubernetes.io/pod-name"
	podIndexLabel          = appsv1.PodIndexLabel                   // "apps.kubernetes.io/pod-index"
	templateGeneration     = appsv1.DeprecatedTemplateGeneration    // "pod-template-generation"
)

// workload is what the pods of a workload object are made from.
type workload struct {
	kind     string
	meta     metav1.ObjectMeta
	replicas int32
	selector *metav1.LabelSelector
	service  string   // a StatefulSet's serviceName
	start    int32    // a StatefulSet's first ordinal
	claims   []string // a StatefulSet's volumeClaimTemplates' names
	minReady int32    // a Deployment's minReadySeconds
	rollout  Rollout
}

// Rollout is how a workload's controller replaces its pods when the
// template or the scale changes, as podrun carries it out (run.Sync, with
// plan.Waves): a rollout, not a teardown.
type Rollout struct {
	Kind string
	// Replicas is the number of pods the workload wants.
	Replicas int
	// MaxSurge and MaxUnavailable bound the pods above and below Replicas
	// while old pods are replaced by new ones (a Deployment's
	// RollingUpdate, 25% and 25% by default; a DaemonSet's, 0 and 1).
	MaxSurge, MaxUnavailable int
	// Recreate: every old pod goes before a new one starts (a Deployment's
	// strategy Recreate).
	Recreate bool
	// Ordered: a StatefulSet's OrderedReady pod management: its pods start
	// one at a time in ordinal order, each Ready before the next, and go
	// the other way round.
	Ordered bool
	// ProgressDeadline is a Deployment's progressDeadlineSeconds: on one
	// node, a new pod not Ready by then is rolled back (the daemon's).
	ProgressDeadline *int32
}

// readWorkload reads a Deployment, ReplicaSet, StatefulSet or DaemonSet.
func (r *reader) readWorkload(src Source, prefix string, data []byte, raw map[string]any, kind string) {
	own, ownData, template, ok := r.splitTemplate(src, prefix, raw)
	if !ok {
		return
	}
	w, ok := r.decodeWorkload(src, prefix, ownData, own, kind)
	if !ok {
		return
	}
	pod := r.templatePod(src, prefix, w, template)
	if pod == nil {
		return
	}
	r.fieldProblems(src, prefix, validateWorkload(w, pod.Labels))
	key := w.meta.Namespace + "/" + kind + "/" + w.meta.Name
	r.set.Workloads = append(r.set.Workloads, key)
	if r.set.Rollouts == nil {
		r.set.Rollouts = map[string]Rollout{}
	}
	w.rollout.Kind, w.rollout.Replicas = kind, int(w.replicas)
	if kind == "DaemonSet" {
		w.rollout.Replicas = 1
	}
	r.set.Rollouts[key] = w.rollout
	r.names = append(r.names, named{strings.ToLower(kind), w.meta.Namespace + "/" + w.meta.Name, src})
	for _, p := range w.pods(pod) {
		r.addPod(p, src, prefix+"spec.template.")
	}
}

// splitTemplate splits an object into its own fields (raw without
// spec.template, and their JSON), decoded strictly by the caller, and its
// pod template, read as a Pod (templatePod).
func (r *reader) splitTemplate(src Source, prefix string, raw map[string]any) (own map[string]any, data []byte, template map[string]any, ok bool) {
	return r.splitSpec(src, prefix, raw, "template")
}

// splitSpec splits an object into its own fields (raw without spec.<key>,
// and their JSON) and spec.<key>, which must be an object.
func (r *reader) splitSpec(src Source, prefix string, raw map[string]any, key string) (own map[string]any, data []byte, part map[string]any, ok bool) {
	spec, _ := raw["spec"].(map[string]any)
	part, _ = spec[key].(map[string]any)
	if part == nil {
		r.problem(src, prefix+"spec."+key, "Required value")
		return nil, nil, nil, false
	}
	own, ownSpec := maps.Clone(raw), maps.Clone(spec)
	delete(ownSpec, key)
	own["spec"] = ownSpec
	data, err := json.Marshal(own)
	if err != nil {
		r.problem(src, strings.TrimSuffix(prefix, "."), err.Error())
		return nil, nil, nil, false
	}
	return own, data, part, true
}

// decodeWorkload decodes the workload's own fields and refuses those podrun
// cannot honour.
func (r *reader) decodeWorkload(src Source, prefix string, data []byte, raw map[string]any, kind string) (*workload, bool) {
	w := &workload{kind: kind, replicas: 1}
	var ok bool
	switch kind {
	case "Deployment":
		var d appsv1.Deployment
		if _, ok = r.decode(src, prefix, data, raw, &d); ok {
			w.meta, w.selector = d.ObjectMeta, d.Spec.Selector
			if d.Spec.Replicas != nil {
				w.replicas = *d.Spec.Replicas
			}
			if d.Spec.Paused {
				r.problem(src, prefix+"spec.paused", "a paused Deployment is not supported by podrun (it would never apply a change)")
			}
			w.rollout = r.deploymentRollout(src, prefix, d.Spec.Strategy, int(w.replicas))
			w.rollout.ProgressDeadline, w.minReady = d.Spec.ProgressDeadlineSeconds, d.Spec.MinReadySeconds
		}
	case "ReplicaSet":
		var rs appsv1.ReplicaSet
		if _, ok = r.decode(src, prefix, data, raw, &rs); ok {
			w.meta, w.selector = rs.ObjectMeta, rs.Spec.Selector
			if rs.Spec.Replicas != nil {
				w.replicas = *rs.Spec.Replicas
			}
		}
	case "StatefulSet":
		var ss appsv1.StatefulSet
		if _, ok = r.decode(src, prefix, data, raw, &ss); ok {
			w.meta, w.selector, w.service = ss.ObjectMeta, ss.Spec.Selector, ss.Spec.ServiceName
			if ss.Spec.Replicas != nil {
				w.replicas = *ss.Spec.Replicas
			}
			if ss.Spec.Ordinals != nil {
				w.start = ss.Spec.Ordinals.Start
			}
			for _, vct := range ss.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, vct.Name)
			}
			// One pod at a time whatever the policy (the rolling update's
			// maxUnavailable 1); OrderedReady also starts them in order.
			w.rollout = Rollout{MaxUnavailable: 1, Ordered: ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement}
			if u := ss.Spec.UpdateStrategy; u.Type == appsv1.OnDeleteStatefulSetStrategyType {
				r.problem(src, prefix+"spec.updateStrategy.type", "OnDelete is not supported by podrun: a changed template replaces the pods (RollingUpdate)")
			} else if u.RollingUpdate != nil && (u.RollingUpdate.Partition != nil && *u.RollingUpdate.Partition != 0 || u.RollingUpdate.MaxUnavailable != nil) {
				r.problem(src, prefix+"spec.updateStrategy.rollingUpdate", "partition and maxUnavailable are not supported by podrun: every pod is updated, one at a time")
			}
		}
	case "DaemonSet":
		var ds appsv1.DaemonSet
		if _, ok = r.decode(src, prefix, data, raw, &ds); ok {
			w.meta, w.selector = ds.ObjectMeta, ds.Spec.Selector
			w.rollout = r.daemonSetRollout(src, prefix, ds.Spec.UpdateStrategy)
		}
	}
	if !ok {
		return nil, false
	}
	clearServerFields(&w.meta)
	if w.meta.Namespace == "" {
		w.meta.Namespace = metav1.NamespaceDefault
	}
	r.readMeta(src, prefix, &w.meta)
	return w, true
}

// deploymentRollout reads a Deployment's strategy: RollingUpdate's
// maxSurge (rounded up) and maxUnavailable (rounded down) of replicas, as
// the deployment controller resolves them, or Recreate.
func (r *reader) deploymentRollout(src Source, prefix string, s appsv1.DeploymentStrategy, replicas int) Rollout {
	if s.Type == appsv1.RecreateDeploymentStrategyType {
		if s.RollingUpdate != nil {
			r.problem(src, prefix+"spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'")
		}
		return Rollout{Recreate: true}
	}
	surge, unavailable := intstr.FromString("25%"), intstr.FromString("25%")
	if ru := s.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	return r.rollingUpdate(src, prefix+"spec.strategy.rollingUpdate.", surge, unavailable, replicas)
}

// daemonSetRollout reads a DaemonSet's update strategy (maxUnavailable 1,
// maxSurge 0 by default) for its one pod on this node.
func (r *reader) daemonSetRollout(src Source, prefix string, s appsv1.DaemonSetUpdateStrategy) Rollout {
	if s.Type == appsv1.OnDeleteDaemonSetStrategyType {
		r.problem(src, prefix+"spec.updateStrategy.type", "OnDelete is not supported by podrun: a changed template replaces the pod (RollingUpdate)")
	}
	surge, unavailable := intstr.FromInt32(0), intstr.FromInt32(1)
	if ru := s.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	return r.rollingUpdate(src, prefix+"spec.updateStrategy.rollingUpdate.", surge, unavailable, 1)
}

// rollingUpdate resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas as the controllers' ResolveFenceposts does, after
// the API server's checks: each a count or a percentage, not negative, not
// both 0.
func (r *reader) rollingUpdate(src Source, prefix string, surge, unavailable intstr.IntOrString, replicas int) Rollout {
	s, serr := intstr.GetScaledValueFromIntOrPercent(&surge, replicas, true)
	u, uerr := intstr.GetScaledValueFromIntOrPercent(&unavailable, replicas, false)
	bad := false
	for _, e := range []struct {
		name string
		v    int
		err  error
	}{{"maxSurge", s, serr}, {"maxUnavailable", u, uerr}} {
		switch {
		case e.err != nil:
			r.problem(src, prefix+e.name, "Invalid value: "+e.err.Error())
			bad = true
		case e.v < 0:
			r.problem(src, prefix+e.name, "Invalid value: must be greater than or equal to 0")
			bad = true
		}
	}
	if !bad && intOrPercent(surge) == 0 && intOrPercent(unavailable) == 0 {
		r.problem(src, prefix+"maxUnavailable", "Invalid value: may not be 0 when `maxSurge` is 0")
	}
	if s == 0 && u == 0 {
		u = 1 // a percentage that rounds to nothing: one at a time
	}
	return Rollout{MaxSurge: max(s, 0), MaxUnavailable: max(u, 0)}
}

// intOrPercent is the number of a count or a percentage ("25%" is 25).
func intOrPercent(v intstr.IntOrString) int {
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		return -1
	}
	return n
}

// templatePod reads the template as a Pod of the workload's namespace (its
// problems at spec.template.…), without adding it to the set.
func (r *reader) templatePod(src Source, prefix string, w *workload, template map[string]any) *Pod {
	meta, _ := template["metadata"].(map[string]any)
	podMeta := maps.Clone(meta)
	if podMeta == nil {
		podMeta = map[string]any{}
	}
	podMeta["name"] = w.meta.Name // the pods' names are set below
	podMeta["namespace"] = w.meta.Namespace
	spec := template["spec"]
	if m, ok := spec.(map[string]any); ok && len(w.claims) > 0 {
		// The claims' volumes, as each pod will have them (pods), so that
		// the template's mounts of them validate.
		withClaims := maps.Clone(m)
		old, _ := m["volumes"].([]any)
		claim := map[string]bool{}
		for _, c := range w.claims {
			claim[c] = true
		}
		var vols []any
		for _, v := range old { // a volume of a claim's name is replaced
			if vm, ok := v.(map[string]any); !ok || !claim[fmt.Sprint(vm["name"])] {
				vols = append(vols, v)
			}
		}
		for _, c := range w.claims {
			vols = append(vols, map[string]any{"name": c, "persistentVolumeClaim": map[string]any{"claimName": c}})
		}
		withClaims["volumes"] = vols
		spec = withClaims
	}
	raw := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": podMeta, "spec": spec}
	data, err := json.Marshal(raw)
	if err != nil {
		r.problem(src, prefix+"spec.template", err.Error())
		return nil
	}
	return r.decodePod(src, prefix+"spec.template.", data, raw)
}

// validateWorkload is the API server's check of a workload: a selector
// that is not empty and selects the template's labels; replicas not
// negative; a Deployment's progressDeadlineSeconds not negative and above
// its minReadySeconds (ValidateDeploymentSpec).
func validateWorkload(w *workload, podLabels map[string]string) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if w.replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), w.replicas, "must be greater than or equal to 0"))
	}
	if d := w.rollout.ProgressDeadline; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*d), spec.Child("progressDeadlineSeconds"))...)
		if *d <= w.minReady {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), *d, "must be greater than minReadySeconds"))
		}
	}
	if w.selector == nil || (len(w.selector.MatchLabels) == 0 && len(w.selector.MatchExpressions) == 0) {
		return append(errs, field.Required(spec.Child("selector"), "empty selector is invalid for deployment"))
	}
	sel, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return append(errs, field.Invalid(spec.Child("selector"), w.selector, err.Error()))
	}
	if !sel.Matches(labels.Set(podLabels)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), podLabels, "`selector` does not match template `labels`"))
	}
	return errs
}

// pods are the workload's pods, made from the template pod.
func (w *workload) pods(template *Pod) []*Pod {
	hash := templateHash(template.Pod)
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: w.kind, Name: w.meta.Name,
		Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
	n := w.replicas
	switch w.kind {
	case "Deployment":
		// The pods' controller is the Deployment's ReplicaSet of this template.
		owner.Kind, owner.Name = "ReplicaSet", w.meta.Name+"-"+hash
	case "DaemonSet":
		n = 1 // this node
	}
	owner.UID = types.UID(nameUUID(w.meta.Namespace + "/" + owner.Kind + "/" + owner.Name))
	var out []*Pod
	for i := range n {
		pod := template.Pod.DeepCopy()
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.OwnerReferences = []metav1.OwnerReference{owner}
		switch w.kind {
		case "Deployment":
			pod.Name = owner.Name + "-" + suffix(owner.Name, i)
			pod.Labels[podTemplateHashLabel] = hash
		case "ReplicaSet":
			pod.Name = w.meta.Name + "-" + suffix(w.meta.Name+"-"+hash, i)
		case "DaemonSet":
			pod.Name = w.meta.Name + "-" + suffix(w.meta.Name+"-"+hash, i)
			pod.Labels[controllerRevisionHash] = hash
			pod.Labels[templateGeneration] = "1"
		case "StatefulSet":
			ordinal := fmt.Sprint(w.start + i)
			pod.Name = w.meta.Name + "-" + ordinal
			pod.Labels[controllerRevisionHash] = w.meta.Name + "-" + hash
			pod.Labels[statefulSetPodName] = pod.Name
			pod.Labels[podIndexLabel] = ordinal
			// A stable network identity: <name>-<ordinal>.<serviceName>.
			pod.Spec.Hostname, pod.Spec.Subdomain = pod.Name, w.service
			// Stable storage: the claim <template>-<pod> of each template,
			// as the volume of the template's name.
			for _, c := range w.claims {
				setClaimVolume(pod, c, c+"-"+pod.Name)
			}
		}
		p := &Pod{Pod: pod, Source: template.Source, PullSecrets: template.PullSecrets}
		p.Hash, p.UID = Identity(pod)
		pod.UID = types.UID(p.UID)
		out = append(out, p)
	}
	return out
}

// templateHash names a pod template as the controllers' pod-template-hash
// and controller-revision-hash do (fnv-32a, safely encoded), from the
// template as podrun reads it: stable for the same template.
func templateHash(pod *corev1.Pod) string {
	data, _ := json.Marshal(identified{Labels: pod.Labels, Annotations: pod.Annotations, Spec: pod.Spec})
	h := fnv.New32a()
	h.Write(data)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// suffix is the five characters the controllers add to a pod's name (of
// the alphabet of their random names), derived from the owner and the
// replica's index instead of drawn at random.
func suffix(owner string, i int32) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", owner, i))
	b := make([]byte, 5)
	for k := range b {
		b[k] = alphabet[int(sum[k])%len(alphabet)]
	}
	return string(b)
}

// setClaimVolume makes the pod's volume name the claim claim (replacing a
// volume of that name, as the StatefulSet controller does).
func setClaimVolume(pod *corev1.Pod, name, claim string) {
	v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			pod.Spec.Volumes[i] = v
			return
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v)
}

// OwnedBy tells the pods made from one of workloads ("namespace/Kind/name",
// as Set.Workloads lists them): by a workload, or by a Job a CronJob of
// them made. A nil pod (its record lost) is no one's.
func OwnedBy(workloads []string) func(*corev1.Pod) bool {
	set := map[string]bool{}
	for _, w := range workloads {
		set[w] = true
	}
	return func(p *corev1.Pod) bool {
		if p == nil {
			return false
		}
		cj := CronJobOf(p)
		return set[p.Namespace+"/"+Workload(p)] || cj != "" && set[p.Namespace+"/CronJob/"+cj]
	}
}

// Workload is the workload a pod was made from, as its file names it
// ("Deployment/web", "StatefulSet/db", "Job/pi"), or "" for a bare pod. A
// Deployment's pods are owned by its ReplicaSet <name>-<pod-template-hash>.
func Workload(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || (ref.APIVersion != "apps/v1" && (ref.APIVersion != "batch/v1" || ref.Kind != "Job")) {
		return ""
	}
	if hash := pod.Labels[podTemplateHashLabel]; ref.Kind == "ReplicaSet" && hash != "" {
		if name, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
			return "Deployment/" + name
		}
	}
	return ref.Kind + "/" + ref.Name
}
