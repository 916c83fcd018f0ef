// Package machine wires the SACC platform together: sparse RAM, the address map of
// §1 (ECAM, the MMIO window with the device's BARs, the IOMMU block, the interrupt
// window), legacy configuration ports 0xCF8/0xCFC, the SACC endpoint at 00:03.0 and
// the IOMMU in front of its DMA.
//
// Every client of the emulator — qtest, the monitor, the driver model, a browser
// session, a test — drives the same Machine. Accesses through Read, Write, In and
// Out take effect at once and do not advance virtual time; time moves only through
// Step, Advance and RunUntil (the CPU model above charges its own costs). The CPU
// model's writes to the device go through PostWrite instead: a posted write that
// lands one write latency later, in order (PCIe memory writes are posted). Same
// configuration and seed, same trace, byte for byte.
package machine

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/device"
	"github.com/saccbook/saccbook/sacc/iommu"
	"github.com/saccbook/saccbook/sacc/mem"
	"github.com/saccbook/saccbook/sacc/pci"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Config chooses a machine.
type Config struct {
	RAMSize uint64    // bytes; 0 means sacc.DefaultRAMSize (128 MiB)
	Seed    uint64    // seeds every random choice of the run
	Cost    *sim.Cost // nil means sim.DefaultCost()
	Quirks  quirk.Set // injection points; empty means the machine as specified
	// Profile is the version of the contract the device is built to; the zero
	// value means the default, v1 (profile.V1).
	Profile profile.Profile
}

// Machine is one emulated host with its SACC endpoint.
type Machine struct {
	cfg    Config
	sim    *sim.Sim
	trace  *trace.Tracer
	cost   sim.Cost
	ram    *mem.RAM
	dev    *device.Device
	iommu  *iommu.IOMMU
	cf8    uint32 // CONFIG_ADDRESS latch (§1)
	bars   [2]uint64
	irqs   Interrupts
	source uint16 // the endpoint's requester ID

	// posted are the CPU's writes to the device still on the wire, oldest first;
	// they land in this order (PCIe: a posted write may not pass another).
	posted []postedWrite
}

// postedWrite is one CPU write to a BAR on its way to the device.
type postedWrite struct {
	addr uint64
	size int
	v    uint64
	at   sim.Time // when it lands at the device
	pc   uintptr  // the code that issued it, for the event when it lands
}

// New builds a machine at power-on.
func New(cfg Config) (*Machine, error) {
	if cfg.RAMSize == 0 {
		cfg.RAMSize = sacc.DefaultRAMSize
	}
	if cfg.Profile.Name == "" {
		cfg.Profile = profile.V1()
	}
	ram, err := mem.NewRAM(cfg.RAMSize)
	if err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, ram: ram, sim: sim.New(cfg.Seed)}
	if cfg.Cost != nil {
		m.cost = *cfg.Cost
	} else {
		m.cost = sim.DefaultCost()
	}
	if m.cost.LinkBytesPerUs == 0 {
		return nil, fmt.Errorf("cost model: link_bytes_per_us must be positive")
	}
	m.trace = trace.NewTracer(m.sim)
	m.trace.SetDialect(cfg.Profile.Trace)
	m.source = sacc.SourceID(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction)
	m.iommu = iommu.New(physMem{m}, poster{m}, m.trace, cfg.Quirks)
	m.dev = device.New(dmaPort{m}, m.sim, m.trace, &m.cost, cfg.Quirks, cfg.Profile)
	return m, nil
}

// Config returns the configuration the machine was built with (RAM size and
// profile filled in).
func (m *Machine) Config() Config { return m.cfg }

// Tracer is the machine's event stream; attach sinks to it.
func (m *Machine) Tracer() *trace.Tracer { return m.trace }

// Sim is the machine's clock and event queue.
func (m *Machine) Sim() *sim.Sim { return m.sim }

// Cost is the machine's cost model.
func (m *Machine) Cost() *sim.Cost { return &m.cost }

// RAM is the machine's memory.
func (m *Machine) RAM() *mem.RAM { return m.ram }

// Device is the SACC endpoint.
func (m *Machine) Device() *device.Device { return m.dev }

// IOMMU is the platform IOMMU.
func (m *Machine) IOMMU() *iommu.IOMMU { return m.iommu }

// Interrupts is the CPU's view of delivered MSIs.
func (m *Machine) Interrupts() *Interrupts { return &m.irqs }

// Now is the virtual time in nanoseconds.
func (m *Machine) Now() sim.Time { return m.sim.Now() }

