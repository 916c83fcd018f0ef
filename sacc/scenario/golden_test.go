package scenario

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/")

// TestGoldenTraces pins every scenario's trace and narrative (seed 1, default
// options): a change in what the machine, the driver or a scenario does shows up
// as a diff. Run `go test ./sacc/scenario -update` after an intended change.
func TestGoldenTraces(t *testing.T) {
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			m, err := machine.New(machine.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			m.Tracer().Attach(trace.NewTextWriter(&out))
			if err := s.Run(m, &Env{Log: prefixed{&out}}); err != nil {
				t.Fatalf("scenario %s: %v", s.Name, err)
			}
			path := filepath.Join("testdata", s.Name+".trace")
			if *update {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./sacc/scenario -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				got, exp := bytes.Split(out.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := 0; i < len(got) && i < len(exp); i++ {
					if !bytes.Equal(got[i], exp[i]) {
						t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, got[i], exp[i])
					}
				}
				t.Fatalf("%s differs in length: %d lines, want %d", path, len(got), len(exp))
			}
		})
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
