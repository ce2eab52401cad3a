package manifest

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// A value parsed costs many times its text: go-yaml v2 holds a node of
// some 130 bytes for each scalar, sequence and mapping of the document it
// parses (a peak of about 300 bytes a value once the conversion to JSON and
// the garbage collector's headroom are counted), and a pod read keeps at
// least a 16-byte string for each argument. So a document of one-letter
// values (`[a,a,a,…]`, two bytes a value) costs a hundred times its size.
// The values of a text are counted before it is parsed, with a scanner that
// allocates nothing (countValues), and bounded so that reading stays
// within issue 35's goal, 10 times the input's size and 50 MiB:
//
//   - what is parsed at once (a document, or an item of a List read item
//     by item) holds at most 50,000 values (15 MB parsed, within the 50
//     MiB once podrun's own 25–35 MiB are counted) and one more per 64
//     bytes of its text (300 bytes parsed per value: less than 5 times the
//     text, half of what the goal allows);
//   - a file holds at most 50,000 values and one more per 6 bytes: what a
//     pod keeps of a value, a 16-byte string and the value's own bytes (24
//     bytes for a 5-letter value and its comma; a decoded list keeps no
//     spare room, trimSlices), and as much again of the collector's
//     headroom, stays under 10 times the file (at one value per 4 bytes, a
//     List of 1000 pods of three-letter arguments took 160 MiB for 10 MB).
//
// Manifests hold far fewer: a typical pod is one value per 12 bytes of
// YAML, the CustomResourceDefinitions of the Gateway API one per 35 to 75.

// maxValues is how many values one text of size bytes parsed at once may
// hold.
func maxValues(size int) int { return 50_000 + size/64 }

// maxFileValues is how many values a file of size bytes may hold, weighed
// of them for the entries of pods' lists (itemWeight): up to 100,000 of
// these are allowed besides, out of the goal's 50 MiB (a List of 1000
// compact pods of 3 containers and 5 volumes, 394 KB, 163,000 values of
// which 105,000 weighed, took 46 MiB where the goal is 54).
func maxFileValues(size, weighed int) int { return 50_000 + size/6 + min(weighed, maxFreeWeight) }

// maxFreeWeight is how many weighed values a file holds besides its bound.
const maxFreeWeight = 100_000

// valueCount is what countValues found in a text: how many values it
// holds (weighed of them for the entries of a pod's lists, itemWeight),
// and the deepest field holding more than a threshold of them.
type valueCount struct {
	n, weighed int
	field      string
}

// tooManyValues is the problem of a text (what: "the document", "the
// item", "the file") of size bytes holding n values, more than limit (50000
// and one per "per" bytes).
func tooManyValues(what string, n, limit, size, per int) string {
	more := ""
	if what == "the file" {
		more = fmt.Sprintf(", and up to %d for the items' weight", maxFreeWeight)
	}
	return fmt.Sprintf("%s holds %d values (scalars, keys, lists, maps; an item of a pod's containers counts %d more, of its volumes %d), more than the %d its %d bytes may hold (50000 and one per %d bytes%s): reading it would cost more memory than a manifest may", what, n, containerWeight, volumeWeight, limit, size, per, more)
}

// tooDense records a problem when text, parsed at once, holds more values
// than maxValues allows; field is where the text is in its document ("",
// or "items[3]" for an item of a List), what names it. The text of a YAML
// List's item is a sequence of that one entry ("- ...").
func (r *reader) tooDense(src Source, field, what string, text []byte) bool {
	limit := maxValues(len(text))
	count := countValues(text, limit/2)
	if count.n <= limit {
		return false
	}
	if field != "" && strings.HasPrefix(count.field, "[0]") && bytes.HasPrefix(bytes.TrimLeft(text, " "), []byte("-")) {
		count.field = strings.TrimPrefix(count.field[len("[0]"):], ".")
	}
	r.problem(src, joinField(field, count.field), tooManyValues(what, count.n, limit, len(text), 64))
	return true
}

// fileTooDense records a problem when the documents of a file of size
// bytes hold more values than maxFileValues allows, naming the document
// holding the most and, when it holds more than half the limit, its
// deepest field that does.
func (r *reader) fileTooDense(file string, size int, docs []document) bool {
	text := func(d document) []byte {
		if d.json != nil {
			return d.json
		}
		return d.yaml.text
	}
	total, weighed, most, at := 0, 0, 0, 0
	for i, d := range docs {
		count := countValues(text(d), math.MaxInt)
		n := count.n
		total += n
		weighed += count.weighed
		if n > most {
			most, at = n, i
		}
	}
	limit := maxFileValues(size, weighed)
	if total <= limit {
		return false
	}
	field := countValues(text(docs[at]), most/2).field
	r.problem(docs[at].src, field, tooManyValues("the file", total, limit, size, 6)+fmt.Sprintf("; this document holds %d of them", most))
	return true
}

