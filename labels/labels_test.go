package labels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClip: a message is trimmed and cut to MaxMessage bytes at a
// character's start; what comes out is valid UTF-8, whatever went in.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", MaxMessage) // 2 bytes each: MaxMessage falls on a character's start, MaxMessage-1 would not
	for _, tc := range []struct{ in, want string }{
		{"  short \n", "short"},
		{"x" + long, "x" + strings.Repeat("é", MaxMessage/2-1)},
		{long, strings.Repeat("é", MaxMessage/2)},
		{"bad \xff byte", "bad \uFFFD byte"},
		{strings.Repeat("a\xff", MaxMessage), strings.Repeat("a\uFFFD", MaxMessage/4)}, // replaced before the cut
	} {
		got := Clip(tc.in)
		if got != tc.want || len(got) > MaxMessage || !utf8.ValidString(got) {
			t.Errorf("Clip(%.20q...) = %.20q... (%d bytes), want %.20q... (%d bytes)", tc.in, got, len(got), tc.want, len(tc.want))
		}
	}
}
