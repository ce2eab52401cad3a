package manifest

import (
	"strings"
	"testing"
)

func TestProbeAndLifecycleValidation(t *testing.T) {
	pod := func(container string, init string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + init + "  containers:\n  - name: app\n    image: busybox:1\n    ports: [{name: http, containerPort: 80}]\n" + container
	}
	tests := []struct {
		name string
		yaml string
		want []string // substrings, one per expected problem
	}{
		{"valid probes and hooks", pod("    readinessProbe: {httpGet: {port: http}}\n    livenessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 5}\n    startupProbe: {grpc: {port: 9000}}\n    lifecycle: {postStart: {exec: {command: [\"true\"]}}, preStop: {sleep: {seconds: 1}}}\n", ""), nil},
		{"unknown named port", pod("    readinessProbe: {httpGet: {port: web}}\n", ""),
			[]string{`spec.containers[0].readinessProbe.httpGet.port: Invalid value: "web": must be a port number or the name of one of the container's ports`}},
		// The API server's words (validateHandler, ValidateNonnegativeField,
		// validateSleepAction).
		{"two handlers", pod("    livenessProbe: {tcpSocket: {port: 80}, exec: {command: [\"true\"]}}\n", ""),
			[]string{"spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"}},
		{"three handlers, only the first checked", pod("    readinessProbe: {httpGet: {port: web}, tcpSocket: {port: 0}, grpc: {port: 9000}}\n", ""),
			[]string{`spec.containers[0].readinessProbe.httpGet.port: Invalid value: "web": must be a port number or the name of one of the container's ports`,
				"spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
				"spec.containers[0].readinessProbe.grpc: Forbidden: may not specify more than 1 handler type"}},
		{"no handler", pod("    startupProbe: {periodSeconds: 3}\n    lifecycle: {postStart: {}}\n", ""),
			[]string{"spec.containers[0].startupProbe: Required value: must specify a handler type",
				"spec.containers[0].lifecycle.postStart: Required value: must specify a handler type"}},
		{"two hook handlers", pod("    lifecycle: {preStop: {sleep: {seconds: 1}, exec: {command: [\"true\"]}}}\n", ""),
			[]string{"spec.containers[0].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type"}},
		{"negative timings", pod("    readinessProbe: {exec: {command: [\"true\"]}, initialDelaySeconds: -1, periodSeconds: -10, failureThreshold: -3}\n", ""),
			[]string{"spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.periodSeconds: Invalid value: -10: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0"}},
		{"sleep past the grace period", pod("    lifecycle: {preStop: {sleep: {seconds: 31}}, postStart: {sleep: {seconds: -1}}}\n", ""),
			[]string{"spec.containers[0].lifecycle.postStart.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)",
				"spec.containers[0].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"}},
		{"sleep 0", pod("    lifecycle: {preStop: {sleep: {seconds: 0}}}\n", ""), nil},
		{"liveness successThreshold must be 1", pod("    livenessProbe: {tcpSocket: {port: 80}, successThreshold: 2}\n", ""),
			[]string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"readiness may not set a grace period", pod("    readinessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 3}\n", ""),
			[]string{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 3: must not be set for readinessProbes"}},
		{"tcpSocket hooks are not supported", pod("    lifecycle: {preStop: {tcpSocket: {port: 80}}}\n", ""),
			[]string{"spec.containers[0].lifecycle.preStop.tcpSocket: field not supported by podrun yet"}},
		{"probes on a plain init container", pod("", "  initContainers:\n  - name: setup\n    image: busybox:1\n    readinessProbe: {exec: {command: [\"true\"]}}\n"),
			[]string{"spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{"a sidecar may have probes", pod("", "  initContainers:\n  - name: proxy\n    image: busybox:1\n    restartPolicy: Always\n    startupProbe: {exec: {command: [\"true\"]}}\n"), nil},
		{"an init container's own restartPolicy and rules", pod("", "  initContainers:\n  - name: setup\n    image: busybox:1\n    restartPolicy: OnFailure\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n"), nil},
		{"init restartPolicy unknown", pod("", "  initContainers:\n  - name: setup\n    image: busybox:1\n    restartPolicy: Sometimes\n"),
			[]string{`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		// Kubelet 1.34 (ContainerRestartRules off) takes a sidecar's rules
		// without looking at them; a sidecar restarts on any exit anyway.
		{"rules on a sidecar", pod("", "  initContainers:\n  - name: proxy\n    image: busybox:1\n    restartPolicy: Always\n    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.yaml))
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestProbeDefaults(t *testing.T) {
	set, err := Parse("p.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: busybox:1\n    readinessProbe: {httpGet: {port: 80}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := set.Pods[0].Spec.Containers[0].ReadinessProbe
	if p.PeriodSeconds != 10 || p.TimeoutSeconds != 1 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 || p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != "HTTP" {
		t.Errorf("defaults not applied: %+v %+v", p, p.HTTPGet)
	}
}
