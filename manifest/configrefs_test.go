package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refsPod references every kind of config object.
const refsPod = `apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  volumes:
  - name: cm
    configMap:
      name: app-config
      items:
      - key: app.conf
        path: conf/app.conf
        mode: 0400
  - name: sec
    secret:
      secretName: app-secret
  - name: all
    projected:
      sources:
      - configMap:
          name: app-config
      - secret:
          name: app-secret
          items:
          - key: token
            path: token
      - downwardAPI:
          items:
          - path: labels
            fieldRef:
              fieldPath: metadata.labels
  containers:
  - name: main
    image: busybox
    env:
    - name: LEVEL
      valueFrom:
        configMapKeyRef:
          name: app-config
          key: level
    - name: TOKEN
      valueFrom:
        secretKeyRef:
          name: app-secret
          key: token
    envFrom:
    - configMapRef:
        name: app-config
    - secretRef:
        name: app-secret
`

const refsObjects = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  app.conf: "a=1"
  level: debug
binaryData:
  blob: AAEC
---
apiVersion: v1
kind: Secret
metadata:
  name: app-secret
data:
  token: b2xk
  user: YWRtaW4=
stringData:
  token: new
`

func TestConfigRefs(t *testing.T) {
	set, err := Parse("in.yaml", []byte(refsPod+refsObjects))
	if err != nil {
		t.Fatal(err)
	}
	p := set.Pods[0]
	if cm := p.ConfigMaps["app-config"]; cm == nil || cm.Data["level"] != "debug" || string(cm.BinaryData["blob"]) != "\x00\x01\x02" {
		t.Errorf("ConfigMaps: %v", p.ConfigMaps)
	}
	s := p.Secrets["app-secret"]
	if s == nil || string(s.Data["token"]) != "new" || string(s.Data["user"]) != "admin" || s.StringData != nil {
		t.Errorf("Secret: stringData must win over data and be merged into it: %+v", s)
	}
	if m := *p.Spec.Volumes[0].ConfigMap.DefaultMode; m != 0o644 {
		t.Errorf("configMap defaultMode %o, want the API default 0644", m)
	}
	if v := p.Spec.Volumes[2].Projected; *v.DefaultMode != 0o644 || v.Sources[2].DownwardAPI.Items[0].FieldRef.APIVersion != "v1" {
		t.Errorf("projected defaults: %+v", v)
	}
	// The identity is the pod's alone: the objects' content is not part of it.
	other, err := Parse("in.yaml", []byte(refsPod+strings.Replace(refsObjects, "level: debug", "level: info", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if other.Pods[0].UID != p.UID {
		t.Error("changing a ConfigMap changed the pod's UID")
	}
}

func TestConfigRefProblems(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{name: "everything missing", input: refsPod, want: []string{
			`spec.volumes[0].configMap.name: ConfigMap "app-config" not found in namespace "default"`,
			`spec.volumes[1].secret.secretName: Secret "app-secret" not found`,
			`spec.volumes[2].projected.sources[0].configMap.name: ConfigMap "app-config" not found`,
			`spec.volumes[2].projected.sources[1].secret.name: Secret "app-secret" not found`,
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.name: ConfigMap "app-config" not found`,
			`spec.containers[0].env[1].valueFrom.secretKeyRef.name: Secret "app-secret" not found`,
			`spec.containers[0].envFrom[0].configMapRef.name: ConfigMap "app-config" not found`,
			`spec.containers[0].envFrom[1].secretRef.name: Secret "app-secret" not found`,
		}},
		{name: "missing keys", input: refsPod + strings.NewReplacer("app.conf: \"a=1\"", "other: x", "level: debug", "x: z", "token: new", "t: u", "token: b2xk", "t2: b2xk").Replace(refsObjects), want: []string{
			`spec.volumes[0].configMap.items[0].key: ConfigMap "app-config" has no key "app.conf"`,
			`spec.volumes[2].projected.sources[1].secret.items[0].key: Secret "app-secret" has no key "token"`,
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.key: ConfigMap "app-config" has no key "level"`,
			`spec.containers[0].env[1].valueFrom.secretKeyRef.key: Secret "app-secret" has no key "token"`,
		}},
		{name: "env key in binaryData only", input: strings.Replace(refsPod, "key: level", "key: blob", 1) + refsObjects, want: []string{
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.key: ConfigMap "app-config" has no key "blob"`,
		}},
		{name: "optional volume", input: strings.Replace(refsPod, "      name: app-config\n", "      name: app-config\n      optional: true\n", 1) + strings.Replace(refsObjects, "app.conf:", "other:", 1)},
		{name: "other namespace", input: refsPod + strings.ReplaceAll(refsObjects, "  name: app-secret\n", "  name: app-secret\n  namespace: other\n"), want: []string{
			`spec.volumes[1].secret.secretName: Secret "app-secret" not found in namespace "default"`,
			`spec.volumes[2].projected.sources[1].secret.name: Secret "app-secret" not found`,
			`spec.containers[0].env[1].valueFrom.secretKeyRef.name: Secret "app-secret" not found`,
			`spec.containers[0].envFrom[1].secretRef.name: Secret "app-secret" not found`,
		}},
		{name: "bad keys", input: refsPod + refsObjects + "  bad/key: x\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\ndata:\n  k: v\nbinaryData:\n  k: AA==\n", want: []string{
			`in.yaml (document 3): stringData[bad/key]: Invalid value: "bad/key": a valid config key must consist of alphanumeric characters`,
			`in.yaml (document 4): binaryData[k]: Invalid value: "k": duplicate of key present in data`,
		}},
		{name: "resourceFieldRef of another pod's container", input: strings.Replace(refsPod, `          - path: labels
            fieldRef:
              fieldPath: metadata.labels`, `          - path: mem
            resourceFieldRef:
              containerName: nope
              resource: limits.memory`, 1) + refsObjects, want: []string{
			`spec.volumes[2].projected.sources[2].downwardAPI.items[0].resourceFieldRef.containerName: container "nope" not found in the pod`,
		}},
		{name: "downwardAPI volume field paths", input: strings.Replace(refsPod, "fieldPath: metadata.labels", "fieldPath: status.podIP", 1) + refsObjects, want: []string{
			`spec.volumes[2].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`,
		}},
		{name: "volume fields", input: strings.NewReplacer("path: conf/app.conf", "path: ../app.conf", "mode: 0400", "mode: 01000", "path: labels", "path: token").Replace(refsPod) + refsObjects, want: []string{
			`spec.volumes[0].configMap.items[0].path: Invalid value: "../app.conf": must not contain '..'`,
			`spec.volumes[0].configMap.items[0].mode: Invalid value: 512: must be a number between 0 and 0777`,
			`spec.volumes[2].projected.sources[2].downwardAPI.items[0].path: Invalid value: "token": conflicting duplicate paths`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("in.yaml", []byte(tc.input))
			refProblems(t, err, tc.want)
		})
	}
}

