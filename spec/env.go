package spec

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
)

// defaultPathEnv is the PATH containerd's CRI plugin sets when the image sets
// none (oci.WithDefaultPathEnv).
const defaultPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// EnvVar is one variable of a container's environment.
type EnvVar struct {
	Name, Value string
}

// EnvSources are what env valueFrom and envFrom read: the ConfigMaps and
// Secrets of the pod's namespace by name, and what the downward API exposes
// of the pod (Downward.Pod is the pod).
type EnvSources struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	Downward   downward.Info
	// EnvFile reads the env file at path in the pod's volume (fileKeyRef);
	// a missing file is an error wrapping os.ErrNotExist.
	EnvFile func(volume, path string) (map[string]string, error)
}

// ResolveEnv returns the variables of container c as the kubelet computes
// them at each start of the container (makeEnvironmentVariables):
//
//   - first each envFrom source in order, each key of the ConfigMap's data or
//     the Secret's data as a variable named prefix+key; a missing optional
//     source is skipped;
//   - then each env entry in order, replacing a variable of the same name: a
//     non-empty value expanded ($(VAR), see Expand) against the variables
//     set so far, else valueFrom resolved, else "". An optional
//     configMapKeyRef or secretKeyRef whose object or key is missing sets
//     nothing.
//
// A missing non-optional object or key is an error (the manifest's checks
// refuse such a pod before it runs; a key only in a ConfigMap's binaryData
// is missing here, as for the kubelet). The kubelet passes the variables in
// no particular order (a map); podrun keeps each at its first position:
// envFrom keys sorted within a source, then env entries in order.
func ResolveEnv(c *corev1.Container, src EnvSources) ([]EnvVar, error) {
	var out []EnvVar
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, EnvVar{Name: name, Value: value})
	}
	for i, ef := range c.EnvFrom {
		data, err := envFromData(ef, src)
		if err != nil {
			return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(ef.Prefix+k, data[k])
		}
	}
	lookup := func(name string) (string, bool) {
		if i, ok := index[name]; ok {
			return out[i].Value, true
		}
		return "", false
	}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "":
			v = Expand(v, lookup)
		case e.ValueFrom != nil:
			var found bool
			var err error
			if v, found, err = valueFrom(c.Name, e.ValueFrom, src); err != nil {
				return nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
			if !found {
				continue
			}
		}
		set(e.Name, v)
	}
	return out, nil
}

