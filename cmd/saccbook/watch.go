package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/saccbook/saccbook/workbook"
)

// watch is the learner's loop: one exercise on the screen, its tests re-run on
// every save (or, with --manual, on Enter), and keys for a hint, the next
// exercise and quitting. On a terminal the keys act at once; otherwise (a pipe,
// a test) each is a line: the key, then Enter.

// key is what the learner asked for, or what happened, while watch waits.
type key int

const (
	keyRun     key = iota // Enter: run the tests again
	keyHint               // h: the next hint
	keyNext               // n: the next exercise
	keyQuit               // q, Ctrl-C, Ctrl-D, or the end of the input in manual mode
	keyOther              // anything else: show the keys again
	keyChanged            // not a key: the exercise's files changed
)

// rawKey reads one key pressed in raw mode.
func rawKey(b byte) key {
	switch b {
	case '\r', '\n':
		return keyRun
	case 'h', 'H':
		return keyHint
	case 'n', 'N':
		return keyNext
	case 'q', 'Q', 0x03, 0x04: // Ctrl-C and Ctrl-D arrive as bytes in raw mode
		return keyQuit
	}
	return keyOther
}

// lineKey reads one line typed without raw mode.
func lineKey(line string) key {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "":
		return keyRun
	case "h", "hint":
		return keyHint
	case "n", "next":
		return keyNext
	case "q", "quit", "exit":
		return keyQuit
	}
	return keyOther
}

// keyboard starts reading keys: single keys in raw mode on a terminal, lines
// otherwise. The channel closes at the end of the input. stop puts the
// terminal back as it was; watch defers it, so that every way out of watch
// restores the terminal, a panic included, and while the terminal is raw a
// SIGTERM or SIGHUP cancels the returned context instead of killing the
// process with the terminal left raw (SIGINT cancels it already: main.go).
func (w *bench) keyboard(ctx context.Context) (context.Context, <-chan key, func()) {
	raw := false
	stop := func() {}
	if w.term != nil {
		restore, err := w.term.raw()
		if err != nil {
			fmt.Fprintf(w.errw, "saccbook watch: %v; type each key and then Enter\n", err)
		} else {
			raw = true
			var cancel context.CancelFunc
			ctx, cancel = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGHUP)
			out, errw := w.out, w.errw
			w.out, w.errw = crlf{out}, crlf{errw}
			stop = func() {
				cancel()
				w.out, w.errw, w.raw = out, errw, false
				restore()
			}
		}
	}
	keys := make(chan key)
	go func() {
		defer close(keys)
		for {
			var k key
			if raw {
				b, err := w.in.ReadByte()
				if err != nil {
					return
				}
				k = rawKey(b)
			} else {
				line, err := w.in.ReadString('\n')
				if err != nil && line == "" {
					return
				}
				k = lineKey(line)
			}
			select {
			case keys <- k:
			case <-ctx.Done():
				return
			}
		}
	}()
	w.raw = raw
	return ctx, keys, stop
}

// watch re-runs the current exercise's tests whenever its files change (or, in
// manual mode, whenever Enter is pressed). Without an id it follows the book:
// it starts at the first exercise not done, and when the current one passes
// it moves on to the next one not done.
func (w *bench) watch(ctx context.Context, id string, manual bool) error {
	follow := id == ""
	var ex *workbook.Exercise
	if follow {
		st, err := w.statuses()
		if err != nil {
			return err
		}
		if ex = workbook.Next(w.book.Exercises, st); ex == nil {
			fmt.Fprintln(w.out, "Every exercise passes. Nothing to watch.")
			return nil
		}
	} else {
		var err error
		if ex, err = w.book.Lookup(id); err != nil {
			return err
		}
	}
	ctx, keys, stop := w.keyboard(ctx)
	defer stop()
	w.watching = true
	defer func() { w.watching = false }()
	notice := ""
	for {
		if w.screen {
			fmt.Fprint(w.out, clearScreen)
		} else {
			fmt.Fprintln(w.out)
		}
		w.announce(ex, manual)
		// Stamp the files before the run: a save during it counts as a change.
		before := w.stamps(ex)
		r, err := w.runOne(ctx, ex)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Passed && follow {
			next, err := w.nextAfter(ex)
			if err != nil {
				return err
			}
			if next == nil {
				fmt.Fprintln(w.out, "Every exercise passes. Well done.")
				return nil
			}
			notice = fmt.Sprintf("%s: done, %s. On to %s: %s.", ex.ID, r.Verdict(), next.ID, next.Title)
			ex = next
			continue
		}
		// Said last, where it stays in sight however long the report above.
		if notice != "" {
			fmt.Fprintln(w.out, notice)
			notice = ""
		}
	wait:
		for {
			w.keyHelp(ex, manual)
			k, err := w.waitFor(ctx, ex, before, keys, manual)
			if err != nil {
				return err
			}
			switch k {
			case keyQuit:
				return nil
			case keyRun, keyChanged:
				break wait
			case keyHint:
				fmt.Fprintln(w.out)
				if err := w.showHint(ex, 0); err != nil {
					return err
				}
			case keyNext:
				next, err := w.nextAfter(ex)
				if err != nil {
					return err
				}
				if next == nil {
					fmt.Fprintf(w.out, "Every other exercise is done: %s is the one left.\n", ex.ID)
					continue
				}
				ex = next
				break wait
			}
		}
	}
}

