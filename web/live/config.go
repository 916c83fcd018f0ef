package live

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/sim"
)

// runConfig is what a hello (or a shared stream's spec) asks for: everything that
// determines a run. It is immutable once built.
type runConfig struct {
	sc      scenario.Scenario
	seed    uint64
	options map[string]string // checked; never nil
	quirks  quirk.Set         // checked: each one the scenario accepts
	// baseline is the same run without the quirks, which a run with quirks is
	// compared with; nil for a run without any, and for a hunt.
	baseline *runConfig
	// cost is the cost model; nil for the default one.
	cost *sim.Cost
	// hunt is the number of the bug hunt whose variant this is, 0 if none: its
	// quirk is never named to the client, and it has no baseline.
	hunt int
	prof profile.Profile // the machine's profile; v1 unless the hello names another
}

// newHuntConfig is the run of a learner's variant of a bug hunt.
func newHuntConfig(v hunt.Variant) (*runConfig, error) {
	sc, err := v.Scenario()
	if err != nil {
		return nil, err
	}
	c, err := v.Cost()
	if err != nil {
		return nil, err
	}
	mc, err := v.Machine(true)
	if err != nil {
		return nil, err
	}
	return &runConfig{sc: sc, seed: v.Seed, options: maps.Clone(v.Options), quirks: mc.Quirks, cost: &c, hunt: v.Hunt.Number, prof: profile.V1()}, nil
}

const maxOptions = 32

// newRunConfig checks a scenario name, its options, the quirks to switch on and
// a profile name ("" for the default).
func newRunConfig(name string, seed uint64, opts map[string]string, quirks []string, prof string) (*runConfig, error) {
	if name == "" {
		return nil, fmt.Errorf("hello: scenario is required")
	}
	sc, ok := findScenario(name)
	if !ok {
		return nil, fmt.Errorf("unknown scenario %q", name)
	}
	if err := checkOptions(sc, opts); err != nil {
		return nil, err
	}
	qs, err := checkQuirks(sc, quirks)
	if err != nil {
		return nil, err
	}

	p, err := profile.Parse(prof)
	if err != nil {
		return nil, err
	}
	cfg := &runConfig{sc: sc, seed: seed, options: maps.Clone(opts), prof: p}
	if cfg.options == nil {
		cfg.options = map[string]string{}
	}
	if qs != 0 {
		base := *cfg
		cfg.quirks, cfg.baseline = qs, &base
	}
	return cfg, nil
}

// checkQuirks checks quirk names against the registry and against the quirks
// the scenario is meant to be broken with (its chapter's Break-it box): a quirk
// the scenario does not declare may change nothing in it, or break it in a way
// no page explains.
func checkQuirks(sc scenario.Scenario, names []string) (quirk.Set, error) {
	var qs quirk.Set
	for _, name := range names {
		q, ok := quirk.Lookup(name)
		if !ok {
			return 0, fmt.Errorf("quirks: unknown quirk %q (saccbook quirks lists them)", name)
		}
		if !slices.Contains(sc.Quirks, q) {
			if len(sc.Quirks) == 0 {
				return 0, fmt.Errorf("quirks: %s: scenario %s takes no quirks", name, sc.Name)
			}
			return 0, fmt.Errorf("quirks: %s: scenario %s takes %s", name, sc.Name, strings.Join(quirkNames(sc.Quirks), ", "))
		}
		if qs.Has(q) {
			return 0, fmt.Errorf("quirks: %s given twice", name)
		}
		qs = qs.With(q)
	}
	return qs, nil
}

func quirkNames(qs []quirk.Quirk) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.String()
	}
	return out
}

// quirkList is the quirks switched on, as the welcome names them: never nil,
// and empty for a hunt, whose bug is the secret.
func (c *runConfig) quirkList() []string {
	if c.hunt != 0 {
		return []string{}
	}
	if n := c.quirks.Names(); n != nil {
		return n
	}
	return []string{}
}

// checkOptions checks options against the ones the scenario declares: their names,
// with one of their values.
func checkOptions(sc scenario.Scenario, opts map[string]string) error {
	if len(opts) == 0 {
		return nil
	}
	if len(opts) > maxOptions {
		return fmt.Errorf("too many options (%d)", len(opts))
	}
	return sc.CheckOptions(opts)
}

// env is a fresh scenario environment writing its narrative to log.
func (c *runConfig) env(log io.Writer) *scenario.Env {
	return &scenario.Env{Log: log, Options: maps.Clone(c.options)}
}

func (c *runConfig) newMachine() (*machine.Machine, error) {
	return machine.New(machine.Config{Seed: c.seed, Quirks: c.quirks, Cost: c.cost, Profile: c.prof})
}

// quirksForLog is what the server's own log says of the quirks: a hunt's are
// not written anywhere, the log included.
func (c *runConfig) quirksForLog() string {
	if c.hunt != 0 {
		return fmt.Sprintf("(hunt %d)", c.hunt)
	}
	return c.quirks.String()
}

// runner builds a held runner for the configuration, with the monitor's event
// tap on every machine it builds (so monitor output is complete).
func (c *runConfig) runner() (*runner.Runner, error) {
	// The narrative is not kept: a step back re-runs the program and would tell
	// the story again.
	return runner.New(c.newMachine, func(m *machine.Machine) error {
		return c.sc.Run(m, c.env(io.Discard))
	})
}

// newID names a session.
func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}
