package conformance

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// Where this suite puts things. BARs go at the start of the MMIO window (§1); the
// rest is RAM laid out by the test, as a driver would allocate it.
const (
	bar0Base = 0xC000_0000
	bar1Base = 0xC000_2000

	sqRing     = 0x0010_0000 // submission ring (4 KiB aligned)
	cqRing     = 0x0011_0000 // completion ring (4 KiB aligned)
	mailbox    = 0x0012_0000 // where MSI-X messages land (one 256-byte slot per source)
	bufBase    = 0x0100_0000 // data buffers
	ptPool     = 0x0200_0000 // I/O page tables
	faultLog   = 0x0300_0000 // IOMMU fault log
	unmappedPA = 0x0800_0000 // first byte after the default 128 MiB of RAM

	// runNS is the §11 bound: all work of one doorbell (descriptors ≤ 64 KiB)
	// completes within 100 µs of virtual time under the default cost model.
	runNS = 100_000
	// enableLatencyNS is the default enable latency (§7.5, 2 µs).
	enableLatencyNS = 2000

	msiData0     = 0x0000_4130 // Message Data of vector 0 (completion)
	msiData1     = 0x0000_4131 // Message Data of vector 1 (device error)
	faultMSIData = 0x0000_4177 // FAULT_MSI_DATA of the IOMMU

	saccSourceID = 0x0018 // 00:03.0 as bus << 8 | device << 3 | function (§10)
)

// mailboxAddr is the RAM address an MSI-X vector (or the IOMMU, slot 2) writes to.
func mailboxAddr(slot int) uint64 { return mailbox + uint64(slot)*0x100 }

// ---- PCI configuration space -------------------------------------------------

// ecam is the ECAM address of a configuration register of the SACC function (§1).
func ecam(reg uint32) uint64 {
	return sacc.ECAMAddress(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction, reg)
}

// cfgRead32 reads the configuration dword that holds reg through ECAM.
func (c *client) cfgRead32(reg uint32) uint32 { c.t.Helper(); return c.readl(ecam(reg &^ 3)) }

// cfgRead16 reads a 16-bit configuration register through ECAM (dword access).
func (c *client) cfgRead16(reg uint32) uint16 {
	c.t.Helper()
	return uint16(c.cfgRead32(reg) >> (8 * (reg & 2)))
}

// cfgRead8 reads a configuration byte through ECAM (dword access).
func (c *client) cfgRead8(reg uint32) uint8 {
	c.t.Helper()
	return uint8(c.cfgRead32(reg) >> (8 * (reg & 3)))
}

// cfgWrite32 writes a configuration dword through ECAM.
func (c *client) cfgWrite32(reg uint32, v uint32) { c.t.Helper(); c.writel(ecam(reg), v) }

// setCommand writes the COMMAND register (STATUS, the upper half, gets 0: its bits
// are read-only or write-one-to-clear).
func (c *client) setCommand(v uint16) { c.t.Helper(); c.cfgWrite32(sacc.CfgCommand, uint32(v)) }

// capability is one entry of the capability list.
type capability struct {
	offset uint32
	id     uint8
}

// capabilities walks the capability list from the pointer at 0x34 (§3).
func (c *client) capabilities() []capability {
	c.t.Helper()
	var caps []capability
	seen := map[uint32]bool{}
	for off := uint32(c.cfgRead8(sacc.CfgCapPtr)) &^ 3; off != 0; {
		if seen[off] || off < sacc.CfgHeaderEnd || off >= sacc.LegacyConfigSpaceSize {
			c.t.Fatalf("capability list is broken: pointer 0x%02x after %v", off, caps)
		}
		seen[off] = true
		caps = append(caps, capability{off, c.cfgRead8(off)})
		off = uint32(c.cfgRead8(off+sacc.CapNextOffset)) &^ 3
	}
	return caps
}

// findCap returns the offset of the capability with this ID, walking the list.
func (c *client) findCap(id uint8) uint32 {
	c.t.Helper()
	for _, cp := range c.capabilities() {
		if cp.id == id {
			return cp.offset
		}
	}
	c.t.Fatalf("capability 0x%02x not found in the list", id)
	return 0
}

