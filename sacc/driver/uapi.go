package driver

import (
	"encoding/binary"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// The interface /dev/sacc0 offers user space (what Linux keeps in a uapi
// header): the ioctl numbers and the layout of their argument blocks. An ioctl's
// argument is the user address of a block in the process's memory; user space
// fills it in, the kernel copies it in (copy_from_user) and writes results back
// (copy_to_user). Every block is little-endian, and this file is the only place
// that knows where a field sits.

// ioctl numbers are built as Linux's _IOC builds them: direction, block size,
// type and number, so the number itself says how many bytes the kernel copies.
const (
	iocNone  = 0 // _IO: no argument block
	iocWrite = 1 // _IOW: user space writes the block, the kernel reads it
	iocRead  = 2 // _IOR: the kernel writes the block back
	iocType  = 'S'
)

// ioctl commands of /dev/sacc0.
const (
	// IocSubmit runs one command on user buffers and waits for it (the kernel
	// path). Argument: a SubmitArgs block; status and result_len come back in it.
	IocSubmit uint32 = (iocRead|iocWrite)<<30 | SubmitArgsSize<<16 | iocType<<8 | 1
	// IocMapBuffer pins a user buffer and maps it for the device. Argument: a
	// MapArgs block; the DMA address is written back into it.
	IocMapBuffer uint32 = (iocRead|iocWrite)<<30 | MapArgsSize<<16 | iocType<<8 | 2
	// IocUnmapBuffer undoes IocMapBuffer. Argument: the same MapArgs block.
	IocUnmapBuffer uint32 = iocWrite<<30 | MapArgsSize<<16 | iocType<<8 | 3
	// IocSetupRings hands the device's queue to the calling process: its SQ and
	// CQ (user memory) become the device's rings. Argument: a RingArgs block.
	IocSetupRings uint32 = iocWrite<<30 | RingArgsSize<<16 | iocType<<8 | 4
	// IocReleaseRings gives the queue back to the kernel. No argument.
	IocReleaseRings uint32 = iocNone<<30 | iocType<<8 | 5
)

// The mmap offsets of /dev/sacc0 are BAR0 offsets. Only the doorbell page may be
// mapped: the register page holds CTRL, the ring bases and the rest, which a user
// process must never reach.
const (
	MmapDoorbell = sacc.DoorbellPage
)

// SubmitArgs is the IocSubmit block (struct sacc_submit, 32 bytes): opcode u16,
// flags u16 (reserved, 0), length u32, src u64, dst u64 (user addresses), then
// what the kernel writes back: status u32, result_len u32.
type SubmitArgs struct {
	Opcode    uint16
	Flags     uint16
	Length    uint32
	Src, Dst  uint64
	Status    sacc.Status
	ResultLen uint32
}

// Offsets in the IocSubmit block.
const (
	SubmitArgsSize  = 32
	submitOpcodeOff = 0
	submitFlagsOff  = 2
	submitLengthOff = 4
	submitSrcOff    = 8
	submitDstOff    = 16
	submitStatusOff = 24 // the part the kernel writes back starts here
	submitResultOff = 28
)

// Encode writes a into b (at least SubmitArgsSize bytes).
func (a SubmitArgs) Encode(b []byte) {
	_ = b[SubmitArgsSize-1]
	binary.LittleEndian.PutUint16(b[submitOpcodeOff:], a.Opcode)
	binary.LittleEndian.PutUint16(b[submitFlagsOff:], a.Flags)
	binary.LittleEndian.PutUint32(b[submitLengthOff:], a.Length)
	binary.LittleEndian.PutUint64(b[submitSrcOff:], a.Src)
	binary.LittleEndian.PutUint64(b[submitDstOff:], a.Dst)
	binary.LittleEndian.PutUint32(b[submitStatusOff:], uint32(a.Status))
	binary.LittleEndian.PutUint32(b[submitResultOff:], a.ResultLen)
}

// DecodeSubmitArgs reads an IocSubmit block from b (at least SubmitArgsSize
// bytes).
func DecodeSubmitArgs(b []byte) SubmitArgs {
	_ = b[SubmitArgsSize-1]
	return SubmitArgs{
		Opcode:    binary.LittleEndian.Uint16(b[submitOpcodeOff:]),
		Flags:     binary.LittleEndian.Uint16(b[submitFlagsOff:]),
		Length:    binary.LittleEndian.Uint32(b[submitLengthOff:]),
		Src:       binary.LittleEndian.Uint64(b[submitSrcOff:]),
		Dst:       binary.LittleEndian.Uint64(b[submitDstOff:]),
		Status:    sacc.Status(binary.LittleEndian.Uint32(b[submitStatusOff:])),
		ResultLen: binary.LittleEndian.Uint32(b[submitResultOff:]),
	}
}

// Store writes the whole block into p's memory at va, as user space fills it in
// before the ioctl.
func (a SubmitArgs) Store(p *kernel.Process, va uint64) {
	var b [SubmitArgsSize]byte
	a.Encode(b[:])
	p.StoreBytes(va, b[:])
}

// LoadResult reads back into a what the kernel wrote into the block at va: the
// status and result_len, and nothing else.
func (a *SubmitArgs) LoadResult(p *kernel.Process, va uint64) {
	var b [SubmitArgsSize]byte
	p.LoadBytes(va+submitStatusOff, b[submitStatusOff:])
	out := DecodeSubmitArgs(b[:])
	a.Status, a.ResultLen = out.Status, out.ResultLen
}

// copySubmitArgsFromUser is the kernel's copy_from_user of an IocSubmit block.
func copySubmitArgsFromUser(p *kernel.Process, va uint64) (SubmitArgs, error) {
	var b [SubmitArgsSize]byte
	p.LoadBytes(va, b[:])
	a := DecodeSubmitArgs(b[:])
	if a.Flags != 0 {
		return a, fmt.Errorf("SUBMIT: reserved flags %#x set: %w", a.Flags, kernel.EINVAL)
	}
	return a, nil
}

// copyResultToUser is the kernel's copy_to_user of status and result_len, the
// only fields of the block it writes.
func (a SubmitArgs) copyResultToUser(p *kernel.Process, va uint64) {
	var b [SubmitArgsSize]byte
	a.Encode(b[:])
	p.StoreBytes(va+submitStatusOff, b[submitStatusOff:])
}

// MapArgs is the IocMapBuffer and IocUnmapBuffer block (struct sacc_map, 32
// bytes): addr u64, length u64 (a user buffer), dir u32 (enum
// dma_data_direction), pad u32 (0), then dma u64, written back by IocMapBuffer.
type MapArgs struct {
	Addr, Length uint64
	Dir          kernel.Direction
	DMA          uint64
}

// Offsets in the MapArgs block.
const (
	MapArgsSize  = 32
	mapAddrOff   = 0
	mapLengthOff = 8
	mapDirOff    = 16
	mapPadOff    = 20
	mapDMAOff    = 24
)

// Encode writes a into b (at least MapArgsSize bytes); the pad word is 0.
func (a MapArgs) Encode(b []byte) {
	_ = b[MapArgsSize-1]
	binary.LittleEndian.PutUint64(b[mapAddrOff:], a.Addr)
	binary.LittleEndian.PutUint64(b[mapLengthOff:], a.Length)
	binary.LittleEndian.PutUint32(b[mapDirOff:], uint32(a.Dir))
	binary.LittleEndian.PutUint32(b[mapPadOff:], 0)
	binary.LittleEndian.PutUint64(b[mapDMAOff:], a.DMA)
}

// DecodeMapArgs reads a MapArgs block from b (at least MapArgsSize bytes).
func DecodeMapArgs(b []byte) MapArgs {
	_ = b[MapArgsSize-1]
	return MapArgs{
		Addr:   binary.LittleEndian.Uint64(b[mapAddrOff:]),
		Length: binary.LittleEndian.Uint64(b[mapLengthOff:]),
		Dir:    kernel.Direction(binary.LittleEndian.Uint32(b[mapDirOff:])),
		DMA:    binary.LittleEndian.Uint64(b[mapDMAOff:]),
	}
}

// Store writes the block into p's memory at va, as user space fills it in
// before the ioctl.
func (a MapArgs) Store(p *kernel.Process, va uint64) {
	var b [MapArgsSize]byte
	a.Encode(b[:])
	p.StoreBytes(va, b[:])
}

// copyMapArgsFromUser is the kernel's copy_from_user of a MapArgs block.
func copyMapArgsFromUser(p *kernel.Process, va uint64) (MapArgs, error) {
	var b [MapArgsSize]byte
	p.LoadBytes(va, b[:])
	if pad := binary.LittleEndian.Uint32(b[mapPadOff:]); pad != 0 {
		return MapArgs{}, fmt.Errorf("MAP_BUFFER: padding %#x is not 0: %w", pad, kernel.EINVAL)
	}
	a := DecodeMapArgs(b[:])
	if a.Dir > kernel.DMAFromDevice {
		return MapArgs{}, fmt.Errorf("MAP_BUFFER: no DMA direction %d: %w", a.Dir, kernel.EINVAL)
	}
	return a, nil
}

// copyToUser is the kernel's copy_to_user of the whole block (the DMA address
// filled in).
func (a MapArgs) copyToUser(p *kernel.Process, va uint64) { a.Store(p, va) }

// RingArgs is the IocSetupRings block (struct sacc_rings, 24 bytes): sq u64, cq
// u64 (user addresses of the rings), size u32 (entries in each), pad u32 (0).
type RingArgs struct {
	SQ, CQ uint64
	Size   uint32
}

// Offsets in the RingArgs block.
const (
	RingArgsSize = 24
	ringSQOff    = 0
	ringCQOff    = 8
	ringSizeOff  = 16
	ringPadOff   = 20
)

// Encode writes a into b (at least RingArgsSize bytes); the pad word is 0.
func (a RingArgs) Encode(b []byte) {
	_ = b[RingArgsSize-1]
	binary.LittleEndian.PutUint64(b[ringSQOff:], a.SQ)
	binary.LittleEndian.PutUint64(b[ringCQOff:], a.CQ)
	binary.LittleEndian.PutUint32(b[ringSizeOff:], a.Size)
	binary.LittleEndian.PutUint32(b[ringPadOff:], 0)
}

// DecodeRingArgs reads a RingArgs block from b (at least RingArgsSize bytes).
func DecodeRingArgs(b []byte) RingArgs {
	_ = b[RingArgsSize-1]
	return RingArgs{
		SQ:   binary.LittleEndian.Uint64(b[ringSQOff:]),
		CQ:   binary.LittleEndian.Uint64(b[ringCQOff:]),
		Size: binary.LittleEndian.Uint32(b[ringSizeOff:]),
	}
}

// Store writes the block into p's memory at va, as user space fills it in
// before the ioctl.
func (a RingArgs) Store(p *kernel.Process, va uint64) {
	var b [RingArgsSize]byte
	a.Encode(b[:])
	p.StoreBytes(va, b[:])
}

// copyRingArgsFromUser is the kernel's copy_from_user of a RingArgs block.
func copyRingArgsFromUser(p *kernel.Process, va uint64) (RingArgs, error) {
	var b [RingArgsSize]byte
	p.LoadBytes(va, b[:])
	if pad := binary.LittleEndian.Uint32(b[ringPadOff:]); pad != 0 {
		return RingArgs{}, fmt.Errorf("SETUP_RINGS: padding %#x is not 0: %w", pad, kernel.EINVAL)
	}
	return DecodeRingArgs(b[:]), nil
}
