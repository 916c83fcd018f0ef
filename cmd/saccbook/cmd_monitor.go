package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/saccbook/saccbook/internal/lineio"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
)

func monitorCommand() command {
	return command{
		name:    "monitor",
		summary: "stop, step, step back and inspect a run with a QEMU-style monitor",
		usage:   "[flags] [scenario]",
		help: `Starts a scenario (default: job) on a fresh machine, held before its first event,
and reads monitor commands from standard input, one per line, in QEMU's HMP syntax.
The run only moves when a command moves it (step, cont, back); between commands it
is held, and every info or memory dump shows the machine exactly as it is there.
On a terminal each command is prompted with "(saccbook) ". It stops at quit or at
the end of the input.

Scenarios:
` + scenarioList() + `
Commands:
` + monitor.HelpText() + `
Example:
  printf 'step 20\ninfo pci\nxp /8xw 0xb0018000\ncont\ninfo rings\n' | saccbook monitor mixed

With --hunt N it holds your variant of bug hunt N instead (saccbook hunt start N):
the same run as saccbook run --hunt N, with its bug, which nothing names.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			set := fs.String("set", "", "scenario options, name=value,... (for example cpu=arm64,irq=on)")
			huntN := fs.Int("hunt", 0, "hold your variant of bug hunt `N` (see saccbook hunt)")
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if isSet(fs, "hunt") {
					v, s, cfg, err := huntRun(fs, *huntN, *root, args, e)
					if err != nil {
						return err
					}
					return runMonitor(ctx, e, s, v.Options, cfg)
				}
				if isSet(fs, "root") {
					return usageError("--root goes with --hunt")
				}
				s, opts, err := pickScenario(args, *set)
				if err != nil {
					return err
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				return runMonitor(ctx, e, s, opts, cfg)
			}
		},
	}
}

// isTerminal reports whether r is a character device (an interactive terminal).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func runMonitor(ctx context.Context, e *env, s scenario.Scenario, opts map[string]string, cfg machine.Config) error {
	factory := func() (*machine.Machine, error) { return machine.New(cfg) }
	// The scenario's narrative is not shown: a step back re-runs the program, and
	// would tell the story again.
	program := func(m *machine.Machine) error {
		return s.Run(m, &scenario.Env{Log: io.Discard, Options: opts})
	}
	r, err := runner.New(factory, program)
	if err != nil {
		return err
	}
	defer r.Close()
	mo := monitor.New(r, e.stdout)
	prompt := isTerminal(e.stdin)
	br := bufio.NewReaderSize(e.stdin, 64<<10)
	var line []byte
	for ctx.Err() == nil {
		if prompt {
			fmt.Fprint(e.stdout, "(saccbook) ")
		}
		var tooLong, got bool
		var err error
		line, tooLong, got, err = lineio.ReadLine(br, line[:0], maxMonitorLine)
		if got {
			if tooLong {
				// Answered like any bad command, and the session goes on (qtest does the same).
				fmt.Fprintf(e.stdout, "line too long: more than %d bytes, ignored\n", maxMonitorLine)
			} else if mo.Exec(string(line)) {
				return nil
			}
		}
		if err == io.EOF {
			if prompt {
				fmt.Fprintln(e.stdout)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxMonitorLine is the longest command line the monitor reads; a longer one is
// refused with an error and the commands after it still run.
const maxMonitorLine = 1 << 20
