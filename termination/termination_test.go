package termination

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/volumes"
)

// TestMessage: the kubelet's termination message of an attempt: its file,
// the end of it when long, or with FallbackToLogsOnError, a failure and no
// file content, the end of its log; a link in place of the file is not
// followed.
func TestMessage(t *testing.T) {
	long := strings.Repeat("x", maxTerminationMessage) + "END"
	for _, tt := range []struct {
		name     string
		file     string // "" for no file; "->" for a symlink to a file
		log      string // "" for no log
		fallback bool
		code     uint32
		want     string // the message, or its prefix when it ends in "…"
	}{
		{name: "the file", file: "bye", code: 1, want: "bye"},
		{name: "no file", want: ""},
		{name: "no file, log not asked for", log: "2026-01-01T00:00:00Z stderr F boom\n", code: 1, want: ""},
		{name: "fallback: the log", log: "2026-01-01T00:00:00Z stderr F boom\n", fallback: true, code: 1, want: "boom\n"},
		{name: "fallback: the file first", file: "bye", log: "2026-01-01T00:00:00Z stderr F boom\n", fallback: true, code: 1, want: "bye"},
		{name: "fallback: not on success", log: "2026-01-01T00:00:00Z stderr F boom\n", fallback: true, want: ""},
		{name: "fallback: no log", fallback: true, code: 1, want: ""},
		{name: "the end of a long file", file: long, want: long[len(long)-maxTerminationMessage:]},
		{name: "a link is not followed", file: "->", want: "Error on reading termination log …"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := volumes.Layout{Root: t.TempDir(), UID: "0123"}
			c := &corev1.Container{Name: "app", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
			if tt.fallback {
				c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
			path := l.TerminationLog("app", "id-0")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			switch tt.file {
			case "":
			case "->":
				secret := filepath.Join(t.TempDir(), "secret")
				if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(secret, path); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			logPath := filepath.Join(t.TempDir(), "0.log")
			if tt.log != "" {
				if err := os.WriteFile(logPath, []byte(tt.log), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got := Message(l, logPath, c, "id-0", tt.code)
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) || strings.Contains(got, "host secret") {
					t.Errorf("Message = %q, want %q…", got, prefix)
				}
			} else if got != tt.want {
				t.Errorf("Message = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadRecord: a recorded message is read where it is kept now, else
// where podrun kept it before; none is no message.
func TestReadRecord(t *testing.T) {
	for _, tt := range []struct {
		name   string
		at     func(l volumes.Layout) string // where it was recorded; nil: nowhere
		want   string
		wantOK bool
	}{
		{name: "recorded", at: func(l volumes.Layout) string { return Record(l, "app", "id-0") }, want: "bye", wantOK: true},
		{name: "recorded before", at: func(l volumes.Layout) string { return OldRecord(l, "app", "id-0") }, want: "bye", wantOK: true},
		{name: "not recorded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := volumes.Layout{Root: t.TempDir(), UID: "0123"}
			if tt.at != nil {
				path := tt.at(l)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("bye"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got, ok := ReadRecord(l, "app", "id-0"); got != tt.want || ok != tt.wantOK {
				t.Errorf("ReadRecord = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
