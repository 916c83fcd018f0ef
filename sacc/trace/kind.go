package trace

import (
	"github.com/saccbook/saccbook/sacc"
)

// Side is the part of the machine that acted.
type Side uint8

const (
	SideCPU    Side = iota // the CPU: driver, user code, qtest, monitor accesses
	SideBus                // address map, PCI configuration, interrupt window
	SideDevice             // the SACC endpoint
	SideIOMMU              // the platform IOMMU
	SideKernel             // host software services (system calls, IRQ handlers)
	numSides
)

var sideNames = [...]string{"cpu", "bus", "device", "iommu", "kernel"}

func (s Side) String() string {
	if s < numSides {
		return sideNames[s]
	}
	return "unknown"
}

// Format says how an argument prints.
type Format uint8

const (
	Hex         Format = iota // 0x1f
	Dec                       // 31
	RegName                   // a BAR0 register name, or its offset if reserved
	IOMMUReg                  // an IOMMU register name
	GuestReason               // a guest-error reason
	FaultReason               // an IOMMU fault reason
	Opcode                    // an opcode name
	AccessDir                 // read or write
	BDF                       // bus:dev.fn
	Suppress                  // why an MSI was not sent
	BarrierOp                 // wmb, rmb, mb
	CacheOp                   // clean, invalidate, flush
	SyscallName               // a system call's name
)

// Arg names one argument of a kind.
type Arg struct {
	Name   string
	Format Format
}

// KindInfo describes a kind of event.
type KindInfo struct {
	Name string
	Side Side
	Doc  string
	Args []Arg
}

// Kind is the type of an event.
type Kind uint16

// The event kinds. Names follow QEMU's trace-events style. Each kind has an entry in
// the kinds table below and, generated from that entry, an emitter on Tracer
// (CQPost: EmitCQPost); after changing the table, run go generate ./sacc/trace.
//
//go:generate go run gen_emit.go
const (
	KindNone Kind = iota

	// CPU-side accesses through the address map.
	CPURead
	CPUWrite
	CPUStore
	CPUStoreCached
	CPUMMIOWrite
	PortIn
	PortOut

	// The bus and platform.
	GuestError
	ConfigRead
	ConfigWrite
	BARMap
	BARUnmap
	MSIDeliver

	// The SACC device.
	RegRead
	RegWrite
	Doorbell
	CQHeadWrite
	Enable
	EnableRefused
	Ready
	Disable
	Reset
	Fetch
	Descriptor
	DMARead
	DMAWrite
	CQPost
	PhaseFlip
	CQFull
	CQResume
	CommandError
	DeviceError
	Idle
	IRQAck
	MSIXSend
	MSIXPending
	MSIXSuppressed

	// The IOMMU.
	IOMMURegRead
	IOMMURegWrite
	IOMMUTranslate
	IOTLBHit
	IOTLBMiss
	IOTLBEvict
	IOMMUFault
	IOMMUFaultDropped
	IOMMUInvalidate
	IOMMUWalk

	// The CPU and host software.
	CPUBarrier
	CPUCache
	IRQEntry
	IRQExit
	Syscall
	DriverCQ
	ProcMap

	// The SACC device as upstream v0.1's QEMU model traces it, where its trace
	// points carry what the kinds above do not (profile upstream-v0.1).
	SQFetch
	SQFetchError
	CQPostUpstream
	CQPostError

	numKinds
)

