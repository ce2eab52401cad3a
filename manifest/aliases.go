package manifest

import (
	"bytes"
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// go-yaml v2, which reads YAML as kubectl does, expands an alias of a
// collection into a new copy of it as it decodes: its alias guard allows
// hundreds of thousands of such copies (a 500 KB file referencing a small
// map 130,000 times cost 130 MB). So a document that may hold aliases is
// first parsed with go-yaml v3, whose node tree keeps an alias as a
// reference to its anchor, and the values it expands to are counted
// (each anchor's once, memoized) before v2 sees it.

// maxAliasValues is how many values aliases may add to a document beyond
// as many as it has of its own.
const maxAliasValues = 10000

// aliasProblem says why a document's aliases expand too far, or "".
func aliasProblem(text []byte) string {
	if bytes.IndexByte(text, '*') < 0 {
		return "" // no alias
	}
	var doc yaml3.Node
	if yaml3.Unmarshal(text, &doc) != nil {
		return "" // go-yaml v2 says what is wrong, if anything
	}
	own, expanded := expandedValues(&doc)
	if expanded > 2*own+maxAliasValues {
		return fmt.Sprintf("its aliases expand it to more than %d values, from %d of its own; refused", 2*own+maxAliasValues, own)
	}
	return ""
}

// expandedValues counts the nodes of a tree (own), and the nodes it has
// with its aliases replaced by what they refer to (expanded, at most
// 1<<29).
func expandedValues(root *yaml3.Node) (own, expanded int) {
	const most = 1 << 29
	memo := map[*yaml3.Node]int{}
	var size func(n *yaml3.Node) int
	size = func(n *yaml3.Node) int {
		if n.Kind == yaml3.AliasNode {
			own++
			if s, ok := memo[n.Alias]; ok {
				return s
			}
			return 1
		}
		own++
		s := 1
		for _, c := range n.Content {
			s = min(s+size(c), most)
		}
		if n.Anchor != "" {
			memo[n] = s
		}
		return s
	}
	expanded = size(root)
	return own, expanded
}
