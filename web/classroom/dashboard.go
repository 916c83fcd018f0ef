package classroom

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/saccbook/saccbook/workbook"
)

// Dashboard is the class at one moment: every student against every item of
// every kind, where the failing runs fail, and who has been stuck longest.
type Dashboard struct {
	At        time.Time    `json:"at"`
	Students  []Student    `json:"students"`
	Sections  []Section    `json:"sections"`
	Failures  []Failure    `json:"failures"`    // by exercise and test, most first
	Events    []EventCount `json:"event_kinds"` // the event kinds failing runs fail at, most first
	Stuck     []Stuck      `json:"stuck"`       // longest first
	Following int          `json:"following"`   // pages following the broadcast now (a student may have several)
	Shares    []ShareRow   `json:"shares"`
}

// Section is one kind's table: a row per student (in Students' order), a
// column per item.
type Section struct {
	Kind  string   `json:"kind"`
	Label string   `json:"label"`
	Items []string `json:"items"`
	Rows  [][]Cell `json:"rows"`
	Done  []int    `json:"done"` // per item: how many students are done
}

// Cell is one student's latest on one item; Status "" when they have not
// reported it.
type Cell struct {
	Status  string    `json:"status,omitempty"`
	Ran     int       `json:"ran,omitempty"`
	Failed  int       `json:"failed,omitempty"`
	Score   int       `json:"score,omitempty"`
	Max     int       `json:"max,omitempty"`
	Wrong   int       `json:"wrong,omitempty"` // hunt answers the server graded wrong before it was solved
	Test    string    `json:"failing_test,omitempty"`
	Event   string    `json:"event_kind,omitempty"`
	Summary string    `json:"summary,omitempty"`
	At      time.Time `json:"at,omitzero"`
	Since   time.Time `json:"since,omitzero"`   // not done since, when not done
	Graded  bool      `json:"graded,omitempty"` // the score is the server's grading
}

// Token is the status as a class name.
func (c Cell) Token() string {
	if c.Status == "" {
		return "none"
	}
	return statusWord(c.Status)
}

func statusWord(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' {
			b[i] = '-'
		}
	}
	return string(b)
}

// Failure counts the students whose latest run of an exercise fails at one
// test.
type Failure struct {
	Exercise string `json:"exercise"`
	Test     string `json:"test"`
	Students int    `json:"students"`
}

// EventCount counts the failing runs that fail at an event of one kind.
type EventCount struct {
	Kind     string `json:"kind"`
	Students int    `json:"students"`
}

// Stuck is a student on an item they have not finished.
type Stuck struct {
	Student string        `json:"student"`
	Kind    string        `json:"kind"`
	Item    string        `json:"item"`
	Status  string        `json:"status"`
	Since   time.Time     `json:"since"`
	For     time.Duration `json:"for_ns"`
}

// Minutes is For in whole minutes, for the page.
func (s Stuck) Minutes() int { return int(s.For / time.Minute) }

// ShareRow is a shared run as the dashboard lists it.
type ShareRow struct {
	ID       string    `json:"id"`
	Student  string    `json:"student"`
	Exercise string    `json:"exercise"`
	At       time.Time `json:"at"`
}

// maxStuck is how many the dashboard lists.
const maxStuck = 15

