package main

import (
	"context"
	"flag"
	"strconv"
)

// The progress commands: the learner's side of the exercises.

func listCommand() command {
	return command{
		name:    "list",
		summary: "list the exercises by chapter, with your progress",
		usage:   "[--root DIR]",
		help: `Lists every exercise under its chapter with its status: "not started" while its file
is as shipped, "started" once you have changed it, then "failing" or "done" as
the last saccbook check found it. Nothing is run: saccbook check runs the tests.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				return w.list()
			}
		},
	}
}

func checkCommand() command {
	return command{
		name:    "check",
		summary: "run an exercise's tests (or every started one) and show your progress",
		usage:   "[ID] [--root DIR]",
		help: `With an ID, runs that exercise's tests and shows each failure the way the tests
explain it: what was expected, what the device saw, the last trace events, how to
replay the run. Without one, runs every exercise you have started, all at once.
Either way it records the outcome in exercises/.saccbook-progress.json and ends
with a table (done, failing, not started) and the next step.

An ID may be shortened to any unique prefix: "01-size" or "02-e".`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usageError("one exercise at most")
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				id := ""
				if len(args) == 1 {
					id = args[0]
				}
				return w.check(ctx, id)
			}
		},
	}
}

func hintCommand() command {
	return command{
		name:    "hint",
		summary: "show the next hint for an exercise",
		usage:   "ID [1|2|3] [--root DIR]",
		help: `Shows a hint for the exercise. Each exercise has three: a nudge, the concept,
and a near-answer; each call shows the next one you have not seen (or the level
you ask for). If the last saccbook check failed in a way the exercise knows, the
hint for that failure comes first.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usageError("which exercise? (saccbook list shows them)")
				}
				if len(args) > 2 {
					return usageError("unexpected argument %q", args[2])
				}
				level := 0
				if len(args) == 2 {
					n, err := strconv.Atoi(args[1])
					if err != nil || n < 1 || n > 3 {
						return usageError("hint level %q: want 1, 2 or 3", args[1])
					}
					level = n
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				return w.hint(args[0], level)
			}
		},
	}
}

func watchCommand() command {
	return command{
		name:    "watch",
		summary: "re-run an exercise's tests each time you save",
		usage:   "[ID] [--manual] [--root DIR]",
		help: `Runs the exercise's tests, then again each time you save its file, until you stop
it with Ctrl-C. Without an ID it starts at the first exercise not done and moves
on to the next one each time one passes.

It notices changes by looking at the file every half second, which works on every
file system. With --manual it does not look at all: press Enter to run the tests,
q and Enter to stop.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			manual := fs.Bool("manual", false, "run the tests when Enter is pressed instead of when the file changes")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usageError("one exercise at most")
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				id := ""
				if len(args) == 1 {
					id = args[0]
				}
				return w.watch(ctx, id, *manual)
			}
		},
	}
}

func solutionCommand() command {
	return command{
		name:    "solution",
		summary: "show the reference solution of an exercise",
		usage:   "ID [--yes] [--root DIR]",
		help: `Prints the reference solution. Once your own passes, at once, to compare; before
that, only after you confirm by typing yes (or with --yes).`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			yes := fs.Bool("yes", false, "show it without asking, even if the exercise is not solved")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageError("want one exercise ID")
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				return w.solution(args[0], *yes)
			}
		},
	}
}

func resetCommand() command {
	return command{
		name:    "reset",
		summary: "put an exercise back as shipped, keeping a backup of your work",
		usage:   "ID [--yes] [--root DIR]",
		help: `Replaces your files of the exercise with the stub as shipped, after you confirm by
typing yes (or with --yes). Your files are first copied to
exercises/.backup/ID/TIME/, so no work is ever lost.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			yes := fs.Bool("yes", false, "reset without asking (the backup is still made)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageError("want one exercise ID")
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				return w.reset(args[0], *yes)
			}
		},
	}
}
