package scenario

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/trace"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/")

// TestGoldenTraces pins every scenario's trace and narrative (seed 1, default
// options): a change in what the machine, the driver or a scenario does shows up
// as a diff. Run `go test ./sacc/scenario -update` after an intended change.
func TestGoldenTraces(t *testing.T) {
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", s.Name+".trace"), goldenRun(t, s, profile.V1()))
		})
	}
}

// upstreamGoldens are the scenarios whose trace is pinned under the
// upstream-v0.1 profile too, in upstream's trace names.
var upstreamGoldens = []string{"upstream-bringup"}

func TestGoldenTracesUnderTheUpstreamProfile(t *testing.T) {
	for _, name := range upstreamGoldens {
		t.Run(name, func(t *testing.T) {
			s, ok := Find(name)
			if !ok {
				t.Fatalf("no scenario %s", name)
			}
			p := profile.UpstreamV01()
			checkGolden(t, filepath.Join("testdata", s.Name+"."+p.Name+".trace"), goldenRun(t, s, p))
		})
	}
}

// goldenRun runs s on a fresh machine of profile p (seed 1) and returns its text
// trace, in the profile's spelling, with the narrative interleaved.
func goldenRun(t *testing.T, s Scenario, p profile.Profile) []byte {
	t.Helper()
	m, err := machine.New(machine.Config{Seed: 1, Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.Tracer().Attach(trace.NewTextWriter(&out).In(m.Tracer().Dialect()))
	if err := s.Run(m, &Env{Log: prefixed{&out}}); err != nil {
		t.Fatalf("scenario %s: %v", s.Name, err)
	}
	return out.Bytes()
}

// checkGolden compares got with the golden file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sacc/scenario -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		g, exp := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := 0; i < len(g) && i < len(exp); i++ {
			if !bytes.Equal(g[i], exp[i]) {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, g[i], exp[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d", path, len(g), len(exp))
	}
}

// TestChapterNumbersFindTheirPrimaryScenario: `saccbook run NN` works for every
// chapter that has scenarios, and each such chapter has exactly one primary.
func TestChapterNumbersFindTheirPrimaryScenario(t *testing.T) {
	primaries := map[int]int{}
	chapters := map[int]bool{}
	for _, s := range All() {
		chapters[s.Chapter] = true
		if s.Primary {
			primaries[s.Chapter]++
		}
	}
	for ch := range chapters {
		if primaries[ch] != 1 {
			t.Errorf("chapter %d has %d primary scenarios, want 1", ch, primaries[ch])
		}
	}
	if s, ok := Find("00"); !ok || s.Name != "job" {
		t.Errorf("Find(00) = %v, %v", s.Name, ok)
	}
}

// prefixed marks narrative lines in the golden file.
type prefixed struct{ w *bytes.Buffer }

func (p prefixed) Write(b []byte) (int, error) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) > 0 {
			p.w.WriteString("# ")
			p.w.Write(line)
		}
	}
	return len(b), nil
}
