// Package workbook knows the exercises: where they live, what their metadata
// says, how to run their tests (as the learner left them, as shipped, or with the
// reference solution overlaid), and the learner's progress. The saccbook progress
// commands and the project's own proof that every stub fails and every solution
// passes both drive it.
//
// The layout, relative to the workspace root (the directory holding go.work):
//
//	exercises/go.mod                    module …/exercises, in the go.work workspace
//	exercises/NN-slug/meta.json         id, title, chapter, hints (see Exercise)
//	exercises/NN-slug/exercise.go       the file the learner edits (meta.json "files")
//	exercises/NN-slug/*_test.go         the tests, against the emulated machine
//	exercises/NN-slug/.stub/exercise.go the file as shipped, for reset and the proof
//	exercises/internal/check            helpers the tests share
//	exercises/.saccbook-progress.json   the learner's progress
//	exercises/.backup/ID/TIME/…         files saved by reset and restore (git ignores them)
//	solutions/go.mod                    fences solutions off from `go test ./...`
//	solutions/NN-slug/exercise.go       the reference solution, file for file
package workbook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Exercise is one exercise, as its meta.json describes it.
type Exercise struct {
	ID         string      `json:"id"`              // the directory name: "01-find-device"
	Title      string      `json:"title"`           // a few words: "Find the device on bus 0"
	Chapter    int         `json:"chapter"`         // the chapter it belongs to; the ID's NN
	Order      int         `json:"order,omitempty"` // its place in the chapter (1, 2, …); without one, after those with one, by ID
	ChapterURL string      `json:"chapter_url"`     // the chapter's page: "/chapters/01-finding-the-device"
	Replay     string      `json:"replay"`          // a command that shows the same steps: "saccbook run job"
	Files      []string    `json:"files"`           // the files the learner edits, relative to the exercise
	Hints      []string    `json:"hints"`           // exactly three: a nudge, the concept, a near-answer
	KeyedHints []KeyedHint `json:"keyed_hints,omitempty"`
}

// KeyedHint is a hint for one failure: it applies when Match appears in the
// output of a failing run.
type KeyedHint struct {
	Match string `json:"match"`
	Hint  string `json:"hint"`
}

// HintLevels is the number of general hints every exercise has.
const HintLevels = 3

// HintNames names the levels, 1 to 3.
var HintNames = [HintLevels + 1]string{1: "nudge", 2: "concept", 3: "near-answer"}

// sortOrder puts exercises without an order after those with one.
func (ex *Exercise) sortOrder() int {
	if ex.Order == 0 {
		return 1 << 30
	}
	return ex.Order
}

// Keyed returns the indexes of the keyed hints whose Match appears in output.
func (ex *Exercise) Keyed(output string) []int {
	var out []int
	for i, k := range ex.KeyedHints {
		if strings.Contains(output, k.Match) {
			out = append(out, i)
		}
	}
	return out
}

// Book is the exercises of one workspace.
type Book struct {
	Root      string // the workspace root: the directory holding go.work
	Exercises []*Exercise
	// Go is the go command to run; "" means "go" from PATH.
	Go string
}

// ErrNoWorkspace is returned when no directory above the start holds go.work.
var ErrNoWorkspace = errors.New("no go.work in this directory or any above it: run saccbook inside the saccbook workspace (or pass --root)")

// FindRoot walks up from dir to the directory that holds go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.work")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoWorkspace
		}
		dir = parent
	}
}

// idPattern is the shape of an exercise ID: the chapter number, then words.
var idPattern = regexp.MustCompile(`^([0-9]{2})-[a-z0-9]+(-[a-z0-9]+)*$`)

// Open reads every exercises/*/meta.json under root, checks it, and returns the
// exercises in the order a learner meets them: by chapter, then by order.
func Open(root string) (*Book, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	metas, err := filepath.Glob(filepath.Join(root, "exercises", "*", "meta.json"))
	if err != nil {
		return nil, err
	}
	if len(metas) == 0 {
		if _, err := os.Stat(filepath.Join(root, "exercises")); err != nil {
			return nil, fmt.Errorf("%s has no exercises directory", root)
		}
	}
	b := &Book{Root: root}
	for _, path := range metas {
		ex, err := readMeta(path)
		if err != nil {
			return nil, err
		}
		b.Exercises = append(b.Exercises, ex)
	}
	sort.Slice(b.Exercises, func(i, j int) bool {
		x, y := b.Exercises[i], b.Exercises[j]
		if x.Chapter != y.Chapter {
			return x.Chapter < y.Chapter
		}
		if xo, yo := x.sortOrder(), y.sortOrder(); xo != yo {
			return xo < yo
		}
		return x.ID < y.ID
	})
	for i := 1; i < len(b.Exercises); i++ {
		if x, y := b.Exercises[i-1], b.Exercises[i]; x.Chapter == y.Chapter && x.Order != 0 && x.Order == y.Order {
			return nil, fmt.Errorf("%s and %s both have order %d in chapter %d", x.ID, y.ID, x.Order, x.Chapter)
		}
	}
	return b, nil
}