// refProblems checks that err lists exactly one problem per want, in
// order, each containing its want.
func refProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected problems:\n%v", err)
		}
		return
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v, want problems", err)
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems:\n%v\nwant %d:\n%s", len(ps), err, len(want), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(ps[i].String(), w) {
			t.Errorf("problem %d: got\n\t%s\nwant it to contain\n\t%s", i, ps[i], w)
		}
	}
}

func TestResolveAcrossParts(t *testing.T) {
	pods, err := Options{}.ParseUnresolved("pod.yaml", []byte(refsPod))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(pods); err == nil {
		t.Fatal("Resolve without the objects succeeded")
	}
	objs, err := Options{}.ParseUnresolved("objects.yaml", []byte(refsObjects))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Resolve(pods, objs)
	if err != nil {
		t.Fatal(err)
	}
	if set.Pods[0].ConfigMaps["app-config"] == nil || pods.Pods[0].ConfigMaps != nil {
		t.Errorf("Resolve must fill a copy of the pod: %v / %v", set.Pods[0].ConfigMaps, pods.Pods[0].ConfigMaps)
	}

	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	podFile, objFile := write("pod.yaml", refsPod), write("objects.yaml", refsObjects)
	cm, err := LoadObjects([]string{objFile})
	if err != nil {
		t.Fatal(err)
	}
	if set, err := (Options{}).LoadWith([]string{podFile}, nil, cm); err != nil || set.Pods[0].Secrets["app-secret"] == nil {
		t.Errorf("LoadWith: %v", err)
	}
	_, err = LoadObjects([]string{"-"})
	refProblems(t, err, []string{"stdin: a --configmap file must be a file or directory, not stdin"})
	_, err = LoadObjects([]string{podFile, objFile})
	refProblems(t, err, []string{"pod.yaml (document 1): kind: a --configmap file holds ConfigMap and Secret objects only, not a Pod"})
}