// Step advances to the next pending event and runs everything due then; it
// reports false, changing nothing, when no event is pending.
func (m *Machine) Step() bool { return m.sim.Step() }

// RunUntil runs every event due at or before t and leaves the clock at t (or where
// it is, if t is past).
func (m *Machine) RunUntil(t sim.Time) { m.sim.RunUntil(t) }

// Advance runs the next d nanoseconds.
func (m *Machine) Advance(d sim.Time) { m.sim.Advance(d) }

// ---------------------------------------------------------------------------
// The guest-physical address map (§1)

// Region names a part of the address map.
type Region uint8

const (
	RegionUnmapped Region = iota
	RegionRAM
	RegionECAM
	RegionBAR0
	RegionBAR1
	RegionIOMMU
	RegionIntWindow
)

var regionNames = [...]string{"unmapped", "ram", "pcie-ecam", "sacc-bar0", "sacc-bar1-msix", "iommu", "interrupt-window"}

func (r Region) String() string {
	if int(r) < len(regionNames) {
		return regionNames[r]
	}
	return "split"
}

// Decode finds the region that claims addr and the offset inside it.
func (m *Machine) Decode(addr uint64) (Region, uint64) {
	switch {
	case addr < m.ram.Size():
		return RegionRAM, addr
	case addr >= sacc.ECAMBase && addr < sacc.ECAMBase+sacc.ECAMSize:
		return RegionECAM, addr - sacc.ECAMBase
	case addr >= sacc.IOMMUBase && addr < sacc.IOMMUBase+sacc.IOMMUSize:
		return RegionIOMMU, addr - sacc.IOMMUBase
	case sacc.InIntWindow(addr):
		return RegionIntWindow, addr - sacc.IntWindowBase
	}
	cfg := m.dev.Config()
	if off, ok := cfg.Decodes(0, addr); ok {
		return RegionBAR0, off
	}
	if off, ok := cfg.Decodes(1, addr); ok {
		return RegionBAR1, off
	}
	return RegionUnmapped, 0
}

// Range is one entry of the address map as it stands now.
type Range struct {
	Base, Size uint64
	Region     Region
}

// Map lists the mapped ranges in address order, BARs only while they decode (the
// monitor's `info mtree`).
func (m *Machine) Map() []Range {
	out := []Range{{0, m.ram.Size(), RegionRAM}, {sacc.ECAMBase, sacc.ECAMSize, RegionECAM}}
	cfg := m.dev.Config()
	for i, r := range []Region{RegionBAR0, RegionBAR1} {
		base, size := cfg.BARAddress(i), cfg.BARSize(i)
		if _, ok := cfg.Decodes(i, base); ok {
			out = append(out, Range{base, size, r})
		}
	}
	if len(out) == 4 && out[3].Base < out[2].Base {
		out[2], out[3] = out[3], out[2]
	}
	return append(out, Range{sacc.IOMMUBase, sacc.IOMMUSize, RegionIOMMU},
		Range{sacc.IntWindowBase, sacc.IntWindowSize, RegionIntWindow})
}

// regionSplit marks an access whose bytes fall in different regions.
const regionSplit Region = 255

// decodeAccess decodes a multi-byte access: the region of its first byte, or
// regionSplit if its bytes are not all in one region at consecutive offsets.
func (m *Machine) decodeAccess(addr uint64, size int) (Region, uint64) {
	region, off := m.Decode(addr)
	if addr%uint64(size) == 0 {
		// Every region starts and ends on a page boundary, so a naturally
		// aligned access of at most 8 bytes lies in one region.
		return region, off
	}
	last := addr + uint64(size) - 1
	if last < addr {
		return RegionUnmapped, 0 // runs off the top of the address space
	}
	end, endOff := m.Decode(last)
	if end != region || (region != RegionUnmapped && endOff != off+uint64(size)-1) {
		return regionSplit, 0
	}
	return region, off
}

func validSize(size int) bool { return size == 1 || size == 2 || size == 4 || size == 8 }

func allOnes(size int) uint64 {
	if size >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*size) - 1
}

