package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/internal/doctable"
)

// runCLI runs podrun's command line in this process as main does: its
// exit code, what urfave/cli printed (help, on stdout) and what main
// prints on stderr.
func runCLI(args ...string) (code int, stdout, stderr string) {
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	err := app.Run(flagsFirst(app, append([]string{"podrun"}, args...)))
	return exitCode(err), out.String(), report(err)
}

// exitCodeTable is the README's table of exit codes: each code's meaning.
func exitCodeTable(t *testing.T) map[int]string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := doctable.Rows(string(b), "## Exit codes")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	table := map[int]string{}
	for _, r := range rows {
		code, err := strconv.Atoi(r[0])
		if err != nil || len(r) != 2 {
			t.Fatalf("README.md exit codes: row %q is not | CODE | MEANING |", r)
		}
		table[code] = r[1]
	}
	return table
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const validPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: busybox:1}]\n"

// TestExitCodeTable walks the README's exit codes: each case exits with
// the code of the row that names it, prints what that row says, and every
// row is covered (1, a pod that failed, and 4, a refused one, by the e2e
// TestExitCodeTableRuntime).
func TestExitCodeTable(t *testing.T) {
	table := exitCodeTable(t)
	pod := writeFile(t, "pod.yaml", validPod)
	invalid := writeFile(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app}]\n")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	tmp := t.TempDir()
	kubeconfig := writeFile(t, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
	tests := []struct {
		name   string // as the README's row says it
		args   []string
		code   int
		stderr string // a regexp the stderr matches
		usage  string // for a usage error: the command whose help is pointed to
	}{
		{"unknown command", []string{"bogus"}, 2, `^podrun: unknown command "bogus" for "podrun"$`, "podrun"},
		{"unknown command", []string{"image", "bogus"}, 2, `^podrun: unknown command "bogus" for "podrun image"$`, "podrun image"},
		{"unknown flag", []string{"ps", "--bogus"}, 2, `^podrun: flag provided but not defined: -bogus$`, "podrun ps"},
		{"unknown flag", []string{"down", "web", "--bogus"}, 2, `-bogus$`, "podrun down"},
		{"bad flag value", []string{"up", "-f", pod, "--timeout=soon"}, 2, `^podrun: invalid value "soon" for flag -timeout`, "podrun up"},
		{"bad flag value", []string{"up", "--wait=never", pod}, 2, `^podrun: up: --wait must be ready, completion, running or none, not "never"$`, "podrun up"},
		{"bad flag value", []string{"ps", "-o", "table"}, 2, `^podrun: ps: -o "table": want wide, json, yaml, name$`, "podrun ps"},
		{"bad flag value", []string{"validate", "-o", "wide", pod}, 2, `^podrun: validate: -o "wide": want yaml, json$`, "podrun validate"},
		{"bad flag value", []string{"daemon", "--manifest-dir", tmp, "--kubeconfig", kubeconfig, "--node-ip", "203.0.113.9"}, 2, `^podrun: daemon: --node-ip 203.0.113.9: not an address of this host's network interfaces \(an address of this host's interfaces, or loopback\)$`, "podrun daemon"},
		{"bad flag value", []string{"daemon", "--manifest-dir", tmp, "--kubeconfig", kubeconfig, "--node-ip", "127.0.0.1,127.0.0.2"}, 2, `^podrun: daemon: --node-ip "127.0.0.1,127.0.0.2": must contain either a single IP or a dual-stack pair of IPs$`, "podrun daemon"},
		{"missing argument", []string{"validate"}, 2, `^podrun: validate: name at least one FILE, DIR or -`, "podrun validate"},
		{"missing argument", []string{"up", "-f"}, 2, `^podrun: flag needs an argument: -f \(a FILE, DIR or -; to stay and supervise the pods: --foreground\)$`, "podrun up"},
		{"missing argument", []string{"up", pod, "-f"}, 2, `^podrun: flag needs an argument: -f \(a FILE, DIR or -; to stay and supervise the pods: --foreground\)$`, "podrun up"},
		{"missing argument", []string{"down", "-f"}, 2, `^podrun: flag needs an argument: -f$`, "podrun down"},
		{"missing argument", []string{"ps", "--root"}, 2, `^podrun: flag needs an argument: -root$`, "podrun"},
		{"missing argument", []string{"rollout", "undo"}, 2, `^podrun: rollout undo: name one POD or FILE$`, "podrun rollout undo"},
		{"unknown help topic", []string{"help", "bogus"}, 2, `^podrun: unknown help topic bogus$`, "podrun"},
		{"unknown help topic", []string{"help", "image", "bogus"}, 2, `^podrun: unknown help topic image bogus$`, "podrun"},
		{"missing file", []string{"validate", "-f", missing}, 2, `missing.yaml: no such file or directory\npodrun: 1 problem\(s\); nothing was changed$`, ""},
		{"invalid manifest", []string{"validate", invalid}, 2, `spec.containers\[0\].image: Required value`, ""},
		{"-h", []string{"validate", pod, "-h"}, 0, `^$`, ""},
		{"-h", []string{"up", "-f", pod, "--help"}, 0, `^$`, ""},
		{"help", []string{"help", "image", "pull"}, 0, `^$`, ""},
		{"success", []string{"validate", "-f", pod}, 0, `^$`, ""},
		{"unavailable", []string{"--address", filepath.Join(tmp, "nothing.sock"), "--root", tmp, "--run-dir", tmp, "ps"}, 3, `^podrun: container runtime unavailable: `, ""},
	}
	covered := map[int]bool{1: true, 4: true} // by the e2e TestExitCodeTableRuntime
	for _, tt := range tests {
		t.Run(tt.name+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(tt.args...)
			covered[code] = true
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if meaning, ok := table[code]; !ok || !strings.Contains(meaning, tt.name) {
				t.Errorf("README.md's exit code %d (%q) does not name %q", code, meaning, tt.name)
			}
			if tt.usage != "" {
				// One line, and where the help is: no help dumped, nothing twice.
				msg, see, ok := strings.Cut(stderr, "\n")
				if !ok || strings.Contains(msg, "\n") || see != fmt.Sprintf("See '%s --help'.", tt.usage) {
					t.Errorf("stderr %q: want one line, then See '%s --help'.", stderr, tt.usage)
				}
				stderr = msg
			}
			if !regexp.MustCompile(tt.stderr).MatchString(stderr) {
				t.Errorf("stderr %q does not match %q", stderr, tt.stderr)
			}
			if tt.code != 0 && stdout != "" {
				t.Errorf("stdout %q: want nothing (no help) on an error", stdout)
			}
			if tt.code == 0 && tt.name != "success" && !strings.Contains(stdout, "USAGE:") {
				t.Errorf("stdout %q: want the help", stdout)
			}
		})
	}
	for code := range table {
		if !covered[code] {
			t.Errorf("README.md's exit code %d is not tested", code)
		}
	}
}

