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