// Read is a CPU load of size 1, 2, 4 or 8 bytes, little-endian. An access that
// falls across two regions is done byte by byte.
func (m *Machine) Read(addr uint64, size int) uint64 {
	if !validSize(size) {
		m.trace.EmitGuestError(addr, uint64(size), trace.ErrWidth, 0)
		return 0
	}
	if addr < m.ram.Size() && uint64(size) <= m.ram.Size()-addr {
		v := m.ram.Load(addr, size)
		m.trace.EmitCPURead(addr, uint64(size), v)
		return v
	}
	region, off := m.decodeAccess(addr, size)
	if region == regionSplit {
		var v uint64
		for i := range size {
			v |= m.Read(addr+uint64(i), 1) << (8 * i)
		}
		return v
	}
	switch region {
	case RegionECAM:
		return m.configAccess(off, size, 0, false)
	case RegionBAR0:
		return m.dev.ReadBAR0(off, size)
	case RegionBAR1:
		v := m.dev.ReadBAR1(off, size)
		m.trace.EmitCPURead(addr, uint64(size), v)
		return v
	case RegionIOMMU:
		v, ok := m.iommu.ReadReg(off, size)
		if !ok {
			m.trace.EmitGuestError(addr, uint64(size), trace.ErrWidth, 0)
			return allOnes(size)
		}
		return v
	case RegionIntWindow:
		m.trace.EmitGuestError(addr, uint64(size), trace.ErrIntWindowRead, 0)
		return allOnes(size)
	}
	m.trace.EmitGuestError(addr, uint64(size), trace.ErrUnmapped, 0)
	return allOnes(size)
}

// Write is a CPU store of size 1, 2, 4 or 8 bytes, little-endian.
func (m *Machine) Write(addr uint64, size int, v uint64) {
	if !validSize(size) {
		m.trace.EmitGuestError(addr, uint64(size), trace.ErrWidth, v)
		return
	}
	if size < 8 {
		v &= allOnes(size)
	}
	if addr < m.ram.Size() && uint64(size) <= m.ram.Size()-addr {
		m.ram.Store(addr, size, v)
		m.trace.EmitCPUWrite(addr, uint64(size), v)
		return
	}
	region, off := m.decodeAccess(addr, size)
	if region == regionSplit {
		for i := range size {
			m.Write(addr+uint64(i), 1, v>>(8*i)&0xFF)
		}
		return
	}
	switch region {
	case RegionECAM:
		m.configAccess(off, size, v, true)
	case RegionBAR0:
		m.dev.WriteBAR0(off, size, v)
	case RegionBAR1:
		m.trace.EmitCPUWrite(addr, uint64(size), v)
		m.dev.WriteBAR1(off, size, v)
	case RegionIOMMU:
		if !m.iommu.WriteReg(off, size, v) {
			m.trace.EmitGuestError(addr, uint64(size), trace.ErrWidth, v)
		}
	case RegionIntWindow:
		if size != 4 || addr%4 != 0 {
			m.trace.EmitGuestError(addr, uint64(size), trace.ErrWidth, v)
			return
		}
		m.Interrupt(addr, uint32(v))
	default:
		m.trace.EmitGuestError(addr, uint64(size), trace.ErrUnmapped, v)
	}
}

// PostWrite is a CPU write issued as a PCIe posted write: a write to the device's
// BARs reaches the device one mmio_write latency after it is issued, behind every
// earlier posted write, and its register write event is the device's, at landing;
// the issue is the detail event cpu_mmio_write.
// Every other write (RAM, configuration space, which is non-posted, the IOMMU's
// registers in the root complex, the interrupt window) takes effect at once, as
// Write does.
func (m *Machine) PostWrite(addr uint64, size int, v uint64) {
	r, off := m.decodeAccess(addr, size)
	if r != RegionBAR0 && r != RegionBAR1 {
		m.Write(addr, size, v)
		return
	}
	// The issue is where program order is decided: cpu_mmio_write shows what was
	// and was not visible when the CPU let the write go (§7.4).
	bar := uint64(0)
	if r == RegionBAR1 {
		bar = 1
	}
	m.trace.EmitCPUMMIOWrite(bar, off, uint64(size), v)
	at := m.sim.Now() + m.cost.MMIOWrite
	if n := len(m.posted); n > 0 && m.posted[n-1].at > at {
		at = m.posted[n-1].at // in order, whatever the cost model does mid-run
	}
	m.posted = append(m.posted, postedWrite{addr: addr, size: size, v: v, at: at, pc: m.trace.PC()})
	m.sim.Schedule(at-m.sim.Now(), m, opPostedLand, 0, 0)
}

// PostedLanded is when the last posted write now on the wire lands at the device
// (now, if none is): a read of the device cannot pass it (PCIe ordering: a read
// request does not pass a posted write), so it reaches the device only then.
func (m *Machine) PostedLanded() sim.Time {
	if n := len(m.posted); n > 0 {
		return m.posted[n-1].at
	}
	return m.sim.Now()
}

// PostedInFlight is how many posted writes have not landed yet.
func (m *Machine) PostedInFlight() int { return len(m.posted) }

