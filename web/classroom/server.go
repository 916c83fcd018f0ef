// Package classroom is `saccbook classroom`: the book served to a class, with a
// roster, the students' progress as their computers report it, the bug hunts
// graded with the course's key, recorded runs the students share, a live
// dashboard and a broadcast that every student's widget follows.
//
// Every request needs an identity: the instructor's token (from the
// instructor URL, then a cookie) or a student's session (a cookie set when
// they join, or the bearer token `saccbook join` keeps). Without one the
// answer is 401; a student asking for the instructor's pages gets 403. A
// student's name is how the class sees them, not a proof of who they are:
// whoever has the join URL can join under any free name.
package classroom

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
)

// Config is what a classroom serves.
type Config struct {
	Course *Course
	Store  *Store
	// Book is the book's configuration (chapters, static files, sources); the
	// classroom sets its Live, AllowedHosts and Logger, and serves no
	// workspace of its own: the students' work stays on their computers.
	Book web.Config
	// AllowedHosts are the Host names the server answers to (web.Config's
	// rule); empty means loopback only.
	AllowedHosts []string
	// Secure marks the cookies Secure: the server is behind TLS.
	Secure bool
	// Exercises are the exercise ids the dashboard lists before anyone has
	// reported one, in order; reported ids are added after them.
	Exercises []string
	Logger    *slog.Logger
	Now       func() time.Time // nil: time.Now
	Limits    Limits
}

// Limits are the per-client caps. A client is a student, the instructor, or
// (before either is known) a remote address.
type Limits struct {
	Rate    float64 // requests per second, sustained; 0: 50
	Burst   int     // requests at once; 0: 400 (a chapter page and its assets)
	Sockets int     // websockets open at once per identity; 0: 16
	// Anonymous is the rate for requests without an identity, per remote
	// address (join pages, refusals); 0: 20 per second, burst 100.
	Anonymous float64
}

func (l Limits) withDefaults() Limits {
	if l.Rate <= 0 {
		l.Rate = 50
	}
	if l.Burst <= 0 {
		l.Burst = 400
	}
	if l.Sockets <= 0 {
		l.Sockets = 16
	}
	if l.Anonymous <= 0 {
		l.Anonymous = 20
	}
	return l
}

// Body limits: a report post, and a shared run (a record holds at most 20 000
// events of a few hundred bytes each).
const (
	maxBody      = 256 << 10
	maxShareBody = 16 << 20
)

// The cookies.
const (
	studentCookie    = "saccbook_student"
	instructorCookie = "saccbook_instructor"
)

//go:embed templates/*.html assets/*
var files embed.FS

// Server is a running classroom. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	store   *Store
	course  *Course
	hostOK  func(string) bool
	origins []string // the websockets' Origin patterns, from the allowed hosts
	pages   *template.Template
	book    http.Handler
	// assetBase is where the book serves its static files (/static/VERSION/).
	assetBase string
	students  *live.Hub // the students' widgets: no recorded runs
	teacher   *live.Hub // the instructor's: the shared runs
	cast      *broadcast
	limits    *limiter
	handler   http.Handler

	mu       sync.Mutex
	sessions map[string]*Student // by token hash, hex: a cache of the roster
	grading  sync.Mutex          // one hunt graded at a time: grading replays runs
}