// ---- the device ---------------------------------------------------------------

// device is a client plus the driver-side state of the SACC rings.
type device struct {
	*client
	sqBase, cqBase uint64
	sqSize, cqSize uint32
	sqTail         uint32 // next SQ slot the driver will fill
	cqHead         uint32 // next CQ slot the driver will consume
	phase          uint8  // expected phase of the entry at cqHead
}

// bdf is a PCI function address.
type bdf struct{ bus, dev, fn uint32 }

// enumerate scans bus 0 the way firmware does, with read32 as the configuration
// read (ECAM or mechanism #1): function 0 of every device, and functions 1–7 of
// multi-function devices (header type bit 7).
func enumerate(read32 func(b bdf, reg uint32) uint32) []bdf {
	var found []bdf
	for dev := uint32(0); dev < 32; dev++ {
		for fn := uint32(0); fn < 8; fn++ {
			b := bdf{0, dev, fn}
			if uint16(read32(b, sacc.CfgVendorID)) == sacc.AbsentVendorID {
				if fn == 0 {
					break
				}
				continue
			}
			found = append(found, b)
			if fn == 0 && read32(b, sacc.CfgCacheLineSize)>>16&0x80 == 0 {
				break // single-function device
			}
		}
	}
	return found
}

// ecamRead32 is a configuration read through ECAM.
func (c *client) ecamRead32(b bdf, reg uint32) uint32 {
	c.t.Helper()
	return c.readl(sacc.ECAMAddress(b.bus, b.dev, b.fn, reg))
}

// portRead32 is a configuration read through mechanism #1 (0xCF8/0xCFC).
func (c *client) portRead32(b bdf, reg uint32) uint32 {
	c.t.Helper()
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(b.bus, b.dev, b.fn, reg))
	return c.inl(sacc.PortConfigData)
}

// assignBAR sizes a memory BAR (write all ones, read the mask back) and assigns it
// at base, as firmware does; it returns the size.
func (c *client) assignBAR(reg uint32, base uint32) uint64 {
	c.t.Helper()
	c.cfgWrite32(reg, 0xFFFF_FFFF)
	mask := c.cfgRead32(reg)
	size := sacc.BARSizeFromMask(mask)
	if mask&sacc.BARIOSpace != 0 || size == 0 || uint64(base)%size != 0 {
		c.t.Fatalf("BAR at config 0x%02x: sizing reads 0x%08x (size %d); cannot place it at 0x%x", reg, mask, size, base)
	}
	c.cfgWrite32(reg, base)
	return size
}

// newDevice starts a machine and does the firmware's job by hand: find the SACC
// function, size BAR0 and BAR1 and assign them in the MMIO window, and set
// memory-space and bus-master enable.
func newDevice(t testing.TB) *device {
	t.Helper()
	d := &device{client: newClient(t)}
	id := d.cfgRead32(sacc.CfgVendorID)
	if uint16(id) != sacc.VendorID || uint16(id>>16) != sacc.DeviceID {
		t.Fatalf("no SACC at 00:03.0: vendor/device dword = 0x%08x", id)
	}
	d.assignBAR(sacc.CfgBAR0, bar0Base)
	d.assignBAR(sacc.CfgBAR1, bar1Base)
	d.setCommand(sacc.CmdMemorySpace | sacc.CmdBusMaster)
	return d
}

// newRunningDevice returns a device with rings of these sizes at sqRing and cqRing,
// enabled and READY.
func newRunningDevice(t testing.TB, sqSize, cqSize uint32) *device {
	t.Helper()
	d := newDevice(t)
	d.programRings(sqRing, sqSize, cqRing, cqSize)
	d.enable()
	return d
}

func (d *device) reg(off uint32) uint32       { d.t.Helper(); return d.readl(bar0Base + uint64(off)) }
func (d *device) setReg(off uint32, v uint32) { d.t.Helper(); d.writel(bar0Base+uint64(off), v) }

