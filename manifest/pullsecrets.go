package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

// checkPullSecrets checks that the credentials of each
// kubernetes.io/dockerconfigjson or dockercfg Secret parse (the API server
// checks that much); resolver.pullSecrets checks the pods' references.
func (r *reader) checkPullSecrets() {
	for _, s := range r.set.Secrets {
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
}

// pullSecrets checks that each name in the pod's spec.imagePullSecrets is a
// pull Secret of the pod's namespace (in the whole input: Resolve), which
// the pod then carries in Pod.PullSecrets. With no API server to fetch it
// from later, a missing Secret would mean an anonymous pull that fails far
// from its cause, so it is a problem here (the kubelet only warns).
func (r *resolver) pullSecrets() {
	p := r.pod
	for i, ref := range p.Spec.ImagePullSecrets {
		fld := field.NewPath("spec", "imagePullSecrets").Index(i).Child("name")
		s := r.idx.secrets[p.Namespace+"/"+ref.Name]
		switch {
		case ref.Name == "":
			r.problem(fld, "Required value")
		case s == nil:
			r.problem(fld, fmt.Sprintf("Secret %q not found in namespace %q: define it in the same input, with type %s",
				ref.Name, p.Namespace, registry.TypeDockerConfigJSON))
		case !registry.IsPullSecretType(s.Type):
			typ := s.Type
			if typ == "" {
				typ = corev1.SecretTypeOpaque
			}
			r.problem(fld, fmt.Sprintf("Secret %q has type %q; an image pull secret must have type %s or %s",
				ref.Name, typ, registry.TypeDockerConfigJSON, registry.TypeDockercfg))
		default:
			p.PullSecrets = append(p.PullSecrets, s)
		}
	}
}