// New builds a classroom.
func New(cfg Config) (*Server, error) {
	if cfg.Course == nil || cfg.Store == nil {
		return nil, errors.New("classroom: a course and its store are required")
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, store: cfg.Store, course: cfg.Course,
		sessions: map[string]*Student{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	if s.hostOK, err = web.HostCheck(cfg.AllowedHosts); err != nil {
		return nil, err
	}
	base, err := web.AssetBase(cfg.Book.Static)
	if err != nil {
		return nil, err
	}
	s.assetBase = base
	funcs := template.FuncMap{"asset": func(name string) string { return base + name }}
	if s.pages, err = template.New("").Funcs(funcs).ParseFS(files, "templates/*.html"); err != nil {
		return nil, fmt.Errorf("classroom: %w", err)
	}
	origins := web.OriginPatterns(cfg.AllowedHosts)
	s.origins = origins
	s.students = live.New(live.Options{AllowedOrigins: origins, Logger: s.log})
	s.teacher = live.New(live.Options{AllowedOrigins: origins, Logger: s.log, Recorded: s.sharedRun})
	s.cast = newBroadcast(s.log)
	s.limits = newLimiter(cfg.Limits.withDefaults(), s.now)

	book := cfg.Book
	book.Live = liveRoutes{s}
	book.AllowedHosts = cfg.AllowedHosts
	book.Logger = s.log
	book.Hunts, book.Workbook = nil, nil
	if s.book, err = web.NewHandler(book); err != nil {
		s.students.Close()
		s.teacher.Close()
		return nil, err
	}
	s.handler = s.routes()
	return s, nil
}

// Handler is the classroom's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends every live session and the broadcast.
func (s *Server) Close() error {
	s.cast.close()
	return errors.Join(s.students.Close(), s.teacher.Close())
}

// InstructorURL and JoinURL are the addresses to hand out, on base
// ("http://host:port").
func (s *Server) InstructorURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/class/?token=" + s.course.Instructor
}
func (s *Server) JoinURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/join/" + s.course.JoinCode
}

// ---------------------------------------------------------------------------
// Identities

// identity is who a request comes from.
type identity struct {
	instructor bool
	student    *Student
}

func (id identity) known() bool { return id.instructor || id.student != nil }

// key is the identity as a limiter's client.
func (id identity) key(r *http.Request) string {
	switch {
	case id.instructor:
		return "instructor"
	case id.student != nil:
		return fmt.Sprintf("student %d", id.student.ID)
	}
	return "addr " + remoteHost(r)
}

type ctxKey struct{}

func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(ctxKey{}).(identity)
	return id
}

// identify finds who sent r: the instructor's token or a student's session,
// from a cookie or an Authorization bearer token.
func (s *Server) identify(r *http.Request) identity {
	var tokens []string
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		tokens = append(tokens, strings.TrimSpace(auth))
	}
	if c, err := r.Cookie(instructorCookie); err == nil {
		tokens = append(tokens, c.Value)
	}
	if c, err := r.Cookie(studentCookie); err == nil {
		tokens = append(tokens, c.Value)
	}
	for _, t := range tokens {
		if s.isInstructor(t) {
			return identity{instructor: true}
		}
	}
	for _, t := range tokens {
		if st := s.studentOf(r.Context(), t); st != nil {
			return identity{student: st}
		}
	}
	return identity{}
}

func (s *Server) isInstructor(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.course.Instructor)) == 1
}

// studentOf is the student a session token belongs to, or nil.
func (s *Server) studentOf(ctx context.Context, token string) *Student {
	if len(token) != 64 {
		return nil
	}
	h := fmt.Sprintf("%x", tokenHash(token))
	s.mu.Lock()
	st, ok := s.sessions[h]
	s.mu.Unlock()
	if ok {
		return st
	}
	st, err := s.store.ByToken(ctx, token)
	if err != nil {
		s.log.Error("classroom: roster", "err", err)
		return nil
	}
	if st != nil {
		s.mu.Lock()
		s.sessions[h] = st
		s.mu.Unlock()
	}
	return st
}