// programRings writes SQ_BASE, SQ_SIZE, CQ_BASE and CQ_SIZE (64-bit bases as two
// 32-bit halves) and resets the driver-side ring state.
func (d *device) programRings(sqBase uint64, sqSize uint32, cqBase uint64, cqSize uint32) {
	d.t.Helper()
	d.setReg(sacc.RegSQBaseLo, uint32(sqBase))
	d.setReg(sacc.RegSQBaseHi, uint32(sqBase>>32))
	d.setReg(sacc.RegSQSize, sqSize)
	d.setReg(sacc.RegCQBaseLo, uint32(cqBase))
	d.setReg(sacc.RegCQBaseHi, uint32(cqBase>>32))
	d.setReg(sacc.RegCQSize, cqSize)
	d.sqBase, d.sqSize, d.cqBase, d.cqSize = sqBase, sqSize, cqBase, cqSize
	d.resetRingState()
}

// resetRingState is the driver's side of "ring state cleared" (§7.5).
func (d *device) resetRingState() { d.sqTail, d.cqHead, d.phase = 0, 0, 1 }

// enable sets CTRL.ENABLE and waits for STATUS.READY. (The exact latency is checked
// by TestReadyAfterEnableLatencyNotBefore; here a driver just waits.)
func (d *device) enable() {
	d.t.Helper()
	d.setReg(sacc.RegCTRL, sacc.CtrlEnable)
	d.step(enableLatencyNS)
	for waited := 0; d.reg(sacc.RegSTATUS)&sacc.StatusReady == 0; waited += 1000 {
		if waited >= 20_000 {
			d.t.Fatalf("STATUS.READY not set 22 µs after CTRL.ENABLE (STATUS 0x%x, ERR_CODE %d)",
				d.reg(sacc.RegSTATUS), d.reg(sacc.RegErrCode))
		}
		d.step(1000)
	}
}

// putDesc writes a descriptor into SQ slot idx.
func (d *device) putDesc(idx uint32, desc sacc.Descriptor) {
	d.t.Helper()
	var b [sacc.DescriptorSize]byte
	desc.Encode(b[:])
	d.write(d.sqBase+uint64(idx)*sacc.DescriptorSize, b[:])
}

// queue writes descriptors at the driver's SQ tail without ringing the doorbell.
func (d *device) queue(descs ...sacc.Descriptor) {
	d.t.Helper()
	for _, desc := range descs {
		d.putDesc(d.sqTail, desc)
		d.sqTail = (d.sqTail + 1) % d.sqSize
	}
}

// doorbell writes SQ_TAIL.
func (d *device) doorbell(tail uint32) { d.t.Helper(); d.setReg(sacc.RegSQTail, tail) }

// submit queues descriptors and rings the doorbell with the new tail.
func (d *device) submit(descs ...sacc.Descriptor) {
	d.t.Helper()
	d.queue(descs...)
	d.doorbell(d.sqTail)
}

// run gives the device the §11 time bound to finish the work of one doorbell.
func (d *device) run() { d.t.Helper(); d.step(runNS) }

// submitAndRun submits descriptors, runs, and returns their completions in order.
func (d *device) submitAndRun(descs ...sacc.Descriptor) []sacc.Completion {
	d.t.Helper()
	d.submit(descs...)
	d.run()
	return d.take(len(descs))
}

// rawCompletion reads CQ slot idx as bytes.
func (d *device) rawCompletion(idx uint32) []byte {
	d.t.Helper()
	return d.read(d.cqBase+uint64(idx)*sacc.CompletionSize, sacc.CompletionSize)
}

// completionAt decodes CQ slot idx.
func (d *device) completionAt(idx uint32) sacc.Completion {
	d.t.Helper()
	return sacc.DecodeCompletion(d.rawCompletion(idx))
}

// poll consumes the next completion if its phase says it is new (§7.2).
func (d *device) poll() (sacc.Completion, bool) {
	d.t.Helper()
	cpl := d.completionAt(d.cqHead)
	if cpl.Phase != d.phase {
		return cpl, false
	}
	d.cqHead++
	if d.cqHead == d.cqSize {
		d.cqHead = 0
		d.phase ^= 1
	}
	return cpl, true
}

