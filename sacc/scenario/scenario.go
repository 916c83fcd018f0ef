// Package scenario is the catalogue of runnable scenarios: each builds on a fresh
// machine, drives it, and says what it checked. The terminal (`saccbook run`), the
// monitor and the browser all run the same scenarios, so what a learner sees in one
// place is exactly what happens in the others.
package scenario

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Env is what a scenario writes to and leaves behind.
type Env struct {
	Log  io.Writer  // what the scenario checked, in sentences
	Host *host.Host // the booted system, for scenarios that boot a kernel
	// Options are scenario settings from the user ("cpu=arm64"); each scenario
	// declares the ones it reads.
	Options map[string]string
}

// Option returns an option or its default.
func (e *Env) Option(name, def string) string {
	if v, ok := e.Options[name]; ok {
		return v
	}
	return def
}

// Scenario is one runnable story.
type Scenario struct {
	Name    string
	Summary string
	// Options are the settings it reads with Env.Option. The command line prints
	// them, the server refuses others, and the browser offers them.
	Options []Option
	// Quirks are the quirks the story is meant to be broken with (the chapter's
	// "Break it" box): each of them, switched on, changes the run's trace.
	Quirks  []quirk.Quirk
	Chapter int // the chapter that tells this story (0 for the built-in ones)
	// Primary marks the chapter's own run: `saccbook run NN` runs it.
	Primary bool
	Run     func(m *machine.Machine, env *Env) error
}

// Option is a setting a scenario reads.
type Option struct {
	Name    string
	Doc     string
	Default string  // what the scenario does when the option is not given
	Values  []Value // every value it takes
}

// Value is one value an option takes.
type Value struct {
	Name string
	Doc  string // "" when the value says it all
}

// values declares option values that need no words.
func values(names ...string) []Value {
	out := make([]Value, len(names))
	for i, n := range names {
		out[i] = Value{Name: n}
	}
	return out
}

// cpuOption is the choice of memory model for the scenarios that run software on
// the CPU; def is what the scenario picks by itself.
func cpuOption(def string) Option {
	return Option{Name: "cpu", Doc: "the CPU model: how stores reach memory", Default: def,
		Values: []Value{{"x86", "strong ordering"}, {"arm64", "weak ordering"}}}
}

// ValueNames lists the option's values.
func (o Option) ValueNames() []string {
	out := make([]string, len(o.Values))
	for i, v := range o.Values {
		out[i] = v.Name
	}
	return out
}

// Takes reports whether v is one of the option's values.
func (o Option) Takes(v string) bool { return slices.Contains(o.ValueNames(), v) }

// Option finds one of the scenario's options.
func (s Scenario) Option(name string) (Option, bool) {
	for _, o := range s.Options {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// CheckOptions checks options against the ones the scenario declares: each name
// one of them, each value one of its values. The sentences are the same wherever a
// run is asked for (the command line, a browser's hello, a chapter's widget).
func (s Scenario) CheckOptions(opts map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		o, ok := s.Option(k)
		if !ok {
			if len(s.Options) == 0 {
				return fmt.Errorf("option %q: scenario %s takes no options", k, s.Name)
			}
			return fmt.Errorf("option %q: scenario %s takes %s", k, s.Name, s.OptionsDoc())
		}
		if !o.Takes(v) {
			return fmt.Errorf("option %s=%q: want %s", k, v, strings.Join(o.ValueNames(), " or "))
		}
	}
	return nil
}

// OptionsDoc is the options as the command line documents them:
// "cpu=x86|arm64, irq=on|off"; "" for a scenario without options.
func (s Scenario) OptionsDoc() string {
	parts := make([]string, len(s.Options))
	for i, o := range s.Options {
		parts[i] = o.Name + "=" + strings.Join(o.ValueNames(), "|")
	}
	return strings.Join(parts, ", ")
}

// builtin are the scenarios defined in this file's package from the start.
func builtin() []Scenario {
	return []Scenario{
		{Name: "job", Primary: true, Summary: "one MEMCPY job's whole path, bare metal: enumeration, bring-up, doorbell, fetch, DMA, completion, MSI",
			Run: func(m *machine.Machine, env *Env) error { return baremetal.OneJob(m, env.Log) }},
		{Name: "mixed", Summary: "bare metal: the IOMMU, ring wrap and phase flips, a CQ-full stall, errors, a masked vector, reset",
			Run: func(m *machine.Machine, env *Env) error { return baremetal.Mixed(m, env.Log) }},
		{Name: "driver", Summary: "the kernel boots, the driver probes, and jobs run through it: NOP, MEMCPY, XFORM, a wrapping batch",
			Options: []Option{cpuOption("x86"),
				{Name: "irq", Doc: "completions by interrupt instead of polling", Default: "off", Values: values("on", "off")},
				{Name: "iommu", Doc: "DMA through the IOMMU", Default: "off", Values: values("on", "off")}},
			Run: Driver},
		{Name: "bypass", Summary: "a process takes over the queue: doorbell page mapped, own rings, no system calls; then the same work through ioctl",
			Options: []Option{cpuOption("x86")}, Run: Bypass},
		{Name: "irq-race", Summary: "three interrupt handlers under the same completion timing: ack, read back, drain; drain, then ack; ack, then drain with no read-back", Run: IRQRace},
		{Name: "ordering", Summary: "a driver without wmb before the doorbell, on x86 and on arm64", Run: Ordering},
	}
}

// registered holds scenarios that other files of this package add with register,
// one file per chapter, so chapters never edit a shared list.
var registered []Scenario

// register adds a scenario; it is called from package-level variable
// initialisers of chapter files (a registration table, nothing else).
func register(s Scenario) bool {
	registered = append(registered, s)
	return true
}

// All lists the scenarios: the built-in ones, then the chapters' in chapter order
// (the Chapter field; ties by name).
func All() []Scenario {
	out := builtin()
	extra := append([]Scenario(nil), registered...)
	sort.SliceStable(extra, func(i, j int) bool {
		if extra[i].Chapter != extra[j].Chapter {
			return extra[i].Chapter < extra[j].Chapter
		}
		return extra[i].Name < extra[j].Name
	})
	return append(out, extra...)
}

// Find looks a scenario up by name, or by chapter number ("03" or "3" finds the
// chapter's primary scenario).
func Find(name string) (Scenario, bool) {
	all := All()
	for _, s := range all {
		if s.Name == name {
			return s, true
		}
	}
	if n, err := strconv.Atoi(name); err == nil {
		for _, s := range all {
			if s.Chapter == n && s.Primary {
				return s, true
			}
		}
	}
	return Scenario{}, false
}

// Names lists scenario names.
func Names() []string {
	var n []string
	for _, s := range All() {
		n = append(n, s.Name)
	}
	return n
}

// ParseOptions reads "k=v,k=v".
func ParseOptions(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("option %q: want name=value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}
