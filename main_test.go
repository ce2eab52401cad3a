package main

import (
	"reflect"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp()
	tests := []struct{ in, want []string }{
		{[]string{"podrun", "logs", "web", "-c", "side", "--tail", "5", "-f"},
			[]string{"podrun", "logs", "-c", "side", "--tail", "5", "-f", "--", "web"}},
		{[]string{"podrun", "--root", "/r", "exec", "web", "-c", "app", "-i", "--", "sh", "-c", "ls -l"},
			[]string{"podrun", "--root", "/r", "exec", "-c", "app", "-i", "--", "web", "sh", "-c", "ls -l"}},
		{[]string{"podrun", "up", "-", "--timeout=1m"},
			[]string{"podrun", "up", "--timeout=1m", "--", "-"}},
		{[]string{"podrun", "image", "import", "x.tar"},
			[]string{"podrun", "image", "import", "--", "x.tar"}},
		{[]string{"podrun", "image"}, []string{"podrun", "image"}},
		{[]string{"podrun", "--debug"}, []string{"podrun", "--debug"}},
		{[]string{"podrun", "logs", "web", "--generate-bash-completion"}, []string{"podrun", "logs", "web", "--generate-bash-completion"}},
	}
	for _, tt := range tests {
		if got := flagsFirst(app, tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("flagsFirst(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
