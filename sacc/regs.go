package sacc

// Register file, BAR0 page 0 (§5).
const (
	RegMAGIC      = 0x00
	RegVERSION    = 0x04
	RegCTRL       = 0x08
	RegSTATUS     = 0x0C
	RegSQBaseLo   = 0x10
	RegSQBaseHi   = 0x14
	RegSQSize     = 0x18
	RegCQBaseLo   = 0x20
	RegCQBaseHi   = 0x24
	RegCQSize     = 0x28
	RegCQHead     = 0x30
	RegIRQStatus  = 0x34
	RegIRQAck     = 0x38
	RegErrCode    = 0x3C
	RegSCRATCH    = 0x40
	RegFileEnd    = 0x44 // first reserved offset after the register file
	RegisterPage  = 0x0000
	DoorbellPage  = 0x1000
	RegSQTail     = 0x1000 // the doorbell (§5.1)
	RegCQHeadDB   = 0x1004 // v1 (§5.1)
	DoorbellEnd   = 0x1008
	MagicValue    = 0x4A4E524F
	VersionValue  = 0x00000001
	CtrlEnable    = 1 << 0
	CtrlReset     = 1 << 1
	StatusReady   = 1 << 0
	StatusError   = 1 << 1
	IRQCompletion = 1 << 0
)

// Access describes who may do what with a register (§5).
type Access uint8

const (
	AccessReserved Access = iota
	AccessRO
	AccessRW
	AccessWO
)

func (a Access) String() string {
	switch a {
	case AccessRO:
		return "RO"
	case AccessRW:
		return "RW"
	case AccessWO:
		return "WO"
	}
	return "reserved"
}

// Register is one row of the register tables of §5, §5.1 and §10.
type Register struct {
	Offset uint32
	Name   string
	Access Access
	Width  int // bits as the table gives them; 64-bit registers also take 32-bit halves
	Doc    string
	Bits   []Bits // named bits, for registers that have them
}

// HiName is the name of a 64-bit register's high half, at Offset+4 ("SQ_BASE_HI");
// "" for a 32-bit register.
func (r Register) HiName() string {
	if r.Width != 64 {
		return ""
	}
	return r.Name + "_HI"
}

// Registers lists BAR0's registers in offset order. The 64-bit base registers appear
// once, at their low offset.
var Registers = []Register{
	{Offset: RegMAGIC, Name: "MAGIC", Access: AccessRO, Width: 32, Doc: "reads 0x4A4E524F"},
	{Offset: RegVERSION, Name: "VERSION", Access: AccessRO, Width: 32, Doc: "reads 0x00000001"},
	{Offset: RegCTRL, Name: "CTRL", Access: AccessRW, Width: 32, Doc: "bit 0 ENABLE; bit 1 RESET (self-clearing)",
		Bits: []Bits{
			{Name: "ENABLE", Mask: CtrlEnable, Doc: "run the rings; READY follows after the enable latency"},
			{Name: "RESET", Mask: CtrlReset, Doc: "every register back to its power-on value; reads 0"},
		}},
	{Offset: RegSTATUS, Name: "STATUS", Access: AccessRO, Width: 32, Doc: "bit 0 READY; bit 1 ERROR",
		Bits: []Bits{
			{Name: "READY", Mask: StatusReady, Doc: "the device takes doorbells"},
			{Name: "ERROR", Mask: StatusError, Doc: "a device error halted the device until RESET"},
		}},
	{Offset: RegSQBaseLo, Name: "SQ_BASE", Access: AccessRW, Width: 64, Doc: "submission ring base (DMA address)"},
	{Offset: RegSQSize, Name: "SQ_SIZE", Access: AccessRW, Width: 32, Doc: "descriptors in the SQ (power of two)"},
	{Offset: RegCQBaseLo, Name: "CQ_BASE", Access: AccessRW, Width: 64, Doc: "completion ring base (DMA address)"},
	{Offset: RegCQSize, Name: "CQ_SIZE", Access: AccessRW, Width: 32, Doc: "entries in the CQ (power of two)"},
	{Offset: RegCQHead, Name: "CQ_HEAD", Access: AccessWO, Width: 32, Doc: "next completion the driver will consume"},
	{Offset: RegIRQStatus, Name: "IRQ_STATUS", Access: AccessRO, Width: 32, Doc: "bit 0: completion interrupt pending",
		Bits: []Bits{{Name: "COMPLETION", Mask: IRQCompletion, Doc: "a completion interrupt is pending"}}},
	{Offset: RegIRQAck, Name: "IRQ_ACK", Access: AccessWO, Width: 32, Doc: "write 1 to bit 0 to clear IRQ_STATUS bit 0",
		Bits: []Bits{{Name: "COMPLETION", Mask: IRQCompletion, Doc: "clears IRQ_STATUS bit 0"}}},
	{Offset: RegErrCode, Name: "ERR_CODE", Access: AccessRO, Width: 32, Doc: "last error code"},
	{Offset: RegSCRATCH, Name: "SCRATCH", Access: AccessRW, Width: 32, Doc: "free scratch register"},
	{Offset: RegSQTail, Name: "SQ_TAIL", Access: AccessWO, Width: 32, Doc: "the doorbell: new submission tail"},
	{Offset: RegCQHeadDB, Name: "CQ_HEAD_DB", Access: AccessWO, Width: 32, Doc: "same effect as CQ_HEAD (v1)"},
}

