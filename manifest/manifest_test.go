package manifest

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/valid")

// golden is what a golden file holds for one valid input.
type golden struct {
	Pods []struct {
		Source string
		Hash   string
		UID    string
		Pod    *corev1.Pod
	}
	ConfigMaps []*corev1.ConfigMap `json:",omitempty"`
	Secrets    []*corev1.Secret    `json:",omitempty"`
}

func render(t *testing.T, set *Set) []byte {
	t.Helper()
	var g golden
	for _, p := range set.Pods {
		g.Pods = append(g.Pods, struct {
			Source string
			Hash   string
			UID    string
			Pod    *corev1.Pod
		}{p.Source.String(), p.Hash, p.UID, p.Pod})
	}
	g.ConfigMaps, g.Secrets = set.ConfigMaps, set.Secrets
	out, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestValidGolden loads each valid input and compares the defaulted objects,
// their hashes and UIDs with testdata/valid/<input>.golden.
func TestValidGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/valid/*.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			set, err := Load([]string{in}, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := render(t, set)
			if *update {
				if err := os.WriteFile(in+".golden", got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(in + ".golden")
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("output differs from %s.golden (go test -update rewrites it):\n%s", in, got)
			}
		})
	}
}

// TestLoadDirectory reads a directory's manifest files in name order, skipping
// other files.
func TestLoadDirectory(t *testing.T) {
	set, err := Load([]string{"testdata/valid"}, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, p := range set.Pods {
		got = append(got, p.Namespace+"/"+p.Name+" from "+p.Source.String())
	}
	want := []string{
		"default/api from testdata/valid/kubectl-get.yaml (document 1)",
		"default/listed from testdata/valid/list.yaml (document 1)",
		"default/hello from testdata/valid/minimal.yaml (document 1)",
		"shop/web from testdata/valid/multi-doc.yaml (document 1)",
		"shop/worker from testdata/valid/multi-doc.yaml (document 2)",
		"default/json-one from testdata/valid/stream.json (document 1)",
		"default/json-two from testdata/valid/stream.json (document 2)",
	}
	assertLines(t, got, want)
	if len(set.ConfigMaps) != 2 || len(set.Secrets) != 1 {
		t.Errorf("got %d ConfigMaps and %d Secrets, want 2 and 1", len(set.ConfigMaps), len(set.Secrets))
	}
}

func TestLoadStdin(t *testing.T) {
	data, err := os.ReadFile("testdata/valid/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{"-"}, strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(set.Pods) != 1 || set.Pods[0].Source != (Source{File: "-", Doc: 1}) {
		t.Fatalf("got %+v, want one pod from stdin document 1", set.Pods)
	}
	if got := set.Pods[0].Source.String(); got != "stdin (document 1)" {
		t.Errorf("Source.String() = %q, want %q", got, "stdin (document 1)")
	}
}

// TestKubectlGetOutput checks that what the API server adds to a pod is
// dropped: status, uid, resourceVersion, creationTimestamp, managedFields.
func TestKubectlGetOutput(t *testing.T) {
	set, err := Load([]string{"testdata/valid/kubectl-get.yaml"}, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	p := set.Pods[0]
	if p.Status.Phase != "" || len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("status kept: %+v", p.Status)
	}
	if p.ResourceVersion != "" || p.Generation != 0 || !p.CreationTimestamp.IsZero() || p.ManagedFields != nil {
		t.Errorf("server-set metadata kept: %+v", p.ObjectMeta)
	}
	if string(p.Pod.UID) != p.UID || p.UID == "6f1c9b1e-8a55-4c44-a0e6-3d8e2b7f9c10" {
		t.Errorf("metadata.uid = %q, want podrun's UID %q", p.Pod.UID, p.UID)
	}
}

// badInput is an input that must be refused with exactly these lines.
type badInput struct {
	name  string
	paths []string
	want  []string
}

func TestInvalidInputs(t *testing.T) {
	tests := []badInput{
		{
			name:  "YAML syntax error carries the line in the file",
			paths: []string{"testdata/invalid/syntax.yaml"},
			want: []string{
				"testdata/invalid/syntax.yaml (document 2): line 12: yaml: mapping values are not allowed in this context",
			},
		},
		{
			name:  "YAML duplicate key carries the line in the file",
			paths: []string{"testdata/invalid/duplicate-key.yaml"},
			want: []string{
				`testdata/invalid/duplicate-key.yaml (document 2): line 14: yaml: key "image" already set in map`,
			},
		},
		{
			name:  "JSON syntax error carries the line in the file",
			paths: []string{"testdata/invalid/syntax.json"},
			want: []string{
				"testdata/invalid/syntax.json (document 2): line 9: json: invalid character '}' looking for beginning of object key string",
			},
		},
		{
			name:  "unknown fields",
			paths: []string{"testdata/invalid/unknown-field.yaml"},
			want: []string{
				"testdata/invalid/unknown-field.yaml (document 1): metdata: unknown field",
				"testdata/invalid/unknown-field.yaml (document 1): spec.containers[0].Image: unknown field",
				"testdata/invalid/unknown-field.yaml (document 1): spec.containers[0].imagePullPolicyy: unknown field",
				"testdata/invalid/unknown-field.yaml (document 1): metadata.name: Required value",
				"testdata/invalid/unknown-field.yaml (document 1): spec.containers[0].image: Required value",
			},
		},
		{
			name:  "wrong types",
			paths: []string{"testdata/invalid/wrong-type.yaml"},
			want: []string{
				"testdata/invalid/wrong-type.yaml (document 1): spec.containers[1].ports[0].containerPort: Invalid type: expected integer, got string",
				"testdata/invalid/wrong-type.yaml (document 1): spec.volumes[0].hostPath.path: Invalid type: expected string, got array",
				"testdata/invalid/wrong-type.yaml (document 1): spec.containers[0].foo: unknown field",
			},
		},
		{
			name:  "unknown kinds",
			paths: []string{"testdata/invalid/unknown-kind.yaml"},
			want: []string{
				`testdata/invalid/unknown-kind.yaml (document 1): kind "Deploymnet" of apiVersion "apps/v1" is not supported (podrun reads v1 Pod, ConfigMap, Secret and List, apps/v1 Deployment, ReplicaSet, StatefulSet and DaemonSet, batch/v1 Job and CronJob, and skips the kinds only a cluster uses)`,
				`testdata/invalid/unknown-kind.yaml (document 2): kind "Pod" of apiVersion "v2" is not supported (podrun reads v1 Pod, ConfigMap, Secret and List, apps/v1 Deployment, ReplicaSet, StatefulSet and DaemonSet, batch/v1 Job and CronJob, and skips the kinds only a cluster uses)`,
				"testdata/invalid/unknown-kind.yaml (document 3): kind: Required value",
				"testdata/invalid/unknown-kind.yaml (document 4): expected a Kubernetes object, got array",
			},
		},
		{
			// Whole numbers too large for their integer fields are out of
			// range (not of the wrong type), at the field that holds them;
			// a progress deadline past a time.Duration is refused.
			name:  "out of range",
			paths: []string{"testdata/invalid/out-of-range.yaml"},
			want: []string{
				"testdata/invalid/out-of-range.yaml (document 1): spec.containers[1].readinessProbe.periodSeconds: Invalid value: 2147483648: out of range: must be between -2147483648 and 2147483647, inclusive",
				"testdata/invalid/out-of-range.yaml (document 1): spec.containers[1].readinessProbe.timeoutSeconds: Invalid type: expected integer, got number",
				"testdata/invalid/out-of-range.yaml (document 1): spec.terminationGracePeriodSeconds: Invalid value: 9223372036854776000: out of range: must be between -9223372036854775808 and 9223372036854775807, inclusive",
				`testdata/invalid/out-of-range.yaml (document 2): metadata.annotations[podrun.io/progress-deadline-seconds]: Invalid value: "9223372037": must be between 1 and 9223372036, inclusive`,
				"testdata/invalid/out-of-range.yaml (document 3): spec.progressDeadlineSeconds: Invalid value: 9223372037: out of range: must be between -2147483648 and 2147483647, inclusive",
				`testdata/invalid/out-of-range.yaml (document 4): spec.template.metadata.annotations[podrun.io/progress-deadline-seconds]: Invalid value: "-5": must be between 1 and 9223372036, inclusive`,
				"testdata/invalid/out-of-range.yaml (document 4): spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds",
				// Seconds past a time.Duration: a grace period or deadline
				// wrapped to a negative one on cbe04fe.
				"testdata/invalid/out-of-range.yaml (document 5): spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 9223372037: must be less than or equal to 9223372036, the most seconds a duration holds",
				"testdata/invalid/out-of-range.yaml (document 5): spec.terminationGracePeriodSeconds: Invalid value: 9223372037: must be less than or equal to 9223372036, the most seconds a duration holds",
				"testdata/invalid/out-of-range.yaml (document 6): spec.activeDeadlineSeconds: Invalid value: 9223372037: must be less than or equal to 9223372036, the most seconds a duration holds",
				"testdata/invalid/out-of-range.yaml (document 7): spec.startingDeadlineSeconds: Invalid value: 9223372037: must be less than or equal to 9223372036, the most seconds a duration holds",
			},
		},
		{
			// podrun's update lock lives in an emptyDir volume of the pod:
			// an annotation naming anything else would be no lock at all.
			name:  "update lock volumes",
			paths: []string{"testdata/invalid/update-lock.yaml"},
			want: []string{
				`testdata/invalid/update-lock.yaml (document 1): metadata.annotations[podrun.io/update-lock-volume]: Invalid value: "config": names a volume that is not an emptyDir: the update lock lives in an emptyDir volume of the pod`,
				`testdata/invalid/update-lock.yaml (document 2): spec.template.metadata.annotations[podrun.io/update-lock-volume]: Invalid value: "lokc": names no volume of the pod: it must name one of its emptyDir volumes`,
			},
		},
		{
			// The decoder's quantity error names no field: podrun finds it.
			name:  "quantities that do not parse",
			paths: []string{"testdata/invalid/bad-quantity.yaml"},
			want: []string{
				`testdata/invalid/bad-quantity.yaml (document 1): spec.volumes[0].emptyDir.sizeLimit: Invalid value: "1Gx": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
				`testdata/invalid/bad-quantity.yaml (document 1): spec.containers[1].resources.limits[cpu]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
				`testdata/invalid/bad-quantity.yaml (document 1): spec.containers[1].resources.requests[memory]: Invalid value: "1.5.5": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
			},
		},
		{
			name:  "empty file",
			paths: []string{"testdata/invalid/empty.yaml"},
			want:  []string{"testdata/invalid/empty.yaml: no Kubernetes objects found"},
		},
		{
			name:  "file of empty documents",
			paths: []string{"testdata/invalid/empty-documents.yaml"},
			want:  []string{"testdata/invalid/empty-documents.yaml: no Kubernetes objects found"},
		},
		{
			name:  "missing file",
			paths: []string{"testdata/invalid/no-such-file.yaml"},
			want:  []string{"testdata/invalid/no-such-file.yaml: no such file or directory"},
		},
		{
			name:  "missing image",
			paths: []string{"testdata/invalid/missing-image.yaml"},
			want: []string{
				"testdata/invalid/missing-image.yaml (document 1): spec.containers[1].image: Required value",
			},
		},
		{
			name:  "duplicate container names, across init and app containers",
			paths: []string{"testdata/invalid/duplicate-containers.yaml"},
			want: []string{
				`testdata/invalid/duplicate-containers.yaml (document 1): spec.containers[0].name: Duplicate value: "app"`,
				`testdata/invalid/duplicate-containers.yaml (document 1): spec.containers[1].name: Duplicate value: "sidecar"`,
				`testdata/invalid/duplicate-containers.yaml (document 1): spec.containers[2].name: Duplicate value: "sidecar"`,
			},
		},
		{
			name:  "duplicate volume names",
			paths: []string{"testdata/invalid/duplicate-volumes.yaml"},
			want: []string{
				`testdata/invalid/duplicate-volumes.yaml (document 1): spec.volumes[1].name: Duplicate value: "data"`,
			},
		},
		{
			name:  "invalid names",
			paths: []string{"testdata/invalid/invalid-names.yaml"},
			want: []string{
				`testdata/invalid/invalid-names.yaml (document 1): metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`testdata/invalid/invalid-names.yaml (document 1): metadata.namespace: Invalid value: "team.a": must not contain dots`,
				`testdata/invalid/invalid-names.yaml (document 1): metadata.labels: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`testdata/invalid/invalid-names.yaml (document 1): spec.volumes[0].name: Invalid value: "Data": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`testdata/invalid/invalid-names.yaml (document 1): spec.containers[0].name: Invalid value: "Main": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			},
		},
		{
			name:  "volumeMount naming no volume",
			paths: []string{"testdata/invalid/mount-without-volume.yaml"},
			want: []string{
				`testdata/invalid/mount-without-volume.yaml (document 1): spec.containers[0].volumeMounts[1].name: Not found: "cache"`,
			},
		},
		{
			name:  "hostPath with ..",
			paths: []string{"testdata/invalid/hostpath-backsteps.yaml"},
			want: []string{
				`testdata/invalid/hostpath-backsteps.yaml (document 1): spec.volumes[0].hostPath.path: Invalid value: "/srv/data/../../etc": must not contain '..'`,
			},
		},
		{
			name:  "two pods with the same namespace/name in one file",
			paths: []string{"testdata/invalid/duplicate-pod-a.yaml"},
			want: []string{
				`testdata/invalid/duplicate-pod-a.yaml (document 3): duplicate pod "default/web": also defined in testdata/invalid/duplicate-pod-a.yaml (document 1)`,
			},
		},
		{
			name:  "two pods with the same namespace/name in two files",
			paths: []string{"testdata/invalid/duplicate-pod-b.yaml", "testdata/invalid/duplicate-pod-c.yaml"},
			want: []string{
				`testdata/invalid/duplicate-pod-c.yaml (document 1): duplicate pod "default/api": also defined in testdata/invalid/duplicate-pod-b.yaml (document 1)`,
				`testdata/invalid/duplicate-pod-c.yaml (document 2): duplicate configmap "default/settings": also defined in testdata/invalid/duplicate-pod-b.yaml (document 2)`,
			},
		},
		{
			name:  "unsupported fields",
			paths: []string{"testdata/invalid/unsupported.yaml"},
			want: []string{
				"testdata/invalid/unsupported.yaml (document 1): spec.containers[0].resources.claims: field not supported by podrun yet",
				"testdata/invalid/unsupported.yaml (document 1): spec.containers[0].securityContext.windowsOptions: field not supported by podrun yet",
				"testdata/invalid/unsupported.yaml (document 1): spec.containers[0].volumeDevices: field not supported by podrun yet",
				"testdata/invalid/unsupported.yaml (document 1): spec.securityContext.seLinuxChangePolicy: field not supported by podrun yet",
				"testdata/invalid/unsupported.yaml (document 1): spec.volumes[0].nfs: field not supported by podrun yet",
				"testdata/invalid/unsupported.yaml (document 1): spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
				`testdata/invalid/unsupported.yaml (document 1): spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Invalid value: "config": must name an emptyDir volume of the pod`,
			},
		},
		{
			name:  "problems of a List item name the item",
			paths: []string{"testdata/invalid/list.yaml"},
			want: []string{
				"testdata/invalid/list.yaml (document 1): items[1].spec.containers[0].volumeDevices: field not supported by podrun yet",
				`testdata/invalid/list.yaml (document 1): items[1].spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match ` + "`containerPort`" + ` when ` + "`hostNetwork`" + ` is true`,
			},
		},
		{
			name:  "multiple problems in several documents and files are reported together",
			paths: []string{"testdata/invalid/multiple.yaml", "testdata/invalid/empty.yaml", "testdata/invalid/missing-image.yaml"},
			want: []string{
				"testdata/invalid/multiple.yaml (document 1): spec.containers[0].volumeDevices: field not supported by podrun yet",
				"testdata/invalid/multiple.yaml (document 1): spec.containers[0].image: Required value",
				`testdata/invalid/multiple.yaml (document 1): spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
				"testdata/invalid/multiple.yaml (document 2): line 17: yaml: found character that cannot start any token",
				"testdata/invalid/multiple.yaml (document 3): spec.containers[0].commnd: unknown field",
				`testdata/invalid/multiple.yaml (document 3): spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`testdata/invalid/multiple.yaml (document 3): spec.containers[0].volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path`,
				"testdata/invalid/empty.yaml: no Kubernetes objects found",
				"testdata/invalid/missing-image.yaml (document 1): spec.containers[1].image: Required value",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, tt.paths, tt.want)
		})
	}
}

func TestEmptyInputs(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{".hidden.yaml": "apiVersion: v1\n", "notes.txt": "x", "sub.yaml/pod.yaml": ""} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		paths []string
		stdin string
		want  []string
	}{
		{"directory without manifest files", []string{dir}, "",
			[]string{dir + ": no Kubernetes objects found: the directory has no .yaml, .yml or .json file"}},
		{"nothing on stdin", []string{"-"}, " \n",
			[]string{"stdin: no Kubernetes objects found"}},
		{"no path", nil, "", []string{"no manifest given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Load(tt.paths, strings.NewReader(tt.stdin))
			checkProblems(t, set, err, tt.want)
		})
	}
}

// TestParse checks Parse on bytes already read, as the static-pod daemon uses it.
func TestParse(t *testing.T) {
	set, err := Parse("inline.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: a, image: busybox}]}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(set.Pods) != 1 || set.Pods[0].Source.String() != "inline.yaml (document 1)" {
		t.Fatalf("got %+v", set.Pods)
	}
	set, err = Parse("inline.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: a}]}\n"))
	checkProblems(t, set, err, []string{"inline.yaml (document 1): spec.containers[0].image: Required value"})
}

func assertProblems(t *testing.T, paths, want []string) {
	t.Helper()
	set, err := Load(paths, nil)
	checkProblems(t, set, err, want)
}

// checkProblems checks that a Load or Parse failed with exactly the lines want.
func checkProblems(t *testing.T, set *Set, err error, want []string) {
	t.Helper()
	if set != nil {
		t.Errorf("got a Set with the problems, want none")
	}
	var problems Problems
	if !errors.As(err, &problems) {
		t.Fatalf("got error %v, want Problems", err)
	}
	assertLines(t, strings.Split(problems.Error(), "\n"), want)
}

func assertLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	t.Errorf("got %d lines:\n\t%s\nwant %d lines:\n\t%s", len(got), strings.Join(got, "\n\t"), len(want), strings.Join(want, "\n\t"))
}

// TestFilesWithoutPods: a file of Services (skipped) and a file of
// ConfigMaps load alike, each with a note saying it holds no pod (on
// cbe04fe the first was "no Kubernetes objects found", exit 2, the second
// silent, exit 0); a file of nothing stays a problem.
func TestFilesWithoutPods(t *testing.T) {
	const svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: b}\n"
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: app, image: busybox:1}]}\n"
	for _, tc := range []struct {
		name, data string
		note       string // the last note, "" for none
	}{
		{"services only", svc + "---\n" + svc, `svc.yaml: no pod in this file, only 2 Service`},
		{"a ConfigMap only", cm, `svc.yaml: no pod in this file, only 1 ConfigMap`},
		{"a Service and a ConfigMap", svc + "---\n" + cm, `svc.yaml: no pod in this file, only 1 ConfigMap, 1 Service`},
		{"a pod too", svc + "---\n" + cm + "---\n" + pod, `svc.yaml (document 1): Service "web" skipped (a cluster's object: one node has nothing to do with it)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Parse("svc.yaml", []byte(tc.data))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if n := len(set.Notes); n == 0 || set.Notes[n-1] != tc.note {
				t.Errorf("notes %q, want the last %q", set.Notes, tc.note)
			}
		})
	}
	if _, err := Parse("empty.yaml", []byte("# nothing\n---\n")); err == nil || err.Error() != "empty.yaml: no Kubernetes objects found" {
		t.Errorf("empty file: %v", err)
	}
}

// TestSourceQuoted: a file name that could pass for part of the message is
// quoted.
func TestSourceQuoted(t *testing.T) {
	for file, want := range map[string]string{
		"pod.yaml":             "pod.yaml (document 2)",
		"dir/my pod.yaml":      `"dir/my pod.yaml" (document 2)`,
		"a.yaml: spec.x":       `"a.yaml: spec.x" (document 2)`,
		"evil\nok.yaml":        `"evil\nok.yaml" (document 2)`,
		"-":                    "stdin (document 2)",
		"https://x/pods?a=b&c": "https://x/pods?a=b&c (document 2)",
	} {
		if got := (Source{File: file, Doc: 2}).String(); got != want {
			t.Errorf("Source{%q}.String() = %s, want %s", file, got, want)
		}
	}
}
