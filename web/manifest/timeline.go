package manifest

import "github.com/saccbook/saccbook/sacc/trace"

// Timeline is how a widget's scrubber reads a run: the "next …" controls and the
// long stretches of setup it plays as one step. The browser finds both in the
// event log from these rules, so the rules, not the widget's code, say which
// trace kinds count as a doorbell or as setup.
type Timeline struct {
	Jumps []Jump `json:"jumps"`
	Folds []Fold `json:"folds"`
}

// Jump is a "next …" control: it moves to the next event of one of its kinds.
type Jump struct {
	Kind   string   `json:"kind"`  // the control's data-kind: doorbell, completion, interrupt, fault
	Label  string   `json:"label"` // its words: "Next doorbell"
	Doc    string   `json:"doc"`
	Events []string `json:"events"` // the trace kinds it stops at
}

// Fold is a kind of long setup that plays as one step: a run of at least Min
// consecutive events, each of one of Events' kinds.
type Fold struct {
	Name   string   `json:"name"`  // what a sacc-run block's fold= names
	Label  string   `json:"label"` // how the step is called: "enumeration"
	Doc    string   `json:"doc"`
	Events []string `json:"events"`
	Min    int      `json:"min"`
	// Contiguous: each event's addr is the previous one's addr + size, so the
	// run walks through one buffer in order.
	Contiguous bool `json:"contiguous"`
	// SameValue: each event's val is the previous one's (a buffer filled with
	// one byte pattern, not descriptors written one field at a time).
	SameValue bool `json:"same_value"`
}

// TimelineRules are the jumps and folds of every widget.
func TimelineRules() Timeline {
	names := func(ks ...trace.Kind) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.String()
		}
		return out
	}
	return Timeline{
		Jumps: []Jump{
			{"doorbell", "Next doorbell", "the CPU writes SQ_TAIL: new work for the device", names(trace.Doorbell)},
			{"completion", "Next completion", "the device writes a completion into the CQ", names(trace.CQPost)},
			{"interrupt", "Next interrupt", "the device sends an MSI-X message, or holds or drops it",
				names(trace.MSIXSend, trace.MSIXPending, trace.MSIXSuppressed)},
			{"fault", "Next fault", "an IOMMU fault, a refused access, a command error or a device error",
				names(trace.IOMMUFault, trace.IOMMUFaultDropped, trace.GuestError, trace.CommandError, trace.DeviceError, trace.EnableRefused)},
		},
		Folds: []Fold{
			{Name: "enumeration", Label: "enumeration", Min: 8,
				Doc:    "configuration-space reads and writes: the bus scan, BAR sizing and assignment",
				Events: names(trace.ConfigRead, trace.ConfigWrite, trace.BARMap, trace.BARUnmap, trace.PortIn, trace.PortOut)},
			{Name: "fill", Label: "filling a buffer", Min: 32, Contiguous: true, SameValue: true,
				Doc:    "the CPU stores one value over a whole buffer, in order (zeroing it, or writing a pattern)",
				Events: names(trace.CPUWrite)},
			{Name: "readback", Label: "reading a buffer", Min: 32, Contiguous: true,
				Doc:    "the CPU loads a whole buffer, in order",
				Events: names(trace.CPURead)},
		},
	}
}

// FoldNames lists the folds' names, in the rules' order.
func FoldNames() []string {
	var out []string
	for _, f := range TimelineRules().Folds {
		out = append(out, f.Name)
	}
	return out
}
