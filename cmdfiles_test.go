package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What a command file must not use to reach the daemon around the owner
// package (openOwner): the daemon's published status and its lock are
// read, and the daemon asked to reload, by owner.Owner only.
var (
	// daemonFiles name the daemon's files or read them.
	daemonFiles = []string{"ReadStatus", "ReadStatusFile", "StatusFile", "LockFile", "Holder", "HoldLife"}
	// signalling calls send a process a signal, or find one to send it to.
	signalling = []string{"Signal", "Kill", "Tgkill", "Tkill", "PidfdOpen", "PidfdSendSignal", "FindProcess"}
	// fileNames are in the paths of the daemon's files, or of a process's.
	fileNames = []string{"daemon.json", "daemon.lock", "/proc/"}
)

// daemonCommandMay are the names of daemonFiles the daemon's own command
// uses: it tells the daemon where to publish its status (StatusFile),
// which it writes; no command reads it.
var daemonCommandMay = map[string][]string{"cmd_daemon.go": {"StatusFile"}}

// reachesDaemon lists where the command file f reaches the daemon or a
// process other than through the owner: an import of the lock package
// (the daemon's life lock), a name of daemonFiles (but allowed), a call
// of signalling, the daemon's Status type, a string with one of fileNames.
func reachesDaemon(fset *token.FileSet, f *ast.File, allowed []string) []string {
	var out []string
	at := func(n ast.Node, format string, a ...any) {
		out = append(out, fset.Position(n.Pos()).String()+": "+strings.Replace(format, "%s", a[0].(string), 1))
	}
	daemonPkg := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch path {
		case "github.com/podrun/podrun/lock":
			at(imp, "imports %s (the daemon's life lock)", path)
		case "github.com/podrun/podrun/daemon":
			daemonPkg = "daemon"
			if imp.Name != nil {
				daemonPkg = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if slices.Contains(daemonFiles, n.Name) && !slices.Contains(allowed, n.Name) {
				at(n, "names %s (the daemon's files)", n.Name)
			}
		case *ast.CallExpr:
			name := ""
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if slices.Contains(signalling, name) {
				at(n, "calls %s (signals a process)", name)
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && daemonPkg != "" && x.Name == daemonPkg && n.Sel.Name == "Status" {
				at(n, "uses %s (what the daemon publishes)", "daemon.Status")
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				for _, s := range fileNames {
					if strings.Contains(n.Value, s) {
						at(n, "names %s", s)
					}
				}
			}
		}
		return true
	})
	return out
}

// TestCommandsAskTheOwner: no command file reads the daemon's files or
// signals a process: they ask owner.Owner (openOwner). Rerun it after
// any change to a cmd_*.go file (go test -run TestCommandsAskTheOwner .).
func TestCommandsAskTheOwner(t *testing.T) {
	files, err := filepath.Glob("cmd_*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d command files (%v): run in the main package's directory", len(files), files)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range reachesDaemon(fset, f, daemonCommandMay[name]) {
			t.Error(s)
		}
	}
}

// TestReachesDaemon: each way around the owner is found; receiving
// signals, the owner's calls and what a file is allowed are not.
func TestReachesDaemon(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		allowed   []string
		want      []string // substrings of the findings, in order
	}{
		{name: "asks the owner", src: `own := openOwner(c); _ = own.Owns(p.Source); _ = own.Reload(); _ = own.ProblemsOf("x")`},
		{name: "receives signals", src: `hup := make(chan os.Signal, 1); signal.Notify(hup, syscall.SIGHUP); signal.NotifyContext(ctx, os.Interrupt)`},
		{name: "reads the status", src: `st, ok := daemon.ReadStatus(path); _, _ = st, ok`, want: []string{"names ReadStatus"}},
		{name: "reads the status file", src: `_, _, _ = daemon.ReadStatusFile(path)`, want: []string{"names ReadStatusFile"}},
		{name: "names the status file", src: `_ = daemon.StatusFile(root)`, want: []string{"names StatusFile"}},
		{name: "the daemon command names its status file", src: `_ = daemon.StatusFile(root)`, allowed: []string{"StatusFile"}},
		{name: "reads the lock", src: `_, _, _ = lock.Holder(daemon.LockFile(path))`, want: []string{"imports github.com/podrun/podrun/lock", "names Holder", "names LockFile"}},
		{name: "signals the daemon", src: `_ = st.Signal(syscall.SIGHUP)`, want: []string{"calls Signal"}},
		{name: "kills a pid", src: `_ = syscall.Kill(pid, syscall.SIGHUP)`, want: []string{"calls Kill"}},
		{name: "finds a process", src: `p, _ := os.FindProcess(pid); _ = p.Signal(os.Interrupt)`, want: []string{"calls FindProcess", "calls Signal"}},
		{name: "a pidfd", src: `fd, _ := unix.PidfdOpen(pid, 0); _ = unix.PidfdSendSignal(fd, unix.SIGHUP, nil, 0)`, want: []string{"calls PidfdOpen", "calls PidfdSendSignal"}},
		{name: "holds the daemon's status", src: `var st daemon.Status; _ = st`, want: []string{"uses daemon.Status"}},
		{name: "a path to the daemon's file", src: `_, _ = os.ReadFile(filepath.Join(root, "daemon.json"))`, want: []string{"names daemon.json"}},
		{name: "a process's stat", src: `_, _ = os.ReadFile("/proc/" + pid + "/stat")`, want: []string{"names /proc/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imports := `"github.com/podrun/podrun/daemon"`
			if strings.Contains(tc.src, "lock.") {
				imports += "; \"github.com/podrun/podrun/lock\""
			}
			src := "package main\nimport (" + imports + ")\nfunc f() {\n" + tc.src + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "cmd_x.go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := reachesDaemon(fset, f, tc.allowed)
			if len(got) != len(tc.want) {
				t.Fatalf("found %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("finding %d: %q, want %q in it", i, got[i], w)
				}
			}
		})
	}
}
