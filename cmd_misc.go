// podrun validate, gc, version and completion.

package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/run"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "load, default and validate manifests; print every problem",
		Description: "Prints every problem with file, document and field path; without any, one line per pod,\n" +
			"Job and CronJob, or with -o the pods as podrun runs them (as kubectl apply --dry-run=client -o):\n" +
			"defaults applied, workloads expanded, a Job's first pod, a CronJob's next Job's first pod.",
		ArgsUsage: "[-f] FILE|DIR|- ...",
		Flags: append([]cli.Flag{filenameFlag(), configMapFlag(), outputFlag("yaml", "json"),
			&cli.BoolFlag{Name: "static", Usage: "read the manifests as the daemon reads its directory: static pods of this node, named NAME-NODE"},
		}, admissionFlags()...),
		Action: func(c *cli.Context) error {
			set, err := load(c)
			if err != nil {
				return err
			}
			if format := c.String("output"); format != "" {
				return printers.Objects(os.Stdout, podsToRun(set, time.Now()), format)
			}
			for _, p := range set.Pods {
				fmt.Printf("pod/%s/%s valid (%s)\n", p.Namespace, p.Name, p.Source)
			}
			for _, j := range set.Jobs {
				fmt.Printf("job/%s valid (%s)\n", j.Key(), j.Source)
			}
			for _, cj := range set.CronJobs {
				fmt.Printf("cronjob/%s valid (%s)\n", cj.Key(), cj.Source)
			}
			return nil
		},
	}
}

// podsToRun are the pods podrun makes of set: its pods (the workloads'
// among them), each Job's first pod, and the first pod of the Job each
// CronJob makes next after now.
func podsToRun(set *manifest.Set, now time.Time) []runtime.Object {
	var out []runtime.Object
	add := func(p *manifest.Pod) {
		pod := p.Pod.DeepCopy()
		pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		out = append(out, pod)
	}
	for _, p := range set.Pods {
		add(p)
	}
	for _, j := range set.Jobs {
		add(j.Pod(0, 0))
	}
	for _, cj := range set.CronJobs {
		add(cj.Job(cj.Schedule.Next(now)).Pod(0, 0))
	}
	return out
}

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove the logs of pods that are gone",
		Description: "Removes the logs of pods that are gone: older than --log-retention, or the oldest while\n" +
			"the log dir is over --log-max-total.",
		Flags: retentionFlags(),
		Action: func(c *cli.Context) error {
			r, err := logRetention(c)
			if err != nil {
				return err
			}
			return withHost(c.Context, c, func(h *run.Host) error {
				removed, err := h.CollectLogs(c.Context, r)
				for _, dir := range removed {
					fmt.Printf("removed %s\n", dir)
				}
				return err
			})
		},
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print podrun's version, commit, Go version and platform",
		Flags: []cli.Flag{outputFlag("json", "yaml")},
		Action: func(c *cli.Context) error {
			v := buildVersion()
			v.SignaturePolicy = policyLine(c)
			return printVersion(os.Stdout, v, c.String("output"))
		},
	}
}

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version string

// versionInfo is podrun's build, with the field names of kubectl version's.
type versionInfo struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit,omitempty"`
	GitTreeState string `json:"gitTreeState,omitempty"` // clean or dirty
	BuildDate    string `json:"buildDate,omitempty"`    // the commit's time
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
	Containerd   string `json:"containerdClient,omitempty"` // the containerd Go client podrun is built with
	// SignaturePolicy says the policy pulled images must satisfy, or none.
	SignaturePolicy string `json:"signaturePolicy,omitempty"`
}

func buildVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(version, bi)
}

// versionOf is the version of a build: the -X version, else the module's
// (go install ...@v1.2.3), else "dev"; the commit as the go command
// stamped it (vcs.revision, vcs.time, vcs.modified) when it built from a
// checkout.
func versionOf(stamped string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{GitVersion: stamped, GoVersion: goruntime.Version(), Compiler: goruntime.Compiler, Platform: goruntime.GOOS + "/" + goruntime.GOARCH}
	if bi == nil {
		v.GitVersion = cmp.Or(v.GitVersion, "dev")
		return v
	}
	if m := bi.Main.Version; v.GitVersion == "" && m != "" && m != "(devel)" {
		v.GitVersion = m
	}
	v.GitVersion = cmp.Or(v.GitVersion, "dev")
	v.GoVersion = cmp.Or(bi.GoVersion, v.GoVersion)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.GitCommit = s.Value
		case "vcs.time":
			v.BuildDate = s.Value
		case "vcs.modified":
			v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/containerd/containerd" {
			v.Containerd = d.Version
		}
	}
	return v
}

// printVersion prints v on one line, or as JSON or YAML.
func printVersion(w io.Writer, v versionInfo, format string) error {
	if format != "" {
		return printers.Object(w, v, format)
	}
	var parts []string
	if v.GitCommit != "" {
		commit := "commit " + v.GitCommit
		if v.GitTreeState == "dirty" {
			commit += ", modified"
		}
		parts = append(parts, commit)
	}
	parts = append(parts, v.GoVersion, v.Platform)
	if v.Containerd != "" {
		parts = append(parts, "containerd client "+v.Containerd)
	}
	if _, err := fmt.Fprintf(w, "podrun %s (%s)\n", v.GitVersion, strings.Join(parts, ", ")); err != nil {
		return err
	}
	if v.SignaturePolicy != "" {
		_, err := fmt.Fprintln(w, v.SignaturePolicy)
		return err
	}
	return nil
}

// completionFlag is how urfave/cli's shell completion asks for candidates.
const completionFlag = "--generate-bash-completion"

// Shell completion scripts over urfave/cli's protocol: the shell runs the
// words typed so far with completionFlag and offers what podrun prints.
const (
	bashCompletion = `# podrun completion for bash: source <(podrun completion bash)
_podrun() {
	local cur="${COMP_WORDS[COMP_CWORD]}" opts
	local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		opts=$("${words[@]}" "$cur" ` + completionFlag + ` 2>/dev/null)
	else
		opts=$("${words[@]}" ` + completionFlag + ` 2>/dev/null)
	fi
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}

complete -o bashdefault -o default -F _podrun podrun
`
	zshCompletion = `#compdef podrun
# podrun completion for zsh: source <(podrun completion zsh)
_podrun() {
	local -a opts
	local cur=${words[-1]}
	if [[ "$cur" == -* ]]; then
		opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" ` + completionFlag + ` 2>/dev/null)}")
	else
		opts=("${(@f)$(${words[@]:0:#words[@]-1} ` + completionFlag + ` 2>/dev/null)}")
	fi
	if [[ -n "${opts[1]}" ]]; then
		_describe 'values' opts
	else
		_files
	fi
}
compdef _podrun podrun
`
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				_, err := fmt.Fprint(os.Stdout, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(os.Stdout, zshCompletion)
				return err
			}
			return usageError{"completion: name a shell: bash or zsh"}
		},
	}
}
