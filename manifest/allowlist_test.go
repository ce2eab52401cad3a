package manifest

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUnsupportedFields(t *testing.T) {
	tests := []struct {
		name string
		spec string // JSON of spec
		want []string
	}{
		{"supported fields", `{"containers":[{"name":"a","image":"x","ports":[{"containerPort":80,"hostIP":"127.0.0.1"}],
			"env":[{"name":"A","value":"b"},{"name":"B","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
				{"name":"C","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1m"}}},
				{"name":"D","valueFrom":{"configMapKeyRef":{"name":"c","key":"k","optional":true}}},
				{"name":"E","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
			"envFrom":[{"prefix":"P_","configMapRef":{"name":"c","optional":true}},{"secretRef":{"name":"s"}}],
			"volumeMounts":[{"name":"v","mountPath":"/v","subPath":"s","readOnly":true},{"name":"v","mountPath":"/w","subPathExpr":"$(A)"}]}],
			"volumes":[{"name":"v","hostPath":{"path":"/srv","type":"Directory"}},{"name":"w","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}],
			"tolerations":[{"key":"k","operator":"Exists"}],"nodeSelector":{"disk":"ssd"},
			"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}`, nil},
		{"zero values count as unset", `{"containers":[{"name":"a","resources":{},"securityContext":{"privileged":false,"runAsNonRoot":false},
			"livenessProbe":null,"stdin":false,"tty":false,"envFrom":[],"lifecycle":{"preStop":{}}}],
			"securityContext":{},"hostPID":false,"dnsConfig":{"nameservers":[]},"overhead":{},"runtimeClassName":"","activeDeadlineSeconds":0}`, nil},
		{"zero values that mean something are set", `{"hostUsers":false,"securityContext":{"runAsUser":0},
			"containers":[{"name":"a","securityContext":{"allowPrivilegeEscalation":false}},{"name":"b","securityContext":{"runAsGroup":0}}],
			"initContainers":[{"name":"i","securityContext":{"runAsUser":0}}]}`,
			[]string{"spec.hostUsers"}},
		{"securityContext fields", `{"securityContext":{"runAsUser":1000,"runAsGroup":1000,"runAsNonRoot":true,"supplementalGroups":[4],
			"fsGroup":2000,"fsGroupChangePolicy":"Always","sysctls":[{"name":"net.ipv4.tcp_syncookies","value":"1"}],
			"seccompProfile":{"type":"Localhost","localhostProfile":"a.json"},"appArmorProfile":{"type":"Unconfined"},
			"seLinuxOptions":{"level":"s0"},"windowsOptions":{"runAsUserName":"u"},"seLinuxChangePolicy":"Recursive"},
			"containers":[{"name":"a","securityContext":{"runAsUser":1,"runAsGroup":1,"runAsNonRoot":true,"privileged":true,
			"capabilities":{"add":["NET_ADMIN"],"drop":["ALL"]},"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":true,
			"seccompProfile":{"type":"RuntimeDefault"},"appArmorProfile":{"type":"RuntimeDefault"},"procMount":"Default",
			"seLinuxOptions":{"user":"u"}}}],
			"initContainers":[{"name":"i","securityContext":{"windowsOptions":{"hostProcess":true},"runAsUser":0}}]}`,
			[]string{"spec.initContainers[0].securityContext.windowsOptions",
				"spec.securityContext.seLinuxChangePolicy", "spec.securityContext.windowsOptions"}},
		{"outermost unsupported field", `{"containers":[{"name":"a","volumeDevices":[{"name":"r","devicePath":"/dev/x"}],
			"env":[{"name":"A","valueFrom":{"fileKeyRef":{"volumeName":"v","path":"a.env","key":"A"}}}],
			"volumeMounts":[{"name":"v","mountPath":"/v","subPathExpr":"$(A)","mountPropagation":"Bidirectional"}]}]}`,
			[]string{"spec.containers[0].volumeDevices", "spec.containers[0].volumeMounts[0].mountPropagation"}},
		{"unsupported volume kinds", `{"volumes":[{"name":"a","emptyDir":{}},{"name":"b","secret":{"secretName":"s"}},{"name":"t","projected":{"sources":[{"configMap":{"name":"c"}},{"serviceAccountToken":{"path":"token"}},{"clusterTrustBundle":{"path":"ca"}}]}},{"name":"c","projected":{"sources":[{}]},"nfs":{"server":"x"}}]}`,
			[]string{"spec.volumes[2].projected.sources[1].serviceAccountToken",
				"spec.volumes[2].projected.sources[2].clusterTrustBundle", "spec.volumes[3].nfs"}},
		{"pod-level fields", `{"hostIPC":true,"shareProcessNamespace":true,"dnsConfig":{"nameservers":["1.1.1.1"]},
			"hostAliases":[{"ip":"10.0.0.1","hostnames":["db"]}],"setHostnameAsFQDN":true,"imagePullSecrets":[{"name":"reg"}],"runtimeClassName":"gvisor",
			"ephemeralContainers":[{"name":"debug"}],"os":{"name":"linux"},"schedulingGates":[{"name":"g"}],
			"activeDeadlineSeconds":30,"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}],
			"containers":[{"name":"a","resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}]}]}`,
			[]string{"spec.ephemeralContainers", "spec.runtimeClassName", "spec.schedulingGates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := json.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			got := unsupportedFields(map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": spec})
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

func TestUnsupportedMetadata(t *testing.T) {
	raw := map[string]any{
		"metadata": map[string]any{
			"name": "a", "uid": "x", "resourceVersion": "1", "generation": 2.0, "creationTimestamp": "2024-01-01T00:00:00Z",
			"selfLink": "/x", "managedFields": []any{map[string]any{"manager": "kubectl"}},
			"generateName": "a-", "ownerReferences": []any{map[string]any{"name": "rs"}}, "finalizers": []any{"f"},
		},
		"status": map[string]any{"phase": "Running"},
	}
	got := unsupportedFields(raw)
	want := []string{"metadata.finalizers", "metadata.generateName", "metadata.ownerReferences"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSupportedFieldsAreValid checks that every supported path names a field
// of the v1 types, so that a typo in the list cannot go unnoticed.
func TestSupportedFieldsAreValid(t *testing.T) {
	for _, path := range supportedPodFields {
		doc := map[string]any{}
		setPath(doc, strings.Split(strings.ReplaceAll(path, "[]", ".[]"), "."))
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var r reader
		src := Source{File: "test", Doc: 1}
		r.decode(src, "", data, doc, &corev1.Pod{})
		for _, p := range r.problems {
			if p.Msg == "unknown field" {
				t.Errorf("supported field %q is not a field of v1.Pod", path)
			}
		}
	}
}

// setPath sets the field at segs to null in node, creating the objects and
// one-element lists ("[]") on the way.
func setPath(node map[string]any, segs []string) {
	key, rest := segs[0], segs[1:]
	if len(rest) == 0 {
		node[key] = nil
		return
	}
	child := map[string]any{}
	if rest[0] == "[]" {
		node[key] = []any{child}
		rest = rest[1:]
	} else {
		node[key] = child
	}
	setPath(child, rest)
}
