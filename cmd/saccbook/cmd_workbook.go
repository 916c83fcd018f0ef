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
replay the run. Then one line says how it went, counting the tests as go test
reported them, subtests one by one: "3 of 7 tests fail: TestA, TestB/size_4,
TestC", or "all 7 tests pass". Code that does not compile, or that go vet
refuses (go test vets before it tests), is said as such: no test ran. A panic
that cut the run short is said too, since the tests after it never ran.

Without an ID, runs every exercise you have started, all at once, with one such
line for each; if you have started none, it says so and runs nothing.

Either way it records the outcome in exercises/.saccbook-progress.json and ends
with a table (done, failing, not started) and the next step.

Exit status: 0 when every exercise it ran passes (or it ran none); 1 when any
fails or does not build, or when check could not run it at all (an unknown ID,
no workspace); 2 for a mistake in the arguments or flags. Scripts and CI can
rely on it.

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
		summary: "re-run an exercise's tests each time you save, with keys for hint, next and quit",
		usage:   "[ID] [--manual] [--root DIR]",
		help: `Shows one exercise: it clears the screen, runs the exercise's tests and shows
what failed, then runs them again each time you save its file. Without an ID it
starts at the first exercise not done and moves on to the next one not done
each time one passes; with one, it stays on that exercise.

Keys, while it waits:
  h      the next hint for this exercise (as saccbook hint: nudge, concept,
         near-answer)
  n      the next exercise not done
  q      quit (Ctrl-C too)
  Enter  run the tests again now

On a terminal a key acts as you press it (watch puts the terminal in raw mode
and puts it back however it ends: q, Ctrl-C, a signal, an error). Without one
(a pipe, a script) nothing is cleared and each key is a line: type it, then
Enter. Without input it goes on watching the files.

It notices changes by looking at the file every half second, which works on every
file system. With --manual it does not look at all: Enter runs the tests, and
the end of the input stops it too.`,
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
		help: `Prints the reference solution. Once your own passes, at once, to compare. Before
that it asks once whether you are sure (type yes); the answer is remembered in
exercises/.saccbook-progress.json ("solution_seen"), so it does not ask again for
that exercise.

With no one to ask (standard input is not a terminal, or CI is set) it shows
nothing and exits with status 1, unless --yes says you want it anyway.`,
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
exercises/.backup/ID/TIME/ (git ignores that directory), so no work is ever lost:
saccbook restore ID brings them back.

With no one to ask (standard input is not a terminal, or CI is set) it changes
nothing and exits with status 1, unless --yes says so.`,
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

func restoreCommand() command {
	return command{
		name:    "restore",
		summary: "bring back your files of an exercise from a backup",
		usage:   "ID [NAME] [--list] [--root DIR]",
		help: `Brings back a backup that reset (or an earlier restore) made in
exercises/.backup/ID/: the newest, or the one NAME names. --list shows them, oldest
first, with when each was made.

Your files as they are now are backed up first, as reset does, so restoring
never loses work either; if they are the stub as shipped, or already the backup
you ask for, nothing is copied.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			list := fs.Bool("list", false, "list the backups instead of restoring one")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 || len(args) > 2 || (*list && len(args) > 1) {
					return usageError("want an exercise ID, and the name of a backup or --list")
				}
				w, err := openBench(*root, e)
				if err != nil {
					return err
				}
				name := ""
				if len(args) == 2 {
					name = args[1]
				}
				return w.restore(args[0], name, *list)
			}
		},
	}
}
