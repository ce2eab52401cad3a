// Command podrun runs Kubernetes Pod manifests on one machine, straight on
// containerd, with no API server. Package main is the only code that knows
// the command line: this file builds the app and runs it, cmd_*.go hold one
// command each (cmd_internal.go those podrun runs itself), flags.go turns
// flags into run.Config and the packages' options, open.go opens the host
// for a command, cluster.go the cluster the daemon joins as a node, args.go
// orders arguments as kubectl users type them,
// help.go words every command's help, exit.go turns errors into exit codes.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

const defaultAddress = "/run/containerd/containerd.sock"

func main() {
	app := newApp()
	err := app.Run(flagsFirst(app, os.Args))
	if msg := report(err); msg != "" {
		stderr.Println(msg)
	}
	os.Exit(exitCode(err))
}

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "podrun",
		HelpName:             "podrun",
		Usage:                "run Kubernetes Pod manifests on one machine, straight on containerd",
		Version:              buildVersion().GitVersion,
		EnableBashCompletion: true,
		// -it is -i -t, as with kubectl exec.
		UseShortOptionHandling: true,
		Flags:                  globalFlags(),
		Before:                 setLogging,
		// Errors come back from Run to main, which alone prints them and
		// picks the exit code (exit.go): urfave/cli exits on none.
		ExitErrHandler: func(*cli.Context, error) {},
		// Only a command or subcommand of podrun: an unknown one is a
		// usage error, none shows the help.
		Action: unknownCommand,
		Commands: []*cli.Command{
			upCommand(), downCommand(), waitCommand(), psCommand(), statusCommand(), logsCommand(), execCommand(), attachCommand(), daemonCommand(), volumeCommand(), rolloutCommand(),
			validateCommand(), imageCommand(), versionCommand(), completionCommand(), gcCommand(), helpCommand(),
			// Run by podrun, not by users: the sandbox's PID 1 and the node's
			// stream keeper (every container's log, stdin and attach).
			pauseCommand(), criIOCommand(),
		},
	}
	app.OnUsageError = onUsageError
	app.CustomAppHelpTemplate = helpTemplate(cli.AppHelpTemplate, "", nil)
	// --version (podrun's only: -v is left free) prints what version does.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print podrun's version", DisableDefaultText: true}
	cli.VersionPrinter = func(c *cli.Context) {
		v := buildVersion()
		v.SignaturePolicy = policyLine(c)
		_ = printVersion(c.App.Writer, v, "")
	}
	setUp("", app.Commands, app.Flags)
	// urfave/cli adds -h only with its own help command.
	app.Flags = append(app.Flags, cli.HelpFlag)
	return app
}

// setUp gives every command under parent ("", "image") the same handling: its help
// (named, with its examples and the global flags), its usage errors (exit
// 2, one line), its unknown subcommands, and its errors named by the
// command.
func setUp(parent string, cmds []*cli.Command, globals []cli.Flag) {
	for _, cmd := range cmds {
		name := strings.TrimSpace(parent + " " + cmd.Name)
		// urfave/cli puts "podrun " in front of a command's, not a subcommand's.
		cmd.HelpName = "podrun " + name
		if parent == "" {
			cmd.HelpName = cmd.Name
		}
		cmd.OnUsageError = onUsageError
		cmd.CustomHelpTemplate = helpTemplate(cli.SubcommandHelpTemplate, name, globals)
		if len(cmd.Subcommands) > 0 {
			help := helpCommand()
			help.Hidden = true // `podrun image help ls` works, podrun help is the one shown
			cmd.Subcommands = append(cmd.Subcommands, help)
			setUp(name, cmd.Subcommands, globals)
			cmd.Action = unknownCommand
			continue
		}
		// podrun's own help command answers help: urfave/cli's would add
		// one to each leaf, whose unknown topics exit 3.
		cmd.HideHelpCommand = true
		if action := cmd.Action; action != nil {
			cmd.Action = func(c *cli.Context) error { return inCommand(c, action(c)) }
		}
	}
}

// onUsageError makes a flag that cannot be parsed a usage error of its
// command (urfave/cli would print the whole help and the error twice).
func onUsageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if c.Command.Name == "up" && msg == "flag needs an argument: -f" {
		// `up -f` was --foreground before -f named files, as in kubectl.
		msg += " (a FILE, DIR or -; to stay and supervise the pods: --foreground)"
	}
	return inCommand(c, usageError{msg})
}

// unknownCommand is the action of podrun and of a command with
// subcommands: named alone, the help; with anything else, a usage error.
func unknownCommand(c *cli.Context) error {
	if !c.Args().Present() {
		if c.Command.HelpName == c.App.HelpName {
			return cli.ShowAppHelp(c)
		}
		return cli.ShowSubcommandHelp(c)
	}
	return inCommand(c, usageError{fmt.Sprintf("unknown command %q for %q", c.Args().First(), c.Command.HelpName)})
}