// keyHelp says which exercise is on the screen and which keys watch takes, as
// the last line on the screen: the header may have scrolled away above a long
// report.
func (w *bench) keyHelp(ex *workbook.Exercise, manual bool) {
	keys := "h hint · n next exercise · q quit · Enter run again"
	if !w.raw {
		keys = "type h (a hint), n (the next exercise) or q (quit) and Enter; Enter alone runs again"
	}
	if manual {
		fmt.Fprintf(w.out, "[%s] Keys: %s.\n", ex.ID, keys)
		return
	}
	fmt.Fprintf(w.out, "[%s] Waiting for a change… Keys: %s.\n", ex.ID, keys)
}

// waitFor waits for a key, or (unless manual) for the exercise's files to
// change from before. The end of the input means quit in manual mode, where
// nothing else could start a run, and nothing otherwise: a watch started with
// no input (from a script, say) goes on watching the files.
func (w *bench) waitFor(ctx context.Context, ex *workbook.Exercise, before []fileStamp, keys <-chan key, manual bool) (key, error) {
	var tick <-chan time.Time
	if !manual {
		t := time.NewTicker(w.poll)
		defer t.Stop()
		tick = t.C
	}
	changed := false
	for {
		select {
		case <-ctx.Done():
			return keyQuit, nil
		case k, ok := <-keys:
			if ok {
				return k, nil
			}
			if manual {
				return keyQuit, nil
			}
			keys = nil
		case <-tick:
			// An editor may save in two steps: run once the files have
			// changed and then held still for one more look.
			now := w.stamps(ex)
			same := slices.Equal(now, before)
			if changed && same {
				return keyChanged, nil
			}
			changed = changed || !same
			before = now
		}
	}
}

// nextAfter is the first exercise not done after ex in the book's order,
// coming round to the start; nil when every other one is done.
func (w *bench) nextAfter(ex *workbook.Exercise) (*workbook.Exercise, error) {
	st, err := w.statuses()
	if err != nil {
		return nil, err
	}
	all := w.book.Exercises
	i := slices.Index(all, ex)
	for k := 1; k < len(all); k++ {
		if next := all[(i+k)%len(all)]; st[next.ID] != workbook.Done {
			return next, nil
		}
	}
	return nil, nil
}

func (w *bench) announce(ex *workbook.Exercise, manual bool) {
	var files []string
	for _, f := range ex.Files {
		files = append(files, w.rel(w.book.WorkPath(ex, f)))
	}
	how := "save to run again"
	if manual {
		how = "Enter runs again"
	}
	fmt.Fprintf(w.out, "== %s: %s (%s; %s)\n", ex.ID, ex.Title, strings.Join(files, ", "), how)
}

// runOne runs one exercise's tests, records and reports them.
func (w *bench) runOne(ctx context.Context, ex *workbook.Exercise) (*workbook.Result, error) {
	results, err := w.test(ctx, []*workbook.Exercise{ex})
	if err != nil {
		return nil, err
	}
	r := results[ex.ID]
	if !r.Passed {
		fmt.Fprintln(w.out, r.Report())
	}
	w.verdict(ex, r, true)
	return r, nil
}

// fileStamp is what polling compares: a file's modification time and size.
// Polling works on every file system, network and container mounts included.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func (w *bench) stamps(ex *workbook.Exercise) []fileStamp {
	var out []fileStamp
	for _, f := range ex.Files {
		fi, err := os.Stat(w.book.WorkPath(ex, f))
		if err != nil {
			out = append(out, fileStamp{})
			continue
		}
		out = append(out, fileStamp{fi.ModTime(), fi.Size(), true})
	}
	return out
}
