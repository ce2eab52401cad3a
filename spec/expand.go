package spec

import "strings"

// Expand implements Kubernetes' $(VAR) expansion, as used for env values,
// command and args (k8s.io/kubernetes/third_party/forked/golang/expansion):
//
//   - $(VAR) is replaced by lookup(VAR) when VAR is defined, and kept as the
//     literal "$(VAR)" when it is not;
//   - $$ becomes $, so $$(VAR) yields the literal "$(VAR)";
//   - any other $ (followed by another character, or at the end) and an
//     unterminated "$(" are kept as they are.
//
// A nil lookup defines no variables. Unlike the kubelet, a $ followed by a
// multi-byte character keeps that character intact (the kubelet's copy turns
// its first byte into a rune).
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	checkpoint := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		b.WriteString(s[checkpoint:i])
		i += expandAt(&b, s[i+1:], lookup)
		checkpoint = i + 1
	}
	b.WriteString(s[checkpoint:])
	return b.String()
}

// expandAt writes the expansion of the "$" that precedes rest to b and returns
// how many bytes of rest it consumed.
func expandAt(b *strings.Builder, rest string, lookup func(string) (string, bool)) int {
	switch rest[0] {
	case '$':
		b.WriteByte('$')
		return 1
	case '(':
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			b.WriteString("$(")
			return 1
		}
		name := rest[1:end]
		if v, ok := lookupVar(lookup, name); ok {
			b.WriteString(v)
		} else {
			b.WriteString("$(" + name + ")")
		}
		return end + 1
	default:
		b.WriteByte('$')
		return 0
	}
}

func lookupVar(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}