// envFromData returns the variables of an envFrom source without the
// prefix; nil for a missing optional source.
func envFromData(ef corev1.EnvFromSource, src EnvSources) (map[string]string, error) {
	switch {
	case ef.ConfigMapRef != nil:
		cm, ok := src.ConfigMaps[ef.ConfigMapRef.Name]
		if !ok {
			return nil, missing("configmap", ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional)
		}
		return cm.Data, nil
	case ef.SecretRef != nil:
		s, ok := src.Secrets[ef.SecretRef.Name]
		if !ok {
			return nil, missing("secret", ef.SecretRef.Name, ef.SecretRef.Optional)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, errors.New("neither configMapRef nor secretRef is set")
}

// missing is the error of a ConfigMap or Secret that is not there: nil when
// the reference is optional.
func missing(kind, name string, optional *bool) error {
	if optional != nil && *optional {
		return nil
	}
	return fmt.Errorf("%s %q not found", kind, name)
}

// valueFrom resolves an env valueFrom of container; found is false when an
// optional reference finds nothing.
func valueFrom(container string, vf *corev1.EnvVarSource, src EnvSources) (value string, found bool, err error) {
	switch {
	case vf.FieldRef != nil:
		v, err := downward.FieldValue(src.Downward, vf.FieldRef)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := downward.ResourceValue(src.Downward, container, vf.ResourceFieldRef)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, ok := src.ConfigMaps[ref.Name]
		if !ok {
			return "", false, missing("configmap", ref.Name, ref.Optional)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, missingKey("ConfigMap", cm.Namespace, ref.Name, ref.Key, ref.Optional)
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, ok := src.Secrets[ref.Name]
		if !ok {
			return "", false, missing("secret", ref.Name, ref.Optional)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", false, missingKey("Secret", s.Namespace, ref.Name, ref.Key, ref.Optional)
		}
		return string(v), true, nil
	case vf.FileKeyRef != nil:
		ref := vf.FileKeyRef
		optional := ref.Optional != nil && *ref.Optional
		if src.EnvFile == nil {
			return "", false, errors.New("fileKeyRef: no volume to read")
		}
		data, err := src.EnvFile(ref.VolumeName, ref.Path)
		switch {
		case errors.Is(err, os.ErrNotExist) && optional:
			return "", false, nil
		case err != nil:
			return "", false, fmt.Errorf("env file %q of volume %q: %w", ref.Path, ref.VolumeName, err)
		}
		v, ok := data[ref.Key]
		if !ok && !optional {
			return "", false, fmt.Errorf("couldn't find key %q in env file %q of volume %q", ref.Key, ref.Path, ref.VolumeName)
		}
		return v, ok, nil
	}
	return "", false, errors.New("valueFrom sets no source")
}

func missingKey(kind, namespace, name, key string, optional *bool) error {
	if optional != nil && *optional {
		return nil
	}
	return fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, namespace, name)
}

// Env returns the process environment of a container whose variables
// ResolveEnv returned, and the variables $(VAR) references in its command
// and args resolve against (the same variables, as a map).
//
// The environment is merged as containerd's CRI plugin does: a default
// PATH, HOSTNAME=hostname, the image's env, then the container's variables,
// each later entry replacing an earlier one of the same name in place (an
// image entry without "=" unsets the name). Unlike containerd 1.7, which
// keeps both when a name is in the image and the container env, the
// container's value replaces the image's.
func Env(declared []EnvVar, img Image, hostname string) (env []string, vars map[string]string) {
	kv := make([]string, len(declared))
	for i, v := range declared {
		kv[i] = v.Name + "=" + v.Value
	}
	env = mergeEnv([]string{defaultPathEnv, "HOSTNAME=" + hostname}, img.Env)
	env = mergeEnv(env, kv)
	return env, VarMap(declared)
}

// VarMap returns variables by name: what $(VAR) in command, args and
// subPathExpr resolves against.
func VarMap(declared []EnvVar) map[string]string {
	vars := make(map[string]string, len(declared))
	for _, v := range declared {
		vars[v.Name] = v.Value
	}
	return vars
}

// SubPathExpr expands a volumeMount's subPathExpr against the container's
// variables as the kubelet does (ExpandContainerVolumeMounts): a reference
// to a variable that is unset or empty is an error, and the result must be
// a relative path without ".." (makeMounts). The errors are the kubelet's
// words: they are the CreateContainerConfigError message.
func SubPathExpr(expr string, vars map[string]string) (string, error) {
	var unset []string
	sub := Expand(expr, func(name string) (string, bool) {
		v := vars[name]
		if v == "" && !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
		return v, true
	})
	switch {
	case len(unset) > 0:
		slices.Sort(unset)
		return "", fmt.Errorf("missing value for %s", strings.Join(unset, ", "))
	case path.IsAbs(sub):
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	case slices.Contains(strings.Split(sub, "/"), ".."):
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
	}
	return sub, nil
}

// mergeEnv returns base with each "K=V" of overrides replacing the entry of
// the same name in place or appended; a bare "K" removes K.
func mergeEnv(base, overrides []string) []string {
	out := slices.Clone(base)
	index := make(map[string]int, len(out)+len(overrides))
	for i, e := range out {
		k, _, _ := strings.Cut(e, "=")
		index[k] = i
	}
	removed := false
	for _, e := range overrides {
		k, _, set := strings.Cut(e, "=")
		i, exists := index[k]
		switch {
		case !set && exists:
			out[i], removed = "", true
			delete(index, k)
		case !set:
		case exists:
			out[i] = e
		default:
			index[k] = len(out)
			out = append(out, e)
		}
	}
	if removed {
		out = slices.DeleteFunc(out, func(e string) bool { return e == "" })
	}
	return out
}

// Args resolves the process arguments the way the kubelet and the CRI plugin
// do: command replaces the image's ENTRYPOINT and args replace its CMD;
// command without args drops CMD; args without command keep ENTRYPOINT. $(VAR)
// in command and args (not in the image's ENTRYPOINT and CMD) expands against
// vars, the map Env returns. An image ENTRYPOINT of [""] counts as none. It
// is an error if no arguments result.
func Args(c *corev1.Container, img Image, vars map[string]string) ([]string, error) {
	lookup := func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
	command := expandAll(c.Command, lookup)
	args := expandAll(c.Args, lookup)
	if len(command) == 0 {
		if len(args) == 0 {
			args = slices.Clone(img.Cmd)
		}
		if len(img.Entrypoint) != 1 || img.Entrypoint[0] != "" {
			command = slices.Clone(img.Entrypoint)
		}
	}
	out := append(command, args...)
	if len(out) == 0 {
		return nil, errors.New("no command specified: neither the container nor the image sets a command or args")
	}
	return out, nil
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = Expand(s, lookup)
	}
	return out
}
