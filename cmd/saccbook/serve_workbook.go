package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
	"github.com/saccbook/saccbook/workbook"
)

// servedBook shows the learner's workspace to `saccbook serve`: the exercises'
// pages and their recorded runs, read from disk at each request. It only reads,
// and only the files meta.json lists besides the records and the progress file.
type servedBook struct{ b *workbook.Book }

func (s servedBook) Exercise(id string) (*web.ExercisePage, bool) {
	ex, err := s.b.Lookup(id)
	if err != nil {
		return nil, false
	}
	p := &web.ExercisePage{ID: ex.ID, Title: ex.Title, ChapterURL: ex.ChapterURL, Files: ex.Files, Hints: ex.Hints,
		Goal: stubDoc(s.b, ex)}
	if prog, err := workbook.LoadProgress(s.b.Root); err == nil {
		if st, err := s.b.Status(ex, prog); err == nil {
			p.Status = string(st)
		}
	}
	if r, err := s.b.LastRun(ex); err == nil {
		p.LastRun = &web.LastRun{Failed: r.Failed, Test: r.Test, Message: r.Message, FailSeq: r.FailSeq}
	}
	return p, true
}

func (s servedBook) SourceFile(name string) ([]byte, error) { return s.b.SourceFile(name) }

// Exercises lists every exercise with its status, from the progress file as it
// is now: a check in another terminal shows at the next page load.
func (s servedBook) Exercises() []web.ExerciseEntry {
	prog, err := workbook.LoadProgress(s.b.Root)
	if err != nil {
		return nil
	}
	out := make([]web.ExerciseEntry, 0, len(s.b.Exercises))
	for _, ex := range s.b.Exercises {
		e := web.ExerciseEntry{ID: ex.ID, Title: ex.Title, ChapterURL: ex.ChapterURL}
		if st, err := s.b.Status(ex, prog); err == nil {
			e.Status = string(st)
		}
		out = append(out, e)
	}
	return out
}

// recorded is the live hub's source of recorded runs.
func (s servedBook) recorded(id string) (*live.Recording, error) {
	ex, err := s.b.Lookup(id)
	if err != nil {
		return nil, err
	}
	r, err := s.b.LastRun(ex)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no recorded run of %s yet: run go test ./exercises/%s/", id, id)
	}
	if err != nil {
		return nil, err
	}
	rec := &live.Recording{Events: r.Events}
	if r.Failed {
		rec.FailSeq, rec.Error = r.FailSeq, r.Test+": "+r.Message
	}
	for _, t := range r.Tests {
		verdict := "ok  "
		if t.Failed {
			verdict = "FAIL"
		}
		rec.Log = append(rec.Log, verdict+" "+t.Name)
	}
	return rec, nil
}

// stubDoc is the goal of an exercise: the package doc of its stub, as shipped.
func stubDoc(b *workbook.Book, ex *workbook.Exercise) string {
	for _, name := range []string{filepath.Join(".stub", "exercise.go"), "exercise.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(b.Root, "exercises", ex.ID, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err == nil && f.Doc != nil {
			return strings.TrimSpace(f.Doc.Text())
		}
	}
	return ""
}