// take consumes exactly n new completions; it fails the test if fewer are there.
func (d *device) take(n int) []sacc.Completion {
	d.t.Helper()
	out := make([]sacc.Completion, 0, n)
	for len(out) < n {
		cpl, ok := d.poll()
		if !ok {
			d.t.Fatalf("only %d of %d completions posted (CQ slot %d has phase %d, want %d; STATUS 0x%x, ERR_CODE %d)",
				len(out), n, d.cqHead, cpl.Phase, d.phase, d.reg(sacc.RegSTATUS), d.reg(sacc.RegErrCode))
		}
		out = append(out, cpl)
	}
	return out
}

// expectNoNewCompletion checks that the slot at the driver's head is not new.
func (d *device) expectNoNewCompletion() {
	d.t.Helper()
	if cpl := d.completionAt(d.cqHead); cpl.Phase == d.phase {
		d.t.Fatalf("unexpected completion in CQ slot %d: %+v", d.cqHead, cpl)
	}
}

// returnSlots tells the device the driver consumed everything up to its head.
func (d *device) returnSlots() { d.t.Helper(); d.setReg(sacc.RegCQHead, d.cqHead) }

// expectCompletion checks a completion's fields.
func expectCompletion(t testing.TB, got sacc.Completion, reqID uint32, status sacc.Status, resultLen uint32) {
	t.Helper()
	if got.ReqID != reqID || got.Status != status || got.ResultLen != resultLen {
		t.Fatalf("completion = {req_id 0x%x, status %d (%v), result_len %d}, want {req_id 0x%x, status %d (%v), result_len %d}",
			got.ReqID, got.Status, got.Status, got.ResultLen, reqID, status, status, resultLen)
	}
}

// expectRunning checks STATUS = READY and no ERROR.
func (d *device) expectRunning() {
	d.t.Helper()
	if st := d.reg(sacc.RegSTATUS); st&(sacc.StatusReady|sacc.StatusError) != sacc.StatusReady {
		d.t.Fatalf("STATUS = 0x%x, want READY set and ERROR clear (ERR_CODE %d)", st, d.reg(sacc.RegErrCode))
	}
}

// expectHalted checks the state of a device halted by a device error (§7.6):
// ERROR set, READY clear, ERR_CODE the halting code.
func (d *device) expectHalted(code sacc.Status) {
	d.t.Helper()
	st := d.reg(sacc.RegSTATUS)
	ec := d.reg(sacc.RegErrCode)
	if st&(sacc.StatusReady|sacc.StatusError) != sacc.StatusError || ec != uint32(code) {
		d.t.Fatalf("STATUS = 0x%x, ERR_CODE = %d; want ERROR set, READY clear, ERR_CODE %d (%v)", st, ec, code, code)
	}
}

// Descriptor builders.
func nop(reqID uint32) sacc.Descriptor { return sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: reqID} }

func memcpyDesc(src, dst uint64, n uint32, reqID uint32) sacc.Descriptor {
	return sacc.Descriptor{Src: src, Dst: dst, Length: n, Opcode: sacc.OpMEMCPY, ReqID: reqID}
}

func xformDesc(src, dst uint64, n uint32, reqID uint32) sacc.Descriptor {
	return sacc.Descriptor{Src: src, Dst: dst, Length: n, Opcode: sacc.OpXFORM, ReqID: reqID}
}

func withIRQ(desc sacc.Descriptor) sacc.Descriptor {
	desc.Flags |= sacc.FlagInterrupt
	return desc
}

// ---- MSI-X ----------------------------------------------------------------------

// setMSIXEntry programs table entry vec (in BAR1) with 32-bit dword writes.
func (d *device) setMSIXEntry(vec int, addr uint64, data uint32, masked bool) {
	d.t.Helper()
	e := bar1Base + sacc.MSIXTableOffset + uint64(vec)*sacc.MSIXEntrySize
	ctl := uint32(0)
	if masked {
		ctl = sacc.MSIXEntryMasked
	}
	d.writel(e+sacc.MSIXEntryAddrLo, uint32(addr))
	d.writel(e+sacc.MSIXEntryAddrHi, uint32(addr>>32))
	d.writel(e+sacc.MSIXEntryData, data)
	d.writel(e+sacc.MSIXEntryControl, ctl)
}

