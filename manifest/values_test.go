package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	yaml3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func TestCountValues(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
		field      string // with a threshold of 3
	}{
		{"scalar", "a\n", 1, ""},
		{"block mapping", "a: b\nc: d\n", 4, ""},
		{"nested", "spec:\n  containers:\n  - name: c\n    image: i\n", 6 + containerWeight, "spec.containers[0]"},
		{"flow containers", "containers: [{}, {}]\n", 4 + 2*containerWeight, "containers"},
		{"block entries weighed", "initContainers:\n- {}\n-\n  name: c\nvolumes:\n  - name: v\n", 8 + 2*containerWeight + volumeWeight, "initContainers"},
		{"JSON volumes", `{"spec":{"volumes":[{},{"name":"v"}]}}`, 9 + 2*volumeWeight, "spec.volumes"},
		{"weighed in a flow map", "c: {volumeMounts: [{}], b: [x]}\n", 8 + 4, "c.volumeMounts"},
		{"env not weighed", "env:\n- {}\n- {name: a}\nx: [env, [{}]]\n", 10, "env"},
		{"flow sequence", "args: [a,b,c,d]\n", 6, "args"},
		{"flow in a sequence entry", "x:\n- [a, b, c, d]\n", 6, "x[0]"},
		{"flow mapping keys", "m: {a: [1, 2, 3, 4], b: c}\n", 10, "m.a"},
		{"JSON", `{"spec":{"args":["a","b","c","d"]}}`, 9, "spec.args"},
		{"JSON sequence of maps", `{"v":[{},{},{"k":[1,2,3,4]}]}`, 12, "v[2].k"},
		{"comments", "# a, b, c\na: b # [x, y, z]\n# - d\n", 2, ""},
		{"quoted scalars", "a: \"[x, y, z]\"\nb: 'it''s: [x, y]'\n", 4, ""},
		{"quoted over lines", "a: \"x,\n  - y, [z]\"\nb: c\n", 4, ""},
		{"quoted key", "\"a: b\": c\n", 2, ""},
		{"block scalar", "a: |\n  - x\n  - [y, z]\n\n  k: v\nb: c\n", 4, ""},
		{"block scalar in an entry", "- a: >-\n    x: [1, 2, 3]\n  b: [1, 2, 3, 4]\n", 8, "[0].b"},
		{"plain with colon and quote", "image: http://x:80/it's\nc: d\n", 4, ""},
		{"plain with brackets", "command: echo [a, b] {c}\n", 2, ""},
		{"url in flow", "args: [http://a:80, b]\n", 4, ""},
		{"block sequence", "a:\n- x\n- y\n-\n- z\n", 5, "a"},
		{"anchor and tag", "a: &x !!str [1, 2, 3, 4]\n", 6, "a"},
		{"flow over lines", "a: [\n  1, # one\n  2,\n  3, 4]\nb: c\n", 8, "a"},
		{"nested sequences", "- - a\n  - b\n- c\n", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countValues([]byte(tt.text), 3)
			if got.n != tt.want || got.field != tt.field {
				t.Errorf("countValues(%q) = %d values, field %q; want %d, %q", tt.text, got.n, got.field, tt.want, tt.field)
			}
		})
	}
}

// yamlNodes counts the nodes go-yaml v3 parses text into (aliases as one).
func yamlNodes(t *testing.T, text []byte) int {
	var n int
	dec := yaml3.NewDecoder(bytes.NewReader(text))
	for {
		var doc yaml3.Node
		if err := dec.Decode(&doc); err != nil {
			return n
		}
		var walk func(*yaml3.Node)
		walk = func(x *yaml3.Node) {
			if x.Kind != yaml3.DocumentNode {
				n++
			}
			for _, c := range x.Content {
				walk(c)
			}
		}
		walk(&doc)
	}
}

// TestCountValuesNearParser: on the manifests of the tests and the
// examples, the count is within a third of go-yaml's node count (and the
// bound, 50,000 values, so far above them that it refuses none).
func TestCountValuesNearParser(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	more, _ := filepath.Glob("../examples/*.yaml")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("only %d manifests found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		chunks, _ := yamlChunks(f, data)
		got := 0
		for _, c := range chunks {
			count := countValues(c.text, 1<<30)
			got += count.n - count.weighed
		}
		want := yamlNodes(t, data)
		if 3*got < 2*want || 3*got > 4*want {
			t.Errorf("%s: counted %d values, go-yaml has %d nodes", f, got, want)
		}
	}
}

// densePod is a pod whose args are n one-letter values in a flow
// sequence: two bytes a value.
func densePod(n int) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    args: [a" + strings.Repeat(",a", n-1) + "]\n"
}

