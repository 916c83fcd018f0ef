package workbook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Variant says which version of the learner's files a run uses.
type Variant int

const (
	Working  Variant = iota // the files as the learner left them
	Stub                    // the files as shipped (.stub/), overlaid
	Solution                // the reference solution (solutions/), overlaid
)

func (v Variant) String() string {
	switch v {
	case Stub:
		return "stub"
	case Solution:
		return "solution"
	}
	return "working copy"
}

// Status is where an exercise stands.
type Status string

const (
	NotStarted Status = "not started" // the files are still the stub
	Started    Status = "started"     // changed, not checked since
	Failing    Status = "failing"
	Done       Status = "done"
)

// Result is one `go test` run of one exercise.
type Result struct {
	ID      string
	Variant Variant
	Passed  bool
	// BuildFailed is set when the package or its tests did not compile (or vet,
	// which go test runs, refused them): no test ran.
	BuildFailed bool
	BuildOutput string
	NoTests     bool // the package has no test files

	Tests   []TestResult // top-level tests and subtests, in the order they started
	Output  string       // everything go test printed, without the JSON
	Elapsed time.Duration

	// Panic is the "panic: …" line of a run that a panic (or go test's
	// -timeout, which panics) cut short, and PanicTest the test it happened in
	// ("" outside any test): the tests after it never ran.
	Panic, PanicTest string
}

// TestResult is one test's outcome and what it printed.
type TestResult struct {
	Name   string // "TestX" or "TestX/sub"
	Action string // pass, fail or skip; "" if it started and never ended
	Output string
}

// failed reports whether the test failed, or started and never ended (the run
// was cut short under it).
func (t TestResult) failed() bool { return t.Action == "fail" || t.Action == "" }

// Status is the exercise's status after this run.
func (r *Result) Status() Status {
	if r.Passed {
		return Done
	}
	return Failing
}

// Units are the tests a learner counts, in the order they started: every test
// without subtests, and a test with subtests only when it failed on its own
// while none of its subtests did (then its own check is what failed). A parent
// whose subtests ran is otherwise counted through them, so that "3 of 7 tests
// fail" counts each check once.
func (r *Result) Units() []TestResult {
	var out []TestResult
	for i, t := range r.Tests {
		children, failedChild := false, false
		for _, c := range r.Tests[i+1:] {
			if strings.HasPrefix(c.Name, t.Name+"/") {
				children = true
				failedChild = failedChild || c.failed()
			}
		}
		if !children || (t.failed() && !failedChild) {
			out = append(out, t)
		}
	}
	return out
}

// Failed lists the tests that failed, as Units counts them: the failing
// subtests, not their parents.
func (r *Result) Failed() []TestResult {
	var out []TestResult
	for _, t := range r.Units() {
		if t.failed() {
			out = append(out, t)
		}
	}
	return out
}

// Tally is how many tests of a run (as Units counts them) ran, failed and were
// skipped.
type Tally struct{ Ran, Failed, Skipped int }

// Tally counts the run's tests.
func (r *Result) Tally() Tally {
	var n Tally
	for _, t := range r.Units() {
		n.Ran++
		switch {
		case t.failed():
			n.Failed++
		case t.Action == "skip":
			n.Skipped++
		}
	}
	return n
}

// VetFailed reports whether the build failure was go vet's: go test vets a
// package before it runs its tests, and marks vet's findings with a
// "# [package]" line.
func (r *Result) VetFailed() bool {
	if !r.BuildFailed {
		return false
	}
	for _, line := range strings.Split(r.BuildOutput, "\n") {
		if strings.HasPrefix(line, "# [") {
			return true
		}
	}
	return false
}