// setVectorMask sets or clears one entry's mask bit.
func (d *device) setVectorMask(vec int, masked bool) {
	d.t.Helper()
	ctl := uint32(0)
	if masked {
		ctl = sacc.MSIXEntryMasked
	}
	d.writel(bar1Base+sacc.MSIXTableOffset+uint64(vec)*sacc.MSIXEntrySize+sacc.MSIXEntryControl, ctl)
}

// setMSIXControl writes the capability's Message Control (upper half of the
// capability's first dword; ID and next pointer are read-only).
func (d *device) setMSIXControl(enable, functionMask bool) {
	d.t.Helper()
	capOff := d.findCap(sacc.CapIDMSIX)
	ctl := uint32(0)
	if enable {
		ctl |= sacc.MSIXCtrlEnable
	}
	if functionMask {
		ctl |= sacc.MSIXCtrlFunctionMask
	}
	low := d.cfgRead32(capOff) & 0xFFFF
	d.cfgWrite32(capOff, low|ctl<<16)
}

// msixTable reads the whole MSI-X table with dword reads.
func (d *device) msixTable() [sacc.MSIXTableSize / 4]uint32 {
	d.t.Helper()
	var tbl [sacc.MSIXTableSize / 4]uint32
	for i := range tbl {
		tbl[i] = d.readl(bar1Base + sacc.MSIXTableOffset + uint64(4*i))
	}
	return tbl
}

// pba reads the pending-bit array (BAR1 0x800).
func (d *device) pba() uint32 { d.t.Helper(); return d.readl(bar1Base + sacc.MSIXPBAOffset) }

// routeVectorsToRAM points vector 0 at mailbox slot 0 and vector 1 at slot 1,
// unmasks both and enables MSI-X: an interrupt becomes a RAM write a test can see.
func (d *device) routeVectorsToRAM() {
	d.t.Helper()
	d.setMSIXEntry(sacc.MSIXVectorComplete, mailboxAddr(0), msiData0, false)
	d.setMSIXEntry(sacc.MSIXVectorError, mailboxAddr(1), msiData1, false)
	d.setMSIXControl(true, false)
}

// mailboxValue reads (and with clear, zeroes) a mailbox slot.
func (d *device) mailboxValue(slot int, clear bool) uint32 {
	d.t.Helper()
	v := d.readl(mailboxAddr(slot))
	if clear {
		d.writel(mailboxAddr(slot), 0)
	}
	return v
}

// ---- IOMMU ---------------------------------------------------------------------

func (c *client) iommuRead32(off uint64) uint32     { c.t.Helper(); return c.readl(sacc.IOMMUBase + off) }
func (c *client) iommuRead64(off uint64) uint64     { c.t.Helper(); return c.readq(sacc.IOMMUBase + off) }
func (c *client) iommuWrite32(off uint64, v uint32) { c.t.Helper(); c.writel(sacc.IOMMUBase+off, v) }
func (c *client) iommuWrite64(off uint64, v uint64) { c.t.Helper(); c.writeq(sacc.IOMMUBase+off, v) }

// ioPageTables builds 4-level I/O page tables in RAM (§10).
type ioPageTables struct {
	c      *client
	root   uint64
	next   uint64
	tables map[[2]uint64]uint64 // {level, IOVA prefix} → table address
}

func newIOPageTables(c *client) *ioPageTables {
	pt := &ioPageTables{c: c, next: ptPool, tables: map[[2]uint64]uint64{}}
	pt.root = pt.alloc()
	return pt
}

// alloc hands out a fresh (never touched, hence zero) 4 KiB table.
func (pt *ioPageTables) alloc() uint64 {
	a := pt.next
	pt.next += sacc.PageSize
	return a
}

