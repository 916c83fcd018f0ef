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

	// Driver and kernel side (the software above the bus).

	// MissingWMB: the driver rings the doorbell with writel_relaxed and no wmb, so
	// on a weakly ordered CPU the doorbell can overtake the descriptor (catalog 1).
	MissingWMB
	// BodyBeforePhase: the driver reads the completion body before checking the
	// phase, or without rmb after it (catalog 2).
	BodyBeforePhase
	// ExpectedPhaseZero: the driver starts expecting phase 0, so every zeroed
	// entry looks new (catalog 3).
	ExpectedPhaseZero
	// NoPhaseFlip: the driver never flips its expected phase on wrap (catalog 4).
	NoPhaseFlip
	// NoCQHead: the driver never writes CQ_HEAD (catalog 5).
	NoCQHead
	// FullIsTailEqHead: the driver tests "ring full" as tail == head (catalog 6).
	FullIsTailEqHead
	// DoorbellOutOfRange: the driver writes the doorbell with the unwrapped tail
	// (catalog 7).
	DoorbellOutOfRange
	// ReqIDReuse: the driver reuses a req_id still in flight (catalog 8).
	ReqIDReuse
	// SkipBusMaster: pci_set_master is a no-op (catalog 9).
	SkipBusMaster
	// SkipMemoryEnable: pci_enable_device leaves memory decoding off (catalog 10).
	SkipMemoryEnable
	// BARSizingNoMask: the firmware sizes BARs without masking the type bits and
	// does not restore them (catalog 11).
	BARSizingNoMask
	// WrongDMADirection: the driver maps the destination buffer DMA_TO_DEVICE, a
	// read-only IOMMU mapping (catalog 12).
	WrongDMADirection
	// UnmapWhileInUse: the driver unmaps a buffer before its command completes
	// (catalog 13).
	UnmapWhileInUse
	// FirstPageOnly: the DMA mapping covers only the first page of a buffer that
	// crosses a page boundary (catalog 14).
	FirstPageOnly
	// NoIOTLBInvalidate: the kernel changes I/O page tables without invalidating
	// the IOTLB (catalog 15).
	NoIOTLBInvalidate
	// DrainThenAck: the interrupt handler drains the CQ, then acknowledges
	// (catalog 16).
	DrainThenAck
	// VectorLeftMasked: the driver never unmasks its MSI-X vector (catalog 18).
	VectorLeftMasked
	// MapRegisterPage: mmap hands user space the register page with the doorbell
	// page (catalog 19).
	MapRegisterPage
	// WrongWidth: the driver reads and writes registers 16 bits wide (catalog 20).
	WrongWidth
	// MissingRMB: the driver reads the completion body after the phase with no
	// rmb between, so a weakly ordered CPU may read the body first (catalog 2).
	MissingRMB
	// AckWithoutReadback: the interrupt handler acknowledges, then drains at once,
	// without reading a register back, so the drain can run before the posted
	// acknowledgement has reached the device (catalog 16).
	AckWithoutReadback
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

	MissingWMB:         {MissingWMB, "missing-wmb", SideDriver, 1, "doorbell rung with writel_relaxed and no wmb before it"},
	BodyBeforePhase:    {BodyBeforePhase, "body-before-phase", SideDriver, 2, "completion body read before the phase check"},
	ExpectedPhaseZero:  {ExpectedPhaseZero, "expected-phase-zero", SideDriver, 3, "the driver's expected phase starts at 0"},
	NoPhaseFlip:        {NoPhaseFlip, "no-phase-flip", SideDriver, 4, "the expected phase is not flipped on wrap"},
	NoCQHead:           {NoCQHead, "no-cq-head", SideDriver, 5, "CQ_HEAD is never written"},
	FullIsTailEqHead:   {FullIsTailEqHead, "full-is-tail-eq-head", SideDriver, 6, "ring full tested as tail == head"},
	DoorbellOutOfRange: {DoorbellOutOfRange, "doorbell-out-of-range", SideDriver, 7, "the doorbell is written with the unwrapped tail"},
	ReqIDReuse:         {ReqIDReuse, "req-id-reuse", SideDriver, 8, "req_id reused while the request is outstanding"},
	SkipBusMaster:      {SkipBusMaster, "skip-bus-master", SideKernel, 9, "pci_set_master does nothing"},
	SkipMemoryEnable:   {SkipMemoryEnable, "skip-memory-enable", SideKernel, 10, "pci_enable_device leaves memory decoding off"},
	BARSizingNoMask:    {BARSizingNoMask, "bar-sizing-no-mask", SideKernel, 11, "BAR sizing keeps the type bits and does not restore the BAR"},
	WrongDMADirection:  {WrongDMADirection, "wrong-dma-direction", SideDriver, 12, "the destination buffer is mapped DMA_TO_DEVICE"},
	UnmapWhileInUse:    {UnmapWhileInUse, "unmap-while-in-use", SideDriver, 13, "a buffer is unmapped before its command completes"},
	FirstPageOnly:      {FirstPageOnly, "first-page-only", SideKernel, 14, "only the first page of a buffer is mapped"},
	NoIOTLBInvalidate:  {NoIOTLBInvalidate, "no-iotlb-invalidate", SideKernel, 15, "page-table changes are not followed by an IOTLB invalidation"},
	DrainThenAck:       {DrainThenAck, "drain-then-ack", SideDriver, 16, "the interrupt handler drains, then acknowledges"},
	VectorLeftMasked:   {VectorLeftMasked, "vector-left-masked", SideDriver, 18, "the MSI-X vector is never unmasked"},
	MapRegisterPage:    {MapRegisterPage, "map-register-page", SideDriver, 19, "mmap exposes the register page as well as the doorbell page"},
	WrongWidth:         {WrongWidth, "wrong-width", SideDriver, 20, "registers accessed 16 bits wide"},
	MissingRMB:         {MissingRMB, "missing-rmb", SideDriver, 2, "no rmb between the phase check and the completion body"},
	AckWithoutReadback: {AckWithoutReadback, "ack-without-readback", SideDriver, 16, "the interrupt handler acknowledges, then drains without reading a register back"},
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
