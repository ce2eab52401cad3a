package manifest

import (
	"strings"
	"testing"
)

const psPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  imagePullSecrets:
  - name: regcred
  containers:
  - name: main
    image: registry.example.com/web:1
`

func TestPullSecrets(t *testing.T) {
	good := `---
apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"registry.example.com": {"username": "u", "password": "p"}}}'
`
	legacy := `---
apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockercfg
data:
  .dockercfg: eyJyZWdpc3RyeS5leGFtcGxlLmNvbSI6IHsiYXV0aCI6ICJkVHB3In19
`
	for _, tc := range []struct {
		name, input string
		want        []string // problems, one per line
	}{
		{name: "dockerconfigjson in the same file", input: psPod + good},
		{name: "dockercfg, before the pod", input: legacy + "---\n" + psPod},
		{name: "missing", input: psPod, want: []string{
			`in.yaml (document 1): spec.imagePullSecrets[0].name: Secret "regcred" not found in namespace "default": define it in the same input, with type kubernetes.io/dockerconfigjson`}},
		{name: "other namespace", input: psPod + strings.Replace(good, "name: regcred", "name: regcred\n  namespace: other", 1), want: []string{
			`in.yaml (document 1): spec.imagePullSecrets[0].name: Secret "regcred" not found in namespace "default"`}},
		{name: "wrong type", input: psPod + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\nstringData:\n  a: b\n", want: []string{
			`in.yaml (document 1): spec.imagePullSecrets[0].name: Secret "regcred" has type "Opaque"; an image pull secret must have type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg`}},
		{name: "empty name", input: strings.Replace(psPod, "name: regcred", `name: ""`, 1), want: []string{
			`in.yaml (document 1): spec.imagePullSecrets[0].name: Required value`}},
		{name: "bad content", input: psPod + strings.Replace(good, `{"auths"`, `{"auths": 3, "x"`, 1), want: []string{
			`in.yaml (document 2): stringData[.dockerconfigjson]: not a Docker config`}},
		{name: "missing key", input: psPod + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\ndata: {}\n", want: []string{
			`in.yaml (document 2): data: no ".dockerconfigjson" key (required by type kubernetes.io/dockerconfigjson)`}},
		{name: "in a List", input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: web}\n  spec:\n    imagePullSecrets: [{name: nope}]\n    containers: [{name: main, image: busybox}]\n", want: []string{
			`in.yaml (document 1): items[0].spec.imagePullSecrets[0].name: Secret "nope" not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Parse("in.yaml", []byte(tc.input))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if len(set.Pods) != 1 || len(set.Secrets) != 1 {
					t.Fatalf("got %d pods and %d secrets", len(set.Pods), len(set.Secrets))
				}
				if ps := set.Pods[0].PullSecrets; len(ps) != 1 || ps[0] != set.Secrets[0] {
					t.Errorf("the pod carries pull secrets %v; want the Secret read with it", ps)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded; want problems %q", tc.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", err, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d:\n%s\nwant it to start with\n%s", i, lines[i], w)
				}
			}
		})
	}
}
