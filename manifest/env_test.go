package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func resourceEnv(name, container, res, divisor string) corev1.EnvVar {
	sel := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: sel}}
}

// TestValidateEnvSources: env valueFrom, envFrom and subPathExpr as the API
// server checks them, with field paths.
func TestValidateEnvSources(t *testing.T) {
	cmKey := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"every supported field path and resource", func(p *corev1.Pod) {
			var env []corev1.EnvVar
			for _, path := range []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels['app']",
				"metadata.annotations['example.com/Note']", "spec.nodeName", "spec.host", "spec.serviceAccountName",
				"status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs"} {
				env = append(env, fieldEnv("F", path))
			}
			env = append(env,
				resourceEnv("R", "", "limits.cpu", "1m"), resourceEnv("R", "app", "requests.cpu", "1"),
				resourceEnv("R", "", "limits.memory", "1Mi"), resourceEnv("R", "", "requests.memory", "1k"),
				resourceEnv("R", "", "limits.ephemeral-storage", "1Gi"), resourceEnv("R", "", "requests.hugepages-2Mi", "1Mi"),
				corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey}},
				corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "tls.crt"}}})
			p.Spec.Containers[0].Env = env
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			}
		}, nil},
		{"field paths", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				fieldEnv("A", "metadata.labels"), fieldEnv("B", "spec.restartPolicy"), fieldEnv("C", "status.phase"),
				fieldEnv("D", "metadata.name['x']"), fieldEnv("E", "metadata.labels['a b']"), fieldEnv("F", ""),
				fieldEnv("G", "spec.containers"),
				{Name: "H", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
			}
		}, []string{
			`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			`spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.restartPolicy": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			`spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			`spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name['x']": error converting fieldPath: field label does not support subscript: metadata.name['x']`,
			`spec.containers[0].env[4].valueFrom.fieldRef: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Required value`,
			`spec.containers[0].env[6].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.containers": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			`spec.containers[0].env[7].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2`,
		}},
		{"resources and divisors", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", Env: []corev1.EnvVar{
				resourceEnv("A", "", "limits.gpu", ""), resourceEnv("B", "", "", ""), resourceEnv("C", "nope", "limits.cpu", ""),
				resourceEnv("D", "", "limits.cpu", "1Mi"), resourceEnv("E", "", "requests.memory", "2Mi"),
				resourceEnv("F", "", "limits.ephemeral-storage", "1m"), resourceEnv("G", "", "limits.hugepages-1Gi", "3"),
				resourceEnv("H", "app", "limits.memory", "1Gi"),
			}}}
		}, []string{
			`spec.initContainers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"`,
			`spec.initContainers[0].env[1].valueFrom.resourceFieldRef.resource: Required value`,
			`spec.initContainers[0].env[2].valueFrom.resourceFieldRef.containerName: Not found: "nope"`,
			`spec.initContainers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
			`spec.initContainers[0].env[4].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`,
			`spec.initContainers[0].env[5].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.ephemeral-storage": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource`,
			`spec.initContainers[0].env[6].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.hugepages-1Gi": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource`,
		}},
		{"sources: none, two, and with a value", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "C", Value: "v", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey}},
			}
		}, []string{
			"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
			`spec.containers[0].env[1].valueFrom: Invalid value: "": may not have more than one field specified at a time`,
			"spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
		}},
		{"key selectors", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "a/b"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "Sec"}}}},
			}
		}, []string{
			"spec.containers[0].env[0].valueFrom.configMapKeyRef.name: Required value",
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
			`spec.containers[0].env[1].valueFrom.secretKeyRef.name: Invalid value: "Sec": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"spec.containers[0].env[1].valueFrom.secretKeyRef.key: Required value",
		}},
		{"envFrom", func(p *corev1.Pod) {
			cm := &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
				{Prefix: "A=", ConfigMapRef: cm},
				{},
				{ConfigMapRef: cm, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
				{SecretRef: &corev1.SecretEnvSource{}},
			}
		}, []string{
			`spec.containers[0].envFrom[0].prefix: Invalid value: "A=": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			"spec.containers[0].envFrom[1]: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
			`spec.containers[0].envFrom[2]: Invalid value: "": may not have more than one field specified at a time`,
			"spec.containers[0].envFrom[3].secretRef.name: Required value",
		}},
		{"subPathExpr", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("v")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "v", MountPath: "/a", SubPathExpr: "logs/$(POD_NAME)"},
				{Name: "v", MountPath: "/b", SubPathExpr: "$(X)", SubPath: "x"},
				{Name: "v", MountPath: "/c", SubPathExpr: "/$(X)"},
				{Name: "v", MountPath: "/d", SubPathExpr: "$(X)/../y"},
			}
		}, []string{
			`spec.containers[0].volumeMounts[1].subPathExpr: Invalid value: "$(X)": subPathExpr and subPath are mutually exclusive`,
			`spec.containers[0].volumeMounts[2].subPathExpr: Invalid value: "/$(X)": must be a relative path`,
			`spec.containers[0].volumeMounts[3].subPathExpr: Invalid value: "$(X)/../y": must not contain '..'`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}

func TestDefaultEnvFieldRefVersion(t *testing.T) {
	pod := basePod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{fieldEnv("A", "metadata.name")}
	Default(pod)
	if v := pod.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion; v != "v1" {
		t.Errorf("fieldRef apiVersion = %q, want v1", v)
	}
}

// TestDefaultEnvFileKeyRefOptional: a fileKeyRef's optional defaults to
// false, as kubelet 1.34 shows it; an explicit true stays.
func TestDefaultEnvFileKeyRefOptional(t *testing.T) {
	pod := basePod()
	ref := func(optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
			VolumeName: "v", Path: "a.env", Key: "A", Optional: optional}}}
	}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{ref(nil), ref(new(true))}
	Default(pod)
	env := pod.Spec.Containers[0].Env
	if o := env[0].ValueFrom.FileKeyRef.Optional; o == nil || *o {
		t.Errorf("unset optional defaulted to %v, want false", o)
	}
	if o := env[1].ValueFrom.FileKeyRef.Optional; o == nil || !*o {
		t.Errorf("optional: true became %v", o)
	}
}