// Machine events.
const opPostedLand uint32 = 1

// HandleEvent lands the oldest posted write: every one is scheduled no earlier
// than the one before it, and ties run in scheduling order, so they land in order.
func (m *Machine) HandleEvent(ev sim.Event) {
	if ev.Op != opPostedLand || len(m.posted) == 0 {
		return
	}
	w := m.posted[0]
	m.posted = m.posted[1:]
	pc := m.trace.PC()
	m.trace.SetPC(w.pc)
	m.Write(w.addr, w.size, w.v)
	m.trace.SetPC(pc)
}

// ReadBytes reads len(b) bytes at addr in address order.
func (m *Machine) ReadBytes(addr uint64, b []byte) {
	if m.ram.Contains(addr, uint64(len(b))) {
		m.ram.Read(addr, b)
		if len(b) > 0 {
			m.trace.EmitCPURead(addr, uint64(len(b)), head8(b))
		}
		return
	}
	for i := range b {
		b[i] = byte(m.Read(addr+uint64(i), 1))
	}
}

// WriteBytes writes b at addr in address order.
func (m *Machine) WriteBytes(addr uint64, b []byte) {
	if m.ram.Contains(addr, uint64(len(b))) {
		m.ram.Write(addr, b)
		if len(b) > 0 {
			m.trace.EmitCPUWrite(addr, uint64(len(b)), head8(b))
		}
		return
	}
	for i, c := range b {
		m.Write(addr+uint64(i), 1, uint64(c))
	}
}

