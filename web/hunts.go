package web

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// The bug hunts' pages: /hunts lists them with the learner's status and score,
// /hunts/N tells one hunt's story, runs the learner's variant in a live widget
// (web/live builds it from the hunt number; the page carries nothing of the
// variant) and takes an answer.
//
// A submission writes the learner's progress file, so its POST (with the
// adversary pages' record, guarded the same way) is a request of the server
// that changes something, and it is guarded beyond the
// Host check every request gets: it must come from this computer (a loopback
// peer), its Origin, when the browser sends one, must be the page's own, and it
// must carry the token of this launch of the server, which only the server's
// own pages hold (a page of another site can send a form here but cannot read
// the token). An "Origin: null" is refused: the hunt pages' referrer policy
// makes the browser send their real origin. Every other POST is refused by the
// router.

// Hunts is the learner's side of the bug hunts, as the hunt pages need it:
// cmd/saccbook implements it over the workspace's key and progress file.
type Hunts interface {
	// List is every hunt of the catalogue with the learner's record.
	List() ([]HuntRow, error)
	// Learner is the learner id the variants are derived for.
	Learner() string
	// Submit grades an answer to hunt n and records it, with the rules of
	// saccbook hunt submit.
	Submit(n int, bug, event string) (HuntVerdict, error)
}

// HuntRow is one hunt with the learner's record.
type HuntRow struct {
	*hunt.Hunt
	Status string // "not started", "started" or "solved"
	Score  int    // once solved
	Worth  int    // what solving it now scores
	Max    int    // what a hunt is worth before any wrong answer
	Wrong  int    // wrong submissions so far
}

// Solved reports whether the row's hunt is solved.
func (r HuntRow) Solved() bool { return r.Status == "solved" }

// HuntVerdict is the answer to a submission.
type HuntVerdict struct {
	// Problem is a mistake in the input (an unknown bug, an event that is no
	// number): answered, recorded nowhere, free.
	Problem string
	Lines   []string // the verdict, then the score
	Solved  bool
}

// huntView is what the hunt templates see, beside pageData.
type huntView struct {
	Missing string    // why the server has no hunts, or ""
	Rows    []HuntRow // the list
	Row     *HuntRow  // one hunt's page
	Learner string
	Token   string
	Bugs    []quirk.Info // the catalog, for the answer's choice
	Bug     string       // the submitted answer, kept in the form
	Event   string
	Verdict *HuntVerdict
	Solved  int
	Points  int
	Total   int
}

// huntPages serves the hunt pages.
type huntPages struct {
	hunts  Hunts // nil: no workspace
	token  string
	hosts  *hostMatcher
	log    *slog.Logger
	list   *template.Template
	one    *template.Template
	render func(t *template.Template, d pageData) ([]byte, error)
}

// newToken is a launch's submission token: 128 random bits.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func (hp *huntPages) view() huntView {
	v := huntView{Token: hp.token, Bugs: quirk.All()}
	if hp.hunts == nil {
		v.Missing = "This server found no workspace, so it has no hunts: run saccbook serve inside the saccbook workspace (or give it --root DIR). The hunts keep your key and your progress in its exercises directory."
		return v
	}
	v.Learner = hp.hunts.Learner()
	return v
}

func (hp *huntPages) serveList(w http.ResponseWriter, r *http.Request) {
	v := hp.view()
	if hp.hunts != nil {
		rows, err := hp.hunts.List()
		if err != nil {
			hp.fail(w, r, err)
			return
		}
		v.Rows = rows
		for _, row := range rows {
			v.Total += row.Max
			if row.Solved() {
				v.Solved++
				v.Points += row.Score
			}
		}
	}
	hp.write(w, r, http.StatusOK, hp.list, pageData{Title: "Bug hunts", Hunts: &v})
}

