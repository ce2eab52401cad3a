package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdmissionFlags: validate reads the admission rules from its flags
// (also after the arguments) and from the environment; a pod they refuse, or
// a malformed rule, is exit 2.
func TestAdmissionFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pod.yaml")
	pod := `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  volumes: [{name: etc, hostPath: {path: /etc}}]
  containers: [{name: app, image: busybox:1, volumeMounts: [{name: etc, mountPath: /host-etc}]}]
`
	if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // in the error
	}{
		{"no rules", nil, nil, 0, ""},
		{"policy flag after the file", nil, []string{"--policy", "baseline"}, 2, `violates PodSecurity "baseline:latest": hostPath volumes (volume "etc")`},
		{"policy from the environment", map[string]string{"PODRUN_POLICY": "baseline"}, nil, 2, `violates PodSecurity "baseline:latest"`},
		{"host paths from the environment", map[string]string{"PODRUN_ALLOWED_HOST_PATHS": "/srv,/tmp"}, nil, 2,
			`spec.volumes[0].hostPath.path: Invalid value: "/etc": is not under an allowed host path (--allowed-host-paths /srv,/tmp)`},
		{"host paths flag", nil, []string{"--allowed-host-paths", "/etc/"}, 0, ""},
		{"bad sysctl pattern", nil, []string{"--allowed-unsafe-sysctls", "kernel.msgmax,vm.*"}, 2, `validate: unsafe sysctl pattern "vm.*": not known to be namespaced`},
		{"unsafe sysctls from the environment", map[string]string{"PODRUN_ALLOWED_UNSAFE_SYSCTLS": "kernel.msg*,net.core.*"}, nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			app := newApp()
			err := app.Run(flagsFirst(app, append([]string{"podrun", "validate", file}, tt.args...)))
			if code := exitCode(err); code != tt.code || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("exit %d, error %v; want exit %d and %q", code, err, tt.code, tt.want)
			}
		})
	}
}

// TestValidateFilesWithoutPods: a file of Services and a file of
// ConfigMaps are alike to validate: exit 0, each with a note (on cbe04fe
// the first was exit 2, "no Kubernetes objects found"); a file of nothing
// is exit 2.
func TestValidateFilesWithoutPods(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"svc.yaml":   "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n",
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: b}\n",
		"empty.yaml": "# nothing\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file, want := range map[string]int{"svc.yaml": 0, "cm.yaml": 0, "empty.yaml": 2} {
		app := newApp()
		err := app.Run(flagsFirst(app, []string{"podrun", "validate", filepath.Join(dir, file)}))
		if code := exitCode(err); code != want {
			t.Errorf("validate %s: exit %d (%v), want %d", file, code, err, want)
		}
	}
}
