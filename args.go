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
		// A shell asking for completions: urfave/cli reads it as it is, but
		// for the flag being completed (`ps --all-n`): its completer reads
		// that word from os.Args, and parsing it with short-option handling
		// fails on it and panics (urfave/cli v2.27's parseIter).
		if n > 2 && isFlag(args[n-2]) {
			return append(slices.Clone(args[:n-2]), completionFlag)
		}
		return args
	}
	var globals, path, names []string // global flags; the command names, each with its own flags; the names alone
	i := 1
	flags := app.Flags
	var cmds []*cli.Command = app.Commands
	head := func() []string { return append(append([]string{args[0]}, globals...), path...) }
	// -h or --help anywhere before "--" asks for the help of the deepest
	// command named, whatever else is there (`podrun validate pod.yaml -h`).
	help := func() []string { return append(append(append([]string{args[0]}, globals...), names...), "--help") }
	// A flag that takes a value and is given none ends the line, its
	// command's flags, or the global ones without the command: urfave/cli
	// says so (else it would take "--" or the command as the value).
	noValue := func(dst *[]string, flag string) []string {
		*dst = append(*dst, flag)
		if dst == &globals {
			return append([]string{args[0]}, globals...)
		}
		return head()
	}
	// Global flags, then the command and subcommand names.
	for i < len(args) {
		a := args[i]
		if isHelp(a) {
			return help()
		}
		if isFlag(a) {
			dst, fl := &path, flags
			if len(path) == 0 || isGlobal(app, flags, a) {
				dst, fl = &globals, app.Flags
			}
			if takesValue(fl, a) && i+1 == len(args) {
				return noValue(dst, a)
			}
			i = takeFlag(dst, fl, args, i)
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		path, names = append(path, a), append(names, a)
		i++
		flags, cmds = cmd.Flags, cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	if slices.ContainsFunc(beforeDashes(args[i:]), isHelp) {
		return help()
	}
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
			if takesValue(app.Flags, a) && i+1 == len(args) {
				return noValue(&globals, a)
			}
			i = takeFlag(&globals, app.Flags, args, i)
		case isFlag(a):
			if takesValue(flags, a) && i+1 == len(args) {
				return noValue(&path, a)
			}
			i = takeFlag(&path, flags, args, i)
		default:
			positional = append(positional, a)
			i++
		}
	}
	out := append(head(), "--")
	return append(append(out, positional...), rest...)
}

// isHelp reports whether a is urfave/cli's help flag (-help as Go's flag
// package reads it too).
func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// beforeDashes is args up to the first "--".
func beforeDashes(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
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
