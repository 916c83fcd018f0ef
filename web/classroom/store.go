package classroom

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the pure-Go driver: no cgo, one binary
)

// Store is the course on disk: the roster, every report, the hunt submissions
// and the shared runs, in one SQLite database. Every change is committed before
// it is acknowledged, so a server stopped at any moment has lost nothing it
// answered for.
type Store struct {
	db *sql.DB
}

// ErrNameTaken is returned by Join for a name another student has.
var ErrNameTaken = errors.New("that name is taken: pick another")

// schema is the course's tables. Reports are kept whole (the dashboard is a
// query over them) and each is recorded once: a report sent again after an
// outage has the same (student, id).
const schema = `
CREATE TABLE IF NOT EXISTS students (
	id      INTEGER PRIMARY KEY,
	name    TEXT NOT NULL UNIQUE,
	learner TEXT NOT NULL UNIQUE,
	token   BLOB NOT NULL UNIQUE,  -- SHA-256 of the session token
	joined  INTEGER NOT NULL       -- Unix milliseconds
);
CREATE TABLE IF NOT EXISTS reports (
	student      INTEGER NOT NULL REFERENCES students(id),
	id           TEXT NOT NULL,
	kind         TEXT NOT NULL,
	item         TEXT NOT NULL,
	status       TEXT NOT NULL,
	ran          INTEGER NOT NULL,
	failed       INTEGER NOT NULL,
	skipped      INTEGER NOT NULL,
	score        INTEGER NOT NULL,
	max          INTEGER NOT NULL,
	failing_test TEXT NOT NULL,
	event_kind   TEXT NOT NULL,
	summary      TEXT NOT NULL,
	at           INTEGER NOT NULL,  -- when it happened, on the student's computer
	received     INTEGER NOT NULL,  -- when the server had it
	PRIMARY KEY (student, id)
);
CREATE INDEX IF NOT EXISTS reports_item ON reports(student, kind, item, at);
CREATE TABLE IF NOT EXISTS submissions (
	student INTEGER NOT NULL REFERENCES students(id),
	id      TEXT NOT NULL,
	hunt    INTEGER NOT NULL,
	bug     TEXT NOT NULL,
	event   TEXT NOT NULL,
	solved  INTEGER NOT NULL,
	message TEXT NOT NULL,
	at      INTEGER NOT NULL,
	PRIMARY KEY (student, id)
);
CREATE TABLE IF NOT EXISTS shares (
	id       TEXT PRIMARY KEY,
	student  INTEGER NOT NULL REFERENCES students(id),
	exercise TEXT NOT NULL,
	record   BLOB NOT NULL,
	at       INTEGER NOT NULL
);
`

// OpenStore opens (or makes) the course database in dir.
func OpenStore(dir string) (*Store, error) {
	path := filepath.Join(dir, "course.db")
	// The roster holds the sessions' hashes: the instructor's alone to read
	// (SQLite gives its journal files the database's mode).
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	// WAL lets the dashboard read while reports are written; NORMAL
	// synchronous is durable across a crash of the server (not of the
	// machine's power), which is what a restart needs; the busy timeout makes
	// concurrent writers queue rather than fail.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("course database %s: %w", path, err)
	}
	// One writer at a time is SQLite's rule; one connection makes it ours too,
	// so a burst of reports queues in Go instead of spinning on SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("course database %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Student is one member of the roster.
type Student struct {
	ID      int64
	Name    string
	Learner string // the learner id their hunt variants come from
	Joined  time.Time
}

func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Join adds a student with the given session token; ErrNameTaken when the
// name is somebody's already.
func (s *Store) Join(ctx context.Context, name, learner, token string, now time.Time) (*Student, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO students(name, learner, token, joined) VALUES(?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, name, learner, tokenHash(token), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("join %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, ErrNameTaken
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("join %q: %w", name, err)
	}
	return &Student{ID: id, Name: name, Learner: learner, Joined: now}, nil
}

// ByToken finds the student a session token belongs to; nil when none does.
func (s *Store) ByToken(ctx context.Context, token string) (*Student, error) {
	return s.one(ctx, `SELECT id, name, learner, joined FROM students WHERE token = ?`, tokenHash(token))
}

// ByID finds a student by id; nil when there is none.
func (s *Store) ByID(ctx context.Context, id int64) (*Student, error) {
	return s.one(ctx, `SELECT id, name, learner, joined FROM students WHERE id = ?`, id)
}

func (s *Store) one(ctx context.Context, q string, arg any) (*Student, error) {
	var st Student
	var joined int64
	err := s.db.QueryRowContext(ctx, q, arg).Scan(&st.ID, &st.Name, &st.Learner, &joined)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("roster: %w", err)
	}
	st.Joined = time.UnixMilli(joined)
	return &st, nil
}

// Roster is every student, in the order they joined.
func (s *Store) Roster(ctx context.Context) ([]Student, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, learner, joined FROM students ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("roster: %w", err)
	}
	defer rows.Close()
	var out []Student
	for rows.Next() {
		var st Student
		var joined int64
		if err := rows.Scan(&st.ID, &st.Name, &st.Learner, &joined); err != nil {
			return nil, fmt.Errorf("roster: %w", err)
		}
		st.Joined = time.UnixMilli(joined)
		out = append(out, st)
	}
	return out, rows.Err()
}

