package scenario

import (
	"bytes"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// traceOf runs a scenario (seed 1) and returns its text trace, with the error it
// returned, if any, as a last line.
func traceOf(t *testing.T, s Scenario, qs quirk.Set, opts map[string]string) string {
	t.Helper()
	m, err := machine.New(machine.Config{Seed: 1, Quirks: qs})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.Tracer().Attach(trace.NewTextWriter(&out))
	if err := s.Run(m, &Env{Log: &bytes.Buffer{}, Options: opts}); err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	}
	return out.String()
}

// TestDeclaredQuirksExist: every quirk a scenario accepts is in the quirk registry,
// once.
func TestDeclaredQuirksExist(t *testing.T) {
	for _, s := range All() {
		for i, q := range s.Quirks {
			name := q.Info().Name
			if got, ok := quirk.Lookup(name); !ok || got != q {
				t.Errorf("%s: quirk %d is not in the quirk registry", s.Name, q)
			}
			if slices.Contains(s.Quirks[:i], q) {
				t.Errorf("%s: quirk %s declared twice", s.Name, name)
			}
		}
	}
}

// TestAcceptedQuirksChangeTheTrace: a quirk a scenario accepts shows in its run;
// one that changes nothing would be a Break-it box with nothing to find.
func TestAcceptedQuirksChangeTheTrace(t *testing.T) {
	for _, s := range All() {
		if len(s.Quirks) == 0 {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			base := traceOf(t, s, 0, nil)
			for _, q := range s.Quirks {
				if traceOf(t, s, quirk.Set(0).With(q), nil) == base {
					t.Errorf("quirk %s changes nothing in %s's trace", q, s.Name)
				}
			}
		})
	}
}

// breakIt finds the "Break it" box of a chapter: the quoted paragraph that starts
// with "**Break it:**".
var breakIt = regexp.MustCompile(`(?m)^> \*\*Break it:\*\*(?:.*\n)(?:>.*\n)*`)

// quirksFlag is a --quirks argument in the box.
var quirksFlag = regexp.MustCompile("--quirks ([a-z0-9,-]+)")

// TestBreakItBoxesNameAcceptedQuirks: every quirk a chapter's Break-it box tells
// the reader to switch on is one its primary scenario accepts, so the browser can
// offer the same.
func TestBreakItBoxesNameAcceptedQuirks(t *testing.T) {
	names, err := fs.Glob(chapters.FS, "[0-9][0-9]-*.md")
	if err != nil || len(names) == 0 {
		t.Fatalf("chapters: %v %v", names, err)
	}
	boxes := 0
	for _, name := range names {
		n, _ := strconv.Atoi(name[:2])
		src, err := fs.ReadFile(chapters.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, box := range breakIt.FindAllString(string(src), -1) {
			boxes++
			s, ok := Find(strconv.Itoa(n))
			if !ok {
				t.Errorf("%s has a Break-it box but chapter %d has no primary scenario", name, n)
				continue
			}
			for _, m := range quirksFlag.FindAllStringSubmatch(strings.ReplaceAll(box, "\n> ", " "), -1) {
				for _, qn := range strings.Split(m[1], ",") {
					q, ok := quirk.Lookup(qn)
					if !ok {
						t.Errorf("%s: Break it names %q, which is not a quirk", name, qn)
						continue
					}
					if !slices.Contains(s.Quirks, q) {
						t.Errorf("%s: Break it names %s, but scenario %s does not declare it in Quirks", name, qn, s.Name)
					}
				}
			}
		}
	}
	if boxes < 10 {
		t.Errorf("found %d Break-it boxes; the pattern no longer matches the chapters", boxes)
	}
}

// TestOptionDeclarations: each option's default is one of its values and is what
// the scenario does without the option; every declared value runs; a value the
// declaration does not list is refused by the scenario itself.
func TestOptionDeclarations(t *testing.T) {
	for _, s := range All() {
		if len(s.Options) == 0 {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			base := traceOf(t, s, 0, nil)
			seen := map[string]bool{}
			for _, o := range s.Options {
				if seen[o.Name] || o.Doc == "" || len(o.Values) < 2 || !o.Takes(o.Default) {
					t.Errorf("option %s: default %q, values %v", o.Name, o.Default, o.ValueNames())
				}
				seen[o.Name] = true
				for _, v := range o.Values {
					got := traceOf(t, s, 0, map[string]string{o.Name: v.Name})
					if strings.Contains(got, "\nerror: ") {
						t.Errorf("%s=%s: %s", o.Name, v.Name, got[strings.LastIndex(got, "error: "):])
					}
					if (got == base) != (v.Name == o.Default) {
						t.Errorf("%s=%s: same trace as no option: %v; declared default %s", o.Name, v.Name, got == base, o.Default)
					}
				}
				m, err := machine.New(machine.Config{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Run(m, &Env{Log: &bytes.Buffer{}, Options: map[string]string{o.Name: "nosuch"}}); err == nil {
					t.Errorf("%s=nosuch accepted", o.Name)
				}
			}
		})
	}
}

// TestOptionsDoc is the documentation the command line prints.
func TestOptionsDoc(t *testing.T) {
	for name, want := range map[string]string{
		"driver":   "cpu=x86|arm64, irq=on|off, iommu=on|off",
		"dma":      "iommu=off|on",
		"barriers": "cpu=x86|arm64, wmb=on|off",
		"job":      "",
	} {
		s, _ := Find(name)
		if got := s.OptionsDoc(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
