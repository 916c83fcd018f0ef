package hunt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// TestCatalogueCoversEveryQuirk: every bug of the catalog is the answer of at
// least one hunt, and there are at least twenty hunts.
func TestCatalogueCoversEveryQuirk(t *testing.T) {
	if n := len(Catalogue()); n < 20 {
		t.Errorf("%d hunts, want at least 20", n)
	}
	covered := map[quirk.Quirk][]int{}
	for _, h := range Catalogue() {
		for _, q := range h.Candidates {
			covered[q] = append(covered[q], h.Number)
		}
	}
	for _, q := range quirk.All() {
		if len(covered[q.Quirk]) == 0 {
			t.Errorf("quirk %s is no hunt's candidate", q.Name)
		}
	}
}

// TestCatalogueIsWellFormed: numbers unique and in order, words present, the
// scenario known, every option one it takes with a value it takes, every cost a
// parameter of the model, no parameter twice, no candidate twice.
func TestCatalogueIsWellFormed(t *testing.T) {
	last := 0
	for _, h := range Catalogue() {
		name := fmt.Sprintf("hunt %d", h.Number)
		if h.Number <= last {
			t.Errorf("%s after hunt %d: numbers must rise", name, last)
		}
		last = h.Number
		if h.Title == "" || len(h.Story) < 80 || h.Symptom == "" || h.Shows == nil {
			t.Errorf("%s: title %q, story of %d bytes, symptom %q, check %v", name, h.Title, len(h.Story), h.Symptom, h.Shows != nil)
		}
		s, ok := scenario.Find(h.Scenario)
		if !ok || s.Name != h.Scenario {
			t.Errorf("%s: scenario %q is not a scenario name", name, h.Scenario)
			continue
		}
		if len(h.Candidates) == 0 {
			t.Errorf("%s has no candidates", name)
		}
		for i, q := range h.Candidates {
			if slices.Contains(h.Candidates[:i], q) {
				t.Errorf("%s: candidate %s twice", name, q)
			}
		}
		seen := map[string]bool{}
		for _, p := range h.Params {
			key := fmt.Sprint(p.Kind, p.Name)
			if seen[key] || len(p.Values) < 2 {
				t.Errorf("%s: parameter %s twice or with fewer than two values (%v)", name, p.Name, p.Values)
			}
			seen[key] = true
			if p.Kind == OptionParam {
				if _, fixed := h.Options[p.Name]; fixed {
					t.Errorf("%s: option %s is both fixed and a parameter", name, p.Name)
				}
			}
			if p.Kind == CostParam {
				c := sim.DefaultCost()
				for _, v := range p.Values {
					if err := c.ParseAssignment(p.Name + "=" + v); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
			}
		}
		for i := range h.Space() {
			if err := s.CheckOptions(h.At(i).Options); err != nil {
				t.Errorf("%s variant %d: %v", name, i, err)
				break
			}
		}
	}
}

// combos is the combinations of a hunt's parameters to check, each as the
// variant index of its first candidate: with all, every one; otherwise a
// sample in which every value of every parameter appears at least once, the
// same sample on every run.
func combos(h *Hunt, all bool) []uint64 {
	nc := uint64(len(h.Candidates))
	per := h.Space() / nc
	if all {
		out := make([]uint64, per)
		for i := range out {
			out[i] = uint64(i) * nc
		}
		return out
	}
	// Combination k takes value k mod len of every parameter: as many
	// combinations as the longest parameter has values covers them all; a
	// seeded shuffle of each parameter's values varies the pairings.
	r := rand.New(rand.NewPCG(uint64(h.Number), 7))
	longest := 1
	for _, p := range h.Params {
		longest = max(longest, len(p.Values))
	}
	perms := make([][]int, len(h.Params))
	for i, p := range h.Params {
		perms[i] = r.Perm(len(p.Values))
	}
	var out []uint64
	for k := range longest {
		idx, radix := uint64(0), nc
		for i, p := range h.Params {
			idx += uint64(perms[i][k%len(p.Values)]) * radix
			radix *= uint64(len(p.Values))
		}
		out = append(out, idx)
	}
	return out
}

// TestEverySymptomShowsInEveryVariant runs every candidate of every hunt with
// every combination of the hunt's parameters (a few seconds on one core; with
// -short, a sample), and checks that the run with the bug parts from the run
// without it at an event of its own, that the hunt's symptom shows with the
// bug, that it does not show without it, and that nothing the run says names a
// bug of the catalog.
func TestEverySymptomShowsInEveryVariant(t *testing.T) {
	names := quirkNames()
	for _, h := range Catalogue() {
		t.Run(fmt.Sprint(h.Number), func(t *testing.T) {
			t.Parallel()
			for _, first := range combos(h, !testing.Short()) {
				base := h.At(first)
				without, err := base.Run(false)
				if err != nil {
					t.Fatalf("%s without the bug: %v", base.Describe(), err)
				}
				if h.Shows(without) {
					t.Errorf("%s: the symptom shows without any bug:\n%s", base.Describe(), tail(without.Log))
				}
				for c := range h.Candidates {
					v := h.At(first + uint64(c))
					with, err := v.Run(true)
					if err != nil {
						t.Fatalf("%s with %s: %v", v.Describe(), v.Bug, err)
					}
					if _, err := answerOf(v, with, without); err != nil {
						t.Errorf("%s with %s: %v", v.Describe(), v.Bug, err)
					}
					if !h.Shows(with) {
						t.Errorf("%s with %s: the symptom (%s) does not show:\n%s%v", v.Describe(), v.Bug, h.Symptom, tail(with.Log), with.Err)
					}
					for _, n := range names {
						said := with.Log + strings.Join(with.Dmesg, "\n")
						if with.Err != nil {
							said += with.Err.Error()
						}
						if strings.Contains(said, n) {
							t.Errorf("%s with %s: the run says %q, a bug's name", v.Describe(), v.Bug, n)
						}
					}
				}
			}
		})
	}
}

func quirkNames() []string {
	var out []string
	for _, q := range quirk.All() {
		out = append(out, q.Name)
	}
	return out
}

// tail is the last lines of a narrative, for a failure message.
func tail(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) > 6 {
		lines = lines[len(lines)-6:]
	}
	return "  " + strings.Join(lines, "\n  ") + "\n"
}

// TestEveryParameterChangesTheRun: a parameter that changed nothing would make
// two learners' variants the same run under different names. For every hunt and
// parameter, the run without the bug differs between the parameter's first two
// values, the others held at their first.
func TestEveryParameterChangesTheRun(t *testing.T) {
	for _, h := range Catalogue() {
		radix := uint64(len(h.Candidates))
		for _, p := range h.Params {
			a, err := h.At(0).Run(false)
			if err != nil {
				t.Fatal(err)
			}
			b, err := h.At(radix).Run(false)
			if err != nil {
				t.Fatal(err)
			}
			if _, differ := trace.FirstDifference(a.Events, b.Events); !differ {
				t.Errorf("hunt %d: %s=%s and %s=%s give the same run", h.Number, p.Name, p.Values[0], p.Name, p.Values[1])
			}
			radix *= uint64(len(p.Values))
		}
	}
}
