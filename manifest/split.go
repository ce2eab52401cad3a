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

	"sigs.k8s.io/yaml"
)

// document is one object's worth of input, converted to JSON.
type document struct {
	src  Source
	json []byte
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
		var raw json.RawMessage
		err := dec.Decode(&raw)
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
		if !isNull(raw) {
			docs = append(docs, document{src: src, json: raw})
		}
	}
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

// splitYAML splits multi-document YAML on "---" lines and converts each
// document to JSON. Syntax errors carry their line in the file.
func splitYAML(file string, data []byte) ([]document, Problems) {
	chunks, problems := yamlChunks(file, data)
	if len(chunks) > MaxDocuments {
		return nil, Problems{{Source: Source{File: file}, Msg: tooManyDocuments}}
	}
	var docs []document
	for i, c := range chunks {
		src := Source{File: file, Doc: i + 1}
		// Refuse an object far over MaxObjectSize before parsing it (YAML
		// is costly); a List, read item by item, may be as large as the file.
		if len(c.text) > 2*MaxObjectSize && !yamlList.Match(c.text) {
			problems = append(problems, Problem{Source: src, Msg: fmt.Sprintf("the object is larger than %s, more than a cluster stores", byteSize(MaxObjectSize))})
			continue
		}
		// The leading newline makes the parser name the line of errors on
		// the document's first line too (it omits line 1); see yamlProblems.
		j, err := yaml.YAMLToJSONStrict(append([]byte("\n"), c.text...))
		if err != nil {
			problems = append(problems, yamlProblems(src, c, err)...)
			continue
		}
		if !isNull(j) {
			docs = append(docs, document{src: src, json: j})
		}
	}
	return docs, problems
}

// yamlChunks splits YAML text into documents at separator lines ("---",
// optionally followed by a comment), dropping documents that hold only blank
// lines and comments. Like kubectl, it refuses content after a separator.
func yamlChunks(file string, data []byte) ([]yamlChunk, Problems) {
	var (
		chunks   []yamlChunk
		problems Problems
		cur      = yamlChunk{firstLine: 1}
	)
	flush := func() {
		if !blankYAML(cur.text) {
			chunks = append(chunks, cur)
		}
	}
	lines := strings.Split(string(data), "\n")
	if n := len(lines); n > 1 && lines[n-1] == "" {
		lines = lines[:n-1] // the text after the final newline is no line
	}
	for i, text := range lines {
		rest, isSeparator := strings.CutPrefix(strings.TrimRight(text, "\r"), "---")
		if !isSeparator || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			cur.text = append(append(cur.text, text...), '\n')
			continue
		}
		flush()
		line := i + 1
		cur = yamlChunk{firstLine: line + 1}
		if rest = strings.TrimSpace(rest); rest != "" && rest[0] != '#' {
			problems = append(problems, Problem{
				Source: Source{File: file, Doc: len(chunks) + 1},
				Msg:    fmt.Sprintf("line %d: yaml: content after the document separator is not supported: %q", line, rest),
			})
		}
	}
	flush()
	return chunks, problems
}

// blankYAML reports whether text holds only blank lines and comments.
func blankYAML(text []byte) bool {
	for _, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
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
	lastLine := c.firstLine + bytes.Count(c.text, []byte("\n")) - 1
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
