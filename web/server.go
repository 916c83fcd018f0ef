// Package web is the HTTP side of `saccbook serve`: the book's chapters,
// rendered from Markdown once at start-up, their static assets, and the
// websocket routes of the live widgets, which it mounts but does not implement
// (package web/live does; see docs/PROTOCOL.md).
//
// Everything the server shows comes in through Config as fs.FS values, so tests
// hand it an fstest.MapFS and cmd/saccbook hands it the embedded book.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/web/manifest"
)

// LiveRoutes serves the live widgets' websockets (docs/PROTOCOL.md); package
// web/live implements it. The handlers own the connection once upgraded: they
// get no request timeout and no body limit, and r.Context() ends when the
// server shuts down.
type LiveRoutes interface {
	// ServeSession answers GET /ws/session: one machine for this socket.
	ServeSession(w http.ResponseWriter, r *http.Request)
	// ServeShared answers GET /ws/shared/{name}: the shared stream name.
	ServeShared(w http.ResponseWriter, r *http.Request, name string)
}

// Config is what the handler serves.
type Config struct {
	// Chapters holds the book: "NN-words.md" files at its top (package chapters).
	Chapters fs.FS
	// Static holds the browser assets served under /static/VERSION/ (package
	// static); it must have saccbook.css and saccbook.js. code.css is generated.
	Static fs.FS
	// Live serves /ws/session and /ws/shared/{name}.
	Live LiveRoutes
	// AllowedHosts are the Host names the server answers to: "name" (any port)
	// or "name:port"; IPv6 in brackets. Empty means DefaultAllowedHosts.
	AllowedHosts []string
	// Logger receives refusals and panics; nil discards them.
	Logger *slog.Logger
	// RequestTimeout bounds every ordinary (non-websocket) request; 0 means 10 s.
	RequestTimeout time.Duration
	// Source, if set, serves the Go sources that events point at under /source/
	// (package saccbook's Source), so the source view can show the line itself.
	Source fs.FS
	// Hunts serves the bug hunts' pages (/hunts) with the learner's records
	// and takes their answers; nil: the pages say the server has no workspace.
	Hunts Hunts
	// Adversary, if set, is the learner's record of the adversary levels: the
	// list shows it, and a game played to its end in the browser adds to it;
	// the levels themselves need nothing from the workspace.
	Adversary AdversaryRecords
	// Workbook, if set, serves the learner's exercises: /exercises/ID, the
	// recorded runs at /runs/ID, and the files the learner edits under
	// /source/exercises/… (package workbook, through cmd/saccbook).
	Workbook Workbook
}

// Workbook is what the server knows of the learner's workspace. Every method
// reads the workspace afresh: the pages follow the learner's progress.
type Workbook interface {
	// Exercise is one exercise's page, or false when there is none.
	Exercise(id string) (*ExercisePage, bool)
	// SourceFile is a file the learner edits, named from the workspace root;
	// only the files meta.json lists.
	SourceFile(name string) ([]byte, error)
	// Exercises is every exercise in the order a learner meets them, each with
	// its status now; nil when the workspace cannot be read.
	Exercises() []ExerciseEntry
}

// ExerciseEntry is one exercise as the contents and chapter pages list it.
type ExerciseEntry struct {
	ID, Title, ChapterURL string
	Status                string // as ExercisePage.Status
}

// ChapterProgress is how far the learner has gone with one chapter's exercises.
type ChapterProgress struct {
	Exercises              []ExerciseEntry
	Done, Active, NotBegun int // Active: started or failing
}

// progressByChapter groups the exercises by the chapter page they belong to
// (its slug, from ChapterURL).
func progressByChapter(exs []ExerciseEntry) map[string]*ChapterProgress {
	out := map[string]*ChapterProgress{}
	for _, ex := range exs {
		slug, ok := strings.CutPrefix(ex.ChapterURL, "/chapters/")
		if !ok {
			continue
		}
		cp := out[slug]
		if cp == nil {
			cp = &ChapterProgress{}
			out[slug] = cp
		}
		cp.Exercises = append(cp.Exercises, ex)
		switch ex.Status {
		case "done":
			cp.Done++
		case "not started", "":
			cp.NotBegun++
		default:
			cp.Active++
		}
	}
	return out
}