// ---------------------------------------------------------------------------
// Routes

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.guard)
	// Joining: the join code in the path is what lets these through.
	r.Get("/join/{code}", s.serveJoinForm)
	r.Get("/join/{code}/style/{name}", s.serveJoinStyle)
	r.Post("/join/{code}", s.serveJoin)
	r.Post("/api/class/join", s.serveJoinAPI)

	// The instructor's.
	r.Group(func(r chi.Router) {
		r.Use(s.require(true))
		r.Get("/class/", s.serveDashboard)
		r.Get("/class/dashboard.json", s.serveDashboardJSON)
		r.Get("/class/export.csv", s.serveCSV)
		r.Get("/class/broadcast", s.servePage("broadcast.html", "Broadcast"))
		r.Get("/class/runs/{id}", s.serveSharedRun)
		r.Get("/ws/class/lead", s.socketed(s.cast.serveLead))
	})
	// Everybody's: the book, following the broadcast, and the students' API.
	r.Group(func(r chi.Router) {
		r.Use(s.require(false))
		r.Get("/class", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/class/", http.StatusFound) })
		r.Get("/follow", s.servePage("follow.html", "Follow the lecture"))
		r.Get("/share", s.servePage("share.html", "Share my run"))
		r.Get("/class-assets/{name}", serveAsset)
		r.Get("/ws/class/follow", s.socketed(s.cast.serveFollow))
		r.Post("/api/class/report", s.serveReport)
		r.Post("/api/class/share", s.serveShare)
		r.Get("/api/class/me", s.serveMe)
		r.NotFound(s.book.ServeHTTP)
		r.MethodNotAllowed(s.book.ServeHTTP)
	})
	return r
}

// guard is what every request passes first: the Host allowlist, the
// instructor URL's token turned into a cookie, the identity, and the
// client's rate.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w)
		if !s.hostOK(r.Host) {
			http.Error(w, fmt.Sprintf("403 forbidden: this saccbook classroom does not answer to host %q", r.Host), http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
			if !s.isInstructor(t) {
				s.refuse(w, r, http.StatusUnauthorized)
				return
			}
			// The token goes into a cookie and out of the address bar (and
			// of the history and any Referer).
			http.SetCookie(w, s.cookie(instructorCookie, t))
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		id := s.identify(r)
		if !s.limits.allow(id.key(r), id.known()) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "429 too many requests: slow down", http.StatusTooManyRequests)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	})
}

func bodyLimit(r *http.Request) int64 {
	if r.URL.Path == "/api/class/share" {
		return maxShareBody
	}
	return maxBody
}

// require lets through the instructor, and students too unless only the
// instructor may come.
func (s *Server) require(instructorOnly bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := identityOf(r)
			switch {
			case !id.known():
				s.refuse(w, r, http.StatusUnauthorized)
			case instructorOnly && !id.instructor:
				s.refuse(w, r, http.StatusForbidden)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// refuse answers 401 (nobody) or 403 (a student at the instructor's door).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int) {
	msg := "401 unauthorized: open the join URL your instructor gave you (or saccbook join URL --name NAME)"
	if code == http.StatusForbidden {
		msg = "403 forbidden: this page is the instructor's"
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/ws/") || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Error(w, msg, code)
		return
	}
	s.render(w, code, "denied.html", pageData{Title: http.StatusText(code), Message: msg, Bare: code == http.StatusUnauthorized})
}

// cookie is a session cookie. Lax, not Strict: a student who follows a link
// to the class from a mail or a chat arrives with their session; a page on
// another site still cannot post with it.
func (s *Server) cookie(name, value string) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.cfg.Secure,
		SameSite: http.SameSiteLaxMode, MaxAge: 180 * 24 * 3600}
}

// setHeaders are the book's security headers, for the classroom's own pages
// too.
func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// socketed counts a broadcast socket against the client's cap.
func (s *Server) socketed(h func(http.ResponseWriter, *http.Request, []string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if release, ok := s.limits.socket(w, r); ok {
			defer release()
			h(w, r, s.origins)
		}
	}
}

// liveRoutes gives each identity its hub: the instructor's plays the shared
// runs, the students' has none, so no student reaches another's run.
type liveRoutes struct{ s *Server }

func (l liveRoutes) hub(r *http.Request) *live.Hub {
	if identityOf(r).instructor {
		return l.s.teacher
	}
	return l.s.students
}

