// Package scenario is the catalogue of runnable scenarios: each builds on a fresh
// machine, drives it, and says what it checked. The terminal (`saccbook run`), the
// monitor and the browser all run the same scenarios, so what a learner sees in one
// place is exactly what happens in the others.
package scenario

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
)

// Env is what a scenario writes to and leaves behind.
type Env struct {
	Log  io.Writer  // what the scenario checked, in sentences
	Host *host.Host // the booted system, for scenarios that boot a kernel
	// Options are scenario settings from the user ("cpu=arm64"); each scenario
	// documents the ones it reads.
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
	Options string // documentation of the options it reads, or ""
	Chapter int    // the chapter that tells this story (0 for the built-in ones)
	// Primary marks the chapter's own run: `saccbook run NN` runs it.
	Primary bool
	Run     func(m *machine.Machine, env *Env) error
}

// builtin are the scenarios defined in this file's package from the start.
func builtin() []Scenario {
	return []Scenario{
		{Name: "job", Primary: true, Summary: "one MEMCPY job's whole path, bare metal: enumeration, bring-up, doorbell, fetch, DMA, completion, MSI",
			Run: func(m *machine.Machine, env *Env) error { return baremetal.OneJob(m, env.Log) }},
		{Name: "mixed", Summary: "bare metal: the IOMMU, ring wrap and phase flips, a CQ-full stall, errors, a masked vector, reset",
			Run: func(m *machine.Machine, env *Env) error { return baremetal.Mixed(m, env.Log) }},
		{Name: "driver", Summary: "the kernel boots, the driver probes, and jobs run through it: NOP, MEMCPY, XFORM, a wrapping batch", Options: "cpu=x86|arm64, irq=on|off, iommu=on|off", Run: Driver},
		{Name: "bypass", Summary: "a process takes over the queue: doorbell page mapped, own rings, no system calls; then the same work through ioctl", Options: "cpu=x86|arm64", Run: Bypass},
		{Name: "irq-race", Summary: "interrupt handlers that acknowledge before or after draining, under the same completion timing", Run: IRQRace},
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
