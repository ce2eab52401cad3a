package manifest

import (
	"strings"
	"testing"
)

// TestStopSignal: lifecycle.stopSignal is accepted with spec.os.name and a
// Linux signal's name, as the API server accepts it.
func TestStopSignal(t *testing.T) {
	pod := func(os, sig string) []byte {
		return []byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
` + os + `  containers:
  - name: app
    image: busybox:1
    lifecycle: {stopSignal: ` + sig + `}
`)
	}
	for _, tc := range []struct {
		os, sig, problem string
	}{
		{"  os: {name: linux}\n", "SIGUSR1", ""},
		{"", "SIGUSR1", "spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`"},
		{"  os: {name: linux}\n", "USR1", "spec.containers[0].lifecycle.stopSignal: Unsupported value"},
		{"  os: {name: linux}\n", "SIGNOPE", "spec.containers[0].lifecycle.stopSignal: Unsupported value"},
	} {
		_, err := Parse("p.yaml", pod(tc.os, tc.sig))
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%q %q: %v", tc.os, tc.sig, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%q %q: %v, want %q", tc.os, tc.sig, err, tc.problem)
		}
	}
}

// TestRestartPolicyRules: rules need the container's restartPolicy; the
// action is Restart; the operator In or NotIn.
func TestRestartPolicyRules(t *testing.T) {
	pod := func(c string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: busybox:1\n" + c)
	}
	for _, tc := range []struct{ c, problem string }{
		{"    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n", ""},
		{"    restartPolicy: OnFailure\n", ""},
		{"    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n", "spec.containers[0].restartPolicy: Required value"},
		{"    restartPolicy: Sometimes\n", "spec.containers[0].restartPolicy: Unsupported value"},
		{"    restartPolicy: Never\n    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [1]}}]\n", "restartPolicyRules[0].action: Unsupported value"},
		{"    restartPolicy: Never\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: Is, values: [1]}}]\n", "restartPolicyRules[0].exitCodes.operator: Unsupported value"},
		{"    restartPolicy: Never\n    restartPolicyRules: [{action: Restart}]\n", "restartPolicyRules[0].exitCodes: Required value"},
	} {
		_, err := Parse("p.yaml", pod(tc.c))
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%q: %v", tc.c, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%q: %v, want %q", tc.c, err, tc.problem)
		}
	}
}

// TestHostnameOverrideValidation: a DNS subdomain of at most 64
// characters, not with hostNetwork.
func TestHostnameOverrideValidation(t *testing.T) {
	pod := func(spec string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + spec + "  containers:\n  - {name: app, image: busybox:1}\n")
	}
	for _, tc := range []struct{ spec, problem string }{
		{"  hostnameOverride: my-host.lab\n", ""},
		{"  hostnameOverride: My_Host\n", "spec.hostnameOverride: Invalid value"},
		{"  hostnameOverride: " + strings.Repeat("a", 65) + "\n", "spec.hostnameOverride: Too long"},
		{"  hostNetwork: true\n  hostnameOverride: h\n", "spec.hostnameOverride: Forbidden: may not be set when `hostNetwork` is true"},
	} {
		_, err := Parse("p.yaml", pod(tc.spec))
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%q: %v", tc.spec, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%q: %v, want %q", tc.spec, err, tc.problem)
		}
	}
}
