package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/saccbook/saccbook/web/classroom"
	"github.com/saccbook/saccbook/workbook"
)

func joinCommand() command {
	return command{
		name:    "join",
		summary: "join a class: your results report to the instructor",
		usage:   "URL --name NAME",
		help: `Joins the class whose join URL the instructor gave (http://HOST:PORT/join/CODE)
under NAME, and keeps the membership in exercises/.saccbook-class.json. From
then on check, watch and hunt report to the class: each exercise's status and
test counts, the failing test and the kind of event it failed at, hunt starts,
answers and scores, with times. Your code is never sent; 'saccbook share ID'
sends an exercise's recorded run when you want the instructor to see it.

Joining installs the course's hunt key with your name as learner id, so your
hunts are your variants of the course's and the instructor's server grades your
answers (your previous key is kept beside it, with .before-class). Work done
while the server cannot be reached waits in exercises/.saccbook-class-outbox
and goes with the next command that reports. Delete the membership file to
leave the class. NAME is how the class sees you, not a password.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			name := fs.String("name", "", "your name, as the class will see it")
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageError("want the join URL")
				}
				if *name == "" {
					return usageError("--name is required")
				}
				r, err := findRoot(*root)
				if err != nil {
					return err
				}
				return joinClass(ctx, e, r, args[0], *name)
			}
		},
	}
}

// joinClass joins, keeps the membership and installs the course key.
func joinClass(ctx context.Context, e *env, root, url, name string) error {
	if fi, err := os.Stat(filepath.Join(root, "exercises")); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s has no exercises directory: the membership is kept there", root)
	}
	en, key, err := classroom.Join(ctx, nil, url, name)
	var taken *classroom.StatusError
	if errors.As(err, &taken) && taken.Code == http.StatusConflict {
		// Joining twice is the likeliest way to meet a taken name: say that
		// this workspace is the one that took it.
		if was, lerr := classroom.LoadEnrolment(root); lerr == nil && was.Name == name && strings.HasPrefix(url, was.Server+"/") {
			fmt.Fprintf(e.stdout, "saccbook: this workspace has joined the class at %s as %q already: nothing to do\n", was.Server, was.Name)
			sendToClass(ctx, e.stderr, root)
			return nil
		}
	}
	if err != nil {
		return err
	}
	keyPath := filepath.Join(root, workbook.HuntKeyFile)
	if old, err := os.ReadFile(keyPath); err == nil && !bytes.Equal(old, key.Marshal()) {
		if err := os.WriteFile(keyPath+".before-class", old, 0o600); err != nil {
			return fmt.Errorf("keep your hunt key: %w", err)
		}
	}
	if err := workbook.SaveHuntKey(keyPath, key); err != nil {
		return err
	}
	if err := classroom.SaveEnrolment(root, en); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "saccbook: joined the class at %s as %q\n", en.Server, en.Name)
	fmt.Fprintf(e.stdout, "saccbook: check, watch and hunt now report to it (never your code); saccbook share ID shows the instructor a run\n")
	fmt.Fprintf(e.stdout, "saccbook: your hunts are the course's, as learner %q\n", en.Learner)
	sendToClass(ctx, e.stderr, root)
	return nil
}

func shareCommand() command {
	return command{
		name:    "share",
		summary: "show the instructor your last run of an exercise",
		usage:   "ID",
		help: `Sends the recorded run of exercise ID (exercises/.runs/ID.json, which its tests
write: the events, the tests and how each ended, the failure) to the class you
joined, where the instructor can open it in a widget. Only the instructor sees
it. The run holds the machine's events and the source line of your code behind
each CPU event, not the code itself.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageError("want an exercise id")
				}
				r, err := findRoot(*root)
				if err != nil {
					return err
				}
				en, err := classroom.LoadEnrolment(r)
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("this workspace has joined no class: saccbook join URL --name NAME")
				}
				if err != nil {
					return err
				}
				b, err := workbook.Open(r)
				if err != nil {
					return err
				}
				ex, err := b.Lookup(args[0])
				if err != nil {
					return err
				}
				data, err := os.ReadFile(filepath.Join(r, workbook.RunsDir, ex.ID+".json"))
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("no recorded run of %s yet: saccbook check %s makes one", ex.ID, ex.ID)
				}
				if err != nil {
					return err
				}
				id, err := classroom.ShareRun(ctx, nil, en, ex.ID, data)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "saccbook: shared your run of %s with the instructor (%s)\n", ex.ID, id)
				return nil
			}
		},
	}
}