// head8 is the first (up to) eight bytes of a bulk access as a little-endian
// value: what a trace line can show of it.
func head8(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.LittleEndian.Uint64(b)
	}
	var v uint64
	for i := range min(len(b), 8) {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// Fill sets n bytes at addr to v.
func (m *Machine) Fill(addr, n uint64, v byte) {
	if m.ram.Contains(addr, n) {
		m.ram.Fill(addr, n, v)
		if n > 0 {
			m.trace.EmitCPUWrite(addr, n, uint64(v))
		}
		return
	}
	for i := range n {
		m.Write(addr+i, 1, uint64(v))
	}
}

// ---------------------------------------------------------------------------
// Configuration space: ECAM and mechanism #1 (§1, §3)

// configAccess reads or writes size bytes of the configuration space selected by
// an ECAM offset. Only 00:03.0 exists; other functions read all ones.
func (m *Machine) configAccess(ecamOff uint64, size int, v uint64, write bool) uint64 {
	bus, dev, fn := uint32(ecamOff>>20), uint32(ecamOff>>15&0x1F), uint32(ecamOff>>12&7)
	reg := uint32(ecamOff & 0xFFF)
	if size == 8 {
		lo := m.configAccess(ecamOff, 4, v, write)
		hi := m.configAccess(ecamOff+4, 4, v>>32, write)
		return lo | hi<<32
	}
	bdf := uint64(sacc.SourceID(bus, dev, fn))
	present := bus == sacc.SACCBus && dev == sacc.SACCDevice && fn == sacc.SACCFunction
	if write {
		m.trace.EmitConfigWrite(bdf, uint64(reg), uint64(size), v)
		if present {
			m.dev.Config().Write(reg, size, uint32(v))
			m.configChanged()
		}
		return 0
	}
	val := allOnes(size)
	if present {
		val = uint64(m.dev.Config().Read(reg, size))
	}
	m.trace.EmitConfigRead(bdf, uint64(reg), uint64(size), val)
	return val
}

// configChanged follows a configuration write: BARs that start or stop decoding
// are traced, and the device hears of it (an unmasked MSI-X vector may fire).
func (m *Machine) configChanged() {
	cfg := m.dev.Config()
	for i := range m.bars {
		now := uint64(0)
		if base := cfg.BARAddress(i); cfg.MemoryEnabled() && pci.InMMIOWindow(base, cfg.BARSize(i)) {
			now = base
		}
		if now != m.bars[i] {
			if m.bars[i] != 0 {
				m.trace.EmitBARUnmap(uint64(i), m.bars[i])
			}
			if now != 0 {
				m.trace.EmitBARMap(uint64(i), now, cfg.BARSize(i))
			}
			m.bars[i] = now
		}
	}
	m.dev.ConfigWritten()
}

// In is a CPU port input of size 1, 2 or 4 bytes.
func (m *Machine) In(port uint16, size int) uint32 {
	v := uint32(m.portAccess(port, size, 0, false))
	m.trace.EmitPortIn(uint64(port), uint64(size), uint64(v))
	return v
}

// Out is a CPU port output of size 1, 2 or 4 bytes.
func (m *Machine) Out(port uint16, size int, v uint32) {
	if size < 4 {
		v &= uint32(allOnes(size))
	}
	m.trace.EmitPortOut(uint64(port), uint64(size), uint64(v))
	m.portAccess(port, size, v, true)
}

func (m *Machine) portAccess(port uint16, size int, v uint32, write bool) uint64 {
	if size != 1 && size != 2 && size != 4 {
		m.trace.EmitGuestError(uint64(port), uint64(size), trace.ErrWidth, uint64(v))
		return 0
	}
	switch {
	case port == sacc.PortConfigAddress && size == 4:
		if write {
			m.cf8 = v
		}
		return uint64(m.cf8)
	case port >= sacc.PortConfigData && port <= sacc.PortConfigData+3:
		n := int(sacc.PortConfigData + 4 - uint32(port))
		if size > n {
			// Bytes past 0xCFF are not part of the data window.
			size = n
		}
		if m.cf8&sacc.ConfigAddressEnable == 0 {
			return allOnes(size) // §1: bit 31 clear reads all ones, writes vanish
		}
		bus, dev, fn := m.cf8>>16&0xFF, m.cf8>>11&0x1F, m.cf8>>8&7
		reg := m.cf8&0xFC + uint32(port-sacc.PortConfigData)
		off := uint64(bus)<<20 | uint64(dev)<<15 | uint64(fn)<<12 | uint64(reg)
		return m.configAccess(off, size, uint64(v), write)
	}
	m.trace.EmitGuestError(uint64(port), uint64(size), trace.ErrUnmapped, uint64(v))
	return allOnes(size)
}

// ---------------------------------------------------------------------------
// Interrupts (§1)

// Interrupts records MSIs delivered through the interrupt window, for the CPU.
type Interrupts struct {
	pending [4]uint64 // one bit per vector
	count   [256]uint64
}

// Raise marks vector v pending.
func (i *Interrupts) Raise(v uint8) {
	i.pending[v/64] |= 1 << (v % 64)
	i.count[v]++
}

// Pending reports whether vector v is pending.
func (i *Interrupts) Pending(v uint8) bool { return i.pending[v/64]&(1<<(v%64)) != 0 }

// Take clears and returns the lowest pending vector.
func (i *Interrupts) Take() (uint8, bool) {
	for w, word := range i.pending {
		if word != 0 {
			b := bits.TrailingZeros64(word)
			i.pending[w] &^= 1 << b
			return uint8(w*64 + b), true
		}
	}
	return 0, false
}

// Count is how many times vector v has been raised.
func (i *Interrupts) Count(v uint8) uint64 { return i.count[v] }

// Interrupt is a 32-bit write into the interrupt window, from the CPU or a device.
func (m *Machine) Interrupt(addr uint64, data uint32) {
	v := sacc.MSIVector(data)
	m.trace.EmitMSIDeliver(addr, uint64(data), uint64(v))
	m.irqs.Raise(v)
}

// ---------------------------------------------------------------------------
// Adapters: the platform as the device and the IOMMU see it

// dmaPort is the device's window on the platform: every DMA goes through the IOMMU.
type dmaPort struct{ m *Machine }

func (p dmaPort) Translate(iova uint64, access uint8) (uint64, bool, sacc.FaultReason) {
	return p.m.iommu.Translate(iova, access, p.m.source)
}
func (p dmaPort) RAM() *mem.RAM                      { return p.m.ram }
func (p dmaPort) Interrupt(addr uint64, data uint32) { p.m.Interrupt(addr, data) }

// physMem is RAM as the IOMMU reads and writes it (page walks, fault records).
type physMem struct{ m *Machine }

func (p physMem) ReadPhys(addr uint64, b []byte) bool {
	if !p.m.ram.Contains(addr, uint64(len(b))) {
		return false
	}
	p.m.ram.Read(addr, b)
	return true
}

func (p physMem) WritePhys(addr uint64, b []byte) bool {
	if !p.m.ram.Contains(addr, uint64(len(b))) {
		return false
	}
	p.m.ram.Write(addr, b)
	return true
}

// poster delivers the IOMMU's fault MSI: an interrupt in the window, a store in RAM.
type poster struct{ m *Machine }

func (p poster) PostWrite32(addr uint64, data uint32) {
	switch {
	case sacc.InIntWindow(addr):
		p.m.Interrupt(addr, data)
	case p.m.ram.Contains(addr, 4):
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], data)
		p.m.ram.Write(addr, b[:])
	}
}