// statusToken is a status as one word, for a class name or a data attribute:
// "not started" is "not-started".
func statusToken(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}

// ExercisePage is what an exercise's page shows.
type ExercisePage struct {
	ID, Title, ChapterURL string
	Goal                  string   // the stub's package doc
	Files                 []string // what to edit, relative to the exercise
	Hints                 []string
	Status                string // the workbook's: "not started", "started", "failing", "done"
	LastRun               *LastRun
}

// LastRun is an exercise's last recorded run.
type LastRun struct {
	Failed  bool
	Test    string
	Message string
	FailSeq uint64
}

// NewHandler renders the book and returns the server's handler. Every chapter
// is rendered here, once; a chapter that does not render (a bad widget, a
// missing title) is an error naming the file and line.
func NewHandler(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Chapters == nil:
		return nil, errors.New("web: Config.Chapters is nil")
	case cfg.Static == nil:
		return nil, errors.New("web: Config.Static is nil")
	case cfg.Live == nil:
		return nil, errors.New("web: Config.Live is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = defaultRequestTimeout
	}
	hosts, err := newHostMatcher(cfg.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	chapters, err := ReadChapters(cfg.Chapters)
	if err != nil {
		return nil, err
	}
	assets, err := loadAssets(cfg.Static)
	if err != nil {
		return nil, err
	}
	pages, err := renderPages(chapters, assets)
	if err != nil {
		return nil, err
	}
	hunts, err := newHuntPages(cfg.Hunts, chapters, assets, hosts, log)
	if err != nil {
		return nil, err
	}
	adv, err := newAdversaryPages(cfg.Adversary, chapters, assets, hosts, log)
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	// GetHead must run before routing, so it is here and not in the group.
	r.Use(recoverPanics(log), securityHeaders, hostAllowlist(hosts, log), middleware.GetHead)
	r.NotFound(pages.serveNotFound)
	r.Group(func(r chi.Router) {
		r.Use(ordinaryLimits(timeout))
		r.Get("/", func(w http.ResponseWriter, r *http.Request) {
			pages.serveTOC(w, r, cfg.Workbook)
		})
		r.Get("/chapters/{slug}", func(w http.ResponseWriter, r *http.Request) {
			pages.serveChapter(w, r, cfg.Workbook, chi.URLParam(r, "slug"))
		})
		r.Get("/static/*", func(w http.ResponseWriter, r *http.Request) {
			assets.serve(w, r, chi.URLParam(r, "*"))
		})
		r.Get(manifest.Path, serveManifest)
		r.Get("/hunts", hunts.serveList)
		r.Get("/hunts/{n}", func(w http.ResponseWriter, r *http.Request) {
			hunts.serveHunt(w, r, chi.URLParam(r, "n"))
		})
		r.Get("/adversary", adv.serveList)
		r.Get("/adversary/{level}", func(w http.ResponseWriter, r *http.Request) {
			adv.serveLevel(w, r, chi.URLParam(r, "level"))
		})
		r.Get(AdversaryAPIPath+"{level}", func(w http.ResponseWriter, r *http.Request) {
			adv.serveAPI(w, r, chi.URLParam(r, "level"))
		})
		// The two requests that change anything, the learner's progress file
		// (huntPages says how they are guarded); every other POST gets 405 or
		// 404 from the router.
		r.Post("/hunts/{n}/submit", func(w http.ResponseWriter, r *http.Request) {
			hunts.serveSubmit(w, r, chi.URLParam(r, "n"))
		})
		r.Post("/adversary/{level}/record", func(w http.ResponseWriter, r *http.Request) {
			adv.serveRecord(w, r, chi.URLParam(r, "level"))
		})
		if cfg.Source != nil || cfg.Workbook != nil {
			r.Get("/source/*", func(w http.ResponseWriter, r *http.Request) {
				name := chi.URLParam(r, "*")
				if cfg.Workbook != nil && strings.HasPrefix(name, "exercises/") {
					serveLearnerSource(w, r, cfg.Workbook, name)
					return
				}
				if cfg.Source == nil {
					http.NotFound(w, r)
					return
				}
				serveSource(w, r, cfg.Source, name)
			})
		}
		if cfg.Workbook != nil {
			r.Get("/exercises/{id}", func(w http.ResponseWriter, r *http.Request) {
				pages.serveExercise(w, r, cfg.Workbook, chi.URLParam(r, "id"), pages.exercise)
			})
			r.Get("/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
				pages.serveExercise(w, r, cfg.Workbook, chi.URLParam(r, "id"), pages.run)
			})
		}
		r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte("ok\n"))
		})
	})
	r.Group(func(r chi.Router) {
		r.Use(sameOriginWebsocket(hosts, log))
		r.Get("/ws/session", cfg.Live.ServeSession)
		r.Get("/ws/shared/{name}", func(w http.ResponseWriter, r *http.Request) {
			cfg.Live.ServeShared(w, r, chi.URLParam(r, "name"))
		})
	})
	return r, nil
}

