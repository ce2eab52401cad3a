package main

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/run"
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
		{[]string{"podrun", "up", "--hosts-dir", "D", "f.yaml"},
			[]string{"podrun", "--hosts-dir", "D", "up", "--", "f.yaml"}},
		{[]string{"podrun", "--root", "/a", "ps", "-A", "--root=/b", "--debug"},
			[]string{"podrun", "--root", "/a", "--root=/b", "--debug", "ps", "-A", "--"}},
		{[]string{"podrun", "image", "--root", "/r", "import", "x.tar"},
			[]string{"podrun", "--root", "/r", "image", "import", "--", "x.tar"}},
		{[]string{"podrun", "ps", "--help"}, []string{"podrun", "ps", "--help"}},
		{[]string{"podrun", "--debug"}, []string{"podrun", "--debug"}},
		{[]string{"podrun", "logs", "web", "--generate-bash-completion"}, []string{"podrun", "logs", "web", "--generate-bash-completion"}},
	}
	for _, tt := range tests {
		if got := flagsFirst(app, tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("flagsFirst(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// Global flags are read wherever they stand, as kubectl's: before the
// command, after it, among a subcommand's; the later one wins, and either
// wins over the environment.
func TestGlobalFlagsAfterCommand(t *testing.T) {
	t.Setenv("PODRUN_ROOT", "/env")
	tests := []struct {
		args                []string
		root, hostsDir, cmd string
		debug               bool
		positional          []string
	}{
		{args: []string{"podrun", "ps", "--root", "/r"}, root: "/r", cmd: "ps"},
		{args: []string{"podrun", "ps", "--root=/r", "-A"}, root: "/r", cmd: "ps"},
		{args: []string{"podrun", "--root", "/before", "ps", "--root", "/after"}, root: "/after", cmd: "ps"},
		{args: []string{"podrun", "--root", "/before", "ps"}, root: "/before", cmd: "ps"},
		{args: []string{"podrun", "ps"}, root: "/env", cmd: "ps"},
		{args: []string{"podrun", "up", "--hosts-dir", "/d", "f.yaml", "--debug"}, root: "/env", hostsDir: "/d", debug: true, cmd: "up", positional: []string{"f.yaml"}},
		{args: []string{"podrun", "image", "--root", "/r", "import", "x.tar", "--hosts-dir=/d"}, root: "/r", hostsDir: "/d", cmd: "import", positional: []string{"x.tar"}},
		{args: []string{"podrun", "logs", "web", "-c", "side", "--root", "/r"}, root: "/r", cmd: "logs", positional: []string{"web"}},
	}
	for _, tt := range tests {
		app := newApp()
		var got run.Config
		var args []string
		leaf := findCommand(app.Commands, tt.cmd)
		if leaf == nil {
			leaf = findCommand(findCommand(app.Commands, "image").Subcommands, tt.cmd)
		}
		leaf.Action = func(c *cli.Context) error {
			args = c.Args().Slice()
			var err error
			got, err = config(c)
			return err
		}
		if err := app.Run(flagsFirst(app, tt.args)); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		hostsDir := strings.Join(got.Images.HostsDirs, ":")
		if tt.hostsDir == "" {
			tt.hostsDir = "/etc/containerd/certs.d:/etc/docker/certs.d"
		}
		if got.Root != tt.root || hostsDir != tt.hostsDir || got.Debug != tt.debug || !slices.Equal(args, tt.positional) {
			t.Errorf("%q: root %q, hosts-dir %q, debug %v, args %q; want %q, %q, %v, %q", tt.args, got.Root, hostsDir, got.Debug, args, tt.root, tt.hostsDir, tt.debug, tt.positional)
		}
	}
}

// TestCompleteAPartialFlag: the shell's completion of a flag being typed
// (`podrun ps --all-n<TAB>`) lists the flags it can become; urfave/cli's
// short-option handling failed to parse the partial flag and panicked.
func TestCompleteAPartialFlag(t *testing.T) {
	for partial, want := range map[string]string{"--all-n": "--all-namespaces", "--ta": "--tail"} {
		cmd := "ps"
		if want == "--tail" {
			cmd = "logs"
		}
		args := []string{"podrun", cmd, partial, completionFlag}
		saved := os.Args
		os.Args = args // urfave/cli's completer reads the word being completed there
		app := newApp()
		var out strings.Builder
		app.Writer = &out
		err := app.Run(flagsFirst(app, args))
		os.Args = saved
		if err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("completing %q %q: %q, %v; want %s among them", cmd, partial, out.String(), err, want)
		}
	}
}
