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

// Register is one row of the register tables of §5 and §5.1.
type Register struct {
	Offset uint32
	Name   string
	Access Access
	Width  int // bits as the table gives them; 64-bit registers also take 32-bit halves
	Doc    string
}

// Registers lists BAR0's registers in offset order. The 64-bit base registers appear
// once, at their low offset.
var Registers = []Register{
	{RegMAGIC, "MAGIC", AccessRO, 32, "reads 0x4A4E524F"},
	{RegVERSION, "VERSION", AccessRO, 32, "reads 0x00000001"},
	{RegCTRL, "CTRL", AccessRW, 32, "bit 0 ENABLE; bit 1 RESET (self-clearing)"},
	{RegSTATUS, "STATUS", AccessRO, 32, "bit 0 READY; bit 1 ERROR"},
	{RegSQBaseLo, "SQ_BASE", AccessRW, 64, "submission ring base (DMA address)"},
	{RegSQSize, "SQ_SIZE", AccessRW, 32, "descriptors in the SQ (power of two)"},
	{RegCQBaseLo, "CQ_BASE", AccessRW, 64, "completion ring base (DMA address)"},
	{RegCQSize, "CQ_SIZE", AccessRW, 32, "entries in the CQ (power of two)"},
	{RegCQHead, "CQ_HEAD", AccessWO, 32, "next completion the driver will consume"},
	{RegIRQStatus, "IRQ_STATUS", AccessRO, 32, "bit 0: completion interrupt pending"},
	{RegIRQAck, "IRQ_ACK", AccessWO, 32, "write 1 to bit 0 to clear IRQ_STATUS bit 0"},
	{RegErrCode, "ERR_CODE", AccessRO, 32, "last error code"},
	{RegSCRATCH, "SCRATCH", AccessRW, 32, "free scratch register"},
	{RegSQTail, "SQ_TAIL", AccessWO, 32, "the doorbell: new submission tail"},
	{RegCQHeadDB, "CQ_HEAD_DB", AccessWO, 32, "same effect as CQ_HEAD (v1)"},
}

// RegName names the BAR0 register at off, including the high halves of the 64-bit
// registers; reserved offsets are named by their offset.
func RegName(off uint32) string {
	switch off {
	case RegSQBaseHi:
		return "SQ_BASE_HI"
	case RegCQBaseHi:
		return "CQ_BASE_HI"
	}
	for _, r := range Registers {
		if r.Offset == off {
			return r.Name
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

var statusNames = [...]string{"OK", "bad opcode", "bad address", "invalid length",
	"device not enabled", "doorbell out of range", "invalid ring configuration"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}