// Report is what a learner reads about a failed run: the build errors, or each
// failing test's message, without go test's bookkeeping lines.
func (r *Result) Report() string {
	if r.Passed {
		return ""
	}
	if r.BuildFailed {
		return strings.TrimRight(r.BuildOutput, "\n") + "\n"
	}
	var b strings.Builder
	for i, t := range r.Failed() {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "--- %s\n", t.Name)
		var lines []string
		for _, line := range strings.Split(t.Output, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
				continue
			}
			lines = append(lines, strings.TrimRight(line, " \t"))
		}
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for _, line := range lines {
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return strings.TrimRight(r.Output, "\n") + "\n" // failed outside any test: a panic, a timeout
	}
	return b.String()
}

// Verdict says in one sentence, without the exercise's name, how the run went,
// counting the tests as Units does: "all 7 tests pass", "3 of 7 tests fail:
// TestA, TestB/size_4, TestC", "does not compile, so no test ran". A run a
// panic cut short says so, since the tests after it never ran.
func (r *Result) Verdict() string {
	n := r.Tally()
	skipped := ""
	if n.Skipped > 0 {
		skipped = fmt.Sprintf(" (%d skipped)", n.Skipped)
	}
	switch {
	case r.NoTests:
		return "the exercise has no tests"
	case r.BuildFailed && r.VetFailed():
		return "go vet refused it, so no test ran"
	case r.BuildFailed:
		return "does not compile, so no test ran"
	case r.Passed && n.Ran == 1:
		return "the 1 test passes" + skipped
	case r.Passed:
		return fmt.Sprintf("all %d tests pass%s", n.Ran, skipped)
	}
	var names []string
	for _, t := range r.Failed() {
		names = append(names, t.Name)
	}
	const most = 5
	if len(names) > most {
		names = append(names[:most], fmt.Sprintf("and %d more", len(names)-most))
	}
	verb := "fail"
	if n.Failed == 1 {
		verb = "fails"
	}
	count := fmt.Sprintf("%d of %d %s %s%s", n.Failed, n.Ran, plural(n.Ran, "test", "tests"), verb, skipped)
	if n.Failed == 0 {
		count = fmt.Sprintf("go test failed outside any test, though %d of %d %s passed%s", n.Ran-n.Skipped, n.Ran, plural(n.Ran, "test", "tests"), skipped)
	}
	if len(names) > 0 {
		count += ": " + strings.Join(names, ", ")
	}
	if r.Panic != "" {
		where := "the test binary"
		if r.PanicTest != "" {
			where = r.PanicTest
		}
		return fmt.Sprintf("%s stopped with %q, so the tests after it did not run; %s", where, r.Panic, count)
	}
	return count
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Summary is one line saying what went wrong first, for a table or "next:".
func (r *Result) Summary() string {
	switch {
	case r.Passed:
		return "all tests pass"
	case r.NoTests:
		return "the exercise has no tests"
	case r.BuildFailed:
		what := "does not compile"
		if r.VetFailed() {
			what = "go vet refused it"
		}
		for _, line := range strings.Split(r.BuildOutput, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				return what + ": " + line
			}
		}
		return what
	}
	for _, t := range r.Failed() {
		for _, line := range strings.Split(t.Output, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- ") || isFileLine(line) {
				continue
			}
			return t.Name + ": " + line
		}
		return t.Name + " failed"
	}
	return "go test failed outside any test"
}

// isFileLine matches the "name_test.go:39: " prefix t.Error puts on its own line.
func isFileLine(s string) bool {
	name, rest, ok := strings.Cut(s, ".go:")
	if !ok || strings.ContainsAny(name, " \t") {
		return false
	}
	rest = strings.TrimSuffix(rest, ":")
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return rest != ""
}

// NoRecordEnv, set in a test's environment, tells exercises/internal/check to
// leave no run record: the proof's runs of stubs, solutions and catalogued
// mistakes are not the learner's.
const NoRecordEnv = "SACCBOOK_NO_RECORD"

// goCmd is the go command, run in the workspace root with this workspace.
func (b *Book) goCmd(ctx context.Context, args ...string) *exec.Cmd {
	g := b.Go
	if g == "" {
		g = "go"
	}
	cmd := exec.CommandContext(ctx, g, args...)
	cmd.Dir = b.Root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(b.Root, "go.work"))
	return cmd
}

