package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // arguments after the name
	help    string // longer text for `saccbook help NAME`
	flags   func(fs *flag.FlagSet) func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: no globals.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// exitStatus ends a command that has said everything itself with that exit
// status, and nothing more on standard error.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// errUsage asks dispatch to print the command's usage after the message.
var errUsage = errors.New("usage")

func commands() []command {
	return []command{runCommand(), dmesgCommand(), qtestCommand(), monitorCommand(), lspciCommand(), serveCommand(), costsCommand(), quirksCommand(),
		listCommand(), checkCommand(), hintCommand(), watchCommand(), solutionCommand(), resetCommand(), restoreCommand(), huntCommand(), adversaryCommand(),
		classroomCommand(), joinCommand(), shareCommand(), versionCommand()}
}

const version = "0.1.0"

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		topUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := findCommand(args[1]); ok {
				commandUsage(stdout, c, nil)
				return 0
			}
			fmt.Fprintf(stderr, "saccbook: no command %q (saccbook help lists them)\n", args[1])
			return 2
		}
		topUsage(stdout)
		return 0
	}
	c, ok := findCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "saccbook: unknown command %q\n\n", name)
		topUsage(stderr)
		return 2
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := c.flags(fs)
	positional, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(stdout, c, fs)
			return 0
		}
		fmt.Fprintf(stderr, "saccbook %s: %v\n\n", c.name, err)
		commandUsage(stderr, c, fs)
		return 2
	}
	if err := run(ctx, e, positional); err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "saccbook %s: %s\n\n", c.name, strings.TrimSuffix(err.Error(), ": usage"))
			commandUsage(stderr, c, fs)
			return 2
		}
		if status := exitStatus(0); errors.As(err, &status) {
			return int(status) // the command has said why already
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			// Ctrl-C or SIGTERM: what stopped it, not the context's own words.
			fmt.Fprintf(stderr, "saccbook %s: interrupted\n", c.name)
			return 1
		}
		fmt.Fprintf(stderr, "saccbook %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, "saccbook: learn how work reaches an accelerator, on an emulated machine.\n\n")
	fmt.Fprintf(w, "Usage: saccbook <command> [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'saccbook help <command>' or 'saccbook <command> -h' for a command's flags.\n")
}

func commandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: saccbook %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
	if fs == nil {
		fs = flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// usageError wraps a message so dispatch prints the usage after it.
func usageError(format string, a ...any) error {
	return fmt.Errorf(format+": %w", append(a, errUsage)...)
}

// parseInterspersed parses flags wherever they stand among the arguments
// ("run driver --set cpu=arm64" as well as "run --set cpu=arm64 driver"); "--"
// ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
