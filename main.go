// Command podrun runs Kubernetes Pod manifests on one machine, straight on
// containerd, with no API server. Package main is the only code that knows
// the command line: this file builds the app and runs it, cmd_*.go hold one
// command each (cmd_internal.go those podrun runs itself), flags.go turns
// flags into run.Config and the packages' options, open.go opens the host
// for a command, args.go orders arguments as kubectl users type them,
// exit.go turns errors into exit codes.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/manifest"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const defaultAddress = "/run/containerd/containerd.sock"

func main() {
	app := newApp()
	err := app.Run(flagsFirst(app, os.Args))
	var problems manifest.Problems
	switch {
	case errors.As(err, &problems):
		stderr.Println(problems.Error())
		stderr.Println(fmt.Sprintf("podrun: %d problem(s); nothing was changed", problems.Total()))
	case err != nil && err.Error() != "":
		stderr.Println(fmt.Sprintf("podrun: %v", err))
	}
	os.Exit(exitCode(err))
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "podrun",
		Usage:                "run Kubernetes Pod manifests on one machine, straight on containerd",
		Version:              version,
		HideVersion:          true,
		EnableBashCompletion: true,
		Flags:                globalFlags(),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err.Error()}
		},
		Before: setLogging,
		Commands: []*cli.Command{
			upCommand(), downCommand(), waitCommand(), psCommand(), statusCommand(), logsCommand(), execCommand(), attachCommand(), daemonCommand(), volumeCommand(), rolloutCommand(),
			validateCommand(), imageCommand(), versionCommand(), completionCommand(), gcCommand(),
			// Run by podrun, not by users: the sandbox's PID 1 and the node's
			// stream keeper (every container's log, stdin and attach).
			pauseCommand(), criIOCommand(),
		},
	}
}