// TestHelpAfterArguments: -h after an argument, or among a subcommand's,
// is the help of the command named, not a help topic of its argument.
func TestHelpAfterArguments(t *testing.T) {
	tests := []struct {
		args []string
		name string // in the help's NAME line
	}{
		{[]string{"validate", "pod.yaml", "-h"}, "podrun validate - "},
		{[]string{"validate", "pod.yaml", "-help"}, "podrun validate - "},
		{[]string{"logs", "web", "-c", "app", "--help"}, "podrun logs - "},
		{[]string{"image", "pull", "busybox", "-h"}, "podrun image pull - "},
		{[]string{"--root", "/r", "rollout", "undo", "web", "-h"}, "podrun rollout undo - "},
		{[]string{"image", "bogus", "-h"}, "podrun image - "},
		{[]string{"-h", "bogus"}, "podrun - "},
		{[]string{"help", "down"}, "podrun down - "},
		{[]string{"rollout", "help", "status"}, "podrun rollout status - "},
		{[]string{"image", "-h"}, "podrun image - "},
		{[]string{"image"}, "podrun image - "},
		{nil, "podrun - "},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(tt.args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "NAME:\n   "+tt.name) {
			t.Errorf("podrun %q: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and the help of %q", tt.args, code, stderr, stdout, tt.name)
		}
	}
	// What follows "--" is the command's: exec's -h is the command's.
	if got := flagsFirst(newApp(), []string{"podrun", "exec", "web", "--", "ls", "-h"}); strings.Join(got, " ") != "podrun exec -- web ls -h" {
		t.Errorf("exec web -- ls -h: %q", got)
	}
}

