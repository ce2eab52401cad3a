package manifest

import (
	"errors"
	"testing"
)

// FuzzParse: any input is either read or refused with problems, never a
// panic, and never more than MaxProblems problems (plus the count line).
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i:1}]\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}]}`))
	f.Add([]byte("---\n---\nkind: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Parse("f.yaml", data)
		if err == nil {
			if set == nil {
				t.Fatal("no error and no set")
			}
			return
		}
		var ps Problems
		if errors.As(err, &ps) && len(ps) > MaxProblems+1 {
			t.Fatalf("%d problems for one file", len(ps))
		}
	})
}
