package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/saccbook/saccbook/sacc/adversary"
)

// The adversary pages: /adversary lists the levels, /adversary/LEVEL plays one.
// The server keeps no game: a game is its schedule, the choices made so far,
// carried in the address (?s=2,1,1), and every page and every answer of
// /api/v1/adversary/LEVEL is a function of the level and that schedule. So a
// game survives a reload or a restarted server, and can be sent to someone as
// a link. Without JavaScript each choice is a link to the game one choice
// longer; with it, static/adversary.js fetches the same state as JSON and draws
// it in place (docs/PROTOCOL.md, "Adversary mode").

// AdversaryRecords is the learner's record of the levels in the workspace's
// progress file, as saccbook adversary play and solve keep it.
type AdversaryRecords interface {
	// AdversaryStatus is each level's status by name: "won", "proved",
	// "tried"; a level missing is not tried.
	AdversaryStatus() (map[string]string, error)
	// RecordPlay notes a game of level name played to its end, as
	// saccbook adversary play does: won, in choices choices, or not.
	RecordPlay(name string, won bool, choices int) error
}

// AdversaryAPIPath is where a level's state is served as JSON.
const AdversaryAPIPath = "/api/v1/adversary/"

// adversaryView is what the adversary templates see.
type adversaryView struct {
	Levels   []adversaryRow
	Level    *adversary.Level
	State    adversary.View
	Schedule string // the game so far, as ?s= carries it
	Choices  []adversaryChoice
	Undo     string // the address of the game one choice shorter
	Lines    []adversaryLine
	Problem  string // a schedule that does not replay
	Won      int
	Proved   int
	Recorded bool   // the server has the learner's record
	Token    string // this launch's token, for the record's form
	Saved    string // what recording the game did, after its POST
	// Solver is the solver's answer for the level, in a sentence; SolverHref
	// the game after its breaking schedule, if it found one.
	Solver     string
	SolverHref string
}

type adversaryRow struct {
	*adversary.Level
	Status string
}

type adversaryChoice struct {
	N    int
	Kind string
	Text string
	Href string
}

type adversaryLine struct {
	N       int
	Text    string
	Current bool
}

type adversaryPages struct {
	records AdversaryRecords // nil: no workspace
	token   string
	hosts   *hostMatcher
	log     *slog.Logger
	list    *template.Template
	one     *template.Template
	render  func(t *template.Template, d pageData) ([]byte, error)
}

func newAdversaryPages(records AdversaryRecords, chapters []*Chapter, assets *assetSet, hosts *hostMatcher, log *slog.Logger) (*adversaryPages, error) {
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("web: record token: %w", err)
	}
	ap := &adversaryPages{records: records, token: token, hosts: hosts, log: log}
	if ap.list, err = parseTemplate(assets, "adversaries.html"); err != nil {
		return nil, err
	}
	if ap.one, err = parseTemplate(assets, "adversary.html"); err != nil {
		return nil, err
	}
	ap.render = func(t *template.Template, d pageData) ([]byte, error) {
		d.Chapters = chapters
		return renderTemplate(t, d)
	}
	// Render both once, so that a template mistake is an error at start-up.
	if _, err := ap.render(ap.list, pageData{Title: "Adversary mode", Adversary: &adversaryView{}}); err != nil {
		return nil, err
	}
	v, _ := ap.game(adversary.Levels()[0], "")
	if _, err := ap.render(ap.one, pageData{Title: "Adversary", Adversary: v}); err != nil {
		return nil, err
	}
	return ap, nil
}