// NewServer is an http.Server for h with timeouts that suit the book: slow or
// idle clients are cut off, but there is no WriteTimeout or ReadTimeout, which
// would end every websocket session after that long. Ordinary requests have
// their own deadline inside the handler.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// templateFS holds the page templates: layout.html and one file per kind of page.
//
//go:embed templates/*.html
var templateFS embed.FS

// asset is one file served under /static/, held in memory.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// assetSet is every static file, and a version that changes when any does.
// Every asset is served at /static/VERSION/NAME, and only there: a browser may
// keep it for ever (it is immutable at that address), a new binary's assets
// have new addresses, and a module's relative imports ("./format.js") stay in
// the version of the page that loaded it. An address with any other version is
// a 404: the pages (never cached) always name the current one.
type assetSet struct {
	files   map[string]asset
	version string
}

// requiredAssets are the files every page links to.
var requiredAssets = []string{"saccbook.css", "saccbook.js", "code.css"}

func loadAssets(static fs.FS) (*assetSet, error) {
	set := &assetSet{files: map[string]asset{}}
	all := sha256.New()
	add := func(name string, body []byte) error {
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = http.DetectContentType(body)
		}
		sum := sha256.Sum256(body)
		set.files[name] = asset{body: body, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		fmt.Fprintf(all, "%s %x\n", name, sum)
		return nil
	}
	err := fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if name == "code.css" {
			return errors.New("code.css is generated by package web; remove it from the static files")
		}
		body, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		return add(name, body)
	})
	if err != nil {
		return nil, fmt.Errorf("static: %w", err)
	}
	_ = add("code.css", highlightCSS())
	for _, name := range requiredAssets {
		if _, ok := set.files[name]; !ok {
			return nil, fmt.Errorf("static: %s is missing", name)
		}
	}
	set.version = hex.EncodeToString(all.Sum(nil)[:6])
	return set, nil
}

// url is the versioned address of an asset.
func (s *assetSet) url(name string) (string, error) {
	if _, ok := s.files[name]; !ok {
		return "", fmt.Errorf("no static file %q", name)
	}
	return "/static/" + s.version + "/" + name, nil
}

