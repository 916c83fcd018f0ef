package workbook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ProgressFile is where a learner's progress is kept, relative to the root.
// It is small and plain, and a learner may commit it with their work.
const ProgressFile = "exercises/.saccbook-progress.json"

// Progress is the learner's progress through the exercises and the bug hunts.
// A file written before the hunts existed has no "hunts" and loads as no hunt
// started.
type Progress struct {
	Note      string                       `json:"note"`
	Exercises map[string]*ExerciseProgress `json:"exercises"`       // by exercise ID
	Hunts     map[string]*HuntProgress     `json:"hunts,omitempty"` // by hunt number
}

const progressNote = "saccbook's record of your progress; safe to commit, safe to delete (you lose only this record)"

// ExerciseProgress is one exercise's record.
type ExerciseProgress struct {
	Status       Status   `json:"status"`
	HintsShown   int      `json:"hints_shown,omitempty"`   // general hint levels shown, 0 to 3
	SolutionSeen bool     `json:"solution_seen,omitempty"` // saccbook solution showed it
	Solved       string   `json:"solved,omitempty"`        // when it first passed, RFC 3339
	LastChecked  string   `json:"last_checked,omitempty"`  // when its tests last ran, RFC 3339
	Failing      []string `json:"failing,omitempty"`       // the tests that failed at the last run
	Summary      string   `json:"summary,omitempty"`       // the first thing that went wrong at the last run
	Verdict      string   `json:"verdict,omitempty"`       // how the last run went: "3 of 7 tests fail: …" (Result.Verdict)
	KeyedHints   []int    `json:"keyed_hints,omitempty"`   // keyed hints the last failure matched
}

// LoadProgress reads the progress file under root; a missing file is no
// progress yet. The file is the learner's to edit, so what it says is brought
// within what the commands expect: an exercise recorded as null is dropped and
// hints_shown is kept to 0 … HintLevels (a negative one would index no hint).
func LoadProgress(root string) (*Progress, error) {
	p := &Progress{Exercises: map[string]*ExerciseProgress{}}
	data, err := os.ReadFile(filepath.Join(root, ProgressFile))
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	return parseProgress(data)
}

// parseProgress decodes a progress file's contents, as LoadProgress describes.
func parseProgress(data []byte) (*Progress, error) {
	p := &Progress{}
	if err := json.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to start the record afresh)", ProgressFile, err)
	}
	if err := p.checkHunts(); err != nil {
		return nil, fmt.Errorf("%s: %w (mend or delete it to start the record afresh)", ProgressFile, err)
	}
	if p.Exercises == nil {
		p.Exercises = map[string]*ExerciseProgress{}
	}
	for id, e := range p.Exercises {
		if e == nil {
			delete(p.Exercises, id)
			continue
		}
		e.HintsShown = min(max(e.HintsShown, 0), HintLevels)
	}
	if p.Hunts == nil {
		p.Hunts = map[string]*HuntProgress{}
	}
	return p, nil
}

// Save writes the progress file under root, replacing it in one step.
func (p *Progress) Save(root string) error {
	data, err := p.encode()
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(root, ProgressFile), append(data, '\n'), ".saccbook-progress-*.json"); err != nil {
		return fmt.Errorf("save progress: %w", err)
	}
	return nil
}

// encode is the file Save writes, without its final newline.
func (p *Progress) encode() ([]byte, error) {
	p.Note = progressNote
	return json.MarshalIndent(p, "", "  ")
}

// Of returns the record of exercise id, creating it.
func (p *Progress) Of(id string) *ExerciseProgress {
	e := p.Exercises[id]
	if e == nil {
		e = &ExerciseProgress{Status: NotStarted}
		p.Exercises[id] = e
	}
	return e
}

// Record notes the outcome of a run of the learner's files.
func (p *Progress) Record(ex *Exercise, r *Result, now time.Time) {
	e := p.Of(ex.ID)
	e.Status = r.Status()
	e.LastChecked = now.UTC().Format(time.RFC3339)
	e.Failing, e.Summary, e.KeyedHints = nil, "", nil
	e.Verdict = r.Verdict()
	if r.Passed {
		if e.Solved == "" {
			e.Solved = e.LastChecked
		}
		return
	}
	for _, t := range r.Failed() {
		e.Failing = append(e.Failing, t.Name)
	}
	e.Summary = r.Summary()
	e.KeyedHints = ex.Keyed(r.BuildOutput + r.Output)
}

// Status is the exercise's status as a learner should see it without running
// anything: not started while its files are the stub, else the last recorded
// outcome, or started if it has not been checked since.
func (b *Book) Status(ex *Exercise, p *Progress) (Status, error) {
	started, err := b.Started(ex)
	if err != nil {
		return "", err
	}
	if !started {
		return NotStarted, nil
	}
	if e := p.Exercises[ex.ID]; e != nil && e.Status != NotStarted && e.Status != "" {
		if e.Status == Done || e.Status == Failing {
			return e.Status, nil
		}
	}
	return Started, nil
}

// Next is the first exercise, in order, that is not done; nil when all are.
func Next(exs []*Exercise, status map[string]Status) *Exercise {
	for _, ex := range exs {
		if status[ex.ID] != Done {
			return ex
		}
	}
	return nil
}

// Forget drops what the last run found, once the files it ran are gone (reset,
// restore), and sets the status to s; the history (solved, hints and solution
// seen) stays.
func (e *ExerciseProgress) Forget(s Status) {
	e.Status, e.Failing, e.Summary, e.Verdict, e.KeyedHints, e.LastChecked = s, nil, "", "", nil, ""
}
