package sacc

import "encoding/binary"

// Opcodes (§6.3).
const (
	OpNOP    = 0x0000
	OpMEMCPY = 0x0001
	OpXFORM  = 0x0002

	XFORMKey = 0x17 // XFORM XORs every byte with this

	MaxLength = 0x100000 // 1 MiB, v1 limit for MEMCPY and XFORM
)

// Opcode is one row of the opcode table (§6.3).
type Opcode struct {
	Value uint16
	Name  string
	Short string // at most five characters, for a ring slot in a picture
	Doc   string
}

// Opcodes lists the opcodes a v1 device executes.
var Opcodes = []Opcode{
	{OpNOP, "NOP", "NOP", "nothing moves; status OK, result_len 0; addresses and length ignored"},
	{OpMEMCPY, "MEMCPY", "MCPY", "copy length bytes from src to dst"},
	{OpXFORM, "XFORM", "XFRM", "copy, XOR-ing every byte with 0x17"},
}

// OpcodeRange is a block of opcodes the specification reserves (§6.3).
type OpcodeRange struct {
	First, Last uint16
	Name        string
	Doc         string
}

// ReservedOpcodes are the reserved blocks; a v1 device completes them with status 1.
var ReservedOpcodes = []OpcodeRange{
	{0x0100, 0x01FF, "reserved-inference", "future inference ops"},
	{0x0200, 0x02FF, "reserved-kv", "future key-value ops"},
}

// InvalidOpcode names an opcode that is neither defined nor reserved.
const InvalidOpcode = "invalid"

// OpName names an opcode.
func OpName(op uint16) string {
	for _, o := range Opcodes {
		if o.Value == op {
			return o.Name
		}
	}
	for _, r := range ReservedOpcodes {
		if op >= r.First && op <= r.Last {
			return r.Name
		}
	}
	return InvalidOpcode
}

// Submission descriptor (§6.1): 32 bytes.
const (
	DescriptorSize  = 32
	DescSrcOff      = 0
	DescDstOff      = 8
	DescLenOff      = 16
	DescOpOff       = 20
	DescFlagsOff    = 22
	DescReqIDOff    = 24
	DescReservedOff = 28

	FlagInterrupt = 1 << 0
)

// Descriptor is a decoded submission descriptor.
type Descriptor struct {
	Src    uint64
	Dst    uint64
	Length uint32
	Opcode uint16
	Flags  uint16
	ReqID  uint32
}

// Encode writes d into b (at least 32 bytes); the reserved word is written as 0.
func (d Descriptor) Encode(b []byte) {
	_ = b[DescriptorSize-1]
	binary.LittleEndian.PutUint64(b[DescSrcOff:], d.Src)
	binary.LittleEndian.PutUint64(b[DescDstOff:], d.Dst)
	binary.LittleEndian.PutUint32(b[DescLenOff:], d.Length)
	binary.LittleEndian.PutUint16(b[DescOpOff:], d.Opcode)
	binary.LittleEndian.PutUint16(b[DescFlagsOff:], d.Flags)
	binary.LittleEndian.PutUint32(b[DescReqIDOff:], d.ReqID)
	binary.LittleEndian.PutUint32(b[DescReservedOff:], 0)
}

// DecodeDescriptor reads a descriptor from b (at least 32 bytes).
func DecodeDescriptor(b []byte) Descriptor {
	_ = b[DescriptorSize-1]
	return Descriptor{
		Src:    binary.LittleEndian.Uint64(b[DescSrcOff:]),
		Dst:    binary.LittleEndian.Uint64(b[DescDstOff:]),
		Length: binary.LittleEndian.Uint32(b[DescLenOff:]),
		Opcode: binary.LittleEndian.Uint16(b[DescOpOff:]),
		Flags:  binary.LittleEndian.Uint16(b[DescFlagsOff:]),
		ReqID:  binary.LittleEndian.Uint32(b[DescReqIDOff:]),
	}
}

// Completion entry (§6.2): 16 bytes; the phase field is written last (§7.2).
const (
	CompletionSize    = 16
	CplReqIDOff       = 0
	CplResultLenOff   = 4
	CplReservedOff    = 8
	CplStatusOff      = 12
	CplPhaseOff       = 14
	CplPhaseBit       = 1 << 0
	CplBodySize       = CplPhaseOff // bytes written before the phase
	CplPhaseFieldSize = 2
)

// Completion is a decoded completion entry.
type Completion struct {
	ReqID     uint32
	ResultLen uint32
	Status    Status
	Phase     uint8 // 0 or 1
}

// Encode writes c into b (at least 16 bytes); reserved fields are written as 0.
func (c Completion) Encode(b []byte) {
	_ = b[CompletionSize-1]
	binary.LittleEndian.PutUint32(b[CplReqIDOff:], c.ReqID)
	binary.LittleEndian.PutUint32(b[CplResultLenOff:], c.ResultLen)
	binary.LittleEndian.PutUint32(b[CplReservedOff:], 0)
	binary.LittleEndian.PutUint16(b[CplStatusOff:], uint16(c.Status))
	binary.LittleEndian.PutUint16(b[CplPhaseOff:], uint16(c.Phase&CplPhaseBit))
}

// DecodeCompletion reads a completion from b (at least 16 bytes).
func DecodeCompletion(b []byte) Completion {
	_ = b[CompletionSize-1]
	return Completion{
		ReqID:     binary.LittleEndian.Uint32(b[CplReqIDOff:]),
		ResultLen: binary.LittleEndian.Uint32(b[CplResultLenOff:]),
		Status:    Status(binary.LittleEndian.Uint16(b[CplStatusOff:])),
		Phase:     uint8(binary.LittleEndian.Uint16(b[CplPhaseOff:]) & CplPhaseBit),
	}
}

// RingFull reports whether a ring with this tail and head has no free slot: one slot
// always stays empty (§7.3).
func RingFull(tail, head, size uint32) bool { return (tail+1)%size == head }

// RingEmpty reports whether a ring with this tail and head holds nothing.
func RingEmpty(tail, head uint32) bool { return tail == head }