// joinField is the path of field within the object at prefix.
func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case field[0] == '[':
		return prefix + field
	}
	return prefix + "." + field
}

// frame is a collection being counted: a block mapping's key or a block
// sequence's entry (indent is its column), or a flow collection.
type frame struct {
	indent int
	flow   bool
	seq    bool   // a flow sequence, or a block sequence's entry
	key    []byte // the field this collection is the value of, or
	index  int    // its index in the sequence above (when key is nil)
	elem   bool   // false: no path element (the value of a block frame)
	next   int    // a flow sequence's current index
	weight int    // a flow sequence's: what each of its entries adds (itemWeight)
	cur    []byte // a flow mapping's current key
	n      int    // values inside
}

// maxFrames bounds the collections tracked for the field's path; deeper
// ones count in the deepest tracked.
const maxFrames = 100

// valueCounter counts the values of YAML (or JSON) text without parsing
// it into values: each scalar (a key too), each flow collection, each
// block sequence entry without a value on its line. It skips comments,
// quoted scalars and block scalars (| and >). It is an estimate close to
// the parser's node count, never far above it on a real manifest.
type valueCounter struct {
	text      []byte
	frames    []frame
	deep      int // flow collections deeper than maxFrames
	total     int
	weighed   int // of total, for the entries of a pod's lists
	threshold int
	field     string
}

// countValues counts the values of text, and names the deepest field
// holding more than threshold of them.
func countValues(text []byte, threshold int) valueCount {
	c := valueCounter{text: text, threshold: threshold}
	c.block()
	for len(c.frames) > 0 {
		c.pop()
	}
	return valueCount{n: c.total, weighed: c.weighed, field: c.field}
}

// add counts one value in the innermost collection.
func (c *valueCounter) add() { c.addN(1) }

// addN counts n values in the innermost collection.
func (c *valueCounter) addN(n int) {
	c.total += n
	if len(c.frames) > 0 {
		c.frames[len(c.frames)-1].n += n
	}
}

// A pod's list of structs costs what its entries decode to, whatever
// their text: `{}` as a container is a 408-byte Container (some 2 KB at
// the peak of its reading, with the decoder's growth of the list, the
// defaults, its validation and the pod's hash), from three bytes of text;
// a pod of 25,000 empty containers (100 KB) took 75 to 86 MiB where the
// goal is 50. So an entry of such a list counts one value more per 24 bytes of
// the struct it decodes to (what a value of the file bound may cost the
// pods kept; its 64-bit size), besides the values of its text: a
// container 17 more, a volume 10. Only the lists whose struct is over 64
// bytes are weighed; a list of env entries (40 bytes) counts its text.
//
// itemWeight is what an entry of the list of field key adds.
func itemWeight(key []byte) int {
	switch string(key) {
	case "containers", "initContainers":
		return containerWeight // corev1.Container, 408 bytes
	case "ephemeralContainers":
		return 17 // corev1.EphemeralContainer, 424 bytes
	case "volumes":
		return volumeWeight // corev1.Volume, 256 bytes
	case "volumeMounts":
		return 4 // corev1.VolumeMount, 112 bytes
	case "topologySpreadConstraints":
		return 4 // corev1.TopologySpreadConstraint, 96 bytes
	case "tolerations":
		return 3 // corev1.Toleration, 72 bytes
	}
	return 0
}

// The weights the messages and docs name.
const (
	containerWeight = 17
	volumeWeight    = 10
)

// weighBlockEntry counts what a block sequence's entry adds, when the
// sequence is the value of a weighed key (the innermost frame, before the
// entry's own is pushed).
func (c *valueCounter) weighBlockEntry() {
	if n := len(c.frames); n > 0 {
		if top := c.frames[n-1]; !top.flow && !top.seq && top.key != nil {
			c.weigh(itemWeight(top.key))
		}
	}
}

// weigh counts the weight w of an entry in the innermost collection.
func (c *valueCounter) weigh(w int) {
	c.weighed += w
	c.addN(w)
}

// weighFlowEntry counts what an entry starting in the innermost flow
// collection adds, when it is a sequence of a weighed key.
func (c *valueCounter) weighFlowEntry() {
	if n := len(c.frames); n > 0 && c.deep == 0 {
		if top := c.frames[n-1]; top.flow && top.seq {
			c.weigh(top.weight)
		}
	}
}