func (l liveRoutes) ServeSession(w http.ResponseWriter, r *http.Request) {
	if release, ok := l.s.limits.socket(w, r); ok {
		defer release()
		l.hub(r).ServeSession(w, r)
	}
}

func (l liveRoutes) ServeShared(w http.ResponseWriter, r *http.Request, name string) {
	if release, ok := l.s.limits.socket(w, r); ok {
		defer release()
		l.hub(r).ServeShared(w, r, name)
	}
}

// ---------------------------------------------------------------------------
// Pages

type pageData struct {
	Title     string
	Message   string
	Code      string
	Name      string
	Student   *Student
	Dashboard *Dashboard
	Share     *Share
	ShareBy   string
	FailSeq   uint64 // where the shared run failed: its widget opens there
	Shares    []ShareRow
	// Bare: the page links no style sheet or script, for a visitor with no
	// session, who would be refused them.
	Bare bool
}

func (s *Server) render(w http.ResponseWriter, code int, page string, d pageData) {
	var b strings.Builder
	if err := s.pages.ExecuteTemplate(&b, page, d); err != nil {
		s.log.Error("classroom: page", "page", page, "err", err)
		http.Error(w, "500 the page did not render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

func (s *Server) servePage(page, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.render(w, http.StatusOK, page, pageData{Title: title, Student: identityOf(r).student})
	}
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	b, err := fs.ReadFile(files, "assets/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// ---------------------------------------------------------------------------
// Joining

func (s *Server) joinCodeOK(code string) bool {
	return subtle.ConstantTimeCompare([]byte(code), []byte(s.course.JoinCode)) == 1
}

func (s *Server) serveJoinForm(w http.ResponseWriter, r *http.Request) {
	code := chi.URLParam(r, "code")
	if !s.joinCodeOK(code) {
		s.refuse(w, r, http.StatusUnauthorized)
		return
	}
	// With no-referrer a browser's form post says Origin: null; same-origin
	// makes it send the page's own, which serveJoin checks.
	w.Header().Set("Referrer-Policy", "same-origin")
	s.render(w, http.StatusOK, "join.html", pageData{Title: "Join the class", Code: code, Student: identityOf(r).student})
}

// joinStyles are the style sheets the join page links under its own code: a
// visitor who has not joined yet has no session for the book's assets, and a
// page without its styles is the first thing a student would see.
// It has no code block, so the highlighter's sheet is not among them.
var joinStyles = map[string]bool{"saccbook.css": true, "classroom.css": true}

// serveJoinStyle serves one of joinStyles to whoever has the join code, as
// the join page itself is.
func (s *Server) serveJoinStyle(w http.ResponseWriter, r *http.Request) {
	if !s.joinCodeOK(chi.URLParam(r, "code")) {
		s.refuse(w, r, http.StatusUnauthorized)
		return
	}
	name := chi.URLParam(r, "name")
	switch {
	case !joinStyles[name]:
		http.NotFound(w, r)
	case name == "classroom.css":
		serveAsset(w, r)
	default:
		// The book's own sheet, as the book serves it; a routing context of
		// its own, since this one is the classroom's.
		book := r.Clone(context.WithValue(r.Context(), chi.RouteCtxKey, nil))
		book.URL.Path, book.URL.RawPath = s.assetBase+name, ""
		s.book.ServeHTTP(w, book)
	}
}

func (s *Server) serveJoin(w http.ResponseWriter, r *http.Request) {
	code := chi.URLParam(r, "code")
	if !s.joinCodeOK(code) {
		s.refuse(w, r, http.StatusUnauthorized)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.sameOrigin(o, r) {
		http.Error(w, "403 forbidden: a join comes from the join page", http.StatusForbidden)
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	st, token, err := s.join(r.Context(), name)
	if err != nil {
		w.Header().Set("Referrer-Policy", "same-origin")
		s.render(w, http.StatusBadRequest, "join.html", pageData{Title: "Join the class", Code: code, Name: name, Message: err.Error()})
		return
	}
	http.SetCookie(w, s.cookie(studentCookie, token))
	s.log.Info("classroom: joined", "student", st.ID, "name", st.Name)
	http.Redirect(w, r, "/follow", http.StatusSeeOther)
}

// sameOrigin checks a browser's Origin against the request's own host.
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	_, host, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(host, r.Host) && s.hostOK(host)
}

// JoinRequest and JoinAnswer are POST /api/class/join, what saccbook join
// sends and keeps.
type JoinRequest struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

type JoinAnswer struct {
	Student int64  `json:"student"`
	Name    string `json:"name"`
	Learner string `json:"learner"`
	Token   string `json:"token"`
	// Key is the course key file (workbook.HuntKey's form, without a
	// learner): the student's hunts are their variants of the course's.
	Key json.RawMessage `json:"key"`
}

func (s *Server) serveJoinAPI(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !s.joinCodeOK(req.Code) {
		http.Error(w, "401 unauthorized: that is not this class's join code", http.StatusUnauthorized)
		return
	}
	st, token, err := s.join(r.Context(), strings.TrimSpace(req.Name))
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrNameTaken) {
			code = http.StatusConflict
		}
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, JoinAnswer{Student: st.ID, Name: st.Name, Learner: st.Learner, Token: token, Key: s.course.Key.Marshal()})
}

// join adds a student under name, with a new session token.
func (s *Server) join(ctx context.Context, name string) (*Student, string, error) {
	if err := validName(name); err != nil {
		return nil, "", err
	}
	token, err := newToken(nil)
	if err != nil {
		return nil, "", err
	}
	// The learner id is the name: unique in the course, and what the
	// instructor sees beside every variant.
	st, err := s.store.Join(ctx, name, name, token, s.now())
	if err != nil {
		return nil, "", err
	}
	return st, token, nil
}

func validName(name string) error {
	if name == "" || len(name) > 40 {
		return errors.New("a name is 1 to 40 characters")
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f || r == ',' || r == '"' {
			return errors.New("a name has no control characters, commas or quotes")
		}
	}
	return nil
}

func (s *Server) serveMe(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	if id.student == nil {
		writeJSON(w, map[string]any{"instructor": true})
		return
	}
	writeJSON(w, map[string]any{"student": id.student.ID, "name": id.student.Name, "learner": id.student.Learner})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// ---------------------------------------------------------------------------
// Reports

// ReportAnswer is what POST /api/class/report answers: how many were new, and
// the verdicts of the hunt answers among them.
type ReportAnswer struct {
	Added   int       `json:"added"`
	Verdict []Verdict `json:"verdicts,omitempty"`
}

// Verdict is the server's grading of one hunt answer.
type Verdict struct {
	ID      string `json:"id"`
	Hunt    int    `json:"hunt"`
	Solved  bool   `json:"solved"`
	Message string `json:"message"`
}

func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	st := identityOf(r).student
	if st == nil {
		http.Error(w, "403 forbidden: reports come from students", http.StatusForbidden)
		return
	}
	var rs []Report
	if err := json.NewDecoder(r.Body).Decode(&rs); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(rs) == 0 || len(rs) > maxReportsPerPost {
		http.Error(w, fmt.Sprintf("400 bad request: 1 to %d reports at a time", maxReportsPerPost), http.StatusBadRequest)
		return
	}
	for i := range rs {
		if err := rs[i].check(); err != nil {
			http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	var ans ReportAnswer
	for _, rep := range rs {
		if rep.Answer == nil {
			continue
		}
		v, err := s.grade(r.Context(), st, rep)
		if err != nil {
			http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		ans.Verdict = append(ans.Verdict, v)
	}
	n, err := s.store.AddReports(r.Context(), st.ID, rs, s.now())
	if err != nil {
		s.log.Error("classroom: reports", "err", err)
		http.Error(w, "500 the reports were not recorded", http.StatusInternalServerError)
		return
	}
	ans.Added = n
	writeJSON(w, ans)
}

// grade grades a hunt answer with the course key and the student's learner
// id, as saccbook hunt submit does on their computer, and records it.
func (s *Server) grade(ctx context.Context, st *Student, rep Report) (Verdict, error) {
	var n int
	if _, err := fmt.Sscanf(rep.Item, "%d", &n); err != nil || fmt.Sprint(n) != rep.Item {
		return Verdict{}, fmt.Errorf("report %q: hunt %q is no number", rep.ID, rep.Item)
	}
	h, err := hunt.Lookup(n)
	if err != nil {
		return Verdict{}, err
	}
	sub, err := hunt.ParseSubmission(rep.Answer.Bug, rep.Answer.Event)
	if err != nil {
		return Verdict{}, err
	}
	s.grading.Lock()
	vd, err := h.For(s.course.Key.Key, st.Learner).Grade(sub)
	s.grading.Unlock()
	if err != nil {
		return Verdict{}, fmt.Errorf("grade hunt %d: %w", n, err)
	}
	v := Verdict{ID: rep.ID, Hunt: n, Solved: vd.Solved(), Message: vd.Message(sub)}
	if _, err := s.store.AddSubmission(ctx, Submission{Student: st.ID, ID: rep.ID, Hunt: n, Bug: rep.Answer.Bug,
		Event: rep.Answer.Event, Solved: v.Solved, Message: v.Message, At: rep.At}); err != nil {
		return Verdict{}, err
	}
	return v, nil
}

// ---------------------------------------------------------------------------
// Shared runs

// ShareRequest is POST /api/class/share: an exercise's recorded run.
type ShareRequest struct {
	Exercise string          `json:"exercise"`
	Record   json.RawMessage `json:"record"` // exercises/.runs/ID.json
}

func (s *Server) serveShare(w http.ResponseWriter, r *http.Request) {
	st := identityOf(r).student
	if st == nil {
		http.Error(w, "403 forbidden: runs are shared by students", http.StatusForbidden)
		return
	}
	var req ShareRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := recordingOf(req.Exercise, req.Record); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, err := newToken(nil)
	if err != nil {
		http.Error(w, "500 "+err.Error(), http.StatusInternalServerError)
		return
	}
	// The id says whose exercise it is (the widget shows it as the run's
	// name), when the exercise's name is a plain slug.
	id = id[:16]
	if strings.Trim(req.Exercise, "abcdefghijklmnopqrstuvwxyz0123456789-") == "" {
		id = req.Exercise + "." + id
	}
	if err := s.store.AddShare(r.Context(), Share{ID: id, Student: st.ID, Exercise: req.Exercise, Record: req.Record, At: s.now()}); err != nil {
		s.log.Error("classroom: share", "err", err)
		http.Error(w, "500 the run was not recorded", http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]string{"id": id})
}

// sharedRun is the instructor's hub's source of recorded runs: a shared run,
// by its id.
func (s *Server) sharedRun(id string) (*live.Recording, error) {
	sh, err := s.store.Share(context.Background(), id)
	if err != nil {
		return nil, err
	}
	if sh == nil {
		return nil, fmt.Errorf("no shared run %q", id)
	}
	return recordingOf(sh.Exercise, sh.Record)
}

func (s *Server) serveSharedRun(w http.ResponseWriter, r *http.Request) {
	sh, err := s.store.Share(r.Context(), chi.URLParam(r, "id"))
	if err != nil || sh == nil {
		http.NotFound(w, r)
		return
	}
	by := ""
	if st, err := s.store.ByID(r.Context(), sh.Student); err == nil && st != nil {
		by = st.Name
	}
	d := pageData{Title: "Shared run of " + sh.Exercise, Share: sh, ShareBy: by}
	if rec, err := recordingOf(sh.Exercise, sh.Record); err == nil {
		d.FailSeq = rec.FailSeq
	}
	s.render(w, http.StatusOK, "run.html", d)
}