// overlay writes the -overlay file that replaces the learner's files of exs
// with the variant's, and returns its path ("" for Working) and a cleanup.
func (b *Book) overlay(exs []*Exercise, v Variant) (string, func(), error) {
	if v == Working {
		return "", func() {}, nil
	}
	replace := map[string]string{}
	for _, ex := range exs {
		for _, f := range ex.Files {
			src := b.StubPath(ex, f)
			if v == Solution {
				src = b.SolutionPath(ex, f)
			}
			if _, err := os.Stat(src); err != nil {
				return "", nil, fmt.Errorf("%s: no %s for %s: %w", ex.ID, v, f, err)
			}
			replace[b.WorkPath(ex, f)] = src
		}
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp("", "saccbook-overlay-*.json")
	if err != nil {
		return "", nil, err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", nil, err
	}
	return tmp.Name(), func() { os.Remove(tmp.Name()) }, nil
}

// ImportPath is the exercise's package path.
func (ex *Exercise) ImportPath() string { return ExercisesModule + "/" + ex.ID }

// ExercisesModule is the module path of exercises/.
const ExercisesModule = "github.com/saccbook/saccbook/exercises"

func patterns(exs []*Exercise) []string {
	var p []string
	for _, ex := range exs {
		p = append(p, "./exercises/"+ex.ID+"/")
	}
	return p
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail: "pkg" or "pkg [pkg.test]"
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

// Run runs the tests of exs with the variant's files, in one go test: the go
// command builds and runs the packages in parallel (up to GOMAXPROCS at a time).
// progress, if not nil, hears of each exercise as its tests start (with a nil
// Result) and as they end. Every exercise of exs has a Result in the map.
func (b *Book) Run(ctx context.Context, exs []*Exercise, v Variant, progress func(*Exercise, *Result)) (map[string]*Result, error) {
	if len(exs) == 0 {
		return map[string]*Result{}, nil
	}
	ov, cleanup, err := b.overlay(exs, v)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// -count=1: every run really runs the tests, so that whatever a run leaves
	// behind comes from this run of these files, not from a cached result of
	// the same code earlier. Warm, a check still takes well under a second
	// (BenchmarkCheckWarm in cmd/saccbook): the build comes from the cache,
	// and the link and the run are what is left.
	args := []string{"test", "-count=1", "-json", "-timeout=2m"}
	if ov != "" {
		args = append(args, "-overlay", ov)
	}
	cmd := b.goCmd(ctx, append(args, patterns(exs)...)...)
	if v != Working {
		// A proof run of the stub or the solution is not the learner's run: it
		// must not replace their record (exercises/internal/check).
		cmd.Env = append(cmd.Env, NoRecordEnv+"=1")
	}
	p := newParser(exs, v, progress)
	stderr, start, err := streamTests(ctx, cmd, p)
	if err != nil {
		return nil, err
	}
	// What go test could not attribute to a package (a broken go.work, a pattern
	// that matches nothing) counts against every exercise without a verdict.
	for _, ex := range exs {
		r := p.results[ex.ID]
		if !p.ended[ex.ID] {
			r.Passed = false
			if len(r.Tests) == 0 {
				r.BuildFailed = true
				r.BuildOutput += stderr.String()
			}
		}
		if r.BuildFailed && strings.TrimSpace(r.BuildOutput) == "" {
			r.BuildOutput = stderr.String()
		}
		if r.Elapsed == 0 {
			r.Elapsed = time.Since(start)
		}
	}
	return p.results, nil
}

// streamTests runs cmd, a go test -json, feeding its output to p as it comes,
// and returns what go test wrote to standard error and when it started. A
// failing test is no error; only a go test that could not run (or ctx ending)
// is.
func streamTests(ctx context.Context, cmd *exec.Cmd, p *parser) (stderr *bytes.Buffer, start time.Time, err error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, start, err
	}
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, start, fmt.Errorf("go test: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		p.line(sc.Bytes())
	}
	runErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, start, ctx.Err()
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return nil, start, fmt.Errorf("go test: %w", runErr)
	}
	return stderr, start, nil
}