// build makes the dashboard from the store's contents. exercises are the ids
// to list before any report names them.
func build(now time.Time, roster []Student, reports []StoredReport, subs []Submission, shares []Share, exercises []string) *Dashboard {
	d := &Dashboard{At: now, Students: roster}
	row := map[int64]int{}
	names := map[int64]string{}
	for i, st := range roster {
		row[st.ID] = i
		names[st.ID] = st.Name
	}
	type key struct {
		student    int64
		kind, item string
	}
	latest := map[key]*Cell{}
	items := map[string][]string{"exercise": slices.Clone(exercises)}
	addItem := func(kind, item string) {
		if !slices.Contains(items[kind], item) {
			items[kind] = append(items[kind], item)
		}
	}
	// Reports come oldest first: the last one of each item is the cell, and
	// the first one after which it was never done is when being stuck began.
	for _, r := range reports {
		if _, ok := row[r.Student]; !ok {
			continue
		}
		k, ok := KindOf(r.Kind)
		if !ok {
			continue
		}
		addItem(r.Kind, r.Item)
		c := latest[key{r.Student, r.Kind, r.Item}]
		if c == nil {
			c = &Cell{}
			latest[key{r.Student, r.Kind, r.Item}] = c
		}
		since := c.Since
		if k.Finished(r.Status) {
			since = time.Time{}
		} else if since.IsZero() || k.Finished(c.Status) {
			since = r.At
		}
		*c = Cell{Status: r.Status, Ran: r.Tests.Ran, Failed: r.Tests.Failed, Score: r.Score, Max: r.Max,
			Test: r.FailingTest, Event: r.EventKind, Summary: r.Summary, At: r.At, Since: since}
	}
	// The server's grading decides a hunt: solved at its first right answer,
	// worth what the answers before it left.
	type graded struct {
		wrong  int
		solved bool
		at     time.Time
	}
	grades := map[key]*graded{}
	for _, sub := range subs {
		if _, ok := row[sub.Student]; !ok {
			continue
		}
		item := strconv.Itoa(sub.Hunt)
		addItem("hunt", item)
		g := grades[key{sub.Student, "hunt", item}]
		if g == nil {
			g = &graded{}
			grades[key{sub.Student, "hunt", item}] = g
		}
		if g.solved {
			continue
		}
		g.at = sub.At
		if sub.Solved {
			g.solved = true
		} else {
			g.wrong++
		}
	}
	for k, g := range grades {
		c := latest[k]
		if c == nil {
			c = &Cell{Since: g.at}
			latest[k] = c
		}
		c.Graded, c.Wrong, c.Max, c.At = true, g.wrong, workbook.HuntWorth, later(c.At, g.at)
		if g.solved {
			c.Status, c.Score, c.Since = "solved", workbook.HuntScore(g.wrong), time.Time{}
		} else {
			c.Status, c.Score = "started", 0
			if c.Since.IsZero() {
				c.Since = g.at
			}
		}
	}
	hunts := items["hunt"]
	slices.SortFunc(hunts, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})

	for _, k := range Kinds {
		sec := Section{Kind: k.Name, Label: k.Label, Items: items[k.Name], Done: make([]int, len(items[k.Name]))}
		for _, st := range roster {
			cells := make([]Cell, len(sec.Items))
			for j, it := range sec.Items {
				if c := latest[key{st.ID, k.Name, it}]; c != nil {
					cells[j] = *c
					if k.Finished(c.Status) {
						sec.Done[j]++
					}
				}
			}
			sec.Rows = append(sec.Rows, cells)
		}
		d.Sections = append(d.Sections, sec)
	}

	fails := map[[2]string]int{}
	events := map[string]int{}
	for k, c := range latest {
		kind, _ := KindOf(k.kind)
		if !c.Since.IsZero() && !kind.Finished(c.Status) && !kind.Untouched(c.Status) {
			d.Stuck = append(d.Stuck, Stuck{Student: names[k.student], Kind: k.kind, Item: k.item, Status: c.Status,
				Since: c.Since, For: now.Sub(c.Since)})
		}
		if c.Status == "failing" {
			if c.Test != "" {
				fails[[2]string{k.item, c.Test}]++
			}
			if c.Event != "" {
				events[c.Event]++
			}
		}
	}
	for k, n := range fails {
		d.Failures = append(d.Failures, Failure{Exercise: k[0], Test: k[1], Students: n})
	}
	slices.SortFunc(d.Failures, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(b.Students, a.Students), cmp.Compare(a.Exercise, b.Exercise), cmp.Compare(a.Test, b.Test))
	})
	for k, n := range events {
		d.Events = append(d.Events, EventCount{Kind: k, Students: n})
	}
	slices.SortFunc(d.Events, func(a, b EventCount) int {
		return cmp.Or(cmp.Compare(b.Students, a.Students), cmp.Compare(a.Kind, b.Kind))
	})
	slices.SortFunc(d.Stuck, func(a, b Stuck) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Student, b.Student), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Item, b.Item))
	})
	if len(d.Stuck) > maxStuck {
		d.Stuck = d.Stuck[:maxStuck]
	}
	for _, sh := range shares {
		d.Shares = append(d.Shares, ShareRow{ID: sh.ID, Student: names[sh.Student], Exercise: sh.Exercise, At: sh.At})
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// dashboard reads the store and builds the dashboard now.
func (s *Server) dashboard(ctx context.Context) (*Dashboard, error) {
	roster, err := s.store.Roster(ctx)
	if err != nil {
		return nil, err
	}
	reports, err := s.store.Reports(ctx)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.Submissions(ctx)
	if err != nil {
		return nil, err
	}
	shares, err := s.store.Shares(ctx)
	if err != nil {
		return nil, err
	}
	d := build(s.now(), roster, reports, subs, shares, s.cfg.Exercises)
	d.Following = s.cast.followerCount()
	return d, nil
}

func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	d, err := s.dashboard(r.Context())
	if err != nil {
		s.log.Error("classroom: dashboard", "err", err)
		http.Error(w, "500 the dashboard did not load", http.StatusInternalServerError)
		return
	}
	s.render(w, http.StatusOK, "dashboard.html", pageData{Title: "Class dashboard", Dashboard: d})
}

