package spec

import (
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultPathEnv is the PATH containerd's CRI plugin sets when the image sets
// none (oci.WithDefaultPathEnv).
const defaultPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env returns the process environment of container c and the variables
// $(VAR) references in its command and args resolve against.
//
// Values are computed as the kubelet does (makeEnvironmentVariables): each
// env[i].value is expanded against the container's variables declared before
// it; the image's env, HOSTNAME and later entries are not visible, so such
// references stay literal. An entry with an empty value (or a valueFrom, which
// Env does not resolve) is set to "". The vars map holds exactly these
// kubelet-side variables.
//
// The environment is then merged as containerd's CRI plugin does: a default
// PATH, HOSTNAME=hostname, the image's env, then the container's env, each
// later entry replacing an earlier one of the same name in place (an image
// entry without "=" unsets the name). Unlike containerd 1.7, which keeps both
// when a name is in the image and the container env, the container's value
// replaces the image's.
func Env(c *corev1.Container, img Image, hostname string) (env []string, vars map[string]string) {
	vars = make(map[string]string, len(c.Env))
	lookup := func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
	declared := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		v := e.Value
		if v != "" {
			v = Expand(v, lookup)
		}
		vars[e.Name] = v
		declared = append(declared, e.Name+"="+v)
	}
	env = mergeEnv([]string{defaultPathEnv, "HOSTNAME=" + hostname}, img.Env)
	env = mergeEnv(env, declared)
	return env, vars
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
