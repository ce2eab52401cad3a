// How podrun's errors become exit codes and what is printed for them.

package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/printers"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitPodFailed   = 1 // a pod failed, or the timeout passed before it was up
	exitInvalid     = 2 // invalid input or usage
	exitUnavailable = 3 // the runtime (containerd, CNI) is unavailable
	exitRefused     = 4 // the node refused a pod at admission (nothing of it started)
)

// usageError marks bad command-line usage (exit 2): an unknown command,
// flag or help topic, a bad flag value, a missing argument.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// commandError is an error of one command, named as its help is
// ("podrun image ls"): a usage error points there.
type commandError struct {
	command string
	err     error
}

func (e commandError) Error() string { return e.err.Error() }
func (e commandError) Unwrap() error { return e.err }

// inCommand names c's command on err (nil stays nil, a named one stays
// as it is).
func inCommand(c *cli.Context, err error) error {
	if ce := (commandError{}); err == nil || errors.As(err, &ce) {
		return err
	}
	return commandError{command: c.Command.HelpName, err: err}
}

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
	}
	return exitPodFailed
}

// report is what is printed on stderr for err: a manifest's problems, one
// a line, and a count; a usage error on one line and where the command's
// help is; anything else on one line; nothing for no error or an exit
// code alone (exec's).
func report(err error) string {
	var problems manifest.Problems
	var usage usageError
	var cmd commandError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &problems):
		return fmt.Sprintf("%s\npodrun: %d problem(s); nothing was changed", problems.Error(), problems.Total())
	case errors.As(err, &usage):
		help := "podrun"
		if errors.As(err, &cmd) && cmd.command != "" {
			help = cmd.command
		}
		return fmt.Sprintf("podrun: %v\nSee '%s --help'.", err, help)
	case err.Error() != "":
		return fmt.Sprintf("podrun: %v", err)
	}
	return ""
}
