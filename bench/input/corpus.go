package main

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// input is one file of the corpus: its name, what it is, and how to make it.
type input struct {
	name, what string
	make       func() []byte
}

// corpus is the inputs the benchmark reads: typical files, the largest a
// limit lets through (10 MiB, 1000 objects, 1.5 MiB an object), the
// densest (as many YAML nodes per byte as a manifest can have, and as the
// bounds on values let through), and the hostile ones of issue 35 (aliases
// expanding to gigabytes).
var corpus = []input{
	{"pod.yaml", "one typical pod", func() []byte { return []byte(unindent(pod(0, 0))) }},
	{"list-1000.yaml", "a List of 1000 typical pods", func() []byte { return yamlList(1000, func(i int) string { return pod(i, 0) }) }},
	{"docs-1000.yaml", "1000 typical pods, one per document", func() []byte {
		var b bytes.Buffer
		for i := range 1000 {
			b.WriteString("---\n" + unindent(pod(i, 0)))
		}
		return b.Bytes()
	}},
	{"list-1000.json", "a List of 1000 typical pods, JSON", func() []byte { return jsonOf(yamlList(1000, func(i int) string { return pod(i, 0) })) }},
	{"list-9.8M.yaml", "a List of 1000 pods, each with a 9.5 KB annotation", func() []byte { return yamlList(1000, func(i int) string { return pod(i, 9500) }) }},
	{"list-dense-10M.yaml", "a List of 1000 pods, each with 5000 one-letter args (flow; refused: more values than the file's bound)", func() []byte { return denseList(1000, 5000, "a") }},
	{"list-dense-max.yaml", "the densest List the file's bound lets through: 1000 pods of 1640 five-letter args (a value per 6 bytes)", func() []byte { return denseList(1000, 1640, "abcde") }},
	{"list-dense-10M.json", "the same as JSON, 2400 args each (refused: more values than the file's bound)", func() []byte {
		var b bytes.Buffer
		b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
		for i := range 1000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"i","args":["a"%s]}]}}`, i, strings.Repeat(`,"a"`, 2399))
		}
		b.WriteString("]}")
		return b.Bytes()
	}},
	{"list-env-10M.yaml", "a List of 1000 pods, each with 300 env entries", func() []byte {
		return yamlList(1000, func(i int) string {
			var env strings.Builder
			for k := range 300 {
				fmt.Fprintf(&env, "      - {name: E%d, value: \"1\"}\n", k)
			}
			return fmt.Sprintf("- apiVersion: v1\n  kind: Pod\n  metadata: {name: p%d}\n  spec:\n    containers:\n    - name: c\n      image: busybox:1\n      env:\n%s", i, env.String())
		})
	}},
	{"configmaps-10M.yaml", "10 ConfigMaps of 1 MB of data each", func() []byte {
		var b bytes.Buffer
		for i := range 10 {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata:\n  big: |\n", i)
			for range 1000 {
				b.WriteString("    " + strings.Repeat("d", 1000) + "\n")
			}
		}
		return b.Bytes()
	}},
	{"pod-dense-780K.yaml", "a pod of 390,000 one-letter args (1.5 MiB of JSON; refused: more values than a document's bound)", func() []byte { return densePod(390000) }},
	{"pod-dense-103K.yaml", "the densest pod a document's bound lets be parsed: 51,500 one-letter args", func() []byte { return densePod(51500) }},
	{"pod-2.8M.yaml", "a pod of 2.8 MB of annotations (refused: larger than 1.5 MiB)", func() []byte {
		var b bytes.Buffer
		b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n")
		for i := range 2800 {
			fmt.Fprintf(&b, "    k%d: %q\n", i, strings.Repeat("q", 1000))
		}
		b.WriteString("spec:\n  containers: [{name: c, image: i}]\n")
		return b.Bytes()
	}},
	{"pod-dense-1.4M.yaml", "a pod of 700,000 one-letter args (refused: more values than a document's bound)", func() []byte { return densePod(700000) }},
	{"pod-empty-25K.yaml", "a pod of 25,000 empty containers ({}: 4 bytes each; invalid)", func() []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{}" + strings.Repeat(", {}", 25000-1) + "]\n")
	}},
	{"list-empty-vols.yaml", "a List of 100 pods of 1600 empty volumes each (160,000 {}, 6 bytes each; invalid)", func() []byte {
		return yamlList(100, func(i int) string {
			return fmt.Sprintf("- {apiVersion: v1, kind: Pod, metadata: {name: p%d}, spec: {containers: [{name: c, image: i}], volumes: [{}%s]}}\n", i, strings.Repeat(",   {}", 1600-1))
		})
	}},
	{"list-named-vols.yaml", "a List of 100 pods of 330 emptyDir volumes each, named (33,000, 28 bytes each)", func() []byte {
		return yamlList(100, func(i int) string {
			var v strings.Builder
			for k := range 330 {
				fmt.Fprintf(&v, ", {name: v%d, emptyDir: {}}", k)
			}
			return fmt.Sprintf("- {apiVersion: v1, kind: Pod, metadata: {name: p%d}, spec: {containers: [{name: c, image: i}], volumes: [%s]}}\n", i, v.String()[2:])
		})
	}},
	{"pod-empty-max.yaml", "the most empty containers a document's bound lets be parsed: 2780 (an item of containers counts 17 values more)", func() []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{}" + strings.Repeat(", {}", 2780-1) + "]\n")
	}},
	{"vols-empty-max.yaml", "the most empty volumes the file's bound lets through: 3 pods of 4000 (a volume counts 10 more, 100,000 of which allowed besides; invalid)", func() []byte {
		var b bytes.Buffer
		for i := range 3 {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{}%s]\n", i, strings.Repeat(",   {}", 3999))
		}
		return b.Bytes()
	}},
	{"list-compact-1000.yaml", "a List of 1000 compact pods (flow style) of 3 containers and 5 volumes", func() []byte {
		return yamlList(1000, func(i int) string {
			var v strings.Builder
			for k := 1; k <= 5; k++ {
				fmt.Fprintf(&v, "    - {name: v%d, emptyDir: {}}\n", k)
			}
			return fmt.Sprintf("- apiVersion: v1\n  kind: Pod\n  metadata: {name: pod-%d}\n  spec:\n    containers:\n    - {name: a, image: busybox:1, volumeMounts: [{name: v1, mountPath: /a}]}\n    - {name: b, image: busybox:1}\n    - {name: c, image: busybox:1}\n    volumes:\n%s", i, v.String())
		})
	}},
	{"alias-list.yaml", "a 125 KB List: one 100 KB scalar referenced 5000 times (refused)", func() []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "apiVersion: v1\nkind: List\nanchor: &a %q\nitems:\n", strings.Repeat("x", 100000))
		for range 5000 {
			b.WriteString("- *a\n")
		}
		return b.Bytes()
	}},
	{"alias-list-900.yaml", "a List of 900 ConfigMaps sharing one 100 KB anchored value (refused)", func() []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c0}, data: {k: &a %q}}\n", strings.Repeat("x", 100000))
		for i := 1; i < 900; i++ {
			fmt.Fprintf(&b, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c%d}, data: {k: *a}}\n", i)
		}
		return b.Bytes()
	}},
	{"alias-pod.yaml", "a 750 KB pod: one 10 KB scalar referenced 50,000 times (refused)", func() []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a0: &b %q\n", strings.Repeat("y", 10000))
		for i := 1; i < 50000; i++ {
			fmt.Fprintf(&b, "    a%d: *b\n", i)
		}
		b.WriteString("spec:\n  containers: [{name: c, image: i}]\n")
		return b.Bytes()
	}},
	{"alias-maps.yaml", "a 17 KB pod: a 100-key map referenced 4000 times (refused)", func() []byte {
		var b bytes.Buffer
		b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nx: &m {")
		for k := range 100 {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "k%d: v", k)
		}
		b.WriteString("}\ny: [*m")
		b.WriteString(strings.Repeat(", *m", 3999))
		b.WriteString("]\nspec:\n  containers: [{name: c, image: i}]\n")
		return b.Bytes()
	}},
	{"alias-small-maps.yaml", "a 520 KB pod: a one-key map referenced 130,000 times (refused)", func() []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: &m {k: v}\ny: [*m" + strings.Repeat(", *m", 130000-1) + "]\nspec:\n  containers: [{name: c, image: i}]\n")
	}},
}

// pod is a typical pod as an item of a List, with an annotation of pad bytes.
func pod(i, pad int) string {
	return fmt.Sprintf(`- apiVersion: v1
  kind: Pod
  metadata:
    name: pod-%d
    labels: {app: web, tier: front}
    annotations:
      note: "%s"
  spec:
    containers:
    - name: app
      image: busybox:1
      command: ["sh", "-c", "sleep 3600"]
      env:
      - {name: A, value: "1"}
      - {name: B, value: "2"}
      ports:
      - containerPort: 80
      resources:
        limits: {cpu: 100m, memory: 64Mi}
      readinessProbe:
        httpGet: {path: /, port: 80}
`, i, strings.Repeat("z", pad))
}

// unindent makes a List item a document.
func unindent(item string) string {
	item = strings.TrimPrefix(item, "- ")
	return strings.ReplaceAll(item, "\n  ", "\n")
}

func yamlList(n int, item func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range n {
		b.WriteString(item(i))
	}
	return b.Bytes()
}

// denseList is a List of n pods of args values word, in flow sequences.
func denseList(n, args int, word string) []byte {
	return yamlList(n, func(i int) string {
		return fmt.Sprintf("- {apiVersion: v1, kind: Pod, metadata: {name: p%d}, spec: {containers: [{name: c, image: i, args: [%s%s]}]}}\n", i, word, strings.Repeat(","+word, args-1))
	})
}

// densePod is a pod of args one-letter values in a flow sequence: two
// bytes a value.
func densePod(args int) []byte {
	return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    args: [a" + strings.Repeat(",a", args-1) + "]\n")
}

// jsonOf converts YAML to JSON, as kubectl does.
func jsonOf(y []byte) []byte {
	out, err := yaml.YAMLToJSON(y)
	if err != nil {
		panic(err)
	}
	return out
}