// AddReports records a student's reports in one transaction; a report already
// recorded (the same id) is left as it was. It returns how many were new.
func (s *Store) AddReports(ctx context.Context, student int64, rs []Report, now time.Time) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("record reports: %w", err)
	}
	defer tx.Rollback()
	added := 0
	for _, r := range rs {
		res, err := tx.ExecContext(ctx, `INSERT INTO reports(student, id, kind, item, status, ran, failed, skipped, score, max,
			failing_test, event_kind, summary, at, received) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
			student, r.ID, r.Kind, r.Item, r.Status, r.Tests.Ran, r.Tests.Failed, r.Tests.Skipped, r.Score, r.Max,
			r.FailingTest, r.EventKind, r.Summary, r.At.UnixMilli(), now.UnixMilli())
		if err != nil {
			return 0, fmt.Errorf("record report %s: %w", r.ID, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			added++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record reports: %w", err)
	}
	return added, nil
}

// StoredReport is a report with whose it is.
type StoredReport struct {
	Student int64
	Report
	Received time.Time
}

// Reports is every report, oldest first (by when it happened, then by when it
// arrived).
func (s *Store) Reports(ctx context.Context) ([]StoredReport, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT student, id, kind, item, status, ran, failed, skipped, score, max,
		failing_test, event_kind, summary, at, received FROM reports ORDER BY at, received, rowid`)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	defer rows.Close()
	var out []StoredReport
	for rows.Next() {
		var r StoredReport
		var at, rec int64
		if err := rows.Scan(&r.Student, &r.ID, &r.Kind, &r.Item, &r.Status, &r.Tests.Ran, &r.Tests.Failed, &r.Tests.Skipped,
			&r.Score, &r.Max, &r.FailingTest, &r.EventKind, &r.Summary, &at, &rec); err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		r.At, r.Received = time.UnixMilli(at).UTC(), time.UnixMilli(rec).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// Submission is a hunt answer as the server graded it.
type Submission struct {
	Student int64
	ID      string
	Hunt    int
	Bug     string
	Event   string
	Solved  bool
	Message string
	At      time.Time
}

// AddSubmission records a graded answer; false when it was recorded already.
func (s *Store) AddSubmission(ctx context.Context, sub Submission) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO submissions(student, id, hunt, bug, event, solved, message, at)
		VALUES(?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
		sub.Student, sub.ID, sub.Hunt, sub.Bug, sub.Event, sub.Solved, sub.Message, sub.At.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("record the answer to hunt %d: %w", sub.Hunt, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Submissions is every graded answer, oldest first.
func (s *Store) Submissions(ctx context.Context) ([]Submission, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT student, id, hunt, bug, event, solved, message, at FROM submissions ORDER BY at, rowid`)
	if err != nil {
		return nil, fmt.Errorf("submissions: %w", err)
	}
	defer rows.Close()
	var out []Submission
	for rows.Next() {
		var sub Submission
		var at int64
		if err := rows.Scan(&sub.Student, &sub.ID, &sub.Hunt, &sub.Bug, &sub.Event, &sub.Solved, &sub.Message, &at); err != nil {
			return nil, fmt.Errorf("submissions: %w", err)
		}
		sub.At = time.UnixMilli(at).UTC()
		out = append(out, sub)
	}
	return out, rows.Err()
}

// Share is a recorded run a student chose to show the instructor.
type Share struct {
	ID       string
	Student  int64
	Exercise string
	Record   []byte // the run record, as exercises/.runs/ID.json holds it
	At       time.Time
}

// AddShare records a shared run.
func (s *Store) AddShare(ctx context.Context, sh Share) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO shares(id, student, exercise, record, at) VALUES(?,?,?,?,?)`,
		sh.ID, sh.Student, sh.Exercise, sh.Record, sh.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("record the shared run of %s: %w", sh.Exercise, err)
	}
	return nil
}

// Share finds a shared run by id; nil when there is none.
func (s *Store) Share(ctx context.Context, id string) (*Share, error) {
	var sh Share
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT id, student, exercise, record, at FROM shares WHERE id = ?`, id).
		Scan(&sh.ID, &sh.Student, &sh.Exercise, &sh.Record, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shared run %s: %w", id, err)
	}
	sh.At = time.UnixMilli(at).UTC()
	return &sh, nil
}

// Shares lists the shared runs without their records, newest first.
func (s *Store) Shares(ctx context.Context) ([]Share, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, student, exercise, at FROM shares ORDER BY at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("shared runs: %w", err)
	}
	defer rows.Close()
	var out []Share
	for rows.Next() {
		var sh Share
		var at int64
		if err := rows.Scan(&sh.ID, &sh.Student, &sh.Exercise, &at); err != nil {
			return nil, fmt.Errorf("shared runs: %w", err)
		}
		sh.At = time.UnixMilli(at).UTC()
		out = append(out, sh)
	}
	return out, rows.Err()
}