// flowListWeight is the weight of the entries of a flow sequence starting
// at depth (0: the value of a block key) in the innermost collection.
func (c *valueCounter) flowListWeight(depth int) int {
	n := len(c.frames)
	if n == 0 || c.deep > 0 {
		return 0
	}
	switch top := c.frames[n-1]; {
	case depth == 0 && !top.flow && !top.seq && top.key != nil:
		return itemWeight(top.key)
	case depth > 0 && top.flow && !top.seq:
		return itemWeight(top.cur)
	}
	return 0
}

func (c *valueCounter) push(f frame) {
	if len(c.frames) >= maxFrames {
		if f.flow {
			c.deep++
		}
		return
	}
	c.frames = append(c.frames, f)
}

// pop ends the innermost collection, adding its values to its parent's.
func (c *valueCounter) pop() {
	top := c.frames[len(c.frames)-1]
	if top.n > c.threshold && c.field == "" {
		c.field = c.path()
	}
	c.frames = c.frames[:len(c.frames)-1]
	if len(c.frames) > 0 {
		c.frames[len(c.frames)-1].n += top.n
	}
}

// path is the field path of the innermost collection.
func (c *valueCounter) path() string {
	var b []byte
	for _, f := range c.frames {
		switch {
		case !f.elem:
		case f.key != nil:
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, f.key[:min(len(f.key), 64)]...)
		default:
			b = append(append(append(b, '['), strconv.Itoa(f.index)...), ']')
		}
	}
	return string(b)
}

// popBlock ends the block collections a line at column col ends: those
// deeper, and for an entry of a sequence (dash) or a key, the one at col
// (a key's parent mapping key at col stays for a dash: `key:` then `- x`
// at the same column). It returns the index of a sequence entry at col.
func (c *valueCounter) popBlock(col int, dash bool) int {
	for len(c.frames) > 0 {
		top := c.frames[len(c.frames)-1]
		if top.flow || top.indent < col || (top.indent == col && dash && !top.seq) {
			break
		}
		c.pop()
		if top.indent == col && dash {
			return top.index + 1
		}
	}
	return 0
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' }

// block counts the text line by line in block context.
func (c *valueCounter) block() {
	text := c.text
	scalarParent := -2 // the column a block scalar's lines are deeper than; -2: none
	for pos := 0; pos < len(text); {
		end := bytes.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		p := pos
		for p < end && text[p] == ' ' {
			p++
		}
		blank := len(bytes.TrimSpace(text[p:end])) == 0
		if scalarParent > -2 && (blank || p-pos > scalarParent) {
			pos = end + 1 // a line of the block scalar
			continue
		}
		scalarParent = -2
		if blank || text[p] == '#' {
			pos = end + 1
			continue
		}
		next, parent := c.line(p, pos, end)
		scalarParent = parent
		if next <= end {
			next = end + 1
		} else if e := bytes.IndexByte(text[next:], '\n'); e >= 0 {
			next += e + 1 // the rest of the line a flow collection or quoted scalar ended on
		} else {
			next = len(text)
		}
		pos = next
	}
}

// line counts a block line from its first character p (the line starts at
// start and ends at end). It returns where counting goes on (past end when
// a flow collection or a quoted scalar spans lines) and, when the line
// starts a block scalar, the column its lines are deeper than (-2 if not).
func (c *valueCounter) line(p, start, end int) (next, scalarParent int) {
	text := c.text
	parent := p - start - 1
	for p < end && text[p] == '-' && (p+1 == end || isBlank(text[p+1])) {
		col := p - start
		index := c.popBlock(col, true)
		c.weighBlockEntry()
		c.push(frame{indent: col, seq: true, index: index, elem: true})
		parent = col
		p++
		for p < end && isBlank(text[p]) {
			p++
		}
	}
	if p == end || text[p] == '#' {
		c.add() // an empty entry
		return end, -2
	}
	// A key: a quoted scalar or plain text up to ": ".
	keyEnd, valueAt := -1, -1
	if text[p] == '"' || text[p] == '\'' {
		q := skipQuoted(text, p)
		if q > end {
			c.add()
			return q, -2 // a quoted scalar over several lines
		}
		r := q
		for r < end && isBlank(text[r]) {
			r++
		}
		if r < end && text[r] == ':' && (r+1 == end || isBlank(text[r+1])) {
			keyEnd, valueAt = q, r+1
		}
	} else if text[p] != '[' && text[p] != '{' {
		for r := p; r < end; r++ {
			if text[r] == '#' && isBlank(text[r-1]) {
				break
			}
			if text[r] == ':' && (r+1 == end || isBlank(text[r+1])) {
				keyEnd, valueAt = r, r+1
				break
			}
		}
	}
	if keyEnd >= 0 {
		col := p - start
		c.popBlock(col, false)
		key := bytes.TrimRight(text[p:keyEnd], " \t")
		if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') {
			key = key[1 : len(key)-1]
		}
		c.add()
		c.push(frame{indent: col, key: key, elem: true})
		parent = col
		p = valueAt
		for p < end && isBlank(text[p]) {
			p++
		}
		if p == end || text[p] == '#' {
			return end, -2 // its value is on the lines below
		}
	}
	for p < end && (text[p] == '&' || text[p] == '!') { // an anchor, a tag
		for p < end && !isBlank(text[p]) {
			p++
		}
		for p < end && isBlank(text[p]) {
			p++
		}
	}
	if p == end {
		c.add()
		return end, -2
	}
	switch text[p] {
	case '[', '{':
		return c.flow(p), -2
	case '"', '\'':
		c.add()
		return skipQuoted(text, p), -2
	case '|', '>':
		c.add()
		if blockScalarHeader(text[p+1 : end]) {
			return end, parent
		}
		return end, -2
	}
	c.add() // a plain scalar
	return end, -2
}