// parser turns go test -json lines into Results, one per exercise.
type parser struct {
	byPath   map[string]*Exercise
	results  map[string]*Result
	ended    map[string]bool
	index    map[string]map[string]int // test name → index in Tests, per exercise
	progress func(*Exercise, *Result)
}

func newParser(exs []*Exercise, v Variant, progress func(*Exercise, *Result)) *parser {
	p := &parser{byPath: map[string]*Exercise{}, results: map[string]*Result{}, ended: map[string]bool{},
		index: map[string]map[string]int{}, progress: progress}
	for _, ex := range exs {
		p.byPath[ex.ImportPath()] = ex
		p.results[ex.ID] = &Result{ID: ex.ID, Variant: v}
		p.index[ex.ID] = map[string]int{}
	}
	return p
}

func (p *parser) line(data []byte) {
	var ev testEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return // go test prints only JSON on stdout with -json; ignore anything else
	}
	path := ev.Package
	if path == "" {
		path, _, _ = strings.Cut(ev.ImportPath, " [")
	}
	ex := p.byPath[path]
	if ex == nil {
		return
	}
	r := p.results[ex.ID]
	switch {
	case ev.Action == "build-output":
		r.BuildOutput += ev.Output
	case ev.Action == "build-fail":
		r.BuildFailed = true
	case ev.Test == "":
		switch ev.Action {
		case "start":
			if p.progress != nil {
				p.progress(ex, nil)
			}
		case "output":
			r.Output += ev.Output
			if strings.HasPrefix(ev.Output, "panic: ") && r.Panic == "" {
				r.Panic = strings.TrimSpace(ev.Output)
			}
		case "skip": // [no test files]
			r.NoTests, r.Passed = true, false
			p.ended[ex.ID] = true
			if p.progress != nil {
				p.progress(ex, r)
			}
		case "pass", "fail":
			r.Passed = ev.Action == "pass" && !r.BuildFailed
			if ev.FailedBuild != "" {
				r.BuildFailed, r.Passed = true, false
			}
			r.Elapsed = time.Duration(ev.Elapsed * float64(time.Second))
			p.ended[ex.ID] = true
			if p.progress != nil {
				p.progress(ex, r)
			}
		}
	default:
		i, ok := p.index[ex.ID][ev.Test]
		if !ok {
			i = len(r.Tests)
			p.index[ex.ID][ev.Test] = i
			r.Tests = append(r.Tests, TestResult{Name: ev.Test})
		}
		switch ev.Action {
		case "output":
			r.Tests[i].Output += ev.Output
			r.Output += ev.Output
			if strings.HasPrefix(ev.Output, "panic: ") && r.Panic == "" {
				r.Panic, r.PanicTest = strings.TrimSpace(ev.Output), ev.Test
			}
		case "pass", "fail", "skip":
			r.Tests[i].Action = ev.Action
		}
	}
}

// Vet runs go vet on the exercises' packages with the variant's files.
func (b *Book) Vet(ctx context.Context, exs []*Exercise, v Variant) error {
	ov, cleanup, err := b.overlay(exs, v)
	if err != nil {
		return err
	}
	defer cleanup()
	args := []string{"vet"}
	if ov != "" {
		args = append(args, "-overlay", ov)
	}
	cmd := b.goCmd(ctx, append(args, patterns(exs)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go vet (%s): %v\n%s", v, err, out)
	}
	return nil
}

// Unformatted lists the variant's files that gofmt would change.
func (b *Book) Unformatted(ex *Exercise, v Variant) ([]string, error) {
	var bad []string
	for _, f := range ex.Files {
		path := b.WorkPath(ex, f)
		switch v {
		case Stub:
			path = b.StubPath(ex, f)
		case Solution:
			path = b.SolutionPath(ex, f)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		formatted, err := format.Source(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !bytes.Equal(src, formatted) {
			bad = append(bad, path)
		}
	}
	return bad, nil
}
