package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const podDoc = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: busybox\n"

func pods(names ...string) string {
	docs := make([]string, len(names))
	for i, n := range names {
		docs[i] = strings.ReplaceAll(podDoc, "%s", n)
	}
	return strings.Join(docs, "---\n")
}

func TestSplitting(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // pod name and document of each pod
	}{
		{"one document", pods("a"), []string{"a in x.yaml (document 1)"}},
		{"leading separator and comments", "# comment\n---\n" + pods("a", "b"),
			[]string{"a in x.yaml (document 1)", "b in x.yaml (document 2)"}},
		{"separator with a comment, empty documents", pods("a") + "--- # next\n---\n\n---\n" + pods("b"),
			[]string{"a in x.yaml (document 1)", "b in x.yaml (document 2)"}},
		{"null document counts", "null\n---\n" + pods("a"), []string{"a in x.yaml (document 2)"}},
		{"CRLF line endings", strings.ReplaceAll(pods("a", "b"), "\n", "\r\n"),
			[]string{"a in x.yaml (document 1)", "b in x.yaml (document 2)"}},
		{"byte order mark", "\xef\xbb\xbf" + pods("a"), []string{"a in x.yaml (document 1)"}},
		{"separator-like text is not a separator", strings.Replace(pods("a"), "image: busybox", "image: busybox\n    args: [\"---x\"]", 1),
			[]string{"a in x.yaml (document 1)"}},
		{"JSON stream", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"m","image":"busybox"}]}}
			null
			{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"m","image":"busybox"}]}}`,
			[]string{"a in x.yaml (document 1)", "b in x.yaml (document 3)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse("x.yaml", []byte(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, p := range set.Pods {
				got = append(got, p.Name+" in "+p.Source.String())
			}
			assertLines(t, got, tt.want)
		})
	}
}

func TestSplittingProblems(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"content after a separator", pods("a") + "--- kind: Pod\n",
			[]string{`x.yaml (document 2): line 9: yaml: content after the document separator is not supported: "kind: Pod"`}},
		{"syntax error after CRLF documents", strings.ReplaceAll(pods("a")+"---\nmetadata: name: b\n", "\n", "\r\n"),
			[]string{"x.yaml (document 2): line 10: yaml: mapping values are not allowed in this context"}},
		{"duplicate key in JSON", `{"apiVersion":"v1","kind":"Pod","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"m","image":"busybox"}]}}`,
			[]string{"x.yaml (document 1): kind: duplicate field"}},
		{"truncated JSON", `{"apiVersion":"v1","kind":"Pod"`,
			[]string{"x.yaml (document 1): json: unexpected end of input"}},
		{"a scalar document", "just text\n",
			[]string{"x.yaml (document 1): expected a Kubernetes object, got string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse("x.yaml", []byte(tt.input))
			checkProblems(t, set, err, tt.want)
		})
	}
}

func TestSourceString(t *testing.T) {
	tests := []struct {
		src  Source
		want string
	}{
		{Source{File: "pod.yaml", Doc: 2}, "pod.yaml (document 2)"},
		{Source{File: "-", Doc: 1}, "stdin (document 1)"},
		{Source{File: "dir/pods"}, "dir/pods"},
	}
	for _, tt := range tests {
		if got := tt.src.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.src, got, tt.want)
		}
	}
}

// TestYAMLErrorLines checks that a YAML error names the line of the file
// where the problem is, whichever part of the parser finds it and wherever
// it is in its document.
func TestYAMLErrorLines(t *testing.T) {
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" // the second document starts on line 5
	tests := []struct {
		doc  string
		want string
	}{
		{"metadata: name: b\n", "line 5: yaml: mapping values are not allowed in this context"},
		{"a: 1\nmetadata: name: b\n", "line 6: yaml: mapping values are not allowed in this context"},
		{"\tb: 2\n", "line 5: yaml: found character that cannot start any token"},
		{"a: 1\n\tb: 2\n", "line 6: yaml: found a tab character that violates indentation"},
		{"a:\n  b: 1\n c: 2\n", "line 7: yaml: did not find expected key"},
		{"- a\nb: c\n", "line 6: yaml: did not find expected '-' indicator"},
		{"a: [1, 2\nb: 3\n", "line 6: yaml: did not find expected ',' or ']'"},
		{"key: value\n- item\n", "line 6: yaml: did not find expected key"},
		{"a: 1\nb: 2\na: 3\n", `line 7: yaml: key "a" already set in map`},
		{"a: *nowhere\n", "yaml: unknown anchor 'nowhere' referenced"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			set, err := Parse("x.yaml", []byte(head+tt.doc))
			checkProblems(t, set, err, []string{"x.yaml (document 2): " + tt.want})
		})
	}
}

func TestSyntaxErrorAtEndOfLastDocumentNamesALineOfTheFile(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - {name: c, image: busybox:1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n  - name: c\n    image: \"busybox:1\n"
	_, err := Parse("pods.yaml", []byte(data))
	var problems Problems
	if !errors.As(err, &problems) || len(problems) != 1 {
		t.Fatalf("err = %v", err)
	}
	lines := strings.Count(data, "\n")
	if msg := problems[0].Msg; !strings.HasPrefix(msg, fmt.Sprintf("line %d: ", lines)) && !strings.HasPrefix(msg, fmt.Sprintf("line %d: ", lines-1)) {
		t.Fatalf("message %q does not name line %d or %d of a %d-line file", msg, lines-1, lines, lines)
	}
}
