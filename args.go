// flagsFirst: kubectl-style argument order for urfave/cli.

package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's flags in front of its arguments, so that
// `podrun logs POD -c NAME` and `podrun exec POD -c NAME -- CMD` work as with
// kubectl: urfave/cli stops reading flags at the first argument. Global
// flags given after the command (`podrun ps --root R`, as kubectl and cobra
// tools accept them) go in front of it, after those given there, so that
// the later one wins. What follows "--" is left alone.
func flagsFirst(app *cli.App, args []string) []string {
	if n := len(args); n > 1 && args[n-1] == completionFlag {
		return args // a shell asking for completions: urfave/cli reads it as it is
	}
	var globals, path []string // global flags; the command names, each with its own flags
	i := 1
	flags := app.Flags
	var cmds []*cli.Command = app.Commands
	// Global flags, then the command and subcommand names.
	for i < len(args) {
		a := args[i]
		if isFlag(a) {
			dst, fl := &path, flags
			if len(path) == 0 || isGlobal(app, flags, a) {
				dst, fl = &globals, app.Flags
			}
			i = takeFlag(dst, fl, args, i)
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		path = append(path, a)
		i++
		flags, cmds = cmd.Flags, cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	head := func() []string { return append(append([]string{args[0]}, globals...), path...) }
	if len(cmds) > 0 || len(path) == 0 {
		return append(head(), args[i:]...) // no leaf command: leave the rest to the parser
	}
	var positional, rest []string
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			rest = args[i+1:]
			i = len(args)
		case isFlag(a) && isGlobal(app, flags, a):
			i = takeFlag(&globals, app.Flags, args, i)
		case isFlag(a):
			i = takeFlag(&path, flags, args, i)
		default:
			positional = append(positional, a)
			i++
		}
	}
	out := append(head(), "--")
	return append(append(out, positional...), rest...)
}

func isFlag(a string) bool { return strings.HasPrefix(a, "-") && a != "-" && a != "--" }

// isGlobal reports whether a flag token is one of the app's (global) flags
// and not one of the command's own (which would take precedence). Help
// stays with the command it asks about.
func isGlobal(app *cli.App, cmdFlags []cli.Flag, token string) bool {
	name := flagName(token)
	return name != "help" && name != "h" && findFlag(app.Flags, name) != nil && findFlag(cmdFlags, name) == nil
}

// takeFlag appends the flag token args[i], with its value when it takes
// one, to dst and returns the index after them.
func takeFlag(dst *[]string, flags []cli.Flag, args []string, i int) int {
	*dst = append(*dst, args[i])
	if takesValue(flags, args[i]) && i+1 < len(args) {
		*dst = append(*dst, args[i+1])
		i++
	}
	return i + 1
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func flagName(token string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(token, "-"), "=")
	return name
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
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
	f := findFlag(flags, flagName(token))
	_, isBool := f.(*cli.BoolFlag)
	return f != nil && !isBool
}
