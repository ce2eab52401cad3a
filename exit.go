// How podrun's errors become exit codes.

package main

import (
	"errors"
	"strings"

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