// TestTooManyValuesRefused: a document (or a List's item) holding more
// values than maxValues is refused before it is parsed, the problem naming
// file, document and the field that holds them; one just under is read.
func TestTooManyValuesRefused(t *testing.T) {
	// 50,000 + size/64 values: n args and 19 other values in about 2n+100 bytes.
	under, over := densePod(51500), densePod(51700)
	if _, err := Parse("under.yaml", []byte(under)); err != nil {
		t.Fatalf("a document just under the bound: %v", err)
	}
	_, err := Parse("over.yaml", []byte(over))
	want := fmt.Sprintf("over.yaml (document 1): spec.containers[0].args: the document holds 51733 values (scalars, keys, lists, maps; an item of a pod's containers counts 17 more, of its volumes 10), more than the 51617 its %d bytes may hold (50000 and one per 64 bytes)", len(over))
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a document just over the bound: %v\nwant %s", err, want)
	}

	// In JSON, and as an item of a List (a YAML List over 256 KiB is read
	// item by item): the item is named, the others are read.
	pod := func(name string, n int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"i","args":["a"%s]}]}}`, name, strings.Repeat(`,"a"`, n-1))
	}
	_, err = Parse("p.json", []byte(pod("p", 60000)))
	if err == nil || !strings.HasPrefix(err.Error(), "p.json (document 1): spec.containers[0].args: the document holds 60037 values") {
		t.Errorf("a JSON document over the bound: %v", err)
	}
	list := `{"apiVersion":"v1","kind":"List","items":[` + pod("a", 10) + "," + pod("b", 60000) + "]}"
	_, err = Parse("l.json", []byte(list))
	if err == nil || !strings.HasPrefix(err.Error(), "l.json (document 1): items[1].spec.containers[0].args: the item holds 60037 values") {
		t.Errorf("a JSON List's item over the bound: %v", err)
	}
	var y strings.Builder
	y.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range 30 {
		fmt.Fprintf(&y, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p%d}\n  spec:\n    containers: [{name: c, image: i, args: [%s]}]\n", i, strings.Repeat("abcdefghi,", 1000))
	}
	y.WriteString("- apiVersion: v1\n  kind: Pod\n  metadata: {name: dense}\n  spec:\n    containers: [{name: c, image: i, args: [a" + strings.Repeat(",a", 60000) + "]}]\n")
	_, err = Parse("l.yaml", []byte(y.String()))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "l.yaml (document 1): items[30].spec.containers[0].args: the item holds 60036 values") {
		t.Errorf("a YAML List's item over the bound: %v", err)
	}
}

// TestFileTooManyValuesRefused: a file whose documents hold more values
// than maxFileValues, each within maxValues, is refused before any is
// read, naming the document holding the most; one just under is read.
func TestFileTooManyValuesRefused(t *testing.T) {
	doc := func(i, n int) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers: [{name: c, image: i, args: [a%s]}]\n", i, strings.Repeat(",a", n-1))
	}
	// Each document: n+18 values (and a container's weight) in 2n+91 bytes or so; the file at most
	// 50,000 and one per 6 bytes.
	file := func(docs, n int) []byte {
		var b strings.Builder
		for i := range docs {
			b.WriteString(doc(i, n))
		}
		b.WriteString(doc(docs, 2*n))
		return []byte(b.String())
	}
	values := func(docs, n int) int { return (docs+1)*(18+containerWeight) + docs*n + 2*n }
	under, over := file(20, 3000), file(20, 4000)
	weighed := 21 * containerWeight
	if values(20, 3000) > maxFileValues(len(under), weighed) || values(20, 4000) <= maxFileValues(len(over), weighed) {
		t.Fatalf("the test's files are not on either side of the bound")
	}
	if _, err := Parse("under.yaml", under); err != nil {
		t.Fatalf("a file just under the bound (%d bytes): %v", len(under), err)
	}
	_, err := Parse("over.yaml", over)
	want := fmt.Sprintf("over.yaml (document 21): spec.containers[0].args: the file holds %d values (scalars, keys, lists, maps; an item of a pod's containers counts 17 more, of its volumes 10), more than the %d its %d bytes may hold (50000 and one per 6 bytes, and up to 100000 for the items' weight): reading it would cost more memory than a manifest may; this document holds 8035 of them", values(20, 4000), 50000+len(over)/6+weighed, len(over))
	if err == nil || err.Error() != want {
		t.Errorf("a file just over the bound: %v\nwant %s", err, want)
	}
}

// TestItemWeights: an entry of a pod's list of structs weighs one value
// per 24 bytes of the struct (64-bit sizes); smaller ones weigh nothing.
func TestItemWeights(t *testing.T) {
	for _, tt := range []struct {
		key string
		typ reflect.Type
	}{
		{"containers", reflect.TypeFor[corev1.Container]()},
		{"initContainers", reflect.TypeFor[corev1.Container]()},
		{"ephemeralContainers", reflect.TypeFor[corev1.EphemeralContainer]()},
		{"volumes", reflect.TypeFor[corev1.Volume]()},
		{"volumeMounts", reflect.TypeFor[corev1.VolumeMount]()},
		{"topologySpreadConstraints", reflect.TypeFor[corev1.TopologySpreadConstraint]()},
		{"tolerations", reflect.TypeFor[corev1.Toleration]()},
		{"env", reflect.TypeFor[corev1.EnvVar]()},
		{"ports", reflect.TypeFor[corev1.ContainerPort]()},
		{"args", reflect.TypeFor[string]()},
	} {
		want := 0
		if size := int(tt.typ.Size()) * 64 / strconv.IntSize; size > 64 { // the 64-bit size, near enough on 32-bit
			want = size / 24
		}
		if got := itemWeight([]byte(tt.key)); got != want && strconv.IntSize == 64 || got == 0 && want != 0 {
			t.Errorf("itemWeight(%q) = %d, want %d (%s, %d bytes)", tt.key, got, want, tt.typ, tt.typ.Size())
		}
	}
}

// TestEmptyItemsWeighed: an empty container or volume ({}) counts what it
// decodes to (itemWeight), so a pod of a few thousand empty containers, or
// a file of many empty volumes, is refused before it is decoded; just
// under the bounds, each is read (and its problems are its fields').
func TestEmptyItemsWeighed(t *testing.T) {
	// 11 values and 18 per container (the map and its weight), in 62+4n bytes.
	pod := func(n int) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{}" + strings.Repeat(", {}", n-1) + "]\n")
	}
	under, over := pod(2780), pod(2790)
	if 11+18*2780 > maxValues(len(under)) || 11+18*2790 <= maxValues(len(over)) {
		t.Fatalf("the test's pods are not on either side of the bound")
	}
	_, err := Parse("under.yaml", under)
	if err == nil || strings.Contains(err.Error(), "values") || !strings.Contains(err.Error(), "under.yaml (document 1): spec.containers[0].name: Required value") {
		t.Errorf("a pod of empty containers just under the bound: %v", err)
	}
	_, err = Parse("over.yaml", over)
	want := fmt.Sprintf("over.yaml (document 1): spec.containers: the document holds %d values (scalars, keys, lists, maps; an item of a pod's containers counts 17 more, of its volumes 10), more than the %d its %d bytes may hold (50000 and one per 64 bytes)", 11+18*2790, maxValues(len(over)), len(over))
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a pod of empty containers just over the bound: %v\nwant %s", err, want)
	}

	// Documents of 4000 empty volumes each (6 bytes and 11 values a
	// volume), each within a document's bound: three are read (100,000 of
	// their weight allowed besides the file's 50,000 and one per 6 bytes),
	// four are more than a file may hold.
	doc := func(i int) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{}%s]\n", i, strings.Repeat(",   {}", 3999))
	}
	three := []byte(doc(0) + doc(1) + doc(2))
	four := []byte(string(three) + doc(3))
	_, err = Parse("three.yaml", three)
	if err == nil || strings.Contains(err.Error(), "values") || !strings.Contains(err.Error(), "three.yaml (document 1): spec.volumes[0].name: Required value") {
		t.Errorf("a file of empty volumes under the bound: %v", err)
	}
	weighed := 4 * (4000*volumeWeight + containerWeight)
	if 3*(4000+18)+weighed*3/4 > maxFileValues(len(three), weighed*3/4) || 4*(4000+18)+weighed <= maxFileValues(len(four), weighed) {
		t.Fatalf("the test's files are not on either side of the bound")
	}
	_, err = Parse("four.yaml", four)
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("four.yaml (document 1): spec.volumes: the file holds %d values (scalars, keys, lists, maps; an item of a pod's containers counts 17 more, of its volumes 10), more than the %d its %d bytes may hold (50000 and one per 6 bytes, and up to 100000 for the items' weight)", 4*(4000+18)+weighed, 150000+len(four)/6, len(four))) {
		t.Errorf("a file of empty volumes over the bound: %v", err)
	}
}

// TestTrimSlices: each list of a pod keeps exactly its values, nested
// ones too, and none changes.
func TestTrimSlices(t *testing.T) {
	spare := func(s []string) []string { return append(make([]string, 0, 2*len(s)+1), s...) }
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: append(make([]corev1.Container, 0, 4), corev1.Container{
			Name: "c",
			Args: spare([]string{"a", "b", "c"}),
			Env:  append(make([]corev1.EnvVar, 0, 8), corev1.EnvVar{Name: "A", Value: "1"}),
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
				Drop: append(make([]corev1.Capability, 0, 3), "ALL"),
			}},
		}),
		Volumes: nil,
	}}
	want := pod.DeepCopy()
	trimSlices(reflect.ValueOf(pod).Elem())
	c := pod.Spec.Containers
	for name, s := range map[string][2]int{
		"containers": {len(c), cap(c)},
		"args":       {len(c[0].Args), cap(c[0].Args)},
		"env":        {len(c[0].Env), cap(c[0].Env)},
		"drop":       {len(c[0].SecurityContext.Capabilities.Drop), cap(c[0].SecurityContext.Capabilities.Drop)},
	} {
		if s[0] != s[1] {
			t.Errorf("%s: length %d, capacity %d", name, s[0], s[1])
		}
	}
	if !apiequality.Semantic.DeepEqual(pod, want) || pod.Spec.Volumes != nil {
		t.Errorf("the pod changed: %+v", pod.Spec)
	}
}
