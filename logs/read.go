package logs

import (
	"bufio"
	"bytes"
	"io"
)

// Record is one parsed CRI log line.
type Record struct {
	Time    string
	Stream  string
	Partial bool
	Text    []byte
}

// Parse splits one CRI log line; ok is false for a malformed line.
func Parse(line []byte) (Record, bool) {
	parts := bytes.SplitN(line, []byte{' '}, 4)
	if len(parts) < 3 {
		return Record{}, false
	}
	r := Record{Time: string(parts[0]), Stream: string(parts[1]), Partial: string(parts[2]) == "P"}
	if len(parts) == 4 {
		r.Text = parts[3]
	}
	return r, true
}

// Tail returns the text of the last n complete lines of a CRI log
// (partial records joined), for error messages.
func Tail(r io.Reader, n int) []string {
	var lines []string
	var cur []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, MaxLine+256), MaxLine+256)
	for sc.Scan() {
		rec, ok := Parse(sc.Bytes())
		if !ok {
			continue
		}
		if len(cur)+len(rec.Text) > MaxJoined {
			lines, cur = appendLast(lines, string(cur), n), nil // read as several lines
		}
		cur = append(cur, rec.Text...)
		if rec.Partial {
			continue
		}
		lines, cur = appendLast(lines, string(cur), n), nil
	}
	return lines
}

// appendLast appends line to lines, keeping the last n.
func appendLast(lines []string, line string, n int) []string {
	lines = append(lines, line)
	if len(lines) > n {
		lines = lines[1:]
	}
	return lines
}
