package quirk

import (
	"strings"
	"testing"
)

func TestEveryQuirkIsDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, q := range All() {
		if q.Name == "" || q.Doc == "" || q.Side == "" {
			t.Errorf("quirk %d is missing a name, side or description: %+v", q.Quirk, q)
		}
		if seen[q.Name] {
			t.Errorf("quirk name %q used twice", q.Name)
		}
		seen[q.Name] = true
		if got, ok := Lookup(q.Name); !ok || got != q.Quirk {
			t.Errorf("Lookup(%q) = %v, %v", q.Name, got, ok)
		}
	}
}

func TestEmptySetIsTheSpecification(t *testing.T) {
	var s Set
	for _, q := range All() {
		if s.Has(q.Quirk) {
			t.Errorf("the zero set has %s", q.Name)
		}
	}
	if s.String() != "" {
		t.Errorf("zero set prints %q", s.String())
	}
}

func TestParse(t *testing.T) {
	s, err := Parse(" phase-first , ,iotlb-ignores-invalidate")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(PhaseFirst) || !s.Has(IOTLBIgnoresInvalidate) || s.Has(NoCQFullCheck) {
		t.Errorf("Parse gave %v", s)
	}
	if s.String() != "iotlb-ignores-invalidate,phase-first" {
		t.Errorf("String = %q", s.String())
	}
	if _, err := Parse("phase-first,gremlins"); err == nil || !strings.Contains(err.Error(), `"gremlins"`) || !strings.Contains(err.Error(), "phase-first") {
		t.Errorf("unknown quirk error %v should name it and list the known ones", err)
	}
	if s, err := Parse(""); err != nil || s != 0 {
		t.Errorf("empty list: %v %v", s, err)
	}
}
