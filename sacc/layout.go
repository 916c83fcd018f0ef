package sacc

import "math/bits"

// Layout is the byte layout of a structure the specification defines, as its tables
// give it: the descriptor and completion (§6), the MSI-X table entry (§9), the IOMMU's
// fault record and page-table entry (§10). The offsets are the constants the encoders
// use, so a layout cannot disagree with Encode and Decode (datasheet_test.go proves it
// field by field); code that shows a structure (the monitor, the browser's views)
// reads a layout instead of knowing offsets.
type Layout struct {
	Name    string // "descriptor", "completion", …
	Section string // of the specification
	Size    int    // bytes
	Fields  []Field
}

// Field is one row of a layout table: little-endian, Size bytes at Offset.
type Field struct {
	Name   string
	Offset int
	Size   int
	Doc    string
	Bits   []Bits // named bits inside the field, if any
}

// Bits names a contiguous run of bits inside a field or a register.
type Bits struct {
	Name string
	Mask uint64
	Doc  string
}

// Shift is the position of the run's lowest bit.
func (b Bits) Shift() int { return bits.TrailingZeros64(b.Mask) }

// Width is the number of bits in the run.
func (b Bits) Width() int { return bits.OnesCount64(b.Mask) }

// Field finds a field by name.
func (l Layout) Field(name string) (Field, bool) {
	for _, f := range l.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// DescriptorLayout is the submission descriptor (§6.1).
var DescriptorLayout = Layout{Name: "descriptor", Section: "6.1", Size: DescriptorSize, Fields: []Field{
	{Name: "src_addr", Offset: DescSrcOff, Size: 8, Doc: "DMA address of the input buffer"},
	{Name: "dst_addr", Offset: DescDstOff, Size: 8, Doc: "DMA address of the output buffer"},
	{Name: "length", Offset: DescLenOff, Size: 4, Doc: "bytes to process"},
	{Name: "opcode", Offset: DescOpOff, Size: 2, Doc: "what to do (§6.3)"},
	{Name: "flags", Offset: DescFlagsOff, Size: 2, Doc: "other bits reserved (ignored)",
		Bits: []Bits{{Name: "interrupt", Mask: FlagInterrupt, Doc: "interrupt on completion"}}},
	{Name: "req_id", Offset: DescReqIDOff, Size: 4, Doc: "driver-chosen tag, echoed in the completion"},
	{Name: "reserved", Offset: DescReservedOff, Size: 4, Doc: "written as 0"},
}}

// CompletionLayout is the completion entry (§6.2); the phase field is written last.
var CompletionLayout = Layout{Name: "completion", Section: "6.2", Size: CompletionSize, Fields: []Field{
	{Name: "req_id", Offset: CplReqIDOff, Size: 4, Doc: "echoed from the descriptor"},
	{Name: "result_len", Offset: CplResultLenOff, Size: 4, Doc: "bytes written"},
	{Name: "reserved", Offset: CplReservedOff, Size: 4, Doc: "written as 0"},
	{Name: "status", Offset: CplStatusOff, Size: 2, Doc: "completion status (§8)"},
	{Name: "phase", Offset: CplPhaseOff, Size: CplPhaseFieldSize, Doc: "other bits 0",
		Bits: []Bits{{Name: "phase", Mask: CplPhaseBit, Doc: "new when it equals the expected phase (§7.2)"}}},
}}

// MSIXEntryLayout is one MSI-X table entry (§9).
var MSIXEntryLayout = Layout{Name: "msix_entry", Section: "9", Size: MSIXEntrySize, Fields: []Field{
	{Name: "addr_lo", Offset: MSIXEntryAddrLo, Size: 4, Doc: "message address, low half"},
	{Name: "addr_hi", Offset: MSIXEntryAddrHi, Size: 4, Doc: "message address, high half"},
	{Name: "data", Offset: MSIXEntryData, Size: 4, Doc: "message data"},
	{Name: "vector_control", Offset: MSIXEntryControl, Size: 4, Doc: "masked at power-on",
		Bits: []Bits{{Name: "mask", Mask: MSIXEntryMasked, Doc: "the vector is masked: its PBA bit is set instead"}}},
}}

// FaultRecordLayout is one record of the IOMMU fault log (§10).
var FaultRecordLayout = Layout{Name: "fault_record", Section: "10", Size: FaultRecordSize, Fields: []Field{
	{Name: "iova", Offset: FaultIOVAOff, Size: 8, Doc: "the address the device used"},
	{Name: "source_id", Offset: FaultSourceOff, Size: 2, Doc: "bus << 8 | device << 3 | function"},
	{Name: "reason", Offset: FaultReasonOff, Size: 1, Doc: "1 not present, 2 write not allowed, 3 read not allowed, 4 address beyond 48 bits"},
	{Name: "access", Offset: FaultAccessOff, Size: 1, Doc: "0 read, 1 write"},
	{Name: "reserved", Offset: FaultReservedOff, Size: 4, Doc: "written as 0"},
}}

// PTELayout is an I/O page-table entry (§10).
var PTELayout = Layout{Name: "pte", Section: "10", Size: IOPTEntrySize, Fields: []Field{
	{Name: "entry", Offset: 0, Size: IOPTEntrySize, Doc: "an entry with neither permission bit is not present",
		Bits: []Bits{
			{Name: "read", Mask: PTERead, Doc: "DMA reads allowed"},
			{Name: "write", Mask: PTEWrite, Doc: "DMA writes allowed"},
			{Name: "addr", Mask: PTEAddrMask, Doc: "physical address of the next table or of the page"},
		}},
}}

// ConfigHeaderLayout is the type-0 configuration header (§3), the first 64 bytes
// of a function's configuration space, as the PCI specification lays it out.
var ConfigHeaderLayout = Layout{Name: "config_header", Section: "3", Size: CfgHeaderEnd, Fields: []Field{
	{Name: "vendor_id", Offset: CfgVendorID, Size: 2, Doc: "0xffff: no function here"},
	{Name: "device_id", Offset: CfgDeviceID, Size: 2, Doc: "which device of the vendor's"},
	{Name: "command", Offset: CfgCommand, Size: 2, Doc: "what the function may do",
		Bits: []Bits{{Name: "memory_space", Mask: CmdMemorySpace, Doc: "the BARs decode"},
			{Name: "bus_master", Mask: CmdBusMaster, Doc: "the function may start DMA"}}},
	{Name: "status", Offset: CfgStatus, Size: 2, Doc: "bit 4: a capability list"},
	{Name: "revision", Offset: CfgRevision, Size: 1, Doc: "revision ID"},
	{Name: "class_code", Offset: CfgClassCode, Size: 3, Doc: "prog-if, subclass, base class"},
	{Name: "cache_line_size", Offset: CfgCacheLineSize, Size: 1, Doc: "cache line size"},
	{Name: "latency_timer", Offset: CfgLatencyTimer, Size: 1, Doc: "latency timer"},
	{Name: "header_type", Offset: CfgHeaderType, Size: 1, Doc: "0: an endpoint"},
	{Name: "bist", Offset: CfgBIST, Size: 1, Doc: "built-in self test"},
	{Name: "bar0", Offset: CfgBAR0, Size: 4, Doc: "base address register 0", Bits: []Bits{{Name: "type", Mask: BARTypeMask, Doc: "memory, 32/64-bit, prefetchable: read-only"}}},
	{Name: "bar1", Offset: CfgBAR1, Size: 4, Doc: "base address register 1", Bits: []Bits{{Name: "type", Mask: BARTypeMask, Doc: "memory, 32/64-bit, prefetchable: read-only"}}},
	{Name: "bar2", Offset: CfgBAR2, Size: 4, Doc: "base address register 2"},
	{Name: "bar3", Offset: CfgBAR2 + 4, Size: 4, Doc: "base address register 3"},
	{Name: "bar4", Offset: CfgBAR2 + 8, Size: 4, Doc: "base address register 4"},
	{Name: "bar5", Offset: CfgBAR5, Size: 4, Doc: "base address register 5"},
	{Name: "cardbus_cis", Offset: CfgBAR5 + 4, Size: 4, Doc: "unused"},
	{Name: "subsystem_vendor_id", Offset: CfgSubsystemVID, Size: 2, Doc: "the board's vendor"},
	{Name: "subsystem_id", Offset: CfgSubsystemID, Size: 2, Doc: "the board"},
	{Name: "expansion_rom", Offset: CfgExpansionROM, Size: 4, Doc: "no option ROM"},
	{Name: "cap_ptr", Offset: CfgCapPtr, Size: 1, Doc: "first capability"},
	{Name: "reserved", Offset: CfgCapPtr + 1, Size: 7, Doc: "reserved"},
	{Name: "interrupt_line", Offset: CfgInterruptLine, Size: 1, Doc: "legacy IRQ routing"},
	{Name: "interrupt_pin", Offset: CfgInterruptPin, Size: 1, Doc: "0: no INTx (§9)"},
	{Name: "min_gnt", Offset: CfgInterruptPin + 1, Size: 1, Doc: "unused on PCIe"},
	{Name: "max_lat", Offset: CfgInterruptPin + 2, Size: 1, Doc: "unused on PCIe"},
}}

// Layouts lists every layout of the datasheet.
func Layouts() []Layout {
	return []Layout{DescriptorLayout, CompletionLayout, MSIXEntryLayout, FaultRecordLayout, PTELayout, ConfigHeaderLayout}
}