// row finds hunt n in the list; a page for a hunt that does not exist is a 404.
func (hp *huntPages) row(w http.ResponseWriter, r *http.Request, num string) (*HuntRow, huntView, bool) {
	v := hp.view()
	n, err := strconv.Atoi(num)
	h, ok := hunt.Find(n)
	if err != nil || !ok || strconv.Itoa(n) != num {
		http.Error(w, fmt.Sprintf("404 no hunt %q: the hunts are numbered 1 to %d, listed at /hunts", num, len(hunt.Catalogue())), http.StatusNotFound)
		return nil, v, false
	}
	row := &HuntRow{Hunt: h, Status: "not started"}
	if hp.hunts != nil {
		rows, err := hp.hunts.List()
		if err != nil {
			hp.fail(w, r, err)
			return nil, v, false
		}
		for i := range rows {
			if rows[i].Number == n {
				row = &rows[i]
			}
		}
	}
	v.Row = row
	return row, v, true
}

func (hp *huntPages) serveHunt(w http.ResponseWriter, r *http.Request, num string) {
	row, v, ok := hp.row(w, r, num)
	if !ok {
		return
	}
	hp.write(w, r, http.StatusOK, hp.one, pageData{Title: fmt.Sprintf("Hunt %d: %s", row.Number, row.Title), Hunts: &v})
}

// serveSubmit answers POST /hunts/N/submit.
func (hp *huntPages) serveSubmit(w http.ResponseWriter, r *http.Request, num string) {
	if !workspaceWrite(w, r, hp.token, hp.hosts, hp.log, "a hunt submission") {
		return
	}
	row, v, ok := hp.row(w, r, num)
	if !ok {
		return
	}
	if hp.hunts == nil {
		http.Error(w, "409 conflict: "+v.Missing, http.StatusConflict)
		return
	}
	v.Bug, v.Event = r.PostForm.Get("bug"), r.PostForm.Get("event")
	vd, err := hp.hunts.Submit(row.Number, v.Bug, v.Event)
	if err != nil {
		hp.fail(w, r, err)
		return
	}
	v.Verdict = &vd
	status := http.StatusOK
	if vd.Problem != "" {
		status = http.StatusBadRequest
	}
	// The record the page shows is the one after the submission.
	if _, after, ok := hp.row(w, r, num); ok {
		v.Row = after.Row
	}
	hp.write(w, r, status, hp.one, pageData{Title: fmt.Sprintf("Hunt %d: %s", row.Number, row.Title), Hunts: &v})
}

// workspaceWrite guards a POST that changes the learner's workspace (a hunt's
// answer, an adversary game's record), answering it itself when it is refused:
// it must come from this computer whatever address the server listens on,
// with the page's own Origin or none (a browser's cross-site form post carries
// its site's), and with this launch's token, which only the server's own pages
// carry. what names the request in the log.
func workspaceWrite(w http.ResponseWriter, r *http.Request, token string, hosts *hostMatcher, log *slog.Logger, what string) bool {
	if !loopbackPeer(r) {
		log.Warn("refused "+what+" from another computer", "remote", r.RemoteAddr)
		http.Error(w, "403 forbidden: the workspace takes changes from this computer only", http.StatusForbidden)
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host, hosts) {
		log.Warn("refused "+what+" from a foreign Origin", "origin", origin, "host", r.Host)
		http.Error(w, "403 forbidden: cross-origin request", http.StatusForbidden)
		return false
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(token)) != 1 {
		log.Warn("refused "+what+" without this launch's token", "remote", r.RemoteAddr)
		http.Error(w, "403 forbidden: this page is not from this saccbook serve (it may have restarted): reload it", http.StatusForbidden)
		return false
	}
	return true
}

// loopbackPeer reports whether the request came from this computer.
func loopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (hp *huntPages) write(w http.ResponseWriter, r *http.Request, status int, t *template.Template, d pageData) {
	body, err := hp.render(t, d)
	if err != nil {
		hp.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// Under the site's no-referrer policy a browser sends "Origin: null" with a
	// form's POST, and the submission could not show where it comes from; on
	// the hunt pages the origin is sent to this server itself, and nowhere else.
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (hp *huntPages) fail(w http.ResponseWriter, r *http.Request, err error) {
	hp.log.Error("hunt page", "path", r.URL.Path, "err", err)
	http.Error(w, "500 internal server error: "+err.Error(), http.StatusInternalServerError)
}

// renderTemplate executes a page template into bytes.
func renderTemplate(t *template.Template, d pageData) ([]byte, error) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", d); err != nil {
		return nil, fmt.Errorf("web: render %q: %w", d.Title, err)
	}
	return b.Bytes(), nil
}