// commands are every command of podrun a user sees, by name ("image ls").
func commands(prefix string, cmds []*cli.Command, visit func(name string, c *cli.Command)) {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		name := strings.TrimSpace(prefix + " " + c.Name)
		visit(name, c)
		commands(name, c.Subcommands, visit)
	}
}

// TestHelp: every command's help has a one-line summary under 80
// columns, examples, the global flags, and says what -n means for it.
func TestHelp(t *testing.T) {
	app := newApp()
	var names []string
	commands("", app.Commands, func(name string, c *cli.Command) {
		names = append(names, name)
		if name == "help" {
			return // help --help is podrun's help, as urfave/cli has it
		}
		code, stdout, _ := runCLI(append(strings.Fields(name), "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d", name, code)
			return
		}
		line := "   podrun " + name + " - " + c.Usage
		if strings.Contains(c.Usage, "\n") || len(line) >= 80 || !strings.Contains(stdout, "NAME:\n"+line+"\n") {
			t.Errorf("%s: summary line %q: want one line under 80 columns, shown", name, line)
		}
		if ex := examples[name]; len(ex) == 0 || !strings.Contains(stdout, "EXAMPLES:\n   "+ex[0]) {
			t.Errorf("%s --help: no EXAMPLES section:\n%s", name, stdout)
		}
		if !strings.Contains(stdout, "GLOBAL OPTIONS (before or after the command; see 'podrun --help'):") ||
			!strings.Contains(stdout, "--address,") || !strings.Contains(stdout, "--root,") || !strings.Contains(stdout, "--debug\n") {
			t.Errorf("%s --help: the global flags are not named:\n%s", name, stdout)
		}
		for _, l := range strings.Split(stdout, "\n") {
			if strings.Contains(l, "--namespace value, -n value") && (strings.Contains(l, "for ps") || !strings.Contains(l, "namespace")) {
				t.Errorf("%s --help: -n: %q", name, l)
			}
		}
	})
	for name := range examples {
		if name != "" && !strings.Contains(strings.Join(names, "\n")+"\n", name+"\n") {
			t.Errorf("examples of %q, not a command", name)
		}
	}
	_, stdout, _ := runCLI("--help")
	if !strings.Contains(stdout, "EXAMPLES:\n   "+examples[""][0]) || !strings.Contains(stdout, "--version") {
		t.Errorf("podrun --help:\n%s", stdout)
	}
	// The commands' lines and the examples fit in 80 columns.
	_, commands, _ := strings.Cut(stdout, "COMMANDS:\n")
	commands, _, _ = strings.Cut(commands, "\n\n")
	for name, ex := range examples {
		for _, l := range append(strings.Split(commands, "\n"), ex...) {
			if len("   "+l) >= 80 {
				t.Errorf("%q: line over 80 columns: %q", name, l)
			}
		}
	}
}

// captureStdout runs fn with os.Stdout going to a file, and returns what
// it printed.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = saved }()
	fn()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withStdin runs fn with os.Stdin reading content.
func withStdin(t *testing.T, content string, fn func()) {
	t.Helper()
	f, err := os.Open(writeFile(t, "stdin", content))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()
	fn()
}

