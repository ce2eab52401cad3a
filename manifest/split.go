package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// document is one document of a file: a value of a JSON stream, or the
// text of a YAML document, converted only when it is read (readDocument),
// so that one document at a time is held converted.
type document struct {
	src  Source
	json []byte    // a JSON stream's value
	yaml yamlChunk // or a YAML document's text
}

// splitDocuments splits a file's content into documents: a JSON stream when
// the first significant byte is '{' or '[' (as kubectl decides), multi-document
// YAML otherwise. Documents holding nothing (blank, comments only, null) are
// skipped.
func splitDocuments(file string, data []byte) ([]document, Problems) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return splitJSON(file, data)
	}
	return splitYAML(file, data)
}

// splitJSON reads a stream of JSON values.
func splitJSON(file string, data []byte) ([]document, Problems) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var v span
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		src := Source{File: file, Doc: n}
		if n > MaxDocuments {
			return nil, Problems{{Source: Source{File: file}, Msg: tooManyDocuments}}
		}
		if err != nil {
			return docs, Problems{{Source: src, Msg: jsonSyntaxMessage(data, err)}}
		}
		if raw := v.of(data, dec); !isNull(raw) {
			docs = append(docs, document{src: src, json: raw})
		}
	}
}

// span takes note of the length of a JSON value a Decoder decodes into it,
// so that the value can be sliced out of the decoder's input (span.of),
// never copied.
type span struct{ n int }

func (s *span) UnmarshalJSON(b []byte) error {
	s.n = len(b)
	return nil
}

// of is the value s spanned, in the input of dec.
func (s span) of(input []byte, dec *json.Decoder) []byte {
	end := int(dec.InputOffset())
	return input[end-s.n : end : end]
}

