package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	kjson "sigs.k8s.io/json"
)

// A document is read one object at a time: a v1 List item by item, so
// that memory holds the file, one item's parse and what was read, never
// the whole List parsed (a YAML parse costs tens of times its text). A
// YAML document's aliases are expanded only as it is converted to JSON,
// bounded per object (MaxObjectSize) and per file (expandedLimit).

// splitListSize is the size from which a YAML List is split into its
// items before parsing (splitList), rather than parsed whole.
const splitListSize = 256 << 10

// expandedLimit is how much JSON the YAML documents of a file of size
// bytes may convert to, aliases expanded: 5 times its size and 1 MiB
// (without aliases, YAML grows at most 4.5 times into JSON: `{a,b}` is
// {"a":null,"b":null}), and at most twice the file size limit.
func (o Options) expandedLimit(size int) int {
	return int(min(5*int64(size)+1<<20, 2*o.maxFileSize(), math.MaxInt32))
}

// readJSON reads a document of a JSON stream.
func (r *reader) readJSON(src Source, data []byte) {
	var head struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &head) == nil && fmt.Sprint(head.APIVersion) == "v1" && fmt.Sprint(head.Kind) == "List" {
		r.readJSONList(src, data)
		return
	}
	if r.tooDense(src, "", "the document", data) { // values.go
		return
	}
	r.readObject(src, "", data)
}

// readJSONList reads a List in JSON: its fields but items decoded
// strictly, then each item, sliced out of data (never copied).
func (r *reader) readJSONList(src Source, data []byte) {
	header, items, err := splitJSONList(data)
	if err != nil {
		r.problem(src, "", err.Error())
		return
	}
	r.readList(src, header, len(items), func(i int) ([]byte, bool) {
		return items[i], !r.tooDense(src, fmt.Sprintf("items[%d]", i), "the item", items[i])
	})
}

// splitJSONList splits a JSON List into its other fields (as an object)
// and the values of its items (when items is an array).
func splitJSONList(data []byte) (header []byte, items [][]byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	header = append(header, '{')
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var v span
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		value := v.of(data, dec)
		if key == "items" && !seen && len(value) > 0 && value[0] == '[' {
			seen = true
			if items, err = jsonArray(value); err != nil {
				return nil, nil, err
			}
			continue
		}
		if len(header) > 1 {
			header = append(header, ',')
		}
		k, _ := json.Marshal(key)
		header = append(append(append(header, k...), ':'), value...)
	}
	return append(header, '}'), items, nil
}

// jsonArray slices the elements out of a JSON array.
func jsonArray(data []byte) ([][]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // [
		return nil, err
	}
	var out [][]byte
	for dec.More() {
		var v span
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v.of(data, dec))
	}
	return out, nil
}

// readList reads a v1 List: its fields but items (header, as JSON),
// strictly, then each of its n items (item converts one to JSON; false
// when it could not, the problem recorded).
func (r *reader) readList(src Source, header []byte, n int, item func(i int) ([]byte, bool)) {
	var raw map[string]any
	if err := json.Unmarshal(header, &raw); err != nil {
		r.problem(src, "", err.Error())
		return
	}
	var l list
	if _, ok := r.decode(src, "", header, raw, &l); !ok {
		return
	}
	if n > MaxDocuments {
		r.problem(src, "items", tooManyDocuments)
		return
	}
	for i := range n {
		if r.expanded < 0 {
			return // the file's aliases expanded past the limit
		}
		if data, ok := item(i); ok {
			r.readObject(src, fmt.Sprintf("items[%d].", i), data)
		}
	}
}