// RegName names the BAR0 register at off, including the high halves of the 64-bit
// registers; reserved offsets are named "reserved".
func RegName(off uint32) string { return regName(Registers, off) }

// regName names off in a register table: a register's name at its offset, the high
// half's name four bytes above a 64-bit register.
func regName(table []Register, off uint32) string {
	for _, r := range table {
		switch {
		case off == r.Offset:
			return r.Name
		case r.Width == 64 && off == r.Offset+4:
			return r.HiName()
		}
	}
	return "reserved"
}

// Ring sizes accepted at enable (§7.5, v1).
const (
	MinRingSize = 2
	MaxRingSize = 4096
	RingAlign   = PageSize
)

// IsPowerOfTwo reports whether v is a non-zero power of two.
func IsPowerOfTwo(v uint64) bool { return v != 0 && v&(v-1) == 0 }

// ValidRingConfig applies the enable-time checks of §7.5: sizes powers of two from 2
// to 4096 and both bases 4 KiB aligned.
func ValidRingConfig(sqBase uint64, sqSize uint32, cqBase uint64, cqSize uint32) bool {
	ok := func(size uint32) bool {
		return size >= MinRingSize && size <= MaxRingSize && IsPowerOfTwo(uint64(size))
	}
	return ok(sqSize) && ok(cqSize) && sqBase%RingAlign == 0 && cqBase%RingAlign == 0
}

// Status and error codes (§8). The same numbers are completion statuses and ERR_CODE
// values.
type Status uint16

const (
	StatusOK         Status = 0x0
	StatusBadOpcode  Status = 0x1
	StatusBadAddress Status = 0x2 // bad address or DMA fault
	StatusBadLength  Status = 0x3
	StatusNotEnabled Status = 0x4
	StatusDoorbell   Status = 0x5 // doorbell value out of range (v1)
	StatusRingConfig Status = 0x6 // invalid ring configuration at enable (v1)
)

// StatusInfo is one row of the error-code table (§8), with where the code appears
// (§7.6): as a command's completion status, as the ERR_CODE of a device error that
// halts the device, or both.
type StatusInfo struct {
	Code        Status
	Name        string
	Doc         string
	Origin      string // "v0.1" or "v1"
	Completion  bool   // a command can complete with it
	DeviceError bool   // a device error can halt the device with it
}

// Statuses lists the codes in code order.
var Statuses = []StatusInfo{
	{StatusOK, "OK", "the command did what it asked", "v0.1", true, false},
	{StatusBadOpcode, "bad opcode", "the opcode is reserved or unknown", "v0.1", true, false},
	{StatusBadAddress, "bad address", "a DMA address faulted (a device error when fetching a descriptor or posting a completion)", "v0.1", true, true},
	{StatusBadLength, "invalid length", "MEMCPY and XFORM take 1 byte to 1 MiB", "v0.1", true, false},
	{StatusNotEnabled, "device not enabled", "a doorbell while STATUS.READY is 0", "v0.1", false, true},
	{StatusDoorbell, "doorbell out of range", "SQ_TAIL or CQ_HEAD written with a value of at least the ring size", "v1", false, true},
	{StatusRingConfig, "invalid ring configuration", "ENABLE with ring sizes or bases the device refuses", "v1", false, true},
}

func (s Status) String() string {
	for _, i := range Statuses {
		if i.Code == s {
			return i.Name
		}
	}
	return "unknown"
}
