package manifest

import (
	"encoding/json"
	"reflect"
	"testing"

	yaml "go.yaml.in/yaml/v2"
	kyaml "sigs.k8s.io/yaml"
)

// TestToJSONAsKubectl: a YAML document converts to the JSON kubectl's
// sigs.k8s.io/yaml makes of it: YAML 1.1 scalars, number and boolean keys,
// merge keys, anchors, binary, timestamps kept as strings; and fails where
// it fails.
func TestToJSONAsKubectl(t *testing.T) {
	for _, doc := range []string{
		"a: yes\nb: no\nc: on\nd: off\ne: y\nf: ~\ng: null\nh: true\n",
		"octal: 0777\nhex: 0x1F\nexp: 1e3\nfloat: 1.50\nneg: -12\nbig: 123456789012345678901234567890\nint64: 9223372036854775807\nuint: 18446744073709551615\n",
		"ts: 2001-12-14t21:59:43.10-05:00\ndate: 2002-12-14\nbin: !!binary aGVsbG8=\nstr: !!str 123\n",
		"1: one\n2.5: two\ntrue: three\n-1: four\n",
		"base: &b {x: 1, y: [a, b]}\nmerged:\n  <<: *b\n  z: 3\nlist: [*b, *b]\n",
		"s: \"quote \\\" back\\\\slash <html> & \\u2028 \\t é\"\nlit: |\n  line 1\n  line 2\n",
		"empty: {}\nnone: []\nnested: [[1, [2, {a: [3]}]]]\n",
		"- a\n- 1\n- {b: c}\n",
		"plain scalar\n",
		"inf: .inf\n",
		"nan: .nan\n",
		"? [a, b]\n: c\n",
		"~: null key\n",
	} {
		want, wantErr := kyaml.YAMLToJSONStrict([]byte(doc))
		var v any
		err := yaml.UnmarshalStrict([]byte(doc), &v)
		var got []byte
		if err == nil {
			got, err = toJSON(v, 1<<20)
		}
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%q: error %v, kubectl's %v", doc, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("%q:\n got %s\nwant %s", doc, got, want)
		}
	}
}
