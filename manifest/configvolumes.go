package manifest

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultConfigVolume sets the API server's defaults of the configMap,
// secret, downwardAPI and projected volume sources: defaultMode 0644 and
// fieldRef apiVersion v1 (k8s.io/kubernetes pkg/apis/core/v1/defaults.go).
func defaultConfigVolume(v *corev1.Volume) {
	setMode := func(m **int32, def int32) {
		if *m == nil {
			*m = ptr(def)
		}
	}
	switch {
	case v.ConfigMap != nil:
		setMode(&v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	case v.Secret != nil:
		setMode(&v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	case v.DownwardAPI != nil:
		setMode(&v.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		defaultFieldRefs(v.DownwardAPI.Items)
	case v.Projected != nil:
		setMode(&v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for _, s := range v.Projected.Sources {
			if s.DownwardAPI != nil {
				defaultFieldRefs(s.DownwardAPI.Items)
			}
		}
	}
}

func defaultFieldRefs(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
			f.APIVersion = "v1"
		}
	}
}

// validateConfigVolume checks a configMap, secret, downwardAPI or projected
// volume source as the API server does (ValidateVolumes in
// pkg/apis/core/validation); other kinds pass.
func validateConfigVolume(src *corev1.VolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case src.ConfigMap != nil:
		f := fld.Child("configMap")
		errs = append(errs, validateObjectName(src.ConfigMap.Name, f.Child("name"))...)
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, f.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, f.Child("items"), nil)...)
	case src.Secret != nil:
		f := fld.Child("secret")
		errs = append(errs, validateObjectName(src.Secret.SecretName, f.Child("secretName"))...)
		errs = append(errs, validateMode(src.Secret.DefaultMode, f.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, f.Child("items"), nil)...)
	case src.DownwardAPI != nil:
		f := fld.Child("downwardAPI")
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, f.Child("defaultMode"))...)
		errs = append(errs, validateDownwardItems(src.DownwardAPI.Items, f.Child("items"), nil)...)
	case src.Projected != nil:
		errs = validateProjected(src.Projected, fld.Child("projected"))
	}
	return errs
}

func validateObjectName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	return invalid(fld, name, validation.IsDNS1123Subdomain(name))
}

// validateMode checks a file mode: 0 to 0777.
func validateMode(mode *int32, fld *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(fld, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// validateVolumePath checks a file path inside a volume: relative, no ".."
// element, not starting with "..".
func validateVolumePath(p string, fld *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Required(fld, "")}
	case path.IsAbs(p):
		return field.ErrorList{field.Invalid(fld, p, "must be a relative path")}
	case hasBacksteps(p):
		return field.ErrorList{field.Invalid(fld, p, "must not contain '..'")}
	case strings.HasPrefix(p, ".."):
		return field.ErrorList{field.Invalid(fld, p, "must not start with '..'")}
	}
	return nil
}

// validateKeyToPaths checks items of a configMap or secret source; paths,
// when not nil, collects the paths of a projected volume to find conflicts.
func validateKeyToPaths(items []corev1.KeyToPath, fld *field.Path, paths sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		f := fld.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(f.Child("key"), ""))
		} else {
			errs = append(errs, invalid(f.Child("key"), it.Key, validation.IsConfigMapKey(it.Key))...)
		}
		errs = append(errs, validateVolumePath(it.Path, f.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, f.Child("mode"))...)
		errs = append(errs, conflict(paths, it.Path, f.Child("path"))...)
	}
	return errs
}

// conflict records p in paths and reports a path already there.
func conflict(paths sets.Set[string], p string, fld *field.Path) field.ErrorList {
	if paths == nil || p == "" {
		return nil
	}
	if paths.Has(p) {
		return field.ErrorList{field.Invalid(fld, p, "conflicting duplicate paths")}
	}
	paths.Insert(p)
	return nil
}

// downwardVolumeFields are the fieldRef paths a downwardAPI volume may
// expose, besides the labels['k'] and annotations['k'] forms.
var downwardVolumeFields = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// downwardResources are the resources a resourceFieldRef may name, besides
// hugepages-*.
var downwardResources = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage"}

func validateDownwardItems(items []corev1.DownwardAPIVolumeFile, fld *field.Path, paths sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		f := fld.Index(i)
		errs = append(errs, validateVolumePath(it.Path, f.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, f.Child("mode"))...)
		errs = append(errs, conflict(paths, it.Path, f.Child("path"))...)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(f, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			errs = append(errs, validateFieldRef(it.FieldRef, f.Child("fieldRef"), downwardVolumeFields)...)
		case it.ResourceFieldRef != nil:
			errs = append(errs, validateResourceFieldRef(it.ResourceFieldRef, f.Child("resourceFieldRef"))...)
		default:
			errs = append(errs, field.Required(f, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return errs
}

func validateResourceFieldRef(ref *corev1.ResourceFieldSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.ContainerName == "" {
		errs = append(errs, field.Required(fld.Child("containerName"), ""))
	}
	return append(errs, validateResourceSelector(ref, fld)...)
}

// validateProjected checks a projected volume: exactly one source kind per
// source, and no path written twice.
func validateProjected(p *corev1.ProjectedVolumeSource, fld *field.Path) field.ErrorList {
	errs := validateMode(p.DefaultMode, fld.Child("defaultMode"))
	paths := sets.New[string]()
	for i, s := range p.Sources {
		f := fld.Child("sources").Index(i)
		n := 0
		if s.ConfigMap != nil {
			n++
			errs = append(errs, validateObjectName(s.ConfigMap.Name, f.Child("configMap", "name"))...)
			errs = append(errs, validateKeyToPaths(s.ConfigMap.Items, f.Child("configMap", "items"), paths)...)
		}
		if s.Secret != nil {
			n++
			errs = append(errs, validateObjectName(s.Secret.Name, f.Child("secret", "name"))...)
			errs = append(errs, validateKeyToPaths(s.Secret.Items, f.Child("secret", "items"), paths)...)
		}
		if s.DownwardAPI != nil {
			n++
			errs = append(errs, validateDownwardItems(s.DownwardAPI.Items, f.Child("downwardAPI", "items"), paths)...)
		}
		if s.ServiceAccountToken != nil || s.ClusterTrustBundle != nil || s.PodCertificate != nil {
			n++ // rejected by name (allowlist.go)
		}
		if n != 1 {
			errs = append(errs, field.Forbidden(f, fmt.Sprintf("exactly one source kind per source, got %d", n)))
		}
	}
	return errs
}