// leafSlot returns the address of iova's leaf entry, creating the upper levels
// (read+write) as needed.
func (pt *ioPageTables) leafSlot(iova uint64) uint64 {
	pt.c.t.Helper()
	table := pt.root
	for level := 0; level < sacc.IOPTLevels-1; level++ {
		shift := uint(sacc.PageShift + 9*(sacc.IOPTLevels-1-level))
		key := [2]uint64{uint64(level + 1), iova >> shift}
		next, ok := pt.tables[key]
		if !ok {
			next = pt.alloc()
			pt.tables[key] = next
			entry := sacc.MakePTE(next, sacc.PTERead|sacc.PTEWrite)
			pt.c.writeq(table+sacc.IOVAIndex(iova, level)*sacc.IOPTEntrySize, uint64(entry))
		}
		table = next
	}
	return table + sacc.IOVAIndex(iova, sacc.IOPTLevels-1)*sacc.IOPTEntrySize
}

// setLeaf writes iova's leaf entry as is (used to change or remove a mapping).
func (pt *ioPageTables) setLeaf(iova uint64, e sacc.PTE) {
	pt.c.t.Helper()
	pt.c.writeq(pt.leafSlot(iova), uint64(e))
}

// mapRange maps n bytes (rounded up to pages) of IOVA space onto physical memory.
func (pt *ioPageTables) mapRange(iova, phys uint64, n uint64, perm uint64) {
	pt.c.t.Helper()
	for off := uint64(0); off < n; off += sacc.PageSize {
		pt.setLeaf(iova+off, sacc.MakePTE(phys+off, perm))
	}
}

// identity maps n bytes at addr onto themselves.
func (pt *ioPageTables) identity(addr, n uint64, perm uint64) {
	pt.c.t.Helper()
	pt.mapRange(addr, addr, n, perm)
}

// enableIOMMU programs PT_ROOT and a fault log of logSize records at faultLog,
// then sets TRANSLATE_ENABLE.
func (pt *ioPageTables) enableIOMMU(logSize uint32) {
	pt.c.t.Helper()
	c := pt.c
	c.iommuWrite64(sacc.IOMMURegPTRoot, pt.root)
	c.iommuWrite64(sacc.IOMMURegFaultBase, faultLog)
	c.iommuWrite32(sacc.IOMMURegFaultSize, logSize)
	c.iommuWrite32(sacc.IOMMURegFaultHead, 0)
	c.iommuWrite32(sacc.IOMMURegCTRL, sacc.IOMMUCtrlTranslate)
}

// faultRecord reads fault-log record i.
func (c *client) faultRecord(i uint32) sacc.FaultRecord {
	c.t.Helper()
	return sacc.DecodeFaultRecord(c.read(faultLog+uint64(i)*sacc.FaultRecordSize, sacc.FaultRecordSize))
}

// expectFaults checks FAULT_TAIL and the records logged since record 0.
func (c *client) expectFaults(want ...sacc.FaultRecord) {
	c.t.Helper()
	if tail := c.iommuRead32(sacc.IOMMURegFaultTail); tail != uint32(len(want)) {
		var got []sacc.FaultRecord
		for i := uint32(0); i < tail && i < 16; i++ {
			got = append(got, c.faultRecord(i))
		}
		c.t.Fatalf("FAULT_TAIL = %d, want %d (records: %+v, want %+v)", tail, len(want), got, want)
	}
	for i, w := range want {
		if got := c.faultRecord(uint32(i)); got != w {
			c.t.Fatalf("fault record %d = %+v, want %+v", i, got, w)
		}
	}
}

// fault builds the expected record of a fault by the SACC function.
func fault(iova uint64, reason sacc.FaultReason, access uint8) sacc.FaultRecord {
	return sacc.FaultRecord{IOVA: iova, SourceID: saccSourceID, Reason: reason, Access: access}
}

// translatedDevice is a running device behind an enabled IOMMU whose tables map
// the rings and the mailbox page onto themselves; the test maps its buffers.
func newTranslatedDevice(t testing.TB, sqSize, cqSize uint32) (*device, *ioPageTables) {
	t.Helper()
	d := newDevice(t)
	pt := newIOPageTables(d.client)
	pt.identity(sqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.identity(cqRing, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.identity(mailbox, sacc.PageSize, sacc.PTERead|sacc.PTEWrite)
	pt.enableIOMMU(16)
	d.programRings(sqRing, sqSize, cqRing, cqSize)
	d.enable()
	return d, pt
}
