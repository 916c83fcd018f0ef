package classroom

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Report is one thing a student did, as their computer tells the course: an
// exercise checked, a hunt started or answered, a level played. It never holds
// code: the tests' names and counts, the first failure's words and the event
// kind the run failed at are all the dashboard shows. (A run is sent whole
// only when the student shares it, as a Share.)
//
// Every kind of work reports in this one shape; what differs is a Kind row.
type Report struct {
	// ID is made on the student's computer, so a report sent again after an
	// outage is recorded once.
	ID   string `json:"id"`
	Kind string `json:"kind"` // a Kinds name
	Item string `json:"item"` // the exercise id, the hunt's number, the level
	// Status is the kind's word for where the student is: one of its Statuses.
	Status string `json:"status"`
	Tests  Tally  `json:"tests"`
	Score  int    `json:"score,omitempty"` // points, for a kind that scores
	Max    int    `json:"max,omitempty"`   // what the item is worth
	// FailingTest and EventKind say where a failing run failed: the first
	// failing test, and the kind of the event it failed at (from the run's
	// record), when known.
	FailingTest string `json:"failing_test,omitempty"`
	EventKind   string `json:"event_kind,omitempty"`
	Summary     string `json:"summary,omitempty"` // the verdict in a line, as check prints it
	// Answer is a hunt answer for the server to grade with the course key.
	Answer *Answer   `json:"answer,omitempty"`
	At     time.Time `json:"at"` // when it happened on the student's computer
}

// Tally counts a run's tests.
type Tally struct {
	Ran     int `json:"ran"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped,omitempty"`
}

// Answer is a hunt answer: the bug's catalog name and the first event that
// differs, as saccbook hunt submit takes them.
type Answer struct {
	Bug   string `json:"bug"`
	Event string `json:"event"`
}

// Kind is one kind of work the course follows. The dashboard has a section per
// kind, with a column per item, in the order of Kinds.
type Kind struct {
	Name     string
	Label    string   // the dashboard's heading
	Statuses []string // the statuses a report may have, from nothing done to all done
	Done     []string // the statuses that mean finished
}

// Finished says whether status means the item is finished.
func (k Kind) Finished(status string) bool { return slices.Contains(k.Done, status) }

// Untouched says whether status means the student has not begun the item.
func (k Kind) Untouched(status string) bool { return len(k.Statuses) > 0 && status == k.Statuses[0] }

// Kinds is every kind of report. A new kind of work is a row here and its
// reports from the command line; the server, the store, the dashboard and the
// CSV take it as it is.
var Kinds = []Kind{
	{Name: "exercise", Label: "Exercises", Statuses: []string{"not started", "started", "failing", "done"}, Done: []string{"done"}},
	{Name: "hunt", Label: "Bug hunts", Statuses: []string{"not started", "started", "solved"}, Done: []string{"solved"}},
	// The adversary's words are the progress file's (workbook.Adversary*): a
	// breakable level is finished when won, a correct one when the solver has
	// proved it.
	{Name: "adversary", Label: "Adversary levels", Statuses: []string{"not tried", "tried", "won", "proved"}, Done: []string{"won", "proved"}},
}

// KindOf finds a kind by name.
func KindOf(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}

// Limits on what one report may say.
const (
	maxReportsPerPost = 500
	maxField          = 200 // id, item, status, test and event names
	maxSummary        = 500
)

// check says what is wrong with a report, in the words a client's author
// needs.
func (r *Report) check() error {
	k, ok := KindOf(r.Kind)
	switch {
	case !ok:
		return fmt.Errorf("report %q: unknown kind %q", r.ID, r.Kind)
	case r.ID == "" || r.Item == "":
		return fmt.Errorf("report %q: an id and an item are required", r.ID)
	case !slices.Contains(k.Statuses, r.Status):
		return fmt.Errorf("report %q: %s status %q is none of %s", r.ID, r.Kind, r.Status, strings.Join(k.Statuses, ", "))
	case r.Tests.Ran < 0 || r.Tests.Failed < 0 || r.Tests.Skipped < 0 || r.Tests.Failed > r.Tests.Ran || r.Score < 0 || r.Max < 0:
		return fmt.Errorf("report %q: counts and scores are never negative, and no more tests fail than ran", r.ID)
	case r.At.IsZero():
		return fmt.Errorf("report %q: no time", r.ID)
	case r.Answer != nil && r.Kind != "hunt":
		return fmt.Errorf("report %q: only a hunt report carries an answer", r.ID)
	}
	for _, f := range []string{r.ID, r.Item, r.Status, r.FailingTest, r.EventKind} {
		if len(f) > maxField || !utf8.ValidString(f) {
			return fmt.Errorf("report %q: a field is over %d bytes or not UTF-8", r.ID, maxField)
		}
	}
	if len(r.Summary) > maxSummary || !utf8.ValidString(r.Summary) {
		return fmt.Errorf("report %q: the summary is over %d bytes or not UTF-8", r.ID, maxSummary)
	}
	if r.Answer != nil && (len(r.Answer.Bug) > maxField || len(r.Answer.Event) > maxField) {
		return fmt.Errorf("report %q: the answer is over %d bytes", r.ID, maxField)
	}
	return nil
}
