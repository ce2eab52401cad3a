package manifest

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/downward"
)

// defaultEnv sets the API server's defaults of env sources: apiVersion v1
// of a fieldRef (SetDefaults_ObjectFieldSelector), optional false of a
// fileKeyRef (zz_generated.defaults.go).
func defaultEnv(c *corev1.Container) {
	for i := range c.Env {
		vf := c.Env[i].ValueFrom
		if vf == nil {
			continue
		}
		if vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
		if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
			vf.FileKeyRef.Optional = new(false)
		}
	}
}

// validateEnvSources checks the env valueFrom, envFrom and subPathExpr of
// every init and app container as the API server does (validateEnvVarValueFrom,
// ValidateEnvFrom, ValidateVolumeMounts in pkg/apis/core/validation). Beyond
// the API server, a resourceFieldRef's containerName must name a container of
// the pod: the kubelet would fail that container's every start. Whether the
// ConfigMaps, Secrets and keys named exist is checked by configrefs.go.
func validateEnvSources(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	names := sets.New[string]()
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			names.Insert(list[i].Name)
		}
	}
	emptyDirs := sets.New[string]()
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			emptyDirs.Insert(v.Name)
		}
	}
	var errs field.ErrorList
	check := func(list []corev1.Container, lfld *field.Path) {
		for i := range list {
			c, cfld := &list[i], lfld.Index(i)
			for j := range c.Env {
				errs = append(errs, validateValueFrom(&c.Env[j], cfld.Child("env").Index(j), names, emptyDirs)...)
			}
			for j := range c.EnvFrom {
				errs = append(errs, validateEnvFrom(&c.EnvFrom[j], cfld.Child("envFrom").Index(j))...)
			}
			for j := range c.VolumeMounts {
				errs = append(errs, validateSubPathExpr(&c.VolumeMounts[j], cfld.Child("volumeMounts").Index(j))...)
			}
		}
	}
	check(spec.InitContainers, fld.Child("initContainers"))
	check(spec.Containers, fld.Child("containers"))
	return errs
}