// serve answers GET /static/VERSION/NAME; rest is VERSION/NAME.
func (s *assetSet) serve(w http.ResponseWriter, r *http.Request, rest string) {
	version, name, _ := strings.Cut(rest, "/")
	a, ok := s.files[name]
	if version != s.version || !ok {
		http.Error(w, "404 no such file", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}

// pageSet is every page of the site, rendered at start-up. With a workbook the
// contents and the chapters are rendered again at each request, with the
// learner's progress as it is then.
type pageSet struct {
	exercise    *template.Template // rendered per request: they show progress
	run         *template.Template
	tocT        *template.Template
	chapterT    *template.Template
	allChapters []*Chapter
	toc         []byte
	notFound    []byte
	chapters    map[string][]byte   // by slug
	chapterData map[string]pageData // by slug, without progress
}

// pageData is what the templates see.
type pageData struct {
	Title    string
	Chapters []*Chapter
	Current  *Chapter // nil except on a chapter page
	Prev     *Chapter
	Next     *Chapter
	Sidebar  bool
	Exercise *ExercisePage // on an exercise's page and its run's
	// On a chapter page: the body up to the end of its "Exercises" section (or
	// all of it) and the rest; the chapter's exercises go between.
	BodyHead, BodyTail template.HTML
	// Progress is the learner's, by chapter slug; nil outside a workspace.
	Progress map[string]*ChapterProgress
	Hunts    *huntView // on the hunt pages
	// Adversary is the adversary pages' view.
	Adversary *adversaryView
}

// parseTemplate parses a page's template with the layout.
func parseTemplate(assets *assetSet, page string) (*template.Template, error) {
	funcs := template.FuncMap{"asset": assets.url, "inc": func(i int) int { return i + 1 }, "status": statusToken}
	return template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page)
}

// newHuntPages parses the hunt pages' templates and renders both once, with
// no records, so that a template mistake is an error at start-up.
func newHuntPages(h Hunts, chapters []*Chapter, assets *assetSet, hosts *hostMatcher, log *slog.Logger) (*huntPages, error) {
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("web: submission token: %w", err)
	}
	hp := &huntPages{hunts: h, token: token, hosts: hosts, log: log}
	if hp.list, err = parseTemplate(assets, "hunts.html"); err != nil {
		return nil, err
	}
	if hp.one, err = parseTemplate(assets, "hunt.html"); err != nil {
		return nil, err
	}
	hp.render = func(t *template.Template, d pageData) ([]byte, error) {
		d.Chapters = chapters
		return renderTemplate(t, d)
	}
	v := huntView{Bugs: quirk.All()}
	first := &HuntRow{Hunt: hunt.Catalogue()[0], Status: "not started"}
	if _, err := hp.render(hp.list, pageData{Title: "Bug hunts", Hunts: &v}); err != nil {
		return nil, err
	}
	v.Row = first
	if _, err := hp.render(hp.one, pageData{Title: "Hunt", Hunts: &v}); err != nil {
		return nil, err
	}
	return hp, nil
}

// exercisesHeading is the heading the chapters introduce their exercises under.
var exercisesHeading = []byte(`<h2 id="exercises">`)

// splitAtExercises cuts a chapter's body where its exercises are to be listed:
// at the end of its "Exercises" section, after the text that introduces them,
// or at the end of the body if it has none.
func splitAtExercises(body template.HTML) (head, tail template.HTML) {
	b := []byte(body)
	at := bytes.Index(b, exercisesHeading)
	if at < 0 {
		return body, ""
	}
	next := bytes.Index(b[at+len(exercisesHeading):], []byte("<h2"))
	if next < 0 {
		return body, ""
	}
	cut := at + len(exercisesHeading) + next
	return template.HTML(b[:cut]), template.HTML(b[cut:])
}

func renderPages(chapters []*Chapter, assets *assetSet) (*pageSet, error) {
	parse := func(page string) (*template.Template, error) { return parseTemplate(assets, page) }
	exec := func(t *template.Template, d pageData) ([]byte, error) {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, "layout", d); err != nil {
			return nil, fmt.Errorf("web: render %q: %w", d.Title, err)
		}
		return b.Bytes(), nil
	}
	tocT, err := parse("toc.html")
	if err != nil {
		return nil, err
	}
	chapterT, err := parse("chapter.html")
	if err != nil {
		return nil, err
	}
	notFoundT, err := parse("notfound.html")
	if err != nil {
		return nil, err
	}
	ps := &pageSet{chapters: map[string][]byte{}, chapterData: map[string]pageData{}, allChapters: chapters,
		tocT: tocT, chapterT: chapterT}
	if ps.exercise, err = parse("exercise.html"); err != nil {
		return nil, err
	}
	if ps.run, err = parse("run.html"); err != nil {
		return nil, err
	}
	if ps.toc, err = exec(tocT, pageData{Title: "Contents", Chapters: chapters}); err != nil {
		return nil, err
	}
	if ps.notFound, err = exec(notFoundT, pageData{Title: "Not found", Chapters: chapters, Sidebar: true}); err != nil {
		return nil, err
	}
	for i, c := range chapters {
		d := pageData{Title: c.Title, Chapters: chapters, Current: c, Sidebar: true}
		d.BodyHead, d.BodyTail = splitAtExercises(c.HTML)
		if i > 0 {
			d.Prev = chapters[i-1]
		}
		if i+1 < len(chapters) {
			d.Next = chapters[i+1]
		}
		if ps.chapters[c.Slug], err = exec(chapterT, d); err != nil {
			return nil, err
		}
		ps.chapterData[c.Slug] = d
	}
	return ps, nil
}