func (s *Server) serveDashboardJSON(w http.ResponseWriter, r *http.Request) {
	d, err := s.dashboard(r.Context())
	if err != nil {
		http.Error(w, "500 the dashboard did not load", http.StatusInternalServerError)
		return
	}
	writeJSON(w, d)
}

// CSVHeader is the export's first row.
var CSVHeader = []string{"student", "learner", "kind", "item", "status", "tests_ran", "tests_failed", "score", "max",
	"wrong_answers", "failing_test", "event_kind", "last_report", "not_done_since"}

// WriteCSV writes one row per student and item they have reported.
func (d *Dashboard) WriteCSV(w *csv.Writer) error {
	if err := w.Write(CSVHeader); err != nil {
		return err
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, sec := range d.Sections {
		for i, st := range d.Students {
			for j, c := range sec.Rows[i] {
				if c.Status == "" {
					continue
				}
				rec := []string{st.Name, st.Learner, sec.Kind, sec.Items[j], c.Status, strconv.Itoa(c.Ran), strconv.Itoa(c.Failed),
					strconv.Itoa(c.Score), strconv.Itoa(c.Max), strconv.Itoa(c.Wrong), c.Test, c.Event, stamp(c.At), stamp(c.Since)}
				for k, f := range rec {
					rec[k] = csvSafe(f)
				}
				if err := w.Write(rec); err != nil {
					return err
				}
			}
		}
	}
	w.Flush()
	return w.Error()
}

// csvSafe keeps a spreadsheet from reading a field as a formula (a name is
// whatever a student typed).
func csvSafe(f string) string {
	if f != "" && (f[0] == '=' || f[0] == '+' || f[0] == '-' || f[0] == '@') {
		return "'" + f
	}
	return f
}

func (s *Server) serveCSV(w http.ResponseWriter, r *http.Request) {
	d, err := s.dashboard(r.Context())
	if err != nil {
		http.Error(w, "500 the dashboard did not load", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="class-%s.csv"`, d.At.UTC().Format("2006-01-02T1504")))
	w.Header().Set("Cache-Control", "no-store")
	if err := d.WriteCSV(csv.NewWriter(w)); err != nil {
		s.log.Error("classroom: csv", "err", err)
	}
}
