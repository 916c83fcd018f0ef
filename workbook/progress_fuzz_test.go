package workbook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeProgress puts data where LoadProgress looks under a fresh root.
func writeProgress(t *testing.T, data []byte) string {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, ProgressFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// FuzzLoadProgress reads arbitrary progress files, as a learner's editor, a merge
// or a full disk may leave them, through LoadProgress's decoder (the reading of
// the file itself is TestLoadProgressBringsInRange's). It must never panic; a file it refuses
// is named with the way out; a file it accepts gives a record every command can
// use as it is (no null exercise or hunt, hints_shown a hint level or 0), which Save
// writes to a file that reads back as the same record.
func FuzzLoadProgress(f *testing.F) {
	for _, seed := range []string{
		`{"note":"x","exercises":{"02-mmio-magic":{"status":"done","hints_shown":2,"solved":"2026-01-02T03:04:05Z"}}}`,
		`{"exercises":{"05-rings":{"status":"failing","failing":["TestWrap"],"summary":"got 0","verdict":"1 of 3 tests fail","keyed_hints":[0,2]}}}`,
		`{"exercises":{"a":null,"b":{}}}`,
		`{"exercises":{"a":{"hints_shown":-5}}}`,
		`{"exercises":{"a":{"hints_shown":99999999999}}}`,
		`{"exercises":{"a":{"keyed_hints":[-1,7]}}}`,
		`{"eXerCises":{"":{"00000":"","fAiling":[]}}}`, // an empty list is saved as none
		`{"exercises":[]}`,
		`{"exercises":{},"hunts":{"3":{"status":"solved","score":2}}}`,
		`{"hunts":{"x":null}}`,
		`{}`, `null`, `[]`, ``, `{"exercises":`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProgress(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), ProgressFile+": ") || !strings.Contains(err.Error(), "delete it") {
				t.Fatalf("the error %q does not name the file and the way out", err)
			}
			return
		}
		checkProgress(t, p)
		saved, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseProgress(saved)
		if err != nil {
			t.Fatalf("the saved record of %q does not read back: %v", data, err)
		}
		// (An empty list and no list are both left out of the file, so the
		// records are compared as saved.)
		if resaved, err := again.encode(); err != nil || string(resaved) != string(saved) {
			t.Fatalf("%q saved as\n%s\nread and saved again as\n%s (%v)", data, saved, resaved, err)
		}
	})
}

func checkProgress(t *testing.T, p *Progress) {
	t.Helper()
	if p.Exercises == nil {
		t.Fatal("no exercises map")
	}
	for id, e := range p.Exercises {
		if e == nil {
			t.Fatalf("exercise %q recorded as nil", id)
		}
		if e.HintsShown < 0 || e.HintsShown > HintLevels {
			t.Fatalf("exercise %q: hints_shown %d", id, e.HintsShown)
		}
	}
	if p.Hunts == nil {
		t.Fatal("no hunts map")
	}
	for k, h := range p.Hunts {
		if h == nil {
			t.Fatalf("hunt %q recorded as nil", k)
		}
	}
}

// TestLoadProgressBringsInRange checks the record a hand-edited file gives: a
// negative hints_shown would make the next hint level 0 or less, which names no
// hint, and a null exercise would be nil to every command.
func TestLoadProgressBringsInRange(t *testing.T) {
	root := writeProgress(t, []byte(`{"exercises":{"a":{"status":"done","hints_shown":-5},"b":null,"c":{"hints_shown":9}}}`))
	p, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*ExerciseProgress{"a": {Status: Done}, "c": {HintsShown: HintLevels}}
	if !reflect.DeepEqual(p.Exercises, want) {
		t.Errorf("read %+v, want %+v", p.Exercises, want)
	}
	if err := p.Save(root); err != nil {
		t.Fatal(err)
	}
	if again, err := LoadProgress(root); err != nil || !reflect.DeepEqual(again, p) {
		t.Errorf("saved and read again: %+v, %v; want %+v", again, err, p)
	}
}
