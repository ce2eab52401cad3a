package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/registry"
)

// where is where an object was read: its source and, for an item of a
// List, the field path prefix ("items[2].").
type where struct {
	src    Source
	prefix string
}

// located records where a pod or Secret was read, for the checks that need
// the whole input (checkPullSecrets).
func (r *reader) located(obj any, src Source, prefix string) {
	if r.where == nil {
		r.where = map[any]where{}
	}
	r.where[obj] = where{src, prefix}
}

// checkPullSecrets checks image pull Secrets against the whole input: the
// credentials of each kubernetes.io/dockerconfigjson or dockercfg Secret
// parse (the API server checks that much), and each name in a pod's
// spec.imagePullSecrets is such a Secret of the pod's namespace, which it
// then carries in Pod.PullSecrets. With no API
// server to fetch it from later, a missing Secret would mean an anonymous
// pull that fails far from its cause, so it is a problem here (the kubelet
// only warns).
func (r *reader) checkPullSecrets() {
	secrets := map[string]*corev1.Secret{}
	for _, s := range r.set.Secrets {
		key := s.Namespace + "/" + s.Name
		if _, dup := secrets[key]; !dup {
			secrets[key] = s
		}
		if !registry.IsPullSecretType(s.Type) {
			continue
		}
		if _, err := registry.FromSecret(s); err != nil {
			w := r.where[s]
			dataKey := registry.SecretKey(s.Type)
			fld := "data[" + dataKey + "]"
			if _, ok := s.StringData[dataKey]; ok {
				fld = "stringData[" + dataKey + "]"
			} else if _, ok := s.Data[dataKey]; !ok {
				fld = "data"
			}
			r.problem(w.src, w.prefix+fld, err.Error())
		}
	}
	for _, p := range r.set.Pods {
		w := r.where[p.Pod]
		for i, ref := range p.Spec.ImagePullSecrets {
			fld := fmt.Sprintf("%sspec.imagePullSecrets[%d].name", w.prefix, i)
			s := secrets[p.Namespace+"/"+ref.Name]
			switch {
			case ref.Name == "":
				r.problem(p.Source, fld, "Required value")
			case s == nil:
				r.problem(p.Source, fld, fmt.Sprintf("Secret %q not found in namespace %q: define it in the same input, with type %s",
					ref.Name, p.Namespace, registry.TypeDockerConfigJSON))
			case !registry.IsPullSecretType(s.Type):
				typ := s.Type
				if typ == "" {
					typ = corev1.SecretTypeOpaque
				}
				r.problem(p.Source, fld, fmt.Sprintf("Secret %q has type %q; an image pull secret must have type %s or %s",
					ref.Name, typ, registry.TypeDockerConfigJSON, registry.TypeDockercfg))
			default:
				p.PullSecrets = append(p.PullSecrets, s)
			}
		}
	}
}
