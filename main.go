// Command podrun runs Kubernetes Pod manifests on one machine, straight on
// containerd, with no API server. Package main is the only code that knows
// the command line: this file builds the app and runs it, cmd_*.go hold one
// command each, flags.go turns flags into run.Config and the packages'
// options, args.go orders arguments as kubectl users type them.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/keeper"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/pause"
	"github.com/podrun/podrun/printers"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitPodFailed   = 1 // a pod failed, or the timeout passed before it was up
	exitInvalid     = 2 // invalid input or usage
	exitUnavailable = 3 // the runtime (containerd, CNI) is unavailable
	exitRefused     = 4 // the node refused a pod at admission (nothing of it started)
)

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

// usageError marks bad command-line usage (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var problems manifest.Problems
	var usage usageError
	var format *printers.FormatError
	var coded cli.ExitCoder
	var refused *admission.Refusal
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &problems), errors.As(err, &usage), errors.As(err, &format):
		return exitInvalid
	case errors.Is(err, engine.ErrUnavailable):
		return exitUnavailable
	case errors.As(err, &refused):
		return exitRefused
	case errors.As(err, &coded):
		return coded.ExitCode()
	case strings.Contains(err.Error(), "flag provided but not defined"), strings.Contains(err.Error(), "Required flag"):
		return exitInvalid
	}
	return exitPodFailed
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
		Before: func(c *cli.Context) error {
			level := slog.LevelInfo
			if c.Bool("debug") {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
			ctrd.SetLogging(c.Bool("debug")) // containerd's own log lines only with --debug
			if os.Getenv("PODRUN_NAMESPACE") != "" && os.Getenv("PODRUN_CONTAINERD_NAMESPACE") == "" {
				fmt.Fprintln(os.Stderr, "podrun: PODRUN_NAMESPACE is deprecated and goes in the next release: use PODRUN_CONTAINERD_NAMESPACE")
			}
			return nil
		},
		Commands: []*cli.Command{
			upCommand(), downCommand(), waitCommand(), psCommand(), statusCommand(), logsCommand(), execCommand(), attachCommand(), daemonCommand(), volumeCommand(),
			validateCommand(), imageCommand(), versionCommand(), completionCommand(), gcCommand(),
			// Run by podrun, not by users: the sandbox's PID 1 and the node's
			// stream keeper (every container's log, stdin and attach).
			{Name: "pause", Hidden: true, Action: func(*cli.Context) error { os.Exit(pause.Run()); return nil }},
			{Name: "cri-io", Hidden: true, Flags: []cli.Flag{&cli.StringFlag{Name: "dir", Required: true}},
				Action: func(c *cli.Context) error {
					closeStdin := func(cfg keeper.Config) error {
						return ctrd.CloseStdin(context.Background(), cfg.Address, cfg.Namespace, cfg.ID)
					}
					if err := keeper.Serve(c.String("dir"), closeStdin); err != nil {
						fmt.Fprintf(os.Stderr, "podrun keeper: %v\n", err)
						return cli.Exit("", 1)
					}
					return nil
				}},
		},
	}
}