var kinds = [numKinds]KindInfo{
	KindNone: {Name: "none"},

	CPURead:  {"cpu_read", SideCPU, "CPU load from guest-physical memory", []Arg{{"addr", Hex}, {"size", Dec}, {"val", Hex}}},
	CPUWrite: {"cpu_write", SideCPU, "CPU store to guest-physical memory", []Arg{{"addr", Hex}, {"size", Dec}, {"val", Hex}}},
	// A store becomes cpu_write only when it leaves the store buffer; cpu_store is
	// the moment it enters it, so that a picture can show what is still waiting.
	// pending counts the stores in the buffer with this one. A detail kind.
	CPUStore: {"cpu_store", SideCPU, "CPU store enters the store buffer (not yet visible to the device)", []Arg{{"addr", Hex}, {"size", Dec}, {"val", Hex}, {"pending", Dec}}},
	// On a non-coherent CPU a drained store can land in a dirty cache line instead
	// of memory: no cpu_write follows until the line is cleaned. A detail kind.
	CPUStoreCached: {"cpu_store_cached", SideCPU, "a buffered store drains into a dirty cache line, which DMA does not see", []Arg{{"addr", Hex}, {"size", Dec}, {"val", Hex}}},
	// A CPU write to a device BAR is posted (PCIe): the CPU issues it and moves on,
	// and the device's sacc_reg_write is the moment it lands, mmio_write later.
	// cpu_mmio_write is the moment of issue, where program order is decided: a
	// store still in the store buffer here was not ordered before this write,
	// whatever drains it later. bar and off say which register. A detail kind.
	CPUMMIOWrite: {"cpu_mmio_write", SideCPU, "CPU issues a posted write to a device BAR (it lands at the device later)", []Arg{{"bar", Dec}, {"off", Hex}, {"size", Dec}, {"val", Hex}}},
	PortIn:       {"pio_read", SideCPU, "CPU port input", []Arg{{"port", Hex}, {"size", Dec}, {"val", Hex}}},
	PortOut:      {"pio_write", SideCPU, "CPU port output", []Arg{{"port", Hex}, {"size", Dec}, {"val", Hex}}},

	GuestError:  {"guest_error", SideBus, "an access the platform or device does not accept", []Arg{{"addr", Hex}, {"size", Dec}, {"reason", GuestReason}, {"val", Hex}}},
	ConfigRead:  {"pci_cfg_read", SideBus, "configuration space read", []Arg{{"dev", BDF}, {"reg", Hex}, {"size", Dec}, {"val", Hex}}},
	ConfigWrite: {"pci_cfg_write", SideBus, "configuration space write", []Arg{{"dev", BDF}, {"reg", Hex}, {"size", Dec}, {"val", Hex}}},
	BARMap:      {"pci_bar_map", SideBus, "a BAR starts decoding", []Arg{{"bar", Dec}, {"addr", Hex}, {"size", Hex}}},
	BARUnmap:    {"pci_bar_unmap", SideBus, "a BAR stops decoding", []Arg{{"bar", Dec}, {"addr", Hex}}},
	MSIDeliver:  {"msi_deliver", SideBus, "a write into the interrupt window raises a vector at the CPU", []Arg{{"addr", Hex}, {"data", Hex}, {"vector", Dec}}},

	RegRead:        {"sacc_reg_read", SideDevice, "register read in BAR0", []Arg{{"reg", RegName}, {"size", Dec}, {"val", Hex}}},
	RegWrite:       {"sacc_reg_write", SideDevice, "register write in BAR0", []Arg{{"reg", RegName}, {"size", Dec}, {"val", Hex}}},
	Doorbell:       {"sacc_doorbell", SideDevice, "SQ_TAIL written: new submissions", []Arg{{"sq_tail", Dec}, {"sq_head", Dec}}},
	CQHeadWrite:    {"sacc_cq_head", SideDevice, "CQ_HEAD written: completion slots returned", []Arg{{"cq_head", Dec}}},
	Enable:         {"sacc_enable", SideDevice, "CTRL.ENABLE set; READY follows after the enable latency", []Arg{{"sq_size", Dec}, {"cq_size", Dec}}},
	EnableRefused:  {"sacc_enable_refused", SideDevice, "ENABLE refused: bad ring configuration", []Arg{{"sq_size", Dec}, {"cq_size", Dec}, {"sq_base", Hex}, {"cq_base", Hex}}},
	Ready:          {"sacc_ready", SideDevice, "STATUS.READY set", nil},
	Disable:        {"sacc_disable", SideDevice, "CTRL.ENABLE cleared: ring state dropped", nil},
	Reset:          {"sacc_reset", SideDevice, "CTRL.RESET: registers back to power-on values", nil},
	Fetch:          {"sacc_fetch", SideDevice, "descriptor fetch from the SQ", []Arg{{"sq_head", Dec}, {"addr", Hex}}},
	Descriptor:     {"sacc_desc", SideDevice, "descriptor as the device read it", []Arg{{"req_id", Hex}, {"opcode", Opcode}, {"len", Dec}, {"flags", Hex}}},
	DMARead:        {"sacc_dma_read", SideDevice, "device reads host memory", []Arg{{"iova", Hex}, {"phys", Hex}, {"len", Dec}}},
	DMAWrite:       {"sacc_dma_write", SideDevice, "device writes host memory", []Arg{{"iova", Hex}, {"phys", Hex}, {"len", Dec}}},
	CQPost:         {"sacc_cq_post", SideDevice, "completion written, phase last", []Arg{{"cq_tail", Dec}, {"req_id", Hex}, {"status", Hex}, {"phase", Dec}}},
	PhaseFlip:      {"sacc_phase_flip", SideDevice, "CQ tail wrapped: the device's phase inverts", []Arg{{"phase", Dec}}},
	CQFull:         {"sacc_cq_full", SideDevice, "no free CQ slot: the device stalls", []Arg{{"cq_tail", Dec}, {"cq_head", Dec}}},
	CQResume:       {"sacc_cq_resume", SideDevice, "a CQ slot came free: the device resumes", []Arg{{"cq_head", Dec}}},
	CommandError:   {"sacc_cmd_error", SideDevice, "a command completes with an error status", []Arg{{"req_id", Hex}, {"status", Hex}}},
	DeviceError:    {"sacc_device_error", SideDevice, "device error: STATUS.ERROR set, device halted until RESET", []Arg{{"code", Hex}}},
	Idle:           {"sacc_idle", SideDevice, "the SQ is empty: nothing to fetch", []Arg{{"sq_head", Dec}}},
	IRQAck:         {"sacc_irq_ack", SideDevice, "IRQ_STATUS bit 0 cleared by IRQ_ACK", nil},
	MSIXSend:       {"sacc_msix_send", SideDevice, "MSI-X message sent", []Arg{{"vector", Dec}, {"addr", Hex}, {"data", Hex}}},
	MSIXPending:    {"sacc_msix_pending", SideDevice, "vector masked: PBA bit set", []Arg{{"vector", Dec}}},
	MSIXSuppressed: {"sacc_msix_suppressed", SideDevice, "no message: MSI-X disabled or bus mastering off", []Arg{{"vector", Dec}, {"why", Suppress}}},

	IOMMURegRead:      {"iommu_reg_read", SideIOMMU, "IOMMU register read", []Arg{{"reg", IOMMUReg}, {"size", Dec}, {"val", Hex}}},
	IOMMURegWrite:     {"iommu_reg_write", SideIOMMU, "IOMMU register write", []Arg{{"reg", IOMMUReg}, {"size", Dec}, {"val", Hex}}},
	IOMMUTranslate:    {"iommu_translate", SideIOMMU, "an IOVA page translated", []Arg{{"iova", Hex}, {"phys", Hex}, {"perm", Hex}}},
	IOTLBHit:          {"iommu_iotlb_hit", SideIOMMU, "translation found in the IOTLB", []Arg{{"iova", Hex}}},
	IOTLBMiss:         {"iommu_iotlb_miss", SideIOMMU, "IOTLB miss: page walk", []Arg{{"iova", Hex}}},
	IOTLBEvict:        {"iommu_iotlb_evict", SideIOMMU, "least recently used IOTLB entry dropped", []Arg{{"iova", Hex}}},
	IOMMUFault:        {"iommu_fault", SideIOMMU, "DMA blocked and logged", []Arg{{"iova", Hex}, {"reason", FaultReason}, {"access", AccessDir}, {"source", BDF}}},
	IOMMUFaultDropped: {"iommu_fault_overflow", SideIOMMU, "fault log full: record dropped", []Arg{{"iova", Hex}, {"reason", FaultReason}}},
	IOMMUInvalidate:   {"iommu_invalidate", SideIOMMU, "IOTLB invalidation (all ones: everything)", []Arg{{"iova", Hex}, {"dropped", Dec}}},
	// One level of the §10 walk after an IOTLB miss: the table, the index the IOVA
	// selects in it, and the entry read there (the page-table entry's own address
	// is table + 8 × index). A detail kind.
	IOMMUWalk: {"iommu_walk", SideIOMMU, "one level of a page walk: the entry read from a table", []Arg{{"level", Dec}, {"table", Hex}, {"index", Dec}, {"entry", Hex}}},

	CPUBarrier: {"cpu_barrier", SideCPU, "a barrier drains the store buffer", []Arg{{"op", BarrierOp}, {"drained", Dec}}},
	CPUCache:   {"cpu_cache", SideCPU, "cache maintenance for non-coherent DMA", []Arg{{"op", CacheOp}, {"addr", Hex}, {"len", Hex}, {"lines", Dec}}},
	IRQEntry:   {"irq_entry", SideKernel, "the CPU takes an interrupt", []Arg{{"vector", Dec}}},
	IRQExit:    {"irq_exit", SideKernel, "the interrupt handler returns", []Arg{{"vector", Dec}, {"handled", Dec}}},
	Syscall:    {"syscall", SideKernel, "a system call: user to kernel and back", []Arg{{"nr", SyscallName}, {"a0", Hex}, {"ret", Hex}}},
	// What only the driver knows (§7.2: "which only the driver knows"): the CQ slot
	// it will look at next and the phase it expects there. Emitted by the code that
	// consumes completions — the kernel driver, the bypass library, the bare-metal
	// host — when its queue starts and after each completion it consumes, as a Linux
	// driver's tracepoint would; quirks that break the driver's bookkeeping show here.
	DriverCQ: {"driver_cq", SideCPU, "the driver's CQ head and the phase it expects there", []Arg{{"head", Dec}, {"phase", Dec}}},
	// One page of a process's address space, as mmap(2) or anonymous memory put it
	// there; mmio is 1 for device registers (the doorbell page).
	ProcMap: {"proc_map", SideKernel, "a page mapped into a process: user address to physical page", []Arg{{"pid", Dec}, {"va", Hex}, {"phys", Hex}, {"mmio", Dec}}},

	SQFetch:        {"sacc_sq_fetch", SideDevice, "upstream v0.1: a descriptor read by the doorbell loop, with its slot", []Arg{{"idx", Dec}, {"src", Hex}, {"dst", Hex}, {"len", Dec}, {"op", Hex}, {"flags", Hex}, {"req_id", Hex}}},
	SQFetchError:   {"sacc_sq_fetch_err", SideDevice, "upstream v0.1: the descriptor's DMA read failed; the loop goes on with zeros", []Arg{{"idx", Dec}, {"addr", Hex}}},
	CQPostUpstream: {"sacc_cq_post_upstream", SideDevice, "upstream v0.1: completion written, bytes 0-13 then the phase (its trace calls it sacc_cq_post)", []Arg{{"cq_tail", Dec}, {"req_id", Hex}, {"status", Hex}, {"result_len", Dec}, {"phase", Dec}}},
	CQPostError:    {"sacc_cq_post_err", SideDevice, "upstream v0.1: the completion's DMA write failed; the loop stops", []Arg{{"cq_tail", Dec}, {"addr", Hex}}},
}

