package spec

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func envVars(kv ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

func TestEnv(t *testing.T) {
	cases := []struct {
		name     string
		image    []string
		env      []corev1.EnvVar
		hostname string
		want     []string
		wantVars map[string]string
	}{
		{
			name:     "no env at all",
			hostname: "web",
			want:     []string{defaultPathEnv, "HOSTNAME=web"},
			wantVars: map[string]string{},
		},
		{
			name:     "image PATH replaces the default in place, image order kept",
			image:    []string{"PATH=/bin", "LANG=C", "HOME=/root"},
			hostname: "web",
			want:     []string{"PATH=/bin", "HOSTNAME=web", "LANG=C", "HOME=/root"},
			wantVars: map[string]string{},
		},
		{
			name:     "container env overrides image env in place and appends in declaration order",
			image:    []string{"LANG=C", "MODE=dev"},
			env:      envVars("ZED=1", "MODE=prod", "ALPHA=2"),
			hostname: "web",
			want:     []string{defaultPathEnv, "HOSTNAME=web", "LANG=C", "MODE=prod", "ZED=1", "ALPHA=2"},
			wantVars: map[string]string{"ZED": "1", "MODE": "prod", "ALPHA": "2"},
		},
		{
			name:     "references to earlier entries expand, chained",
			env:      envVars("FOO=bar", "ZOO=$(FOO)-1", "BLU=$(ZOO)-2"),
			hostname: "h",
			want:     []string{defaultPathEnv, "HOSTNAME=h", "FOO=bar", "ZOO=bar-1", "BLU=bar-1-2"},
			wantVars: map[string]string{"FOO": "bar", "ZOO": "bar-1", "BLU": "bar-1-2"},
		},
		{
			name:     "later, image and HOSTNAME variables are not visible",
			image:    []string{"IMG=i"},
			env:      envVars("A=$(B)", "B=b", "C=$(IMG)", "D=$(HOSTNAME)", "E=$(UNDEFINED)"),
			hostname: "h",
			want: []string{defaultPathEnv, "HOSTNAME=h", "IMG=i",
				"A=$(B)", "B=b", "C=$(IMG)", "D=$(HOSTNAME)", "E=$(UNDEFINED)"},
			wantVars: map[string]string{"A": "$(B)", "B": "b", "C": "$(IMG)", "D": "$(HOSTNAME)", "E": "$(UNDEFINED)"},
		},
		{
			name:     "escapes and empty values",
			env:      envVars("A=$$(A)", "EMPTY="),
			hostname: "h",
			want:     []string{defaultPathEnv, "HOSTNAME=h", "A=$(A)", "EMPTY="},
			wantVars: map[string]string{"A": "$(A)", "EMPTY": ""},
		},
		{
			name:     "redefinition sees the earlier value and keeps the first position",
			env:      envVars("A=1", "B=2", "A=$(A)x"),
			hostname: "h",
			want:     []string{defaultPathEnv, "HOSTNAME=h", "A=1x", "B=2"},
			wantVars: map[string]string{"A": "1x", "B": "2"},
		},
		{
			name:     "image and container env may override HOSTNAME",
			image:    []string{"HOSTNAME=img"},
			env:      envVars("HOSTNAME=mine"),
			hostname: "h",
			want:     []string{defaultPathEnv, "HOSTNAME=mine"},
			wantVars: map[string]string{"HOSTNAME": "mine"},
		},
		{
			name:     "image entry without = unsets",
			image:    []string{"PATH", "X=1", "X=2"},
			hostname: "h",
			want:     []string{"HOSTNAME=h", "X=2"},
			wantVars: map[string]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			declared, err := ResolveEnv(&corev1.Container{Name: "c", Env: tc.env}, EnvSources{})
			if err != nil {
				t.Fatal(err)
			}
			got, vars := Env(declared, Image{Env: tc.image}, tc.hostname)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(vars, tc.wantVars) {
				t.Errorf("vars = %v, want %v", vars, tc.wantVars)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	img := Image{Entrypoint: []string{"/entry", "-v"}, Cmd: []string{"serve", "$(PORT)"}}
	vars := map[string]string{"PORT": "8080", "NAME": "web"}
	cases := []struct {
		name    string
		command []string
		args    []string
		img     Image
		want    []string
	}{
		{name: "image only", img: img, want: []string{"/entry", "-v", "serve", "$(PORT)"}},
		{name: "command replaces entrypoint and drops cmd", command: []string{"/bin/sh", "-c"}, img: img,
			want: []string{"/bin/sh", "-c"}},
		{name: "args replace cmd and keep entrypoint", args: []string{"run", "--port=$(PORT)"}, img: img,
			want: []string{"/entry", "-v", "run", "--port=8080"}},
		{name: "command and args", command: []string{"/app/$(NAME)"}, args: []string{"$(PORT)", "$$(PORT)", "$(NOPE)"}, img: img,
			want: []string{"/app/web", "8080", "$(PORT)", "$(NOPE)"}},
		{name: "entrypoint of one empty string counts as none", img: Image{Entrypoint: []string{""}, Cmd: []string{"/bin/true"}},
			want: []string{"/bin/true"}},
		{name: "args without command and without entrypoint", args: []string{"/bin/echo", "$(NAME)"},
			want: []string{"/bin/echo", "web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c", Command: tc.command, Args: tc.args}
			got, err := Args(c, tc.img, vars)
			if err != nil {
				t.Fatalf("Args: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Args = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestArgsEmpty(t *testing.T) {
	for name, img := range map[string]Image{
		"no image command":        {},
		"empty-string entrypoint": {Entrypoint: []string{""}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Args(&corev1.Container{Name: "c"}, img, nil)
			if err == nil || !strings.Contains(err.Error(), "no command specified") {
				t.Fatalf("Args = %q, %v; want a no command specified error", got, err)
			}
		})
	}
}

func TestArgsDoesNotAliasImage(t *testing.T) {
	img := Image{Entrypoint: []string{"/entry"}, Cmd: []string{"a"}}
	got, err := Args(&corev1.Container{}, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	got[0] = "changed"
	if img.Entrypoint[0] != "/entry" {
		t.Errorf("Args result aliases the image entrypoint: %q", img.Entrypoint)
	}
}

// TestFileKeyRef: an env file's key; a missing file or key fails the
// container unless optional, then the variable is not set.
func TestFileKeyRef(t *testing.T) {
	yes := true
	ref := func(path, key string, optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "data", Path: path, Key: key, Optional: optional}}}
	}
	src := EnvSources{EnvFile: func(volume, path string) (map[string]string, error) {
		if volume != "data" || path != "app.env" {
			return nil, fmt.Errorf("open %s: %w", path, os.ErrNotExist)
		}
		return map[string]string{"DB": "from-init"}, nil
	}}
	for _, tc := range []struct {
		env     corev1.EnvVar
		want    string
		set     bool
		problem string
	}{
		{ref("app.env", "DB", nil), "from-init", true, ""},
		{ref("app.env", "NOPE", nil), "", false, `couldn't find key "NOPE" in env file "app.env" of volume "data"`},
		{ref("app.env", "NOPE", &yes), "", false, ""},
		{ref("gone.env", "DB", nil), "", false, `env file "gone.env" of volume "data"`},
		{ref("gone.env", "DB", &yes), "", false, ""},
	} {
		env, err := ResolveEnv(&corev1.Container{Name: "c", Env: []corev1.EnvVar{tc.env}}, src)
		switch {
		case tc.problem != "":
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("%+v: %v, want %q", tc.env.ValueFrom.FileKeyRef, err, tc.problem)
			}
		case err != nil:
			t.Errorf("%+v: %v", tc.env.ValueFrom.FileKeyRef, err)
		case tc.set != slices.Contains(env, EnvVar{Name: "V", Value: tc.want}):
			t.Errorf("%+v: env %v, want V=%q set %v", tc.env.ValueFrom.FileKeyRef, env, tc.want, tc.set)
		}
	}
}
