// podrun validate, gc, version and completion.

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/run"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "load, default and validate manifests; print every problem",
		ArgsUsage: "FILE|DIR|- ...",
		Flags:     append([]cli.Flag{configMapFlag()}, admissionFlags()...),
		Action: func(c *cli.Context) error {
			set, err := load(c)
			if err != nil {
				return err
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

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove the logs of pods that are gone: older than --log-retention, or the oldest while the log dir is over --log-max-total",
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
		Usage: "print podrun's version",
		Action: func(*cli.Context) error {
			client := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "github.com/containerd/containerd" {
						client = d.Version
					}
				}
			}
			fmt.Printf("podrun %s (%s, %s/%s, containerd client %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, client)
			return nil
		},
	}
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
		Usage:     "print a shell completion script: source <(podrun completion bash)",
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
