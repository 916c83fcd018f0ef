// Package quirk names the machine's injection points: switchable deviations from the
// specification that the break-it bug hunts turn on, one secret at a time. Every quirk
// is off by default, and a machine with no quirks follows the specification exactly.
package quirk

import (
	"fmt"
	"sort"
	"strings"
)

// Quirk is one injection point.
type Quirk uint8

// Where a quirk lives.
const (
	SideDevice   = "device"
	SidePlatform = "platform"
	SideCPU      = "cpu"
	SideKernel   = "kernel"
	SideDriver   = "driver"
)

// Device- and platform-side quirks. Driver-, kernel- and CPU-side quirks join this
// list as those layers are written; numbers are stable once published.
const (
	_ Quirk = iota
	// PhaseFirst: the device writes the completion's phase field before its body,
	// so a fast poller can see a new phase with the previous lap's payload.
	PhaseFirst
	// MSIBeforeCompletion: the device raises the completion interrupt before the
	// completion entry lands (catalog 17): the handler finds nothing new.
	MSIBeforeCompletion
	// IOTLBIgnoresInvalidate: the IOMMU acknowledges invalidations but keeps its
	// cached translations (the symptom of catalog 15).
	IOTLBIgnoresInvalidate
	// NoCQFullCheck: the device ignores CQ_HEAD and overwrites unconsumed completions.
	NoCQFullCheck
	// WriteBeforeCheck: the device moves data page by page while it translates, so a
	// fault part-way leaves a partial write (catalog 14's symptom made worse).
	WriteBeforeCheck
	// IgnoreBusMaster: the device performs DMA with COMMAND bus-master enable clear.
	IgnoreBusMaster
	numQuirks
)

// Info describes a quirk.
type Info struct {
	Quirk Quirk
	Name  string
	Side  string
	Hunt  int // bug-hunt catalog number in the workbook design, 0 if none
	Doc   string
}

var infos = [numQuirks]Info{
	PhaseFirst:             {PhaseFirst, "phase-first", SideDevice, 0, "the device writes the phase field before the completion body"},
	MSIBeforeCompletion:    {MSIBeforeCompletion, "msi-before-completion", SideDevice, 17, "the device sends the completion MSI before the completion entry is written"},
	IOTLBIgnoresInvalidate: {IOTLBIgnoresInvalidate, "iotlb-ignores-invalidate", SidePlatform, 15, "the IOMMU ignores INVALIDATE writes: stale translations live on"},
	NoCQFullCheck:          {NoCQFullCheck, "no-cq-full-check", SideDevice, 5, "the device never stalls on a full CQ and overwrites unconsumed completions"},
	WriteBeforeCheck:       {WriteBeforeCheck, "write-before-check", SideDevice, 14, "the device writes each page as it translates it, so a fault leaves a partial write"},
	IgnoreBusMaster:        {IgnoreBusMaster, "ignore-bus-master", SideDevice, 9, "the device performs DMA even with bus mastering disabled"},
}

// All lists every quirk in number order.
func All() []Info {
	out := make([]Info, 0, numQuirks-1)
	for q := Quirk(1); q < numQuirks; q++ {
		out = append(out, infos[q])
	}
	return out
}

// Info describes q.
func (q Quirk) Info() Info {
	if q > 0 && q < numQuirks {
		return infos[q]
	}
	return Info{Name: "unknown"}
}

func (q Quirk) String() string { return q.Info().Name }

// Set is a set of quirks. The zero value is the empty set: the machine as specified.
type Set uint64

// Has reports whether q is in the set.
func (s Set) Has(q Quirk) bool { return s&(1<<q) != 0 }

// With returns the set with q added.
func (s Set) With(q Quirk) Set { return s | 1<<q }

// Names lists the set's quirk names in sorted order.
func (s Set) Names() []string {
	var out []string
	for q := Quirk(1); q < numQuirks; q++ {
		if s.Has(q) {
			out = append(out, infos[q].Name)
		}
	}
	sort.Strings(out)
	return out
}

func (s Set) String() string { return strings.Join(s.Names(), ",") }

// Lookup finds a quirk by name.
func Lookup(name string) (Quirk, bool) {
	for q := Quirk(1); q < numQuirks; q++ {
		if infos[q].Name == name {
			return q, true
		}
	}
	return 0, false
}

// Parse reads a comma-separated list of quirk names ("" is the empty set).
func Parse(list string) (Set, error) {
	var s Set
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		q, ok := Lookup(name)
		if !ok {
			var known []string
			for _, i := range All() {
				known = append(known, i.Name)
			}
			return 0, fmt.Errorf("unknown quirk %q (known: %s)", name, strings.Join(known, ", "))
		}
		s = s.With(q)
	}
	return s, nil
}