// blockScalarHeader reports whether what follows | or > on its line makes
// it a block scalar's header: indicators (+, -, a digit), then nothing but
// a comment.
func blockScalarHeader(rest []byte) bool {
	i := 0
	for i < len(rest) && (rest[i] == '+' || rest[i] == '-' || '0' <= rest[i] && rest[i] <= '9') {
		i++
	}
	rest = bytes.TrimLeft(rest[i:], " \t\r")
	return len(rest) == 0 || rest[0] == '#'
}

// skipQuoted returns the position past the quoted scalar that starts at p
// (the end of text when it is not closed).
func skipQuoted(text []byte, p int) int {
	q := text[p]
	for i := p + 1; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			i++
		case text[i] == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++
		case text[i] == q:
			return i + 1
		}
	}
	return len(text)
}

// flow counts the flow collection that starts at p, and returns the
// position past its end.
func (c *valueCounter) flow(p int) int {
	text := c.text
	depth := 0
	var last []byte // the last scalar, a flow mapping's key when a ':' follows
	for i := p; i < len(text); i++ {
		switch b := text[i]; b {
		case ' ', '\t', '\r', '\n':
		case '#':
			if i > 0 && (isBlank(text[i-1]) || text[i-1] == '\n') {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			}
		case '[', '{':
			c.weighFlowEntry()
			var weight int
			if b == '[' {
				weight = c.flowListWeight(depth)
			}
			c.add()
			f := frame{indent: -1, flow: true, seq: b == '[', elem: true, weight: weight}
			if depth == 0 || len(c.frames) == 0 || c.deep > 0 {
				f.elem = false
			} else if top := c.frames[len(c.frames)-1]; top.seq {
				f.index = top.next
			} else {
				f.key = top.cur
			}
			c.push(f)
			depth++
			last = nil
		case ']', '}':
			if c.deep > 0 {
				c.deep--
			} else if len(c.frames) > 0 && c.frames[len(c.frames)-1].flow {
				c.pop()
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if c.deep == 0 && len(c.frames) > 0 {
				if top := &c.frames[len(c.frames)-1]; top.seq {
					top.next++
				}
			}
			last = nil
		case ':':
			if c.deep == 0 && len(c.frames) > 0 && last != nil {
				c.frames[len(c.frames)-1].cur = last
			}
		case '"', '\'':
			c.weighFlowEntry()
			c.add()
			end := skipQuoted(text, i)
			last = text[i+1 : max(i+1, end-1)]
			i = end - 1
		default: // a plain scalar
			c.weighFlowEntry()
			c.add()
			start := i
			for i < len(text) && !plainEnd(text, i) {
				i++
			}
			last = bytes.TrimRight(text[start:i], " \t\r")
			i--
		}
	}
	return len(text)
}

// plainEnd reports whether a plain scalar in a flow collection ends at i:
// at a flow indicator, a line's end, a comment, or ": ".
func plainEnd(text []byte, i int) bool {
	switch text[i] {
	case ',', '[', ']', '{', '}', '\n':
		return true
	case '#':
		return isBlank(text[i-1])
	case ':':
		return i+1 == len(text) || isBlank(text[i+1]) || bytes.IndexByte([]byte(",[]{}\n"), text[i+1]) >= 0
	}
	return false
}

// trimSlices gives each slice reachable from v (an addressable value)
// exactly its length: a decoded list has up to a quarter more room than
// its values (a []string of 1640 arguments, 40% more), which a pod read
// keeps as long as it is held.
func trimSlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			trimSlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				trimSlices(f)
			}
		}
	case reflect.Slice:
		if v.Cap() > v.Len() && v.CanSet() {
			exact := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(exact, v)
			v.Set(exact)
		}
		if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Pointer || k == reflect.Slice {
			for i := range v.Len() {
				trimSlices(v.Index(i))
			}
		}
	}
}
