package workbook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RunsDir holds the record each exercise run leaves (exercises/.runs/ID.json),
// relative to the root; package exercises/internal/check writes them when a
// test ends, and `saccbook serve` replays them (docs/PROTOCOL.md).
const RunsDir = "exercises/.runs"

// ServeAddrFile holds the address of the running `saccbook serve`, relative to
// the root, so that a failing exercise can link to its run there.
const ServeAddrFile = "exercises/.saccbook-serve"

// RunRecord is a recorded exercise run, as check writes it.
type RunRecord struct {
	Exercise string            `json:"exercise"`
	Tests    []RecordedTest    `json:"tests"`
	Test     string            `json:"test"`     // the test whose machine the events are from
	Failed   bool              `json:"failed"`   // that test failed
	Message  string            `json:"message"`  // its first failure message
	FailSeq  uint64            `json:"fail_seq"` // the event it failed at
	FromSeq  uint64            `json:"from_seq"` // the first event of the learner's code
	Dropped  int               `json:"dropped"`
	Events   []json.RawMessage `json:"events"`
}

// RecordedTest is one test of a recorded run.
type RecordedTest struct {
	Name   string `json:"name"`
	Failed bool   `json:"failed"`
}

// LastRun reads the record of ex's last run; os.ErrNotExist when it has none.
func (b *Book) LastRun(ex *Exercise) (*RunRecord, error) {
	data, err := os.ReadFile(filepath.Join(b.Root, RunsDir, ex.ID+".json"))
	if err != nil {
		return nil, err
	}
	var r RunRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the record of %s's last run: %w", ex.ID, err)
	}
	if r.Exercise != ex.ID {
		return nil, fmt.Errorf("the record of %s's last run names %q", ex.ID, r.Exercise)
	}
	return &r, nil
}

// WriteServeAddr records addr (host:port) as the running server's address.
func (b *Book) WriteServeAddr(addr string) error {
	if addr == "" || strings.ContainsAny(addr, "/ \t\n") {
		return fmt.Errorf("server address %q: want host:port", addr)
	}
	return os.WriteFile(filepath.Join(b.Root, ServeAddrFile), []byte(addr+"\n"), 0o644)
}

// RemoveServeAddr removes the address file if it still holds addr (a second
// server started since owns it otherwise).
func (b *Book) RemoveServeAddr(addr string) error {
	path := filepath.Join(b.Root, ServeAddrFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(data)) != addr {
		return nil
	}
	return os.Remove(path)
}

// SourceFile is the text of one file a learner edits, named from the root
// ("exercises/01-find-device/exercise.go"): only the files meta.json lists,
// inside the exercise's directory, and never through a symbolic link.
func (b *Book) SourceFile(name string) ([]byte, error) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 || parts[0] != "exercises" {
		return nil, fmt.Errorf("%s: not an exercise's file", name)
	}
	ex, err := b.Lookup(parts[1])
	if err != nil {
		return nil, err
	}
	rel := strings.Join(parts[2:], "/")
	listed := false
	for _, f := range ex.Files {
		if f == rel {
			listed = true
		}
	}
	if !listed {
		return nil, fmt.Errorf("%s: %s's meta.json does not list %s", name, ex.ID, rel)
	}
	dir := filepath.Join(b.Root, "exercises", ex.ID)
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s: outside the exercise", name)
	}
	for p := path; p != dir; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: a symbolic link", name)
		}
	}
	return os.ReadFile(path)
}
