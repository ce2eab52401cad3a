package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestFileOverLimitRefusedBeforeReading: a file over the limit is one
// problem, found from its size, without reading it whole.
func TestFileOverLimitRefusedBeforeReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(20 << 20); err != nil { // 20 MiB, sparse
		t.Fatal(err)
	}
	f.Close()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = Load([]string{path}, nil)
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps[0].Msg, "larger than the limit of 10 MiB") {
		t.Fatalf("Load of a 20 MiB file: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing a 20 MiB file allocated %d bytes: it was read", grew)
	}
	t.Logf("refused in %v", elapsed)
	// Stdin has no size: it is read up to the limit and no further.
	_, err = Load([]string{"-"}, bytes.NewReader(make([]byte, 11<<20)))
	if !errors.As(err, &ps) || !strings.Contains(ps[0].Msg, "larger than the limit") {
		t.Errorf("Load of 11 MiB on stdin: %v", err)
	}
	// The limit can be changed.
	small := Options{MaxFileSize: 1 << 10}
	if _, err := small.Parse("p.yaml", []byte(strings.Repeat("# x\n", 300))); err == nil || !strings.Contains(err.Error(), "limit of 1 KiB") {
		t.Errorf("Parse over a 1 KiB limit: %v", err)
	}
}

// nestedLists is a List holding a List holding ... depth levels deep.
func nestedLists(depth int) []byte {
	var b bytes.Buffer
	for range depth {
		b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	}
	b.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}`)
	for range depth {
		b.WriteString(`]}`)
	}
	return b.Bytes()
}

// TestNestedListRefused: a List inside a List is a problem at its field
// path; a deep nesting bomb is refused quickly (it used to take time
// quadratic in its depth).
func TestNestedListRefused(t *testing.T) {
	_, err := Parse("l.json", nestedLists(2))
	if err == nil || !strings.Contains(err.Error(), "items[0].kind: a List inside a List is not supported") {
		t.Errorf("a List of Lists: %v", err)
	}
	bomb := nestedLists(20000) // ~1 MB
	start := time.Now()
	_, err = Parse("bomb.json", bomb)
	if err == nil {
		t.Fatal("the nested-List bomb was accepted")
	}
	t.Logf("a %d-byte nested-List bomb refused in %v", len(bomb), time.Since(start))
}

// TestProblemsCapped: at most MaxProblems problems per file, then a count.
func TestProblemsCapped(t *testing.T) {
	var b strings.Builder
	for i := range 250 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec: {containers: [{name: c}]}\n", i)
	}
	_, err := Parse("many.yaml", []byte(b.String()))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: %v", err)
	}
	if len(ps) != MaxProblems+1 || ps[MaxProblems].Msg != "and 150 more problems" || ps.Total() != 250 {
		t.Errorf("%d problems, the last %q; want %d and \"and 150 more problems\"", len(ps), ps[len(ps)-1].Msg, MaxProblems+1)
	}
}

// TestObjectOverClusterLimitRefused: an object larger than etcd stores is
// refused, in YAML before it is parsed and in JSON before it is decoded.
func TestObjectOverClusterLimitRefused(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	for name, doc := range map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: " + big + "\n",
		"cm.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"` + big + `"}}`,
	} {
		_, err := Parse(name, []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "larger than 1536 KiB") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// aliasBombs are small YAML files whose aliases expand to hundreds of
// megabytes: one anchored scalar referenced by every item of a List, or by
// every annotation of a Pod.
func aliasBombs() map[string][]byte {
	var list bytes.Buffer
	fmt.Fprintf(&list, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c0}\n  data: {k: &a %q}\n", strings.Repeat("x", 100<<10))
	for i := 1; i < 900; i++ {
		fmt.Fprintf(&list, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c%d}, data: {k: *a}}\n", i)
	}
	var pod bytes.Buffer // (fewer values than maxValues: not refused for its values)
	fmt.Fprintf(&pod, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a0: &b %q\n", strings.Repeat("y", 200<<10))
	for i := 1; i < 8; i++ {
		fmt.Fprintf(&pod, "    a%d: *b\n", i)
	}
	pod.WriteString("spec:\n  containers: [{name: c, image: i}]\n")
	var docs bytes.Buffer // documents of 1000 KiB each, expanded
	for i := range 25 {
		fmt.Fprintf(&docs, "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c%d}, data: {k: &a %q", i, strings.Repeat("x", 100<<10))
		for j := range 9 {
			fmt.Fprintf(&docs, ", k%d: *a", j)
		}
		docs.WriteString("}}\n")
	}
	var maps bytes.Buffer // a small map, copied by go-yaml v2 for each alias
	maps.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: &m {k: v}\ny: [*m")
	maps.WriteString(strings.Repeat(", *m", 40000-1))
	maps.WriteString("]\nspec:\n  containers: [{name: c, image: i}]\n")
	return map[string][]byte{"list.yaml": list.Bytes(), "pod.yaml": pod.Bytes(), "docs.yaml": docs.Bytes(), "maps.yaml": maps.Bytes()}
}

// TestAliasExpansionBounded: what aliases expand to is bounded before
// anything is made of it: an object by 1.5 MiB, a file by 5 times its size
// and 1 MiB (at most twice the size limit), each refused as soon as it is
// past the bound, with a problem naming where (it took seconds and
// gigabytes).
func TestAliasExpansionBounded(t *testing.T) {
	want := map[string]string{
		"list.yaml": "list.yaml (document 1): items[18]: its aliases expand the file to more than 1.8 MiB of JSON (5 times its size and 1 MiB, at most twice the size limit)",
		"pod.yaml":  "pod.yaml (document 1): the object is larger than 1536 KiB, more than a cluster stores",
		"docs.yaml": "docs.yaml (document 14): its aliases expand the file to more than 13.2 MiB of JSON",
		"maps.yaml": "maps.yaml (document 1): its aliases expand it to more than 90050 values, from 40025 of its own; refused",
	}
	for name, data := range aliasBombs() {
		var err error
		grew := allocated(func() { _, err = Parse(name, data) })
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s (%d bytes): %v, want %q", name, len(data), err, want[name])
		}
		if grew > 200<<20 {
			t.Errorf("%s (%d bytes): reading it allocated %d MiB", name, len(data), grew>>20)
		}
		t.Logf("%s: %d bytes refused after allocating %d MiB", name, len(data), grew>>20)
	}
}

// peakHeap runs fn and returns the largest heap in use seen while it ran
// (sampled every millisecond).
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	<-sampled
	return peak
}

