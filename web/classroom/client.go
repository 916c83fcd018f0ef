package classroom

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/saccbook/saccbook/workbook"
)

// The student's side: `saccbook join` keeps the enrolment in the workspace,
// and every report goes first into an outbox there, then to the server. A
// report that cannot be sent (the server is down, the laptop offline) stays
// in the outbox and goes with the next one.

// Files in the student's workspace, relative to its root.
const (
	EnrolmentFile = "exercises/.saccbook-class.json"
	OutboxDir     = "exercises/.saccbook-class-outbox"
)

// Enrolment is a student's membership of a class.
type Enrolment struct {
	Note    string `json:"note"`
	Server  string `json:"server"` // scheme://host:port
	Student int64  `json:"student"`
	Name    string `json:"name"`
	Learner string `json:"learner"`
	Token   string `json:"token"`
}

const enrolmentNote = "saccbook's membership of a class: your check, watch and hunt results are reported to this server (never your code). The token is your session: keep it to yourself. Delete this file to leave the class."

// Join joins the class whose join URL is joinURL, under name, and returns the
// enrolment and the course's hunt key (for the student's learner id).
func Join(ctx context.Context, hc *http.Client, joinURL, name string) (*Enrolment, *workbook.HuntKey, error) {
	u, err := url.Parse(joinURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("join URL %q: want the http(s)://host:port/join/CODE address the instructor gave", joinURL)
	}
	code, ok := strings.CutPrefix(u.Path, "/join/")
	if !ok || code == "" || strings.Contains(code, "/") {
		return nil, nil, fmt.Errorf("join URL %q: want the http(s)://host:port/join/CODE address the instructor gave", joinURL)
	}
	server := u.Scheme + "://" + u.Host
	body, _ := json.Marshal(JoinRequest{Code: code, Name: name})
	var ans JoinAnswer
	if err := post(ctx, hc, server+"/api/class/join", "", body, &ans); err != nil {
		return nil, nil, fmt.Errorf("join %s: %w", server, err)
	}
	k, err := workbook.ParseHuntKey(ans.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("join %s: the course key: %w", server, err)
	}
	k.Learner, k.Course = ans.Learner, true
	return &Enrolment{Note: enrolmentNote, Server: server, Student: ans.Student, Name: ans.Name, Learner: ans.Learner, Token: ans.Token}, k, nil
}

// SaveEnrolment writes the enrolment, readable by the student only.
func SaveEnrolment(root string, e *Enrolment) error {
	data, _ := json.MarshalIndent(e, "", "  ")
	path := filepath.Join(root, EnrolmentFile)
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save the enrolment: %w", err)
	}
	return nil
}

// LoadEnrolment reads the enrolment; an error wrapping os.ErrNotExist when
// the workspace has joined no class.
func LoadEnrolment(root string) (*Enrolment, error) {
	data, err := os.ReadFile(filepath.Join(root, EnrolmentFile))
	if err != nil {
		return nil, err
	}
	var e Enrolment
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to leave the class)", EnrolmentFile, err)
	}
	if e.Server == "" || e.Token == "" {
		return nil, fmt.Errorf("%s: no server or token (delete it, then saccbook join again)", EnrolmentFile)
	}
	return &e, nil
}

// NewReportID makes a report's id.
func NewReportID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Queue puts reports in the workspace's outbox. Each is a file named by when
// it happened, so the outbox sends them in order.
func Queue(root string, rs ...Report) error {
	dir := filepath.Join(root, OutboxDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("the class outbox: %w", err)
	}
	for _, r := range rs {
		if r.ID == "" {
			r.ID = NewReportID()
		}
		data, _ := json.Marshal(r)
		name := fmt.Sprintf("%020d-%s.json", r.At.UnixNano(), r.ID)
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("the class outbox: %w", err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("the class outbox: %w", err)
		}
	}
	return nil
}

// Waiting is how many reports the outbox holds.
func Waiting(root string) int {
	names, _ := outbox(root)
	return len(names)
}

func outbox(root string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, OutboxDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// Send sends everything in the outbox, oldest first, and removes what the
// server has recorded. It returns how many were sent and the server's
// verdicts on hunt answers among them; on an error, what was not sent stays.
func Send(ctx context.Context, hc *http.Client, root string, e *Enrolment) (int, []Verdict, error) {
	names, err := outbox(root)
	if err != nil {
		return 0, nil, fmt.Errorf("the class outbox: %w", err)
	}
	dir := filepath.Join(root, OutboxDir)
	sent := 0
	var verdicts []Verdict
	for len(names) > 0 {
		batch := names[:min(len(names), maxReportsPerPost)]
		names = names[len(batch):]
		var rs []json.RawMessage
		var files []string
		for _, name := range batch {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			if !json.Valid(data) {
				// A torn file helps nobody and would block the rest.
				_ = os.Remove(filepath.Join(dir, name))
				continue
			}
			rs = append(rs, data)
			files = append(files, name)
		}
		if len(rs) == 0 {
			continue
		}
		body, _ := json.Marshal(rs)
		var ans ReportAnswer
		if err := post(ctx, hc, e.Server+"/api/class/report", e.Token, body, &ans); err != nil {
			// A batch the server calls malformed will never be taken: it
			// goes, so that it holds up nothing after it.
			var se *StatusError
			if errors.As(err, &se) && se.Code == http.StatusBadRequest {
				for _, name := range files {
					_ = os.Remove(filepath.Join(dir, name))
				}
			}
			return sent, verdicts, err
		}
		for _, name := range files {
			_ = os.Remove(filepath.Join(dir, name))
		}
		sent += len(files)
		verdicts = append(verdicts, ans.Verdict...)
	}
	return sent, verdicts, nil
}

// ShareRun sends an exercise's recorded run to the instructor and returns
// its id there.
func ShareRun(ctx context.Context, hc *http.Client, e *Enrolment, exercise string, record []byte) (string, error) {
	body, _ := json.Marshal(ShareRequest{Exercise: exercise, Record: record})
	var ans struct {
		ID string `json:"id"`
	}
	if err := post(ctx, hc, e.Server+"/api/class/share", e.Token, body, &ans); err != nil {
		return "", fmt.Errorf("share the run of %s: %w", exercise, err)
	}
	return ans.ID, nil
}

// post sends a JSON body and decodes a JSON answer; an answer that is not
// 200 is an error with the server's words.
func post(ctx context.Context, hc *http.Client, url, token string, body []byte, out any) error {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(data))}
	}
	return json.Unmarshal(data, out)
}

// StatusError is a server's refusal.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("the server answered %d: %s", e.Code, e.Msg) }