// ---------------------------------------------------------------------------
// Reporting to the class

// classTimeout bounds how long a command waits for the class server: work is
// never held up by it (what does not go now waits in the outbox).
const classTimeout = 3 * time.Second

// toClass queues reports for the class, if the workspace has joined one, and
// tries to send everything waiting. Problems are notes on w, never errors:
// the learner's own work comes first.
func toClass(ctx context.Context, w io.Writer, root string, rs ...classroom.Report) {
	if _, err := classroom.LoadEnrolment(root); err != nil {
		return
	}
	if err := classroom.Queue(root, rs...); err != nil {
		fmt.Fprintf(w, "saccbook: %v\n", err)
		return
	}
	sendToClass(ctx, w, root)
}

// sendToClass sends what waits in the outbox.
func sendToClass(ctx context.Context, w io.Writer, root string) {
	en, err := classroom.LoadEnrolment(root)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, classTimeout)
	defer cancel()
	_, verdicts, err := classroom.Send(ctx, &http.Client{Timeout: classTimeout}, root, en)
	for _, v := range verdicts {
		fmt.Fprintf(w, "saccbook: the class graded your answer to hunt %d: %s\n", v.Hunt, v.Message)
	}
	if err != nil {
		fmt.Fprintf(w, "saccbook: the class at %s was not reached (%v); %d reports wait in %s and go with the next one\n",
			en.Server, err, classroom.Waiting(root), classroom.OutboxDir)
	}
}

// exerciseReports are a check's outcomes as the class sees them: no code, the
// counts, the first failing test and the kind of event the run failed at.
func exerciseReports(b *workbook.Book, exs []*workbook.Exercise, results map[string]*workbook.Result, now time.Time) []classroom.Report {
	var out []classroom.Report
	for _, ex := range exs {
		r := results[ex.ID]
		if r == nil {
			continue
		}
		n := r.Tally()
		rep := classroom.Report{ID: classroom.NewReportID(), Kind: "exercise", Item: ex.ID, Status: string(r.Status()),
			Tests: classroom.Tally{Ran: n.Ran, Failed: n.Failed, Skipped: n.Skipped}, Summary: shorten(r.Verdict(), 400), At: now}
		if f := r.Failed(); len(f) > 0 {
			rep.FailingTest = f[0].Name
		}
		if !r.Passed {
			rep.EventKind = failedAtKind(b, ex)
		}
		out = append(out, rep)
	}
	return out
}

// failedAtKind is the kind of the event the exercise's last recorded run
// failed at, or "".
func failedAtKind(b *workbook.Book, ex *workbook.Exercise) string {
	rec, err := b.LastRun(ex)
	if err != nil || !rec.Failed || rec.FailSeq == 0 {
		return ""
	}
	for _, raw := range rec.Events {
		var ev struct {
			Seq  uint64 `json:"seq"`
			Kind string `json:"kind"`
		}
		if json.Unmarshal(raw, &ev) == nil && ev.Seq == rec.FailSeq {
			return ev.Kind
		}
	}
	return ""
}

// huntReport is a hunt's record as the class sees it; answer, when set, is
// for the server to grade.
func huntReport(n int, rec workbook.HuntProgress, answer *classroom.Answer, now time.Time) classroom.Report {
	return classroom.Report{ID: classroom.NewReportID(), Kind: "hunt", Item: strconv.Itoa(n), Status: string(rec.Status),
		Score: rec.Score, Max: workbook.HuntWorth, Answer: answer, At: now}
}

// adversaryReport is an adversary level's record as the class sees it, in the
// progress file's words.
func adversaryReport(level string, rec workbook.AdversaryProgress, now time.Time) classroom.Report {
	return classroom.Report{ID: classroom.NewReportID(), Kind: "adversary", Item: level, Status: string(rec.Status), At: now}
}

// reportToClass reports a check's outcomes, if the workspace has joined a
// class.
func (w *bench) reportToClass(ctx context.Context, exs []*workbook.Exercise, results map[string]*workbook.Result, now time.Time) {
	if _, err := classroom.LoadEnrolment(w.book.Root); err != nil {
		return
	}
	toClass(ctx, w.errw, w.book.Root, exerciseReports(w.book, exs, results, now)...)
}

// toClass reports a hunt's record, if the workspace has joined a class.
func (d *huntDesk) toClass(n int, rec workbook.HuntProgress, answer *classroom.Answer) {
	toClass(context.Background(), d.notes, d.root, huntReport(n, rec, answer, d.now()))
}
