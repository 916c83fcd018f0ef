package workbook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The catalogues of an exercise live beside its reference solution, out of the
// learner's working copy:
//
//	solutions/mistakes/NN-slug/NAME.go      a classic mistake: the tests must fail, saying so
//	solutions/alternatives/NN-slug/NAME.go  another correct solution: the tests must pass
//
// Each file stands in for the exercise's one learner file (for an exercise with
// several, NAME is a directory holding them).
const (
	MistakesDir     = "solutions/mistakes"
	AlternativesDir = "solutions/alternatives"
)

// Trial is one version of an exercise's learner files from a catalogue.
type Trial struct {
	Exercise *Exercise
	Name     string            // the file's name without .go: "no-wmb"
	Files    map[string]string // learner file (as meta.json lists it) → the file standing in for it
}

// Key names the trial in a Trials result: "03-ring-doorbell/no-wmb".
func (tr Trial) Key() string { return tr.Exercise.ID + "/" + tr.Name }

// Catalogue lists the trials in dir (MistakesDir or AlternativesDir) for ex, by
// name. An exercise without a catalogue has none.
func (b *Book) Catalogue(ex *Exercise, dir string) ([]Trial, error) {
	base := filepath.Join(b.Root, dir, ex.ID)
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Trial
	for _, e := range entries {
		tr := Trial{Exercise: ex, Files: map[string]string{}}
		switch {
		case !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && len(ex.Files) == 1:
			tr.Name = strings.TrimSuffix(e.Name(), ".go")
			tr.Files[ex.Files[0]] = filepath.Join(base, e.Name())
		case e.IsDir():
			tr.Name = e.Name()
			for _, f := range ex.Files {
				tr.Files[f] = filepath.Join(base, e.Name(), f)
			}
		default:
			return nil, fmt.Errorf("%s: want NAME.go (the exercise has one learner file) or NAME/ holding %v", filepath.Join(base, e.Name()), ex.Files)
		}
		for _, p := range tr.Files {
			if _, err := os.Stat(p); err != nil {
				return nil, err
			}
		}
		out = append(out, tr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// trialsModule is the module the trials are built in: under the exercises'
// module path, so that the tests may import exercises/internal/….
const trialsModule = ExercisesModule + "/trials"

// Trials runs every trial's exercise tests with the trial's files in place of
// the learner's, and returns the results keyed by Trial.Key. The trials of one
// exercise share a package, and so one test binary (see merge.go); all the
// packages build and run in one go test, in parallel, over a temporary module
// that holds a copy of each exercise's tests and meta.json. A package that
// could not be shared is run again, one trial per package.
func (b *Book) Trials(ctx context.Context, trials []Trial) (map[string]*Result, error) {
	out := map[string]*Result{}
	if len(trials) == 0 {
		return out, nil
	}
	var order []*Exercise
	byEx := map[*Exercise][]Trial{}
	for _, tr := range trials {
		if byEx[tr.Exercise] == nil {
			order = append(order, tr.Exercise)
		}
		byEx[tr.Exercise] = append(byEx[tr.Exercise], tr)
	}
	merged := map[string][]Trial{}
	var alone []Trial
	for _, ex := range order {
		if trs := byEx[ex]; len(trs) > 1 {
			merged[ex.ID+"--merged"] = trs
		} else {
			alone = append(alone, trs...)
		}
	}
	tests := map[string][]string{} // the top-level tests of each merged package
	results, err := b.runTrials(ctx, merged, func(dir string, trs []Trial, path string) error {
		names, err := b.writeMerged(trs[0].Exercise, trs, path)
		tests[dir] = names
		return err
	})
	if err != nil {
		return nil, err
	}
	for dir, trs := range merged {
		r := results[dir]
		if r == nil || r.BuildFailed {
			alone = append(alone, trs...) // one of them does not build: each on its own
			continue
		}
		for i, tr := range trs {
			t, complete := splitMerged(r, i, tests[dir])
			if !complete {
				alone = append(alone, tr) // stopped with the binary: run again on its own
				continue
			}
			t.ID = tr.Exercise.ID
			out[tr.Key()] = t
		}
	}
	single := map[string][]Trial{}
	for _, tr := range alone {
		single[tr.Exercise.ID+"--"+tr.Name] = []Trial{tr}
	}
	results, err = b.runTrials(ctx, single, func(dir string, trs []Trial, path string) error {
		return b.copyForTrial(trs[0], path)
	})
	if err != nil {
		return nil, err
	}
	for dir, trs := range single {
		r := results[dir]
		r.ID = trs[0].Exercise.ID
		out[trs[0].Key()] = r
	}
	return out, nil
}

// goDirective is the workspace's own "go" line, so a trial workspace asks for
// the same Go version as the modules it uses (a lower one is refused).
func (b *Book) goDirective() string {
	if data, err := os.ReadFile(filepath.Join(b.Root, "go.work")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
				return line
			}
		}
	}
	return "go 1.26"
}

// runTrials writes each package of pkgs (directory name → its trials) with
// write, runs them all in one go test, and returns the results by directory.
func (b *Book) runTrials(ctx context.Context, pkgs map[string][]Trial, write func(dir string, trs []Trial, path string) error) (map[string]*Result, error) {
	out := map[string]*Result{}
	if len(pkgs) == 0 {
		return out, nil
	}
	tmp, err := os.MkdirTemp("", "saccbook-trials-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	goLine := b.goDirective()
	work := fmt.Sprintf("%s\n\nuse (\n\t%s\n\t%s\n\t.\n)\n", goLine, b.Root, filepath.Join(b.Root, "exercises"))
	if err := os.WriteFile(filepath.Join(tmp, "go.work"), []byte(work), 0o644); err != nil {
		return nil, err
	}
	if sum, err := os.ReadFile(filepath.Join(b.Root, "go.work.sum")); err == nil {
		if err := os.WriteFile(filepath.Join(tmp, "go.work.sum"), sum, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module "+trialsModule+"\n\n"+goLine+"\n"), 0o644); err != nil {
		return nil, err
	}
	// The parser knows packages by exercise: each package gets a stand-in whose
	// import path is that of its directory.
	var stand []*Exercise
	byID := map[string]string{}
	var patterns []string
	for dir, trs := range pkgs {
		if err := write(dir, trs, filepath.Join(tmp, dir)); err != nil {
			return nil, err
		}
		id := strings.TrimPrefix(trialsModule, ExercisesModule+"/") + "/" + dir
		stand = append(stand, &Exercise{ID: id})
		byID[id] = dir
		patterns = append(patterns, "./"+dir+"/")
	}
	sort.Strings(patterns)
	args := append([]string{"test", "-count=1", "-json", "-timeout=5m", "-vet=off", "-ldflags=-s -w"}, patterns...)
	g := b.Go
	if g == "" {
		g = "go"
	}
	cmd := exec.CommandContext(ctx, g, args...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(tmp, "go.work"), NoRecordEnv+"=1")
	p := newParser(stand, Solution, nil)
	stderr, start, err := streamTests(ctx, cmd, p)
	if err != nil {
		return nil, err
	}
	for id, r := range p.results {
		if !p.ended[id] {
			r.Passed = false
			if len(r.Tests) == 0 {
				r.BuildFailed = true
				r.BuildOutput += stderr.String()
			}
		}
		if r.Elapsed == 0 {
			r.Elapsed = time.Since(start)
		}
		out[byID[id]] = r
	}
	return out, nil
}

// copyForTrial fills dir with the exercise as the tests see it, the trial's
// files standing in for the learner's.
func (b *Book) copyForTrial(tr Trial, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(b.Dir(tr.Exercise))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || listed(tr.Exercise.Files, e.Name()) {
			continue
		}
		if err := copyFile(filepath.Join(b.Dir(tr.Exercise), e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	for learner, src := range tr.Files {
		if err := copyFile(src, filepath.Join(dir, learner)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

func listed(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