// jsonSyntaxMessage prefixes a JSON syntax error with its line in the file.
func jsonSyntaxMessage(data []byte, err error) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) && syntax.Offset <= int64(len(data)) {
		line := 1 + bytes.Count(data[:syntax.Offset], []byte("\n"))
		return fmt.Sprintf("line %d: json: %s", line, strings.TrimPrefix(err.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "json: unexpected end of input"
	}
	return err.Error()
}

func isNull(raw []byte) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// yamlList matches the top-level kind of a v1 List in YAML text.
var yamlList = regexp.MustCompile(`(?m)^kind:\s*["']?List["']?\s*$`)

// yamlChunk is the text of one YAML document and the file line it starts on.
type yamlChunk struct {
	text      []byte
	firstLine int
}

// lastLine is the file line the chunk ends on.
func (c yamlChunk) lastLine() int {
	n := bytes.Count(c.text, []byte("\n"))
	if len(c.text) > 0 && c.text[len(c.text)-1] != '\n' {
		n++
	}
	return c.firstLine + max(n, 1) - 1
}

// splitYAML splits multi-document YAML on "---" lines; each document is
// converted when it is read (readYAML).
func splitYAML(file string, data []byte) ([]document, Problems) {
	chunks, problems := yamlChunks(file, data)
	if len(chunks) > MaxDocuments {
		return nil, Problems{{Source: Source{File: file}, Msg: tooManyDocuments}}
	}
	docs := make([]document, len(chunks))
	for i, c := range chunks {
		docs[i] = document{src: Source{File: file, Doc: i + 1}, yaml: c}
	}
	return docs, problems
}

// lines calls fn with each line of data (its text without the newline,
// and its offset), until fn returns false.
func lines(data []byte, fn func(line []byte, start int) bool) {
	for start := 0; start < len(data); {
		end := bytes.IndexByte(data[start:], '\n')
		next := start + end + 1
		if end < 0 {
			end, next = len(data)-start, len(data)
		}
		if !fn(data[start:start+end], start) {
			return
		}
		start = next
	}
}

// yamlChunks splits YAML text into documents at separator lines ("---",
// optionally followed by a comment), dropping documents that hold only blank
// lines and comments. Like kubectl, it refuses content after a separator.
// Each chunk is a slice of data.
func yamlChunks(file string, data []byte) ([]yamlChunk, Problems) {
	var (
		chunks   []yamlChunk
		problems Problems
		start    int
		first    = 1
		lineNo   int
	)
	flush := func(end int) {
		if text := data[start:end:end]; !blankYAML(text) {
			chunks = append(chunks, yamlChunk{text: text, firstLine: first})
		}
	}
	lines(data, func(text []byte, at int) bool {
		lineNo++
		rest, isSeparator := bytes.CutPrefix(bytes.TrimRight(text, "\r"), []byte("---"))
		if !isSeparator || (len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t') {
			return true
		}
		flush(at)
		start, first = min(at+len(text)+1, len(data)), lineNo+1
		if rest = bytes.TrimSpace(rest); len(rest) > 0 && rest[0] != '#' {
			problems = append(problems, Problem{
				Source: Source{File: file, Doc: len(chunks) + 1},
				Msg:    fmt.Sprintf("line %d: yaml: content after the document separator is not supported: %q", lineNo, rest),
			})
		}
		return true
	})
	flush(len(data))
	return chunks, problems
}

// blankYAML reports whether text holds only blank lines and comments.
func blankYAML(text []byte) bool {
	blank := true
	lines(text, func(line []byte, _ int) bool {
		line = bytes.TrimSpace(line)
		blank = len(line) == 0 || line[0] == '#'
		return blank
	})
	return blank
}

// parseYAML parses a YAML document (or a List's item, or its header) with
// go-yaml v2, as kubectl does (sigs.k8s.io/yaml): strictly (a key twice is
// an error). Aliases are not expanded into new memory by the parser (an
// aliased scalar is shared, an aliased collection is bounded by its alias
// ratio), only by the conversion to JSON, which is bounded (jsonWriter).
func parseYAML(src Source, c yamlChunk) (any, Problems) {
	// The leading newline makes the parser name the line of errors on the
	// document's first line too (it omits line 1); see yamlProblems.
	text := make([]byte, 0, len(c.text)+1)
	text = append(append(text, '\n'), c.text...)
	if msg := aliasProblem(text); msg != "" { // aliases.go
		return nil, Problems{{Source: src, Msg: msg}}
	}
	var v any
	if err := yaml.UnmarshalStrict(text, &v); err != nil {
		return nil, yamlProblems(src, c, err)
	}
	return v, nil
}

// yamlLine matches the line numbers the YAML parser puts in its messages:
// "yaml: line 3: mapping values are not allowed in this context" and, for
// strict errors, "yaml: unmarshal errors:\n  line 4: key \"a\" already set in map".
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlParserProblems start the messages of the errors of go-yaml v2's parser,
// which name a line counted from 0, where those of its scanner and its
// decoder count from 1.
var yamlParserProblems = []string{
	"did not find expected ",
	"found duplicate %",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlProblems turns a YAML parser error on a document that starts on the
// file's line c.firstLine, and that was parsed with one newline in front of
// it, into problems that name the line in the file. A line past the
// document's end ("unexpected end of stream") names its last line.
func yamlProblems(src Source, c yamlChunk, err error) Problems {
	lastLine := c.lastLine()
	var problems Problems
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "yaml: unmarshal errors:" {
			continue
		}
		msg := line
		if m := yamlLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			msg = fmt.Sprintf("line %d: yaml: %s", min(fileLine(c.firstLine, n, m[2]), lastLine), m[2])
		}
		problems = append(problems, Problem{Source: src, Msg: msg})
	}
	return problems
}

// fileLine converts the line the parser reports for a problem into a line of
// the file.
func fileLine(firstLine, reported int, problem string) int {
	for _, p := range yamlParserProblems {
		if strings.HasPrefix(problem, p) {
			reported++ // counted from 0
		}
	}
	return firstLine + reported - 2 // -1 for the newline in front, -1 as firstLine is line 1 of the document
}