// TestFilenameFlag: -f/--filename names manifests as kubectl's does:
// repeatable, a file, a directory or stdin, besides the arguments, on
// every command that reads manifests; up's --foreground has no -f.
func TestFilenameFlag(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, "a.yaml", validPod)
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(strings.ReplaceAll(validPod, "web", "b")), 0o644); err != nil {
		t.Fatal(err)
	}
	c := writeFile(t, "c.yaml", strings.ReplaceAll(validPod, "web", "c"))
	stdin := strings.ReplaceAll(validPod, "web", "in")
	var out string
	withStdin(t, stdin, func() {
		out = captureStdout(t, func() {
			if code, _, stderr := runCLI("validate", "-f", a, "-f", dir, c, "-f", "-"); code != 0 {
				t.Errorf("validate: exit %d\n%s", code, stderr)
			}
		})
	})
	for _, want := range []string{"pod/default/web valid", "pod/default/b valid", "pod/default/c valid", "pod/default/in valid (stdin (document 1))"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate -f A -f DIR C -f -: %q missing from\n%s", want, out)
		}
	}

	// What each command reads: its -f values, then its arguments.
	tests := []struct {
		args  []string
		paths []string
		fg    bool
	}{
		{[]string{"up", "-f", a}, []string{a}, false},
		{[]string{"up", a, "-f", c, "--foreground"}, []string{c, a}, true},
		{[]string{"down", "-f", a, "web"}, []string{a, "web"}, false},
		{[]string{"validate", "-f", a, "-f", dir}, []string{a, dir}, false},
		{[]string{"rollout", "undo", "-f", a}, []string{a}, false},
		{[]string{"rollout", "status", "web", "-n", "prod"}, []string{"web"}, false},
	}
	for _, tt := range tests {
		app := newApp()
		leaf := findCommand(app.Commands, tt.args[0])
		if len(leaf.Subcommands) > 0 {
			leaf = findCommand(leaf.Subcommands, tt.args[1])
		}
		var paths []string
		var fg bool
		leaf.Action = func(c *cli.Context) error {
			var err error
			paths, err = manifestPaths(c)
			fg = c.Bool("foreground")
			return err
		}
		if err := app.Run(flagsFirst(app, append([]string{"podrun"}, tt.args...))); err != nil || !slices.Equal(paths, tt.paths) || fg != tt.fg {
			t.Errorf("%q: paths %q, foreground %v, %v; want %q, %v", tt.args, paths, fg, err, tt.paths, tt.fg)
		}
	}

	// -f followed by a flag: up's old -f (--foreground) gets a hint.
	for _, args := range [][]string{{"up", "-f", "--timeout=1m", a}, {"up", "-f", "-d", a}} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, "-f takes a FILE, DIR or - (to stay and supervise the pods: --foreground)\nSee 'podrun up --help'.") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the --foreground hint", args, code, stderr)
		}
	}
}

