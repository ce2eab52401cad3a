// Every command's help: its examples, the global flags it takes, and
// podrun's own help command.

package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// examples are each command's, by its name under podrun ("image ls").
var examples = map[string][]string{
	"": {
		"podrun validate -f pod.yaml            # every problem, with file, document and field path",
		"podrun up -f pod.yaml                  # run it; returns once it is Ready",
		"podrun ps                              # list pods, like kubectl get pods",
		"podrun logs web -f                     # follow a container's log",
		"podrun down -f pod.yaml                # stop and remove it",
	},
	"up": {
		"podrun up -f pod.yaml                  # returns once every pod is Ready",
		"podrun up -f manifests/ -f extra.yaml  # every manifest of a directory, and a file",
		"kubectl create deployment web --image=nginx --dry-run=client -o yaml | podrun up -f -",
		"podrun up -f job.yaml --wait=completion  # exit 0 when it Succeeded, 1 when it Failed",
		"podrun up -f pod.yaml --foreground     # stay, supervise, stop the pods at Ctrl-C",
	},
	"down": {
		"podrun down -f pod.yaml                # the pods of a manifest",
		"podrun down web                        # pod web of namespace default",
		"podrun down -n prod web api            # pods web and api of namespace prod",
	},
	"wait": {
		"podrun wait web                        # until pod web is Ready",
		"podrun wait --for=completion --timeout=10m -n batch report",
		"podrun wait --for=delete web",
	},
	"ps": {
		"podrun ps                              # running pods of every namespace",
		"podrun ps -a -n prod                   # also the finished ones, of namespace prod only",
		"podrun ps -o yaml                      # a v1 List of the pods with their status",
	},
	"status": {
		"podrun status web                      # pod web of namespace default, as a v1 Pod",
		"podrun status -n prod web -o json",
	},
	"logs": {
		"podrun logs web                        # the first app container's log",
		"podrun logs web -c sidecar -f          # follow another container's",
		"podrun logs -n prod web --previous --tail 20",
	},
	"exec": {
		"podrun exec web -- cat /etc/hostname",
		"podrun exec -it web -c app -- sh       # an interactive shell",
	},
	"attach": {
		"podrun attach web                      # its output from now on",
		"podrun attach -it web                  # with stdin and terminal (ctrl-p ctrl-q detaches)",
	},
	"daemon": {
		"podrun daemon                          # keep /etc/podrun/manifests running",
		"podrun daemon --manifest-dir /srv/pods --listen 127.0.0.1:10248",
	},
	"volume": {
		"podrun volume ls",
		"podrun volume rm -n prod data",
	},
	"volume ls": {"podrun volume ls", "podrun volume ls -o json"},
	"volume rm": {"podrun volume rm data                  # claim data of namespace default", "podrun volume rm prod/data"},
	"rollout": {
		"podrun rollout history web",
		"podrun rollout undo -f pod.yaml",
		"podrun rollout status web",
	},
	"rollout history": {"podrun rollout history web", "podrun rollout history -f pod.yaml"},
	"rollout undo":    {"podrun rollout undo web                # back to the version before", "podrun rollout undo web --to-revision 2"},
	"rollout status":  {"podrun rollout status web", "podrun rollout status -f pod.yaml --timeout 5m"},
	"validate": {
		"podrun validate -f pod.yaml            # every problem, or one line per pod",
		"podrun validate -f manifests/ -o yaml  # the pods as podrun runs them",
		"podrun validate --static -f /etc/podrun/manifests -o yaml  # as the daemon names them",
	},
	"image": {
		"podrun image pull docker.io/library/nginx:1.27",
		"podrun image import images.tar",
		"podrun image ls",
	},
	"image import": {"podrun image import images.tar", "zcat images.tar.gz | podrun image import -"},
	"image prune":  {"podrun image prune                     # as the kubelet's image GC", "podrun image prune -a                  # every image no container uses"},
	"image ls":     {"podrun image ls", "podrun image ls -o json"},
	"image pull":   {"podrun image pull docker.io/library/busybox:1.36"},
	"version":      {"podrun version", "podrun version -o json"},
	"completion":   {"source <(podrun completion bash)", "podrun completion zsh > \"${fpath[1]}/_podrun\""},
	"gc":           {"podrun gc", "podrun gc --log-retention 24h --log-max-total 200Mi"},
	"help":         {"podrun help up", "podrun help image pull"},
}

// helpTemplate is urfave/cli's, followed by the command's examples and the
// global flags every command takes.
func helpTemplate(base string, name string, globals []cli.Flag) string {
	var b strings.Builder
	b.WriteString(base)
	if ex := examples[name]; len(ex) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for _, e := range ex {
			b.WriteString("   " + e + "\n")
		}
	}
	if name != "" {
		b.WriteString("\nGLOBAL OPTIONS (before or after the command; see 'podrun --help'):\n")
		line := "  "
		for i, f := range globals {
			word := " --" + f.Names()[0]
			if i < len(globals)-1 {
				word += ","
			}
			if len(line)+len(word) > 78 {
				b.WriteString(line + "\n")
				line = "  "
			}
			line += word
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// helpCommand is podrun's help command (and each command's with
// subcommands): `podrun help image ls`. urfave/cli's would exit 3 on an
// unknown topic.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name: "help", Aliases: []string{"h"}, Usage: "show the help of podrun or of a command", ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			parent := c.Lineage()[1] // the command this help is of
			unknown := func(topic []string) error {
				return commandError{parent.Command.HelpName, usageError{"unknown help topic " + strings.Join(topic, " ")}}
			}
			cmds := parent.Command.Subcommands
			ctx := parent
			args := c.Args().Slice()
			for i, name := range args {
				cmd := findCommand(cmds, name)
				if cmd == nil || cmd.Hidden {
					return unknown(args[:i+1])
				}
				if i == len(args)-1 || len(cmd.Subcommands) == 0 {
					if i < len(args)-1 {
						return unknown(args)
					}
					return cli.ShowCommandHelp(ctx, name)
				}
				ctx = cli.NewContext(c.App, nil, ctx)
				ctx.Command = cmd
				cmds = cmd.Subcommands
			}
			if parent.Command.HelpName == c.App.HelpName {
				return cli.ShowAppHelp(c)
			}
			return cli.ShowSubcommandHelp(parent)
		},
	}
}
