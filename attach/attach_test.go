package attach

import (
	"bytes"
	"io"
	"testing"
)

func TestCopyInputDetach(t *testing.T) {
	for _, tc := range []struct {
		chunks   []string
		sent     string
		detached bool
	}{
		{[]string{"ls\n", "\x10\x11", "never"}, "ls\n", true},
		{[]string{"ls\x10", "\x11rest"}, "ls", true}, // split across reads
		{[]string{"a\x10", "b"}, "a\x10b", false},    // a lone ctrl-p goes through
		{[]string{"a\x10"}, "a\x10", false},          // and at the end of input
		{[]string{"\x10\x10\x11"}, "\x10", true},     // the last ctrl-p starts the sequence
	} {
		var w bytes.Buffer
		r := &chunked{chunks: tc.chunks}
		detached := copyInput(&w, r, DetachKeys)
		if detached != tc.detached || w.String() != tc.sent {
			t.Errorf("%q: detached %v, sent %q; want %v, %q", tc.chunks, detached, w.String(), tc.detached, tc.sent)
		}
	}
}

// chunked returns one chunk per Read.
type chunked struct{ chunks []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}
