package adversary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
)

// TestTheMachineBreaksTheSameWay: where a level is a quirk of the catalog, the
// book's machine with that quirk switched on shows the break the level's
// invariant names, and without it does not.
func TestTheMachineBreaksTheSameWay(t *testing.T) {
	for _, c := range []struct {
		level, scenario string
		options         map[string]string
		symptom         string // in what the scenario reports
	}{
		// The device read a descriptor that was not fully written.
		{"missing-wmb", "barriers", map[string]string{"cpu": "arm64"}, "the doorbell overtook the descriptor"},
		// The driver took last lap's body: the zeroed slot's req_id 0.
		{"phase-first", "phases", nil, "completion for unknown req_id"},
		// A completion never reaped: its interrupt was lost.
		{"drain-then-ack", "irq-race", nil, "job B lost its interrupt"},
		{"ack-then-drain", "irq-race", nil, "job B lost its interrupt"},
	} {
		l, err := Lookup(c.level)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := quirk.Lookup(l.Quirk)
		if !ok {
			t.Fatalf("level %s: no quirk %q", l.Name, l.Quirk)
		}
		report := func(quirks quirk.Set) string {
			s, ok := scenario.Find(c.scenario)
			if !ok {
				t.Fatalf("no scenario %s", c.scenario)
			}
			m, err := machine.New(machine.Config{Seed: 1, Quirks: quirks})
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			if err := s.Run(m, &scenario.Env{Log: &log, Options: c.options}); err != nil {
				t.Fatalf("%s with %v: %v", c.scenario, quirks, err)
			}
			return log.String()
		}
		// irq-race runs three handlers one after another, the correct one
		// first: a driver quirk makes that first one the broken order, so its
		// line is the one to read.
		firstOf := func(log string) string {
			if c.scenario == "irq-race" {
				first, _, _ := strings.Cut(log, "\n")
				if !strings.HasPrefix(first, "ack, read back, drain: ") {
					t.Fatalf("irq-race's first handler: %q", first)
				}
				return first
			}
			return log
		}
		if with := firstOf(report(quirk.Set(0).With(q))); !strings.Contains(with, c.symptom) {
			t.Errorf("level %s: %s with %s does not report %q:\n%s", l.Name, c.scenario, q, c.symptom, with)
		}
		if without := firstOf(report(0)); strings.Contains(without, c.symptom) {
			t.Errorf("level %s: %s without %s reports %q too:\n%s", l.Name, c.scenario, q, c.symptom, without)
		}
	}
}

// TestX86KeepsTheOrder: the x86-relaxed level holds, and so does the machine:
// missing-wmb on x86-64 leaves no descriptor overtaken.
func TestX86KeepsTheOrder(t *testing.T) {
	l, _ := Lookup("x86-relaxed")
	if l.Breakable || l.CPU.Weak {
		t.Fatalf("x86-relaxed: breakable %v, weak %v", l.Breakable, l.CPU.Weak)
	}
	s, _ := scenario.Find("barriers")
	m, err := machine.New(machine.Config{Seed: 1, Quirks: quirk.Set(0).With(quirk.MissingWMB)})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := s.Run(m, &scenario.Env{Log: &log, Options: map[string]string{"cpu": "x86"}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "overtook") || !strings.Contains(log.String(), "8 of 8 copies arrived") {
		t.Errorf("barriers on x86 with missing-wmb:\n%s", log.String())
	}
}
