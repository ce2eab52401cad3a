package manifest

import (
	"fmt"
	"io"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The references of a pod to ConfigMaps and Secrets (volumes, env, envFrom,
// imagePullSecrets) are checked against every object of the input, as the
// API server holds them: a missing object or key that the pod does not mark
// optional is a problem before anything runs (the kubelet would leave the
// pod in ContainerCreating or CreateContainerConfigError, waiting for an
// object podrun has no API server to receive). The objects found travel with
// the pod (Pod.ConfigMaps, Pod.Secrets, Pod.PullSecrets).

// ParseUnresolved is Options.Parse without checking the pods' references to
// ConfigMaps and Secrets, for an input read in parts (the daemon reads its
// directory file by file): Resolve then checks them against every part.
func (o Options) ParseUnresolved(file string, data []byte) (*Set, error) {
	return o.readData(true, file, data)
}

// LoadObjects reads files of ConfigMap and Secret documents that are used
// as if they were part of an input (`podrun up --configmap FILE`, like
// podman kube play's); a Pod in such a file is a problem.
func LoadObjects(paths []string) (*Set, error) {
	r := reader{unresolved: true, dropped: map[string]int{}}
	for _, p := range paths {
		if p == "-" { // stdin is the input's
			r.problem(Source{File: p}, "", "a --configmap file must be a file or directory, not stdin")
			continue
		}
		r.load(p, nil)
	}
	for _, p := range r.set.Pods {
		w := r.where[p.Pod]
		r.problem(w.src, w.prefix+"kind", "a --configmap file holds ConfigMap and Secret objects only, not a Pod")
	}
	return r.result()
}

// LoadUnresolved is Options.Load without checking the pods' references to
// ConfigMaps and Secrets, for a caller that needs only the pods' names
// (`podrun down FILE`) or resolves them with Resolve.
func (o Options) LoadUnresolved(paths []string, stdin io.Reader) (*Set, error) {
	return o.read(true, paths, stdin)
}

// LoadWith is Options.Load with the ConfigMaps and Secrets of objects
// (LoadObjects) available to the pods' references, after those of the input
// itself.
func (o Options) LoadWith(paths []string, stdin io.Reader, objects *Set) (*Set, error) {
	set, err := o.LoadUnresolved(paths, stdin)
	if err != nil {
		return nil, err
	}
	return Resolve(set, objects)
}

// Resolve returns a copy of set whose pods carry the ConfigMaps, Secrets and
// image pull Secrets they reference, looked up among the objects of set,
// then of others in order (the first object of a namespace/name wins), or
// the Problems of every reference that cannot be satisfied. set is not
// changed, so that a pod handed out before can still be read.
func Resolve(set *Set, others ...*Set) (*Set, error) {
	out, problems := resolve(set, others...)
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

func resolve(set *Set, others ...*Set) (*Set, Problems) {
	idx := newObjectIndex(append([]*Set{set}, others...))
	out := &Set{ConfigMaps: set.ConfigMaps, Secrets: set.Secrets, Notes: set.Notes, Warnings: set.Warnings, Workloads: set.Workloads, Rollouts: set.Rollouts, where: set.where}
	var problems Problems
	one := func(p *Pod) *Pod {
		c := *p
		c.PullSecrets, c.ConfigMaps, c.Secrets = nil, map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}
		w := set.where[p.Pod]
		res := resolver{pod: &c, idx: idx, src: p.Source, prefix: w.prefix}
		res.pullSecrets()
		res.configRefs()
		problems = append(problems, res.problems...)
		return &c
	}
	for _, p := range set.Pods {
		out.Pods = append(out.Pods, one(p))
	}
	for _, j := range set.Jobs {
		c := *j
		c.template = one(j.template)
		out.Jobs = append(out.Jobs, &c)
	}
	for _, cj := range set.CronJobs {
		c, job := *cj, *cj.job
		job.template = one(cj.job.template)
		c.job = &job
		out.CronJobs = append(out.CronJobs, &c)
	}
	return out, problems
}

// objectIndex finds ConfigMaps and Secrets by namespace/name.
type objectIndex struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func newObjectIndex(sets []*Set) objectIndex {
	idx := objectIndex{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, s := range sets {
		if s == nil {
			continue
		}
		for _, cm := range s.ConfigMaps {
			if key := cm.Namespace + "/" + cm.Name; idx.configMaps[key] == nil {
				idx.configMaps[key] = cm
			}
		}
		for _, sec := range s.Secrets {
			if key := sec.Namespace + "/" + sec.Name; idx.secrets[key] == nil {
				idx.secrets[key] = sec
			}
		}
	}
	return idx
}

// resolver checks the references of one pod.
type resolver struct {
	pod      *Pod
	idx      objectIndex
	src      Source
	prefix   string // of the pod within its document ("items[2].")
	problems Problems
}

func (r *resolver) problem(fld *field.Path, msg string) {
	r.problems = append(r.problems, Problem{Source: r.src, Field: r.prefix + fld.String(), Msg: msg})
}

// notFound is the problem of a missing object.
func (r *resolver) notFound(fld *field.Path, kind, name string) {
	r.problem(fld, fmt.Sprintf("%s %q not found in namespace %q: define it in the same input, in a --configmap file, or (daemon) in the same directory, or mark the reference optional",
		kind, name, r.pod.Namespace))
}

// configMap returns the ConfigMap a reference names, recording it on the
// pod; a missing one is a problem unless optional.
func (r *resolver) configMap(name string, optional *bool, fld *field.Path) *corev1.ConfigMap {
	cm := r.idx.configMaps[r.pod.Namespace+"/"+name]
	switch {
	case cm != nil:
		r.pod.ConfigMaps[name] = cm
	case !isTrue(optional):
		r.notFound(fld, "ConfigMap", name)
	}
	return cm
}

func (r *resolver) secret(name string, optional *bool, fld *field.Path) *corev1.Secret {
	s := r.idx.secrets[r.pod.Namespace+"/"+name]
	switch {
	case s != nil:
		r.pod.Secrets[name] = s
	case !isTrue(optional):
		r.notFound(fld, "Secret", name)
	}
	return s
}

// keyMissing records a problem for a key the object lacks, unless optional.
func (r *resolver) keyMissing(has bool, kind, name, key string, optional *bool, fld *field.Path) {
	if !has && !isTrue(optional) {
		r.problem(fld, fmt.Sprintf("%s %q has no key %q", kind, name, key))
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

func hasConfigMapKey(cm *corev1.ConfigMap, key string) bool {
	_, inData := cm.Data[key]
	_, inBinary := cm.BinaryData[key]
	return inData || inBinary
}

func hasSecretKey(s *corev1.Secret, key string) bool {
	_, ok := s.Data[key]
	return ok
}

// configRefs checks the references of volumes and of the env and envFrom of
// init and app containers.
func (r *resolver) configRefs() {
	spec := field.NewPath("spec")
	for i, v := range r.pod.Spec.Volumes {
		fld := spec.Child("volumes").Index(i)
		switch {
		case v.ConfigMap != nil:
			r.configMapItems(v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, fld.Child("configMap"))
		case v.Secret != nil:
			r.secretItems(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, fld.Child("secret"), "secretName")
		case v.DownwardAPI != nil:
			r.downwardItems(v.DownwardAPI.Items, fld.Child("downwardAPI", "items"))
		case v.Projected != nil:
			for j, s := range v.Projected.Sources {
				sfld := fld.Child("projected", "sources").Index(j)
				if s.ConfigMap != nil {
					r.configMapItems(s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, sfld.Child("configMap"))
				}
				if s.Secret != nil {
					r.secretItems(s.Secret.Name, s.Secret.Items, s.Secret.Optional, sfld.Child("secret"), "name")
				}
				if s.DownwardAPI != nil {
					r.downwardItems(s.DownwardAPI.Items, sfld.Child("downwardAPI", "items"))
				}
			}
		}
	}
	for i := range r.pod.Spec.InitContainers {
		r.containerRefs(&r.pod.Spec.InitContainers[i], spec.Child("initContainers").Index(i))
	}
	for i := range r.pod.Spec.Containers {
		r.containerRefs(&r.pod.Spec.Containers[i], spec.Child("containers").Index(i))
	}
}

func (r *resolver) configMapItems(name string, items []corev1.KeyToPath, optional *bool, fld *field.Path) {
	cm := r.configMap(name, optional, fld.Child("name"))
	if cm == nil {
		return
	}
	for j, it := range items {
		r.keyMissing(hasConfigMapKey(cm, it.Key), "ConfigMap", name, it.Key, optional, fld.Child("items").Index(j).Child("key"))
	}
}

func (r *resolver) secretItems(name string, items []corev1.KeyToPath, optional *bool, fld *field.Path, nameField string) {
	s := r.secret(name, optional, fld.Child(nameField))
	if s == nil {
		return
	}
	for j, it := range items {
		r.keyMissing(hasSecretKey(s, it.Key), "Secret", name, it.Key, optional, fld.Child("items").Index(j).Child("key"))
	}
}

// downwardItems checks that each resourceFieldRef names a container of the
// pod: the kubelet would fail the volume's setup, and the pod with it.
func (r *resolver) downwardItems(items []corev1.DownwardAPIVolumeFile, fld *field.Path) {
	for i, it := range items {
		ref := it.ResourceFieldRef
		if ref == nil || ref.ContainerName == "" || r.hasContainer(ref.ContainerName) {
			continue
		}
		r.problem(fld.Index(i).Child("resourceFieldRef", "containerName"), fmt.Sprintf("container %q not found in the pod", ref.ContainerName))
	}
}

func (r *resolver) hasContainer(name string) bool {
	for _, list := range [][]corev1.Container{r.pod.Spec.InitContainers, r.pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return true
			}
		}
	}
	return false
}

func (r *resolver) containerRefs(c *corev1.Container, fld *field.Path) {
	for i, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		efld := fld.Child("env").Index(i).Child("valueFrom")
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			f := efld.Child("configMapKeyRef")
			if cm := r.configMap(ref.Name, ref.Optional, f.Child("name")); cm != nil {
				// The kubelet reads env values from data only: a key of
				// binaryData alone fails every start, so it is missing here.
				_, inData := cm.Data[ref.Key]
				r.keyMissing(inData, "ConfigMap", ref.Name, ref.Key, ref.Optional, f.Child("key"))
			}
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			f := efld.Child("secretKeyRef")
			if s := r.secret(ref.Name, ref.Optional, f.Child("name")); s != nil {
				r.keyMissing(hasSecretKey(s, ref.Key), "Secret", ref.Name, ref.Key, ref.Optional, f.Child("key"))
			}
		}
	}
	for i, e := range c.EnvFrom {
		efld := fld.Child("envFrom").Index(i)
		if ref := e.ConfigMapRef; ref != nil {
			r.configMap(ref.Name, ref.Optional, efld.Child("configMapRef", "name"))
		}
		if ref := e.SecretRef; ref != nil {
			r.secret(ref.Name, ref.Optional, efld.Child("secretRef", "name"))
		}
	}
}

// readConfigData checks the keys of a ConfigMap as the API server does
// (ValidateConfigMap): valid key names, none in both data and binaryData,
// at most 1 MiB in all.
func (r *reader) readConfigData(src Source, prefix string, cm *corev1.ConfigMap) {
	var errs field.ErrorList
	size := 0
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		errs = append(errs, dataKey(field.NewPath("data"), k)...)
		size += len(k) + len(cm.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		fld := field.NewPath("binaryData")
		errs = append(errs, dataKey(fld, k)...)
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(fld.Key(k), k, "duplicate of key present in data"))
		}
		size += len(k) + len(cm.BinaryData[k])
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
	}
	r.fieldProblems(src, prefix, errs)
}

// readSecretData checks the keys of a Secret's data and stringData
// (ValidateSecret); mergeStringData later folds stringData into data.
func (r *reader) readSecretData(src Source, prefix string, s *corev1.Secret) {
	var errs field.ErrorList
	size := 0
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		errs = append(errs, dataKey(field.NewPath("data"), k)...)
		size += len(s.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.StringData)) {
		errs = append(errs, dataKey(field.NewPath("stringData"), k)...)
		if _, dup := s.Data[k]; !dup {
			size += len(s.StringData[k])
		}
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
	}
	r.fieldProblems(src, prefix, errs)
}

// dataKey checks a key of a ConfigMap's or Secret's data.
func dataKey(fld *field.Path, key string) field.ErrorList {
	return invalid(fld.Key(key), key, validation.IsConfigMapKey(key))
}

// mergeStringData folds each Secret's stringData into its data, stringData
// winning, and clears it, as the API server stores a Secret.
func (r *reader) mergeStringData() {
	for _, s := range r.set.Secrets {
		if len(s.StringData) == 0 {
			continue
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}