// Info describes k.
func (k Kind) Info() KindInfo {
	if k < numKinds {
		return kinds[k]
	}
	return KindInfo{Name: "unknown"}
}

func (k Kind) String() string { return k.Info().Name }

// Detail reports whether k is a detail kind: one of the fine-grained steps (a
// store entering the store buffer, a posted write leaving the CPU, a level of a
// page walk) that every sink receives and the browser draws, but that the text
// trace leaves out unless a TextWriter is asked for them (saccbook run
// --details). Every driver store would otherwise print twice, once entering the
// buffer and once landing, every doorbell twice, once issued and once landed,
// and every IOTLB miss five times. The monitor's step and trace on print every
// event, details included: each is one step of the run.
func (k Kind) Detail() bool {
	switch k {
	case CPUStore, CPUStoreCached, CPUMMIOWrite, IOMMUWalk:
		return true
	}
	return false
}

// Kinds lists every kind, in declaration order.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := Kind(1); k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// KindByName finds a kind by its trace name.
func KindByName(name string) (Kind, bool) {
	for k := Kind(1); k < numKinds; k++ {
		if kinds[k].Name == name {
			return k, true
		}
	}
	return 0, false
}

// Guest-error reasons (the reason argument of GuestError).
const (
	ErrUnmapped       = iota + 1 // nothing decodes the address
	ErrWidth                     // access width or alignment not accepted
	ErrReadOnly                  // write to a read-only register
	ErrRingWhileOn               // ring register written while CTRL.ENABLE = 1
	ErrNotReady                  // CQ_HEAD written while the device is not ready
	ErrHalted                    // doorbell or CQ_HEAD ignored: device halted
	ErrIntWindowRead             // read of the interrupt window
	ErrConfigAbsent              // configuration access to an absent function
	ErrConfigDisabled            // CONFIG_DATA access with CONFIG_ADDRESS bit 31 clear
	ErrNotImplemented            // write to an unimplemented register
	ErrDivideByZero              // upstream v0.1 divides by CQ_SIZE = 0: QEMU itself would stop
	numGuestErr
)

