package logs

import (
	"bufio"
	"bytes"
	"io"
	"strings"
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

// Tail returns the text of the last n lines of a CRI log (partial records
// joined; partial records left open at the end make the last line), for
// error messages.
func Tail(r io.Reader, n int) []string {
	lines, _ := tail(r, n)
	return lines
}

// TailText is the last n lines of a CRI log as the container wrote them
// (each complete line with its newline, a last line left open without),
// cut to its last limit bytes: the kubelet's termination message from the
// log (readLastStringFromContainerLogs: 80 lines, 2048 bytes).
func TailText(r io.Reader, n, limit int) string {
	lines, open := tail(r, n)
	s := strings.Join(lines, "\n")
	if len(lines) > 0 && !open {
		s += "\n"
	}
	if len(s) > limit {
		s = s[len(s)-limit:]
	}
	return s
}

// tail returns the last n lines of a CRI log; open is set when the last
// one is partial records the log ends with.
func tail(r io.Reader, n int) (lines []string, open bool) {
	var cur []byte
	partial := false
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
		cur, partial = append(cur, rec.Text...), rec.Partial
		if rec.Partial {
			continue
		}
		lines, cur = appendLast(lines, string(cur), n), nil
	}
	if partial {
		lines, open = appendLast(lines, string(cur), n), true
	}
	return lines, open
}

// appendLast appends line to lines, keeping the last n.
func appendLast(lines []string, line string, n int) []string {
	lines = append(lines, line)
	if len(lines) > n {
		lines = lines[1:]
	}
	return lines
}