func (ap *adversaryPages) serveList(w http.ResponseWriter, r *http.Request) {
	v := &adversaryView{}
	status := map[string]string{}
	if ap.records != nil {
		var err error
		if status, err = ap.records.AdversaryStatus(); err != nil {
			ap.log.Error("adversary list", "err", err)
			http.Error(w, "500 internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		v.Recorded = true
	}
	for _, l := range adversary.Levels() {
		s := status[l.Name]
		if s == "" {
			s = "not tried"
		}
		switch s {
		case "won":
			v.Won++
		case "proved":
			v.Proved++
		}
		v.Levels = append(v.Levels, adversaryRow{Level: l, Status: s})
	}
	ap.write(w, http.StatusOK, ap.list, pageData{Title: "Adversary mode", Adversary: v})
}

// game is the view of level l after schedule text; a schedule that does not
// replay is reported, with the game at its start.
func (ap *adversaryPages) game(l *adversary.Level, text string) (*adversaryView, error) {
	sched, err := adversary.ParseSchedule(text)
	var s adversary.State
	if err == nil {
		s, _, err = l.Replay(sched)
	}
	v := &adversaryView{Level: l, Recorded: ap.records != nil, Token: ap.token}
	if err != nil {
		sched, s = nil, l.Start()
		v.Problem = "This game's schedule does not replay: " + err.Error() + ". It starts again from the beginning."
	}
	v.Schedule = adversary.FormatSchedule(sched)
	v.State = l.ViewOf(&s, len(sched))
	// Every level's search takes well under a millisecond (the package's tests
	// log the figures), so the page asks it afresh rather than keeping it.
	res := l.Solve(adversary.DefaultBound)
	v.Solver = res.Summary()
	if res.Broken() {
		v.SolverHref = gameHref(l, adversary.FormatSchedule(res.Schedule))
	}
	for i, t := range v.State.Lines {
		v.Lines = append(v.Lines, adversaryLine{N: i + 1, Text: t, Current: i == v.State.PC})
	}
	for i, t := range v.State.Choices {
		next := adversary.FormatSchedule(append(append([]int{}, sched...), i+1))
		v.Choices = append(v.Choices, adversaryChoice{N: i + 1, Kind: v.State.Kinds[i], Text: t, Href: gameHref(l, next)})
	}
	if len(sched) > 0 {
		v.Undo = gameHref(l, adversary.FormatSchedule(sched[:len(sched)-1]))
	}
	return v, err
}

// gameHref is the address of level l's game after schedule.
func gameHref(l *adversary.Level, schedule string) string {
	if schedule == "" {
		return "/adversary/" + l.Name
	}
	return "/adversary/" + l.Name + "?s=" + url.QueryEscape(schedule)
}

func (ap *adversaryPages) serveLevel(w http.ResponseWriter, r *http.Request, name string) {
	l, err := adversary.Lookup(name)
	if err == nil && l.Name != name {
		// A level's number, as saccbook adversary list and play take it: the
		// page lives at its name.
		http.Redirect(w, r, gameHref(l, r.URL.Query().Get("s")), http.StatusFound)
		return
	}
	if err != nil {
		http.Error(w, "404 "+notLevel(name, err)+" (every level is at /adversary)", http.StatusNotFound)
		return
	}
	v, err := ap.game(l, r.URL.Query().Get("s"))
	status := http.StatusOK
	if err != nil {
		status = http.StatusBadRequest
	}
	ap.write(w, status, ap.one, pageData{Title: fmt.Sprintf("Adversary %d: %s", l.Number, l.Title), Adversary: v})
}

// serveRecord answers POST /adversary/LEVEL/record: a game played to its end
// in the browser goes into the learner's record. It is guarded as a hunt's
// answer is (workspaceWrite). The server replays the schedule
// itself, so only a game that really ended is recorded, and as it really
// ended.
func (ap *adversaryPages) serveRecord(w http.ResponseWriter, r *http.Request, name string) {
	if !workspaceWrite(w, r, ap.token, ap.hosts, ap.log, "an adversary record") {
		return
	}
	l, err := adversary.Lookup(name)
	if err != nil || l.Name != name {
		http.Error(w, "404 "+notLevel(name, err), http.StatusNotFound)
		return
	}
	if ap.records == nil {
		http.Error(w, "409 conflict: this server found no workspace, so it keeps no record: run saccbook serve inside the saccbook workspace", http.StatusConflict)
		return
	}
	v, err := ap.game(l, r.PostForm.Get("schedule"))
	status := http.StatusOK
	switch {
	case err != nil:
		status = http.StatusBadRequest
	case !v.State.Over:
		v.Problem = "This game is not over yet: there is nothing to record."
		status = http.StatusBadRequest
	default:
		if err := ap.records.RecordPlay(l.Name, v.State.Won, v.State.Played); err != nil {
			ap.log.Error("adversary record", "err", err)
			http.Error(w, "500 internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		v.Saved = "Recorded in your progress: a game the driver held."
		if v.State.Won {
			v.Saved = fmt.Sprintf("Recorded in your progress: won in %d choices.", v.State.Played)
		}
	}
	if r.PostForm.Get("reply") == "json" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"saved": v.Saved, "error": v.Problem})
		return
	}
	ap.write(w, status, ap.one, pageData{Title: fmt.Sprintf("Adversary %d: %s", l.Number, l.Title), Adversary: v})
}

func notLevel(name string, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("no adversary level %q: levels are addressed by name", name)
}

// AdversaryLevel is a level as the JSON answer describes it.
type AdversaryLevel struct {
	Number    int    `json:"number"`
	Name      string `json:"name"`
	Title     string `json:"title"`
	CPU       string `json:"cpu"`
	Story     string `json:"story"`
	Invariant string `json:"invariant"`
	Breakable bool   `json:"breakable"`
	Quirk     string `json:"quirk,omitempty"`
	Lesson    string `json:"lesson"`
	Chapter   string `json:"chapter"`
}

// AdversaryGame is the JSON answer of /api/v1/adversary/LEVEL?s=SCHEDULE.
type AdversaryGame struct {
	Level    AdversaryLevel `json:"level"`
	Schedule string         `json:"schedule"`
	State    adversary.View `json:"state"`
}

func (ap *adversaryPages) serveAPI(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	l, err := adversary.Lookup(name)
	if err != nil || l.Name != name {
		fail(http.StatusNotFound, notLevel(name, err))
		return
	}
	g, err := AdversaryGameOf(l, r.URL.Query().Get("s"))
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	_ = json.NewEncoder(w).Encode(g)
}

// AdversaryGameOf is level l's game after the schedule text.
func AdversaryGameOf(l *adversary.Level, text string) (AdversaryGame, error) {
	sched, err := adversary.ParseSchedule(text)
	if err != nil {
		return AdversaryGame{}, err
	}
	s, _, err := l.Replay(sched)
	if err != nil {
		return AdversaryGame{}, fmt.Errorf("the schedule does not replay: %w", err)
	}
	return AdversaryGame{
		Level: AdversaryLevel{Number: l.Number, Name: l.Name, Title: l.Title, CPU: l.CPU.Name, Story: l.Story, Invariant: l.Invariant,
			Breakable: l.Breakable, Quirk: l.Quirk, Lesson: l.Lesson, Chapter: l.Chapter},
		Schedule: adversary.FormatSchedule(sched),
		State:    l.ViewOf(&s, len(sched)),
	}, nil
}

func (ap *adversaryPages) write(w http.ResponseWriter, status int, t *template.Template, d pageData) {
	body, err := ap.render(t, d)
	if err != nil {
		ap.log.Error("adversary page", "err", err)
		http.Error(w, "500 internal server error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The record's POST must show where it comes from (see serveRecord); under
	// the site's no-referrer policy a browser would send "Origin: null".
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