// readYAML converts a YAML document and reads it; a large List is split
// into its items first, each parsed and read in turn.
func (r *reader) readYAML(src Source, c yamlChunk) {
	isList := yamlList.Match(c.text)
	if isList && len(c.text) > splitListSize {
		if header, items, ok := splitList(c); ok {
			r.readYAMLList(src, header, items)
			return
		}
	}
	if len(c.text) > 2*MaxObjectSize {
		// Refused before parsing it (YAML is costly).
		msg := fmt.Sprintf("the object is larger than %s, more than a cluster stores", byteSize(MaxObjectSize))
		if isList {
			msg = fmt.Sprintf("a List larger than %s is read item by item: its items must be a block sequence (\"- \" entries under a top-level items:)", byteSize(2*MaxObjectSize))
		}
		r.problem(src, "", msg)
		return
	}
	if r.tooDense(src, "", "the document", c.text) { // values.go
		return
	}
	v, problems := parseYAML(src, c)
	if len(problems) > 0 {
		r.problems = append(r.problems, problems...)
		return
	}
	if v == nil {
		return // null, as an empty document
	}
	if m, items, ok := asList(v); ok {
		header, ok := r.toJSON(src, "", m)
		if !ok {
			return
		}
		r.readList(src, header, len(items), func(i int) ([]byte, bool) {
			return r.toJSON(src, fmt.Sprintf("items[%d]", i), items[i])
		})
		return
	}
	if data, ok := r.toJSON(src, "", v); ok {
		r.readObject(src, "", data)
	}
}

// asList returns a parsed YAML document's fields but items, and its
// items, when it is a v1 List whose items are a sequence.
func asList(v any) (map[any]any, []any, bool) {
	m, ok := v.(map[any]any)
	if !ok || m["apiVersion"] != "v1" || m["kind"] != "List" {
		return nil, nil, false
	}
	items, ok := m["items"].([]any)
	if !ok && m["items"] != nil {
		return nil, nil, false // not a sequence: the List's decoding says so
	}
	header := make(map[any]any, len(m))
	for k, v := range m {
		if k != "items" {
			header[k] = v
		}
	}
	return header, items, true
}

// readYAMLList reads a List split by splitList: the header parsed and
// decoded, then each item parsed and read in turn.
func (r *reader) readYAMLList(src Source, header yamlChunk, items []yamlChunk) {
	if r.tooDense(src, "", "the List without its items", header.text) {
		return
	}
	v, problems := parseYAML(src, header)
	if len(problems) > 0 {
		r.problems = append(r.problems, problems...)
		return
	}
	m, _, ok := asList(v)
	if !ok { // not a v1 List after all: read as what it is
		if data, ok := r.toJSON(src, "", v); ok {
			r.readObject(src, "", data)
		}
		return
	}
	data, ok := r.toJSON(src, "", m)
	if !ok {
		return
	}
	r.readList(src, data, len(items), func(i int) ([]byte, bool) {
		field := fmt.Sprintf("items[%d]", i)
		if len(items[i].text) > 2*MaxObjectSize {
			r.problem(src, field, fmt.Sprintf("the object is larger than %s, more than a cluster stores", byteSize(MaxObjectSize)))
			return nil, false
		}
		if r.tooDense(src, field, "the item", items[i].text) {
			return nil, false
		}
		v, problems := parseYAML(src, items[i])
		for j, p := range problems {
			if !strings.HasPrefix(p.Msg, "line ") { // the entry's line, at least
				problems[j].Msg = fmt.Sprintf("line %d: %s", items[i].firstLine, p.Msg)
			}
			if strings.Contains(p.Msg, "unknown anchor") {
				problems[j].Msg += fmt.Sprintf(" (a List larger than %s is read item by item: an item cannot use the anchors of the List or of another item)", byteSize(splitListSize))
			}
		}
		if len(problems) > 0 {
			r.problems = append(r.problems, problems...)
			return nil, false
		}
		seq, ok := v.([]any)
		if !ok || len(seq) != 1 {
			r.problem(src, field, fmt.Sprintf("line %d: yaml: not one entry of the items sequence", items[i].firstLine))
			return nil, false
		}
		return r.toJSON(src, field, seq[0])
	})
}

