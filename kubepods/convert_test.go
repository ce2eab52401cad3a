package kubepods

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/podrun/podrun/manifest"
)

// apiPod is a Deployment's pod as the API server returns it once bound
// (v1.37: defaulted, the service account's projected token volume added,
// the default tolerations, owner reference and status).
const apiPod = `{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "web-5d9c7b8f6-x2k4q", "generateName": "web-5d9c7b8f6-", "namespace": "default",
    "uid": "0b4a2f5e-7a3c-4f6e-9d1b-2c3d4e5f6a7b", "resourceVersion": "812", "creationTimestamp": "2026-11-29T15:00:00Z",
    "labels": {"app": "web", "pod-template-hash": "5d9c7b8f6"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c7b8f6", "uid": "a1b2c3d4-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}],
    "finalizers": ["example.com/keep"],
    "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T15:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]
  },
  "spec": {
    "volumes": [{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
      {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
      {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
      {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
    "containers": [{"name": "web", "image": "podrun.test/api-web:1", "command": ["sleep", "3600"], "resources": {},
      "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
      "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "vm", "securityContext": {},
    "schedulerName": "default-scheduler",
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
      {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
  },
  "status": {"phase": "Pending", "qosClass": "BestEffort",
    "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T15:00:00Z"}]}
}`

func decodePod(t *testing.T, s string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func rootCA() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{Data: map[string]string{"ca.crt": "CA"}}
	cm.Name, cm.Namespace = "kube-root-ca.crt", "default"
	return cm
}

// TestConvert: a Deployment's pod as the API server serves it is read as a
// manifest's pod, keeps its name and the API's UID, and carries the
// ConfigMap it names; the token source stays at its place but counts not
// in the pod's Hash; what it cannot run is a problem naming the field.
func TestConvert(t *testing.T) {
	pod := decodePod(t, apiPod)
	p, err := Convert(manifest.Options{StaticNode: "vm"}, pod, &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}})
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != string(pod.UID) || p.Pod.UID != pod.UID || p.Key() != "default/web-5d9c7b8f6-x2k4q" || p.Source.Origin() != SourceName {
		t.Errorf("uid %s/%s key %s source %s", p.UID, p.Pod.UID, p.Key(), p.Source.Origin())
	}
	if p.Annotations[manifest.ConfigSourceAnnotation] != "" || p.Spec.NodeName != "vm" {
		t.Errorf("made a static pod: %v, node %q", p.Annotations, p.Spec.NodeName)
	}
	if !equality.Semantic.DeepEqual(p.Spec.Volumes, pod.Spec.Volumes) || p.ConfigMaps["kube-root-ca.crt"] == nil {
		t.Errorf("volumes %+v, configmaps %v", p.Spec.Volumes, p.ConfigMaps)
	}
	noToken := decodePod(t, strings.Replace(apiPod, `{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},`, "", 1))
	q, err := Convert(manifest.Options{StaticNode: "vm"}, noToken, &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}})
	if err != nil || q.Hash != p.Hash || len(q.Spec.Volumes[0].Projected.Sources) != 2 {
		t.Errorf("without its token source: %v, hash %s want %s", err, q.Hash, p.Hash)
	}
	if pod.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken == nil || pod.OwnerReferences == nil {
		t.Error("the API's pod was changed")
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"missing configmap", "", "", `ConfigMap "kube-root-ca.crt" not found`},
		{"unsupported field", `"priority": 0,`, `"priority": 0, "runtimeClassName": "gvisor",`, "UnsupportedPodSpec: spec.runtimeClassName: field not supported by podrun yet"},
	} {
		objects := &manifest.Set{ConfigMaps: []*corev1.ConfigMap{rootCA()}}
		if tc.from == "" {
			objects = nil
		}
		_, err := Convert(manifest.Options{}, decodePod(t, strings.Replace(apiPod, tc.from, tc.to, 1)), objects)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRefs(t *testing.T) {
	pod := decodePod(t, apiPod)
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol"}}})
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "k"}}},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "vol"}, Key: "k"}}}}
	c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "from"}}}}
	cms, secrets := Refs(pod)
	if got := fmt.Sprint(cms, secrets); got != "[env from kube-root-ca.crt] [pull vol]" {
		t.Errorf("refs %s", got)
	}
}

// TestWithTokenSources: the token sources go back at their place among
// the sources read, whatever their position, and only into the volumes
// that had them.
func TestWithTokenSources(t *testing.T) {
	tok := func(path string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: path}}
	}
	cm := func(name string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	proj := func(name string, s ...corev1.VolumeProjection) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: s}}}
	}
	api := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		proj("a", cm("x"), tok("t1"), cm("y"), tok("t2")),
		proj("b", tok("only")),
		proj("c", cm("z")),
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}}
	read := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		proj("a", cm("x"), cm("y")),
		proj("b"),
		proj("c", cm("z")),
	}}}
	withTokenSources(read, api)
	want := []corev1.Volume{
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		proj("a", cm("x"), tok("t1"), cm("y"), tok("t2")),
		proj("b", tok("only")),
		proj("c", cm("z")),
	}
	if !equality.Semantic.DeepEqual(read.Spec.Volumes, want) {
		t.Errorf("volumes %+v\nwant %+v", read.Spec.Volumes, want)
	}
	read.Spec.Volumes[1].Projected.Sources[1].ServiceAccountToken.Path = "changed"
	if api.Spec.Volumes[0].Projected.Sources[1].ServiceAccountToken.Path != "t1" {
		t.Error("the API's pod shares its sources with the pod read")
	}
}