// TestValidateOutput: validate -o prints the pods as podrun runs them, as
// kubectl apply --dry-run=client -o does: one object alone, several in a
// v1 List; defaults applied, workloads expanded, a Job's first pod, static
// pods named as the daemon names them with --static.
func TestValidateOutput(t *testing.T) {
	pod := writeFile(t, "pod.yaml", validPod)
	deploy := writeFile(t, "deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: dep, namespace: prod}
spec:
  replicas: 2
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers: [{name: app, image: busybox:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: app, image: busybox:1}]
`)
	run := func(args ...string) string {
		return captureStdout(t, func() {
			if code, _, stderr := runCLI(args...); code != 0 {
				t.Fatalf("%q: exit %d\n%s", args, code, stderr)
			}
		})
	}

	var one corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(run("validate", "-f", pod, "-o", "yaml")), &one); err != nil {
		t.Fatal(err)
	}
	c := one.Spec.Containers[0]
	if one.Kind != "Pod" || one.APIVersion != "v1" || one.Name != "web" || one.Namespace != "default" || one.UID == "" ||
		c.ImagePullPolicy != corev1.PullIfNotPresent || c.TerminationMessagePath != "/dev/termination-log" ||
		one.Spec.RestartPolicy != corev1.RestartPolicyAlways || *one.Spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("validate -o yaml of one pod: not the defaulted v1 Pod: %+v", one)
	}

	var list corev1.PodList
	if err := json.Unmarshal([]byte(run("validate", "-f", deploy, "-f", pod, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
		if p.Kind != "Pod" {
			t.Errorf("item %s: kind %q", p.Name, p.Kind)
		}
	}
	jobPod := list.Items[len(list.Items)-1]
	if list.Kind != "List" || list.APIVersion != "v1" || len(list.Items) != 4 ||
		!strings.HasPrefix(names[0], "prod/dep-") || !strings.HasPrefix(names[1], "prod/dep-") || names[2] != "default/web" ||
		!strings.HasPrefix(jobPod.Name, "once-") || jobPod.Labels["job-name"] != "once" {
		t.Errorf("validate -o json of a Deployment of 2, a Job and a pod: %s %q; want a v1 List of 2 dep- pods, web, once-", list.Kind, names)
	}

	node, err := downward.NodeName()
	if err != nil {
		t.Fatal(err)
	}
	var static corev1.Pod
	if err := yaml.Unmarshal([]byte(run("validate", "--static", "-f", pod, "-o", "yaml")), &static); err != nil {
		t.Fatal(err)
	}
	if static.Name != "web-"+node || static.Spec.NodeName != node || static.Annotations["kubernetes.io/config.source"] != "file" {
		t.Errorf("validate --static: name %q, nodeName %q, annotations %v; want web-%s, a static pod of %s", static.Name, static.Spec.NodeName, static.Annotations, node, node)
	}
}

// TestVersion: the version of the build: -X main.version, else the
// module's, else dev; the commit the go command stamped; printed the same
// by version and --version, and as JSON with kubectl version's names.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-29T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}},
		Deps:     []*debug.Module{{Path: "github.com/containerd/containerd", Version: "v1.7.35"}}}
	v := versionOf("", bi)
	platform := goruntime.GOOS + "/" + goruntime.GOARCH
	want := versionInfo{GitVersion: "dev", GitCommit: "0123abcd", GitTreeState: "dirty", BuildDate: "2026-11-29T10:00:00Z", GoVersion: "go1.99",
		Compiler: goruntime.Compiler, Platform: platform, Containerd: "v1.7.35"}
	if v != want {
		t.Errorf("versionOf(devel) = %+v, want %+v", v, want)
	}
	if v := versionOf("v1.2.3", bi); v.GitVersion != "v1.2.3" {
		t.Errorf("-X main.version=v1.2.3: %q", v.GitVersion)
	}
	bi.Main.Version = "v0.9.0"
	if v := versionOf("", bi); v.GitVersion != "v0.9.0" {
		t.Errorf("module version v0.9.0: %q", v.GitVersion)
	}
	if v := versionOf("", nil); v.GitVersion != "dev" || v.Platform != platform || v.GoVersion != goruntime.Version() {
		t.Errorf("no build info: %+v", v)
	}
	var b bytes.Buffer
	if err := printVersion(&b, want, ""); err != nil || b.String() != "podrun dev (commit 0123abcd, modified, go1.99, "+platform+", containerd client v1.7.35)\n" {
		t.Errorf("printVersion: %q, %v", b.String(), err)
	}

	_, flag, _ := runCLI("--version")
	cmd := captureStdout(t, func() { runCLI("version") })
	if flag == "" || flag != cmd || !strings.HasPrefix(cmd, "podrun ") || !strings.Contains(cmd, goruntime.Version()) || !strings.Contains(cmd, platform) {
		t.Errorf("--version %q, version %q: want the same line, with the Go version and the platform", flag, cmd)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(captureStdout(t, func() { runCLI("version", "-o", "json") })), &got); err != nil || got["goVersion"] != goruntime.Version() || got["platform"] != platform || got["gitVersion"] == "" {
		t.Errorf("version -o json: %v, %v", got, err)
	}
}

// TestShortOptions: combined short flags, as kubectl's exec -it.
func TestShortOptions(t *testing.T) {
	app := newApp()
	var stdin, tty bool
	var args []string
	findCommand(app.Commands, "exec").Action = func(c *cli.Context) error {
		stdin, tty, args = c.Bool("stdin"), c.Bool("tty"), c.Args().Slice()
		return nil
	}
	if err := app.Run(flagsFirst(app, []string{"podrun", "exec", "-it", "web", "--", "sh", "-it"})); err != nil || !stdin || !tty || !slices.Equal(args, []string{"web", "sh", "-it"}) {
		t.Errorf("exec -it web -- sh -it: stdin %v, tty %v, args %q, %v", stdin, tty, args, err)
	}
}
