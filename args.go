// flagsFirst: kubectl-style argument order for urfave/cli.

package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's flags in front of its arguments, so that
// `podrun logs POD -c NAME` and `podrun exec POD -c NAME -- CMD` work as with
// kubectl: urfave/cli stops reading flags at the first argument. What
// follows "--" is left alone.
func flagsFirst(app *cli.App, args []string) []string {
	if n := len(args); n > 1 && args[n-1] == completionFlag {
		return args // a shell asking for completions: urfave/cli reads it as it is
	}
	out := append([]string{}, args[0])
	i := 1
	flags := app.Flags
	var cmds []*cli.Command = app.Commands
	// Global flags, then the command and subcommand names.
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		out = append(out, a)
		i++
		flags, cmds = cmd.Flags, cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	if len(cmds) > 0 || i == 1 {
		return args // no leaf command: leave it to the parser
	}
	var positional, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = args[i+1:]
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	out = append(out, "--")
	return append(append(out, positional...), rest...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether a flag token ("-c", "--tail") needs the next
// argument as its value.
func takesValue(flags []cli.Flag, token string) bool {
	if strings.Contains(token, "=") {
		return false
	}
	name := strings.TrimLeft(token, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