// toJSON converts a value parsed from YAML to the JSON of one object (at
// field of the document: "" for the document, "items[3]" for an item),
// with its aliases expanded: at most MaxObjectSize bytes, and within what
// is left of the file's expandedLimit. false when it could not, the
// problem recorded.
func (r *reader) toJSON(src Source, field string, v any) ([]byte, bool) {
	if r.expanded < 0 {
		return nil, false
	}
	left := r.expandLimit - r.expanded
	data, err := toJSON(v, min(MaxObjectSize+1, left))
	switch {
	case errors.Is(err, errOverLimit) && left <= MaxObjectSize:
		r.problem(src, field, fmt.Sprintf("its aliases expand the file to more than %.1f MiB of JSON (5 times its size and 1 MiB, at most twice the size limit)", float64(r.expandLimit)/(1<<20)))
		r.expanded = -1 // nothing more of the file is read
		return nil, false
	case errors.Is(err, errOverLimit):
		r.problem(src, field, fmt.Sprintf("the object is larger than %s, more than a cluster stores", byteSize(MaxObjectSize)))
		return nil, false
	case err != nil:
		r.problem(src, field, err.Error())
		return nil, false
	}
	r.expanded += len(data)
	return data, true
}

// splitList splits the text of a YAML List whose items are a block
// sequence under a top-level "items:" into the List without its items
// (header: the items' lines blanked, so that lines keep their numbers) and
// the text of each item, each a sequence of one entry. ok is false when
// the items are not written so (a flow sequence: [...]).
func splitList(c yamlChunk) (header yamlChunk, items []yamlChunk, ok bool) {
	const (
		before = iota // the items: line not found yet
		first         // after it, before its first entry
		inside        // in the entries
		after         // past them
	)
	state, indent, line := before, 0, c.firstLine
	var itemsEnd, regionEnd int // the end of the items: line, of the entries
	var cur *yamlChunk
	start := 0
	lines(c.text, func(text []byte, at int) bool {
		defer func() { line++ }()
		trimmed := bytes.TrimLeft(text, " ")
		n := len(text) - len(trimmed)
		trimmed = bytes.TrimRight(trimmed, " \t\r")
		blank := len(trimmed) == 0 || trimmed[0] == '#'
		entry := len(trimmed) > 0 && trimmed[0] == '-' && (len(trimmed) == 1 || trimmed[1] == ' ' || trimmed[1] == '\t')
		switch state {
		case before:
			if rest, found := bytes.CutPrefix(text, []byte("items:")); found {
				if rest = bytes.TrimSpace(rest); len(rest) > 0 && rest[0] != '#' {
					return false // items: [...] or items: *alias
				}
				state, itemsEnd = first, at+len(text)+1
			}
		case first:
			if blank {
				return true
			}
			if !entry {
				return false
			}
			state, indent, start = inside, n, at
			cur = &yamlChunk{firstLine: line}
		case inside:
			switch {
			case blank || n > indent:
			case n == indent && entry:
				cur.text = c.text[start:at:at]
				items = append(items, *cur)
				start, cur = at, &yamlChunk{firstLine: line}
			default:
				cur.text = c.text[start:at:at]
				items = append(items, *cur)
				state, regionEnd, cur = after, at, nil
				return false
			}
		}
		return true
	})
	if state == inside {
		cur.text = c.text[start:len(c.text):len(c.text)]
		items = append(items, *cur)
		state, regionEnd = after, len(c.text)
	}
	if state != after {
		return yamlChunk{}, nil, false
	}
	text := make([]byte, 0, itemsEnd+bytes.Count(c.text[itemsEnd:regionEnd], []byte("\n"))+len(c.text)-regionEnd)
	text = append(text, c.text[:itemsEnd]...)
	text = append(text, bytes.Repeat([]byte("\n"), bytes.Count(c.text[itemsEnd:regionEnd], []byte("\n")))...)
	text = append(text, c.text[regionEnd:]...)
	return yamlChunk{text: text, firstLine: c.firstLine}, items, true
}