// denseList is a v1 List of n pods, each with args of k strings word:
// with "abcde" in YAML a value per 6 bytes, as many values per byte as a
// file may have (maxFileValues).
func denseList(n, k int, word string, asJSON bool) []byte {
	var b bytes.Buffer
	if asJSON {
		b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"i","args":[%q%s]}]}}`, i, word, strings.Repeat(`,"`+word+`"`, k-1))
		}
		b.WriteString("]}")
		return b.Bytes()
	}
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range n {
		fmt.Fprintf(&b, "- {apiVersion: v1, kind: Pod, metadata: {name: p%d}, spec: {containers: [{name: c, image: i, args: [%s%s]}]}}\n", i, word, strings.Repeat(","+word, k-1))
	}
	return b.Bytes()
}

// TestListReadItemByItem: a List is parsed item by item, not whole: the
// heap while reading a 4 MB List of dense pods stays within 10 times its
// size and 50 MiB (parsed whole, its YAML took 480 MB), and an item's
// problems name the file's line.
func TestListReadItemByItem(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		data := denseList(200, 5000, "abcde", asJSON)
		var set *Set
		var err error
		peak := peakHeap(func() { set, err = Parse("dense.yaml", data) })
		if err != nil || len(set.Pods) != 200 || len(set.Pods[199].Spec.Containers[0].Args) != 5000 {
			t.Fatalf("Parse of a dense List: %v", err)
		}
		if limit := 10*uint64(len(data)) + 50<<20; peak > limit {
			t.Errorf("reading a %d-byte List (JSON %v) took a heap of %d MiB, more than %d MiB", len(data), asJSON, peak>>20, limit>>20)
		}
		t.Logf("a %d-byte List (JSON %v): peak heap %d MiB", len(data), asJSON, peak>>20)
	}
	// A syntax error in one item: the others are read, the error names
	// its line in the file.
	data := denseList(100, 400, "a", false)
	lines := bytes.Split(data, []byte("\n"))
	lines[51] = []byte("- {apiVersion: v1, kind: Pod, metadata: {name: broken")
	_, err := Parse("l.yaml", bytes.Join(lines, []byte("\n")))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "l.yaml (document 1): line 53: yaml: ") {
		t.Errorf("a List with a broken item: %v", err)
	}
}

// TestAliasesWithinBoundsRead: aliases as manifests use them (one env list
// shared by containers, a merge key) are read as kubectl reads them.
func TestAliasesWithinBoundsRead(t *testing.T) {
	set, err := Parse("p.yaml", []byte(`apiVersion: v1
