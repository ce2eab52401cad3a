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
