package logs

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixed() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) }

func TestCopyWritesCRIRecords(t *testing.T) {
	var out bytes.Buffer
	w := &Writer{w: &out, now: fixed}
	long := strings.Repeat("x", MaxLine+10)
	in := "hello\n\nworld\r\n" + long + "\nno-newline"
	if err := w.Copy("stderr", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	ts := "2026-01-02T03:04:05.000000006Z"
	want := []string{
		ts + " stderr F hello",
		ts + " stderr F ",
		ts + " stderr F world",
		ts + " stderr P " + long[:MaxLine],
		ts + " stderr F " + long[MaxLine:],
		ts + " stderr P no-newline",
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %.80q\nwant %.80q", i, got[i], want[i])
		}
	}
}

func TestTailJoinsPartialsAndKeepsLastN(t *testing.T) {
	log := "t stdout F one\nt stdout P tw\nt stdout F o\nt stderr F three\nbad\n"
	got := Tail(strings.NewReader(log), 2)
	if strings.Join(got, "|") != "two|three" {
		t.Fatalf("Tail = %q", got)
	}
}

func TestPathLayout(t *testing.T) {
	got := Path("/var/log/pods", "default", "web", "u-1", "nginx", 2)
	if got != "/var/log/pods/default_web_u-1/nginx/2.log" {
		t.Fatal(got)
	}
	// The longest names: the directory's name stays a valid file name,
	// and another long name has another.
	ns, uid := strings.Repeat("n", 63), "0b3c1f9e-0000-4000-8000-000000000000"
	a, b := strings.Repeat("a", 253), strings.Repeat("a", 252)+"b"
	da, db := filepath.Base(PodDir("/l", ns, a, uid)), filepath.Base(PodDir("/l", ns, b, uid))
	if len(da) != 255 || len(db) != 255 || da == db || !strings.HasPrefix(da, ns+"_aaa") || !strings.HasSuffix(da, "_"+uid) {
		t.Errorf("long names: %q (%d), %q (%d)", da, len(da), db, len(db))
	}
}

func TestTailKeepsALastOpenLine(t *testing.T) {
	log := "t stdout F one\nt stdout F two\nt stdout P DO\nt stdout P NE\n"
	if got := Tail(strings.NewReader(log), 2); strings.Join(got, "|") != "two|DONE" {
		t.Errorf("Tail = %q", got)
	}
	for _, tc := range []struct {
		log    string
		n, max int
		want   string
	}{
		{"t stdout P DONE\n", 80, 2048, "DONE"},
		{"t stdout F a\nt stderr F b\n", 80, 2048, "a\nb\n"},
		{log, 2, 2048, "two\nDONE"},
		{log, 80, 6, "o\nDONE"},
		{"", 80, 2048, ""},
	} {
		if got := TailText(strings.NewReader(tc.log), tc.n, tc.max); got != tc.want {
			t.Errorf("TailText(%q, %d, %d) = %q, want %q", tc.log, tc.n, tc.max, got, tc.want)
		}
	}
}