kind: Pod
metadata: {name: p, labels: &l {app: web}}
spec:
  containers:
  - name: a
    image: busybox:1
    env: &env [{name: A, value: "1"}, {name: B, value: "2"}]
  - name: b
    image: busybox:1
    env: *env
    resources:
      limits: &lim {cpu: 100m}
      requests:
        <<: *lim
        memory: 1Mi
  nodeSelector: *l
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := set.Pods[0].Spec
	if len(spec.Containers[1].Env) != 2 || spec.Containers[1].Resources.Requests.Cpu().String() != "100m" || spec.NodeSelector["app"] != "web" {
		t.Errorf("aliases read as %+v", spec)
	}
}

// TestLargeYAMLListSplit: a YAML List over 256 KiB is split into the
// entries of its items sequence, however indented, with fields after it;
// an entry using another's anchor is told why it cannot; a large List
// whose items are a flow sequence is refused before it is parsed.
func TestLargeYAMLListSplit(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  # pod %d\n  - apiVersion: v1\n    kind: Pod\n    metadata:\n      name: p%d\n      annotations: {pad: %q}\n    spec:\n      containers:\n      - {name: c, image: busybox:1}\n\n", i, i, strings.Repeat("z", 1000))
	}
	b.WriteString("metadata: {resourceVersion: \"1\"}\n")
	set, err := Parse("l.yaml", b.Bytes())
	if err != nil || len(set.Pods) != 300 || set.Pods[299].Name != "p299" {
		t.Fatalf("a %d-byte List: %v", b.Len(), err)
	}
	shared := bytes.Replace(b.Bytes(), []byte("      - {name: c, image: busybox:1}"), []byte("      - &c {name: c, image: busybox:1}"), 1)
	shared = bytes.Replace(shared, []byte("      - {name: c, image: busybox:1}"), []byte("      - *c"), 1)
	_, err = Parse("l.yaml", shared)
	if err == nil || !strings.Contains(err.Error(), "l.yaml (document 1): line 15: yaml: unknown anchor 'c' referenced (a List larger than 256 KiB is read item by item") {
		t.Errorf("an entry using another's anchor: %v", err)
	}
	flow := fmt.Appendf(nil, "apiVersion: v1\nkind: List\nitems: [%s]\n", strings.Repeat(`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: "`+strings.Repeat("v", 1000)+`"}}, `, 4000))
	_, err = Parse("f.yaml", flow)
	if err == nil || !strings.Contains(err.Error(), "a List larger than 3 MiB is read item by item: its items must be a block sequence") {
		t.Errorf("a 4 MB flow List: %v", err)
	}
}

// TestProblemsCountedPastTheCap: past MaxProblems, a file's problems are
// counted as they are found, not kept until the file is read (a pod of
// 25,000 empty containers has 50,000); another file's are kept.
func TestProblemsCountedPastTheCap(t *testing.T) {
	r := reader{dropped: map[string]int{}, reading: "a.yaml"}
	for range 150 {
		r.problem(Source{File: "a.yaml", Doc: 1}, "spec", "Required value")
	}
	r.fieldProblems(Source{File: "a.yaml", Doc: 1}, "", field.ErrorList{field.Required(field.NewPath("x"), ""), field.Required(field.NewPath("y"), "")})
	r.problem(Source{File: "b.yaml"}, "", "kept")
	if len(r.problems) != MaxProblems+1 || r.dropped["a.yaml"] != 52 || r.problems[MaxProblems].Msg != "kept" {
		t.Errorf("%d problems kept, %d dropped", len(r.problems), r.dropped["a.yaml"])
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{}")
	b.WriteString(strings.Repeat(", {}", 1999))
	b.WriteString("]\n")
	_, err := Parse("p.yaml", []byte(b.String()))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != MaxProblems+1 || ps.Total() < 4000 {
		t.Errorf("a pod of 2000 empty containers: %d problems listed, %d in all", len(ps), ps.Total())
	}
}
