// Every command's help: its examples, the global flags it takes, and
// podrun's own help command.

package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// examples are each command's, by its name under podrun ("image ls"), as
// kubectl words them: a comment, then the command line.
var examples = map[string][]string{
	"": {
		"# Check a manifest: every problem, with file, document and field path",
		"podrun validate -f pod.yaml",
		"# Run its pods (returns once they are Ready), list them, read a log",
		"podrun up -f pod.yaml",
		"podrun ps",
		"podrun logs web -f",
		"# Stop and remove them",
		"podrun down -f pod.yaml",
	},
	"up": {
		"# Run the pods of pod.yaml; return once every pod is Ready",
		"podrun up -f pod.yaml",
		"# Every manifest of a directory, and a file",
		"podrun up -f manifests/ -f extra.yaml",
		"# From stdin",
		"helm template web ./chart | podrun up -f -",
		"# Run a Job to its end: exit 0 when it Succeeded, 1 when it Failed",
		"podrun up -f job.yaml --wait=completion",
		"# Stay and supervise (probes, restarts) until Ctrl-C, then stop the pods",
		"podrun up -f pod.yaml --foreground",
	},
	"down": {
		"# The pods of a manifest",
		"podrun down -f pod.yaml",
		"# Pod web of namespace default; pods web and api of namespace prod",
		"podrun down web",
		"podrun down -n prod web api",
	},
	"wait": {
		"# Until pod web is Ready",
		"podrun wait web",
		"# Until pod report (namespace batch) Succeeded (exit 0) or Failed (exit 1)",
		"podrun wait --for=completion --timeout=10m -n batch report",
		"podrun wait --for=delete web",
	},
	"ps": {
		"# The running pods of every namespace",
		"podrun ps",
		"# Also the finished ones, of namespace prod only",
		"podrun ps -a -n prod",
		"# A v1 List of the pods with their status",
		"podrun ps -o yaml",
	},
	"status": {
		"# Pod web of namespace default, as a v1 Pod with its status",
		"podrun status web",
		"podrun status -n prod web -o json",
	},
	"logs": {
		"# The first app container's log; follow another container's",
		"podrun logs web",
		"podrun logs web -c sidecar -f",
		"podrun logs -n prod web --previous --tail 20",
	},
	"exec": {
		"podrun exec web -- cat /etc/hostname",
		"# An interactive shell",
		"podrun exec -it web -c app -- sh",
	},
	"attach": {
		"# Its output from now on",
		"podrun attach web",
		"# With stdin and a terminal (ctrl-p ctrl-q detaches)",
		"podrun attach -it web",
	},
	"daemon": {
		"# Keep /etc/podrun/manifests running",
		"podrun daemon",
		"podrun daemon --manifest-dir /srv/pods --listen 127.0.0.1:10248",
	},
	"volume":    {"podrun volume ls", "podrun volume rm -n prod data"},
	"volume ls": {"podrun volume ls", "podrun volume ls -o json"},
	"volume rm": {"# The volume of claim data of namespace default", "podrun volume rm data", "podrun volume rm prod/data"},
	"rollout": {
		"podrun rollout history web",
		"podrun rollout undo -f pod.yaml",
		"podrun rollout status web",
	},
	"rollout history": {"podrun rollout history web", "podrun rollout history -f pod.yaml"},
	"rollout undo":    {"# Back to the version before", "podrun rollout undo web", "podrun rollout undo web --to-revision 2"},
	"rollout status":  {"podrun rollout status web", "podrun rollout status -f pod.yaml --timeout 5m"},
	"validate": {
		"# Every problem, or one line per pod",
		"podrun validate -f pod.yaml",
		"# The pods as podrun runs them (a v1 List when there are several)",
		"podrun validate -f manifests/ -o yaml",
		"# As the daemon reads them: static pods named NAME-NODE",
		"podrun validate --static -f /etc/podrun/manifests -o yaml",
	},
	"image": {
		"podrun image pull docker.io/library/nginx:1.27",
		"podrun image import images.tar",
		"podrun image ls",
	},
	"image import": {"podrun image import images.tar", "zcat images.tar.gz | podrun image import -"},
	"image prune":  {"# As the kubelet's image GC; every image no container uses", "podrun image prune", "podrun image prune -a"},
	"image ls":     {"podrun image ls", "podrun image ls -o json"},
	"image pull":   {"podrun image pull docker.io/library/busybox:1.36"},
	"version":      {"podrun version", "podrun version -o json"},
	"completion":   {"source <(podrun completion bash)", "podrun completion zsh > \"${fpath[1]}/_podrun\""},
	"gc":           {"podrun gc", "podrun gc --log-retention 24h --log-max-total 200Mi"},
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