var guestErrNames = [...]string{"", "unmapped", "bad-width", "read-only", "ring-register-while-enabled",
	"not-ready", "halted", "interrupt-window-read", "absent-function", "config-disabled", "not-implemented",
	"divide-by-zero"}

// GuestErrorName names a guest-error reason.
func GuestErrorName(r uint64) string {
	if r < numGuestErr && r > 0 {
		return guestErrNames[r]
	}
	return "unknown"
}

// Reasons an MSI-X message was not sent (the why argument of MSIXSuppressed).
const (
	SuppressDisabled  = 1 // Message Control enable clear
	SuppressBusMaster = 2 // COMMAND bus-master enable clear
	SuppressFault     = 3 // the message address faulted in the IOMMU or is not memory
)

func suppressName(v uint64) string {
	switch v {
	case SuppressDisabled:
		return "msix-disabled"
	case SuppressBusMaster:
		return "bus-master-off"
	case SuppressFault:
		return "address-fault"
	}
	return "unknown"
}

func opcodeName(v uint64) string { return sacc.OpName(uint16(v)) }

// Barrier operations (the op argument of CPUBarrier).
const (
	BarrierWMB = 1
	BarrierRMB = 2
	BarrierMB  = 3
)

// Cache operations (the op argument of CPUCache).
const (
	CacheClean      = 1 // write dirty lines back to memory
	CacheInvalidate = 2 // drop lines so the next load reads memory
	CacheFlush      = 3 // clean, then invalidate
)

// System call numbers (the nr argument of Syscall), Linux names.
const (
	SysOpen  = 1
	SysIoctl = 2
	SysMmap  = 3
	SysPoll  = 4
	SysClose = 5
	SysRead  = 6
	SysWrite = 7
)

var barrierNames = [...]string{"", "wmb", "rmb", "mb"}
var cacheNames = [...]string{"", "clean", "invalidate", "flush"}
var syscallNames = [...]string{"", "open", "ioctl", "mmap", "poll", "close", "read", "write"}

func tableName(table []string, v uint64) string {
	if v > 0 && v < uint64(len(table)) {
		return table[v]
	}
	return "unknown"
}

// SyscallNameOf names a system call number.
func SyscallNameOf(nr uint64) string { return tableName(syscallNames[:], nr) }
