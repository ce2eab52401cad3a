package spec

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/downward"
)

func testSources() EnvSources {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{
			{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
		}},
	}
	return EnvSources{
		ConfigMaps: map[string]*corev1.ConfigMap{
			"cfg": {ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop"},
				Data:       map[string]string{"mode": "prod", "b": "2", "a": "1"},
				BinaryData: map[string][]byte{"blob": {1}}},
			"other": {ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "shop"}, Data: map[string]string{"mode": "other"}},
		},
		Secrets: map[string]*corev1.Secret{
			"sec": {ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "shop"}, Data: map[string][]byte{"password": []byte("s3cr=t"), "user": []byte("admin")}},
		},
		Downward: downward.Info{
			Pod: pod, PodIPs: []string{"10.85.0.9"}, HostIP: "192.0.2.1", NodeName: "node",
			Node: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
}

func optional() *bool { t := true; return &t }

func cmKey(name, key string, opt *bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}
}

func secretKey(name, key string, opt *bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

func cmFrom(name, prefix string, opt *bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: opt}}
}

func TestResolveEnv(t *testing.T) {
	cases := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		want    []string
	}{
		{
			name:    "envFrom keys sorted within a source, prefixed, before env",
			envFrom: []corev1.EnvFromSource{cmFrom("cfg", "CFG_", nil), {SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}}},
			env:     []corev1.EnvVar{{Name: "Z", Value: "last"}},
			want:    []string{"CFG_a=1", "CFG_b=2", "CFG_mode=prod", "password=s3cr=t", "user=admin", "Z=last"},
		},
		{
			name:    "a later envFrom source replaces an earlier one in place; env replaces envFrom",
			envFrom: []corev1.EnvFromSource{cmFrom("cfg", "", nil), cmFrom("other", "", nil)},
			env:     []corev1.EnvVar{{Name: "a", Value: "env"}},
			want:    []string{"a=env", "b=2", "mode=other"},
		},
		{
			name:    "missing optional envFrom source is skipped",
			envFrom: []corev1.EnvFromSource{cmFrom("nope", "", optional()), cmFrom("other", "O_", nil)},
			want:    []string{"O_mode=other"},
		},
		{
			name:    "values expand against envFrom and earlier env, not later ones",
			envFrom: []corev1.EnvFromSource{cmFrom("other", "", nil)},
			env: []corev1.EnvVar{
				{Name: "A", Value: "$(mode)-$(B)"},
				{Name: "B", Value: "b"},
				{Name: "IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "URL", Value: "http://$(IP):80"},
			},
			want: []string{"mode=other", "A=other-$(B)", "B=b", "IP=10.85.0.9", "URL=http://10.85.0.9:80"},
		},
		{
			name: "valueFrom values are not expanded",
			env: []corev1.EnvVar{
				{Name: "X", Value: "x"},
				{Name: "P", ValueFrom: secretKey("sec", "password", nil)},
			},
			want: []string{"X=x", "P=s3cr=t"},
		},
		{
			name: "optional missing objects and keys set nothing, not even an earlier value",
			env: []corev1.EnvVar{
				{Name: "KEEP", Value: "kept"},
				{Name: "KEEP", ValueFrom: cmKey("cfg", "missing", optional())},
				{Name: "NOCM", ValueFrom: cmKey("nope", "k", optional())},
				{Name: "NOSEC", ValueFrom: secretKey("nope", "k", optional())},
				{Name: "NOKEY", ValueFrom: secretKey("sec", "k", optional())},
				{Name: "MODE", ValueFrom: cmKey("cfg", "mode", optional())},
			},
			want: []string{"KEEP=kept", "MODE=prod"},
		},
		{
			name: "downward fields and resources",
			env: []corev1.EnvVar{
				{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
				{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
				{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
				{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
				{Name: "HOST", ValueFrom: fieldRef("status.hostIP")},
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			},
			want: []string{"NAME=web", "NS=shop", "UID=u-1", "APP=web", "NODE=node", "SA=sa", "HOST=192.0.2.1", "MEM=64", "CPU=4"},
		},
		{
			name: "empty value without valueFrom is set to empty",
			env:  []corev1.EnvVar{{Name: "E"}},
			want: []string{"E="},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveEnv(&corev1.Container{Name: "c", EnvFrom: tc.envFrom, Env: tc.env}, testSources())
			if err != nil {
				t.Fatal(err)
			}
			var kv []string
			for _, v := range got {
				kv = append(kv, v.Name+"="+v.Value)
			}
			if !reflect.DeepEqual(kv, tc.want) {
				t.Errorf("ResolveEnv = %q\nwant %q", kv, tc.want)
			}
		})
	}
}

func TestResolveEnvErrors(t *testing.T) {
	cases := []struct {
		name    string
		envFrom []corev1.EnvFromSource
		env     []corev1.EnvVar
		want    string
	}{
		{name: "missing configmap", env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("nope", "k", nil)}},
			want: `env "A": configmap "nope" not found`},
		{name: "missing secret key", env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("sec", "k", nil)}},
			want: `env "A": couldn't find key k in Secret shop/sec`},
		{name: "binaryData key is not in data", env: []corev1.EnvVar{{Name: "A", ValueFrom: cmKey("cfg", "blob", nil)}},
			want: `env "A": couldn't find key blob in ConfigMap shop/cfg`},
		{name: "missing envFrom secret", envFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}},
			want: `envFrom[0]: secret "nope" not found`},
		{name: "bad field", env: []corev1.EnvVar{{Name: "A", ValueFrom: fieldRef("spec.restartPolicy")}},
			want: `env "A": unsupported fieldPath: spec.restartPolicy`},
		{name: "bad container", env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "x", Resource: "limits.cpu"}}}},
			want: `env "A": container x not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResolveEnv(&corev1.Container{Name: "c", EnvFrom: tc.envFrom, Env: tc.env}, testSources())
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEnvMergesResolvedVariables(t *testing.T) {
	env, vars := Env([]EnvVar{{"MODE", "prod"}, {"IP", "10.0.0.1"}}, Image{Env: []string{"MODE=dev", "LANG=C"}}, "web")
	if want := []string{defaultPathEnv, "HOSTNAME=web", "MODE=prod", "LANG=C", "IP=10.0.0.1"}; !reflect.DeepEqual(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if want := map[string]string{"MODE": "prod", "IP": "10.0.0.1"}; !reflect.DeepEqual(vars, want) {
		t.Errorf("vars = %v, want %v", vars, want)
	}
}

func TestSubPathExpr(t *testing.T) {
	vars := map[string]string{"POD": "web-1", "NS": "shop", "EMPTY": "", "ABS": "/etc", "UP": "..", "DOTS": "..x"}
	for expr, want := range map[string]string{
		"$(POD)":            "web-1",
		"logs/$(NS)/$(POD)": "logs/shop/web-1",
		"$$(POD)":           "$(POD)",
		"plain":             "plain",
		"$(DOTS)":           "..x",
	} {
		if got, err := SubPathExpr(expr, vars); err != nil || got != want {
			t.Errorf("SubPathExpr(%q) = %q, %v; want %q", expr, got, err, want)
		}
	}
	for expr, want := range map[string]string{
		"$(NOPE)/$(EMPTY)/$(NOPE)": "missing value for EMPTY, NOPE",
		"$(ABS)/x":                 "error SubPath `/etc/x` must not be an absolute path",
		"a/$(UP)/b":                "unable to provision SubPath `a/../b`: must not contain '..'",
	} {
		if got, err := SubPathExpr(expr, vars); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SubPathExpr(%q) = %q, %v; want an error containing %q", expr, got, err, want)
		}
	}
}