// validateValueFrom checks that an env var has at most one of value and
// valueFrom, and valueFrom exactly one source, itself valid.
func validateValueFrom(e *corev1.EnvVar, fld *field.Path, containers, emptyDirs sets.Set[string]) field.ErrorList {
	vf := e.ValueFrom
	if vf == nil {
		return nil
	}
	vfld := fld.Child("valueFrom")
	var errs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateFieldRef(vf.FieldRef, vfld.Child("fieldRef"), envFieldPaths)...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateEnvResourceRef(vf.ResourceFieldRef, vfld.Child("resourceFieldRef"), containers)...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		f := vfld.Child("configMapKeyRef")
		errs = append(errs, validateObjectName(vf.ConfigMapKeyRef.Name, f.Child("name"))...) // configvolumes.go
		errs = append(errs, validateKey(vf.ConfigMapKeyRef.Key, f.Child("key"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		f := vfld.Child("secretKeyRef")
		errs = append(errs, validateObjectName(vf.SecretKeyRef.Name, f.Child("name"))...)
		errs = append(errs, validateKey(vf.SecretKeyRef.Key, f.Child("key"))...)
	}
	if vf.FileKeyRef != nil {
		n++
		errs = append(errs, validateFileKeyRef(vf.FileKeyRef, vfld.Child("fileKeyRef"), emptyDirs)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(vfld, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case e.Value != "":
		errs = append(errs, field.Invalid(vfld, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(vfld, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateKey checks a ConfigMap or Secret key.
func validateKey(key string, fld *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	return invalid(fld, key, validation.IsConfigMapKey(key))
}

// envFieldPaths are the fieldRef paths an env var may read, besides the
// metadata.labels['k'] and metadata.annotations['k'] forms (the API server's
// validEnvDownwardAPIFieldPathExpressions).
var envFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// validateFieldRef checks a fieldRef of an env or a downwardAPI volume item
// as the API server's validateObjectFieldSelector: apiVersion v1, and a
// field path among allowed ("spec.host", the old name of spec.nodeName,
// counts as it) or a labels['k'] or annotations['k'] subscript.
func validateFieldRef(ref *corev1.ObjectFieldSelector, fld *field.Path, allowed []string) field.ErrorList {
	switch {
	case ref.APIVersion == "":
		return field.ErrorList{field.Required(fld.Child("apiVersion"), "")}
	case ref.APIVersion != "v1":
		return field.ErrorList{field.Invalid(fld.Child("fieldPath"), ref.FieldPath, "error converting fieldPath: unsupported pod version: "+ref.APIVersion)}
	case ref.FieldPath == "":
		return field.ErrorList{field.Required(fld.Child("fieldPath"), "")}
	}
	if p, key, ok := downward.SplitSubscript(ref.FieldPath); ok {
		switch p {
		case "metadata.annotations":
			return invalid(fld, key, validation.IsQualifiedName(strings.ToLower(key)))
		case "metadata.labels":
			return invalid(fld, key, validation.IsQualifiedName(key))
		}
		return field.ErrorList{field.Invalid(fld.Child("fieldPath"), ref.FieldPath, "error converting fieldPath: field label does not support subscript: "+ref.FieldPath)}
	}
	p := ref.FieldPath
	if p == "spec.host" {
		p = "spec.nodeName"
	}
	if slices.Contains(allowed, p) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fld.Child("fieldPath"), p, allowed)}
}

// validateEnvResourceRef checks an env resourceFieldRef: containerName is
// optional (the env's own container) but must name a container of the pod,
// and the resource and divisor must be supported (downwardResources,
// configvolumes.go).
func validateEnvResourceRef(ref *corev1.ResourceFieldSelector, fld *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if ref.ContainerName != "" && !containers.Has(ref.ContainerName) {
		errs = append(errs, field.NotFound(fld.Child("containerName"), ref.ContainerName))
	}
	return append(errs, validateResourceSelector(ref, fld)...)
}

// validateResourceSelector checks the resource and divisor of a
// resourceFieldRef, of an env or a downwardAPI volume item alike (the API
// server's validateContainerResourceFieldSelector).
func validateResourceSelector(ref *corev1.ResourceFieldSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r := ref.Resource; {
	case r == "":
		errs = append(errs, field.Required(fld.Child("resource"), ""))
	case sets.New(downwardResources...).Has(r), isHugePages(r):
	default:
		errs = append(errs, field.NotSupported(fld.Child("resource"), r, downwardResources))
	}
	return append(errs, validateDivisor(ref.Resource, ref.Divisor, fld.Child("divisor"))...)
}

func isHugePages(resource string) bool {
	return strings.HasPrefix(resource, "limits.hugepages-") || strings.HasPrefix(resource, "requests.hugepages-")
}

var (
	cpuDivisors  = sets.New("1m", "1")
	byteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

// validateDivisor checks a resourceFieldRef divisor as the API server does
// (validateContainerResourceDivisor): unset, or one unit of the resource.
func validateDivisor(res string, divisor resource.Quantity, fld *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	switch {
	case res == "limits.cpu", res == "requests.cpu":
		if !cpuDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(fld, res, "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
	case res == "limits.memory", res == "requests.memory":
		if !byteDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(fld, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource")}
		}
	case res == "limits.ephemeral-storage", res == "requests.ephemeral-storage":
		if !byteDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(fld, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource")}
		}
	case isHugePages(res):
		if !byteDivisors.Has(divisor.String()) {
			return field.ErrorList{field.Invalid(fld, res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource")}
		}
	}
	return nil
}

// validateEnvFrom checks an envFrom source: exactly one of configMapRef and
// secretRef, with a valid name, and a prefix that is a valid variable name.
func validateEnvFrom(ef *corev1.EnvFromSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ef.Prefix != "" {
		errs = append(errs, invalid(fld.Child("prefix"), ef.Prefix, validation.IsRelaxedEnvVarName(ef.Prefix))...)
	}
	n := 0
	if ef.ConfigMapRef != nil {
		n++
		errs = append(errs, validateObjectName(ef.ConfigMapRef.Name, fld.Child("configMapRef", "name"))...)
	}
	if ef.SecretRef != nil {
		n++
		errs = append(errs, validateObjectName(ef.SecretRef.Name, fld.Child("secretRef", "name"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fld, "", "must specify one of: `configMapRef` or `secretRef`"))
	case n > 1:
		errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateSubPathExpr checks a subPathExpr: not with subPath, and, as far as
// it is known before expansion, relative and without "..". The expanded path
// is checked again when the container starts.
func validateSubPathExpr(m *corev1.VolumeMount, fld *field.Path) field.ErrorList {
	if m.SubPathExpr == "" {
		return nil
	}
	f := fld.Child("subPathExpr")
	var errs field.ErrorList
	if m.SubPath != "" {
		errs = append(errs, field.Invalid(f, m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
	}
	return append(errs, validateSubPath(m.SubPathExpr, f)...) // validate.go
}

// validateFileKeyRef is the API server's check of an env file reference
// (EnvFiles): an emptyDir volume of the pod, a relative path without "..",
// a key of at most 128 printable ASCII characters without "=".
func validateFileKeyRef(ref *corev1.FileKeySelector, fld *field.Path, emptyDirs sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if !emptyDirs.Has(ref.VolumeName) {
		errs = append(errs, field.Invalid(fld.Child("volumeName"), ref.VolumeName, "must name an emptyDir volume of the pod"))
	}
	switch {
	case ref.Path == "":
		errs = append(errs, field.Required(fld.Child("path"), ""))
	case strings.HasPrefix(ref.Path, "/") || hasBacksteps(ref.Path):
		errs = append(errs, field.Invalid(fld.Child("path"), ref.Path, "must be a relative path without '..'"))
	}
	key := fld.Child("key")
	switch {
	case ref.Key == "":
		errs = append(errs, field.Required(key, ""))
	case len(ref.Key) > 128:
		errs = append(errs, field.TooLong(key, ref.Key, 128))
	case strings.ContainsFunc(ref.Key, func(r rune) bool { return r == '=' || r < 0x21 || r > 0x7e }):
		errs = append(errs, field.Invalid(key, ref.Key, "must be printable ASCII characters other than '='"))
	}
	return errs
}