func writePage(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (p *pageSet) serveTOC(w http.ResponseWriter, _ *http.Request, wb Workbook) {
	if prog := progressOf(wb); prog != nil {
		p.writeWithProgress(w, p.tocT, pageData{Title: "Contents", Chapters: p.allChapters, Progress: prog})
		return
	}
	writePage(w, http.StatusOK, p.toc)
}

func (p *pageSet) serveChapter(w http.ResponseWriter, r *http.Request, wb Workbook, slug string) {
	body, ok := p.chapters[slug]
	if !ok {
		p.serveNotFound(w, r)
		return
	}
	if prog := progressOf(wb); prog != nil {
		d := p.chapterData[slug]
		d.Progress = prog
		p.writeWithProgress(w, p.chapterT, d)
		return
	}
	writePage(w, http.StatusOK, body)
}

// progressOf reads the learner's progress now; nil without a workbook.
func progressOf(wb Workbook) map[string]*ChapterProgress {
	if wb == nil {
		return nil
	}
	exs := wb.Exercises()
	if exs == nil {
		return nil
	}
	return progressByChapter(exs)
}

// writeWithProgress renders a page that shows the learner's progress: never
// cached, since a check in another terminal changes it.
func (p *pageSet) writeWithProgress(w http.ResponseWriter, t *template.Template, d pageData) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", d); err != nil {
		http.Error(w, "500 the page did not render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

func (p *pageSet) serveNotFound(w http.ResponseWriter, _ *http.Request) {
	writePage(w, http.StatusNotFound, p.notFound)
}

// serveManifest answers GET /api/v1/manifest: what the widgets know of the machine
// (package web/manifest). Browsers revalidate it on every page, so a new binary's
// manifest is never mixed with an old one; the answer is then a 304.
func serveManifest(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", manifest.ETag())
	http.ServeContent(w, r, "manifest.json", time.Time{}, bytes.NewReader(manifest.JSON()))
}

// serveSource answers GET /source/PATH with the text of one Go source file
// (never a test file), for the widget's source view.
func serveSource(w http.ResponseWriter, r *http.Request, src fs.FS, name string) {
	if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(src, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b)
}

// serveExercise answers GET /exercises/ID and /runs/ID with page t, rendered
// now from the workspace.
func (p *pageSet) serveExercise(w http.ResponseWriter, r *http.Request, wb Workbook, id string, t *template.Template) {
	ex, ok := wb.Exercise(id)
	if !ok {
		p.serveNotFound(w, r)
		return
	}
	var b bytes.Buffer
	title := ex.Title
	if t == p.run {
		title = "Your run: " + ex.Title
	}
	if err := t.ExecuteTemplate(&b, "layout", pageData{Title: title, Chapters: p.allChapters, Sidebar: true, Exercise: ex}); err != nil {
		http.Error(w, "500 the page did not render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// serveLearnerSource answers GET /source/exercises/ID/FILE with a file the
// learner edits, read from the workspace now (never cached: it changes).
func serveLearnerSource(w http.ResponseWriter, r *http.Request, wb Workbook, name string) {
	if !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	b, err := wb.SourceFile(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