func readMeta(path string) (*Exercise, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var ex Exercise
	if err := dec.Decode(&ex); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Base(filepath.Dir(path))
	if err := ex.validate(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &ex, nil
}

// validate checks what every tool relies on.
func (ex *Exercise) validate(dir string) error {
	m := idPattern.FindStringSubmatch(ex.ID)
	switch {
	case ex.ID != dir:
		return fmt.Errorf("id %q differs from the directory name %q", ex.ID, dir)
	case m == nil:
		return fmt.Errorf("id %q is not NN-words-with-dashes", ex.ID)
	case ex.Title == "":
		return errors.New("no title")
	case ex.Order < 0:
		return errors.New(`"order" is the exercise's place in its chapter: 1, 2, …`)
	case len(ex.Files) == 0:
		return errors.New(`no "files": which files does the learner edit?`)
	case len(ex.Hints) != HintLevels:
		return fmt.Errorf("%d hints; want exactly %d (nudge, concept, near-answer)", len(ex.Hints), HintLevels)
	}
	if n, _ := strconv.Atoi(m[1]); n != ex.Chapter {
		return fmt.Errorf("chapter %d, but the id says %s", ex.Chapter, m[1])
	}
	for i, h := range ex.Hints {
		if strings.TrimSpace(h) == "" {
			return fmt.Errorf("hint %d is empty", i+1)
		}
	}
	for _, f := range ex.Files {
		if f == "" || filepath.IsAbs(f) || strings.Contains(f, "..") || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return fmt.Errorf("file %q: want a non-test .go file inside the exercise directory", f)
		}
	}
	for i, k := range ex.KeyedHints {
		if k.Match == "" || k.Hint == "" {
			return fmt.Errorf("keyed hint %d needs both match and hint", i+1)
		}
	}
	return nil
}

// Lookup finds an exercise by ID. A chapter number ("02") or an unambiguous
// prefix ("02-enable") also works.
func (b *Book) Lookup(id string) (*Exercise, error) {
	var matches []*Exercise
	for _, ex := range b.Exercises {
		if ex.ID == id {
			return ex, nil
		}
		if strings.HasPrefix(ex.ID, id) {
			matches = append(matches, ex)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	var ids []string
	for _, ex := range matches {
		ids = append(ids, ex.ID)
	}
	if len(matches) > 1 {
		return nil, fmt.Errorf("%q could be any of %s: say which", id, strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("no exercise %q (saccbook list shows them all)", id)
}

// Dir is the exercise's package directory.
func (b *Book) Dir(ex *Exercise) string { return filepath.Join(b.Root, "exercises", ex.ID) }

// WorkPath is a file the learner edits.
func (b *Book) WorkPath(ex *Exercise, file string) string { return filepath.Join(b.Dir(ex), file) }

// StubPath is a file as shipped.
func (b *Book) StubPath(ex *Exercise, file string) string {
	return filepath.Join(b.Dir(ex), ".stub", file)
}

// SolutionPath is a file of the reference solution.
func (b *Book) SolutionPath(ex *Exercise, file string) string {
	return filepath.Join(b.Root, "solutions", ex.ID, file)
}

// BackupDir is where reset keeps the learner's files.
func (b *Book) BackupDir(ex *Exercise) string {
	return filepath.Join(b.Root, "exercises", ".backup", ex.ID)
}

// Started reports whether the learner has changed any of the exercise's files
// from the stub.
func (b *Book) Started(ex *Exercise) (bool, error) {
	for _, f := range ex.Files {
		work, err := os.ReadFile(b.WorkPath(ex, f))
		if errors.Is(err, os.ErrNotExist) {
			return true, nil // deleted: that is a change too
		}
		if err != nil {
			return false, err
		}
		stub, err := os.ReadFile(b.StubPath(ex, f))
		if err != nil {
			return false, fmt.Errorf("%s: the stub is missing: %w", ex.ID, err)
		}
		if string(work) != string(stub) {
			return true, nil
		}
	}
	return false, nil
}

// Chapter is one chapter's number and title.
type Chapter struct {
	Number int
	Title  string
}

// chapterTitles are the chapters of the book's plan, for chapters not written yet.
var chapterTitles = map[int]string{
	0: "The journey of one job", 1: "Finding the device", 2: "MMIO", 3: "The doorbell page",
	4: "DMA", 5: "Rings", 6: "Phase bits", 7: "Ordering and coherency", 8: "Interrupts",
	9: "The IOMMU", 10: "Kernel bypass", 11: "When things go wrong", 12: "Describing memory",
	13: "Capstone",
}

// ChapterOf returns the chapter n: its title from chapters/NN-*.md when the
// chapter is written, from the plan otherwise.
func (b *Book) ChapterOf(n int) Chapter {
	files, _ := filepath.Glob(filepath.Join(b.Root, "chapters", fmt.Sprintf("%02d-*.md", n)))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if t, ok := strings.CutPrefix(first, "# "); ok {
			return Chapter{n, strings.TrimSpace(t)}
		}
	}
	if t, ok := chapterTitles[n]; ok {
		return Chapter{n, t}
	}
	return Chapter{n, fmt.Sprintf("Chapter %d", n)}
}
