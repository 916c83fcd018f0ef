package monitor

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/device"
	"github.com/saccbook/saccbook/sacc/iommu"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
)

func (mo *Monitor) info(c Command) error {
	var fn func(b *bytes.Buffer, m *machine.Machine)
	switch c.Sub {
	case "":
		mo.infoHelp()
		return nil
	case "pci":
		fn = func(b *bytes.Buffer, m *machine.Machine) { WriteLSPCI(b, m.Device().Config(), 2) }
	case "mtree":
		fn = infoMtree
	case "registers":
		fn = infoRegisters
	case "rings":
		fn = infoRings
	case "iommu":
		fn = func(b *bytes.Buffer, m *machine.Machine) { infoIOMMU(b, m, c.Addr, c.HasAddr) }
	case "irq":
		fn = infoIRQ
	default:
		return fmt.Errorf("no info %q", c.Sub)
	}
	return mo.view(fn)
}

func plusMinus(b bool) byte {
	if b {
		return '+'
	}
	return '-'
}

// ---------------------------------------------------------------------------
// info mtree

// infoMtree prints the address spaces in the layout of QEMU's `info mtree`.
func infoMtree(b *bytes.Buffer, m *machine.Machine) {
	line := func(indent int, base, last uint64, kind, name string) {
		linePrio(b, indent, base, last, 0, kind, name)
	}
	b.WriteString("address-space: memory\n")
	for _, r := range m.Map() {
		kind := "i/o"
		if r.Region == machine.RegionRAM {
			kind = "ram"
		}
		line(1, r.Base, r.Base+r.Size-1, kind, r.Region.String())
	}
	b.WriteString("\naddress-space: I/O\n")
	line(1, sacc.PortConfigAddress, sacc.PortConfigAddress+3, "i/o", "pci-conf-idx")
	line(1, sacc.PortConfigData, sacc.PortConfigData+3, "i/o", "pci-conf-data")

	cfg := m.Device().Config()
	u := m.IOMMU()
	fmt.Fprintf(b, "\naddress-space: sacc %s (device DMA)\n", bdf())
	container := "bus master container"
	if !cfg.BusMaster() {
		container += " [disabled]"
	}
	line(1, 0, ^uint64(0), "i/o", container)
	if u.Enabled() {
		line(2, 0, sacc.IOVALimit-1, "iommu", fmt.Sprintf("iommu (page tables at %#x)", u.State().PTRoot))
	} else {
		line(2, 0, ^uint64(0), "i/o", "alias bus master @memory 0000000000000000-ffffffffffffffff")
	}
	// Writes into the interrupt window are never translated (§10), as QEMU's
	// intel-iommu models with a higher-priority region.
	linePrio(b, 2, sacc.IntWindowBase, sacc.IntWindowBase+sacc.IntWindowSize-1, 64, "i/o", "interrupt-window (MSI writes, never translated)")
}

func linePrio(b *bytes.Buffer, indent int, base, last uint64, prio int, kind, name string) {
	fmt.Fprintf(b, "%s%016x-%016x (prio %d, %s): %s\n", strings.Repeat("  ", indent), base, last, prio, kind, name)
}

// ---------------------------------------------------------------------------
// info registers

// regValue is what a 32-bit read of a BAR0 register returns, computed from the
// state snapshot (write-only and reserved registers read 0).
func regValue(s device.State, off uint32) uint64 {
	switch off {
	case sacc.RegMAGIC:
		return sacc.MagicValue
	case sacc.RegVERSION:
		return sacc.VersionValue
	case sacc.RegCTRL:
		return uint64(s.Ctrl)
	case sacc.RegSTATUS:
		return uint64(s.Status)
	case sacc.RegSQBaseLo:
		return s.SQBase
	case sacc.RegSQSize:
		return uint64(s.SQSize)
	case sacc.RegCQBaseLo:
		return s.CQBase
	case sacc.RegCQSize:
		return uint64(s.CQSize)
	case sacc.RegIRQStatus:
		return uint64(s.IRQStatus)
	case sacc.RegErrCode:
		return uint64(s.ErrCode)
	case sacc.RegSCRATCH:
		return uint64(s.Scratch)
	}
	return 0
}

func ringSizeNote(size uint32, what string) string {
	if size >= sacc.MinRingSize && size <= sacc.MaxRingSize && sacc.IsPowerOfTwo(uint64(size)) {
		return fmt.Sprintf("%d %s", size, what)
	}
	return fmt.Sprintf("%d %s: not a valid ring size (a power of two from %d to %d)", size, what, sacc.MinRingSize, sacc.MaxRingSize)
}

func baseNote(base uint64) string {
	if base%sacc.RingAlign != 0 {
		return "not 4 KiB aligned"
	}
	return ""
}

// regDecode explains a register's value; upstream says the device runs upstream
// v0.1's engine, which acts on fewer registers.
func regDecode(s device.State, off uint32, v uint64, upstream bool) string {
	if upstream {
		switch off {
		case sacc.RegCTRL:
			return fmt.Sprintf("ENABLE%c RESET%c (stored as written; upstream v0.1 acts on neither)",
				plusMinus(v&sacc.CtrlEnable != 0), plusMinus(v&sacc.CtrlReset != 0))
		case sacc.RegSCRATCH:
			return "not in upstream v0.1's device: reads 0"
		case sacc.RegCQHeadDB:
			return "ignored by upstream v0.1's device"
		}
	}
	switch off {
	case sacc.RegMAGIC:
		if v == sacc.MagicValue {
			return `bytes "ORNJ" in memory order`
		}
	case sacc.RegCTRL:
		return fmt.Sprintf("ENABLE%c RESET- (reads 0)", plusMinus(v&sacc.CtrlEnable != 0))
	case sacc.RegSTATUS:
		return fmt.Sprintf("READY%c ERROR%c", plusMinus(v&sacc.StatusReady != 0), plusMinus(v&sacc.StatusError != 0))
	case sacc.RegSQBaseLo, sacc.RegCQBaseLo:
		return baseNote(v)
	case sacc.RegSQSize:
		return ringSizeNote(uint32(v), "descriptors")
	case sacc.RegCQSize:
		return ringSizeNote(uint32(v), "entries")
	case sacc.RegCQHead:
		return fmt.Sprintf("write-only; the device holds %d", s.CQHead)
	case sacc.RegIRQStatus:
		return fmt.Sprintf("completion-pending%c", plusMinus(v&sacc.IRQCompletion != 0))
	case sacc.RegIRQAck:
		return "write-only"
	case sacc.RegErrCode:
		return sacc.Status(v).String()
	case sacc.RegSQTail:
		return fmt.Sprintf("write-only doorbell; the device holds %d", s.SQTail)
	case sacc.RegCQHeadDB:
		return "write-only; same effect as CQ_HEAD"
	}
	return ""
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// infoRegisters prints every BAR0 register from the device's state snapshot (no
// register is read, so nothing is traced), then the ring state only the device
// knows.
func infoRegisters(b *bytes.Buffer, m *machine.Machine) {
	s := m.Device().State()
	upstream := m.Config().Profile.Engine == profile.EngineUpstreamV01
	cfg := m.Device().Config()
	base := cfg.BARAddress(0)
	_, decoding := cfg.Decodes(0, base)
	where := fmt.Sprintf("at 0x%08x", base)
	if !decoding {
		where += ", not decoding"
	}
	fmt.Fprintf(b, "BAR0 %s (values from the device model: nothing is read)\n", where)
	for _, r := range sacc.Registers {
		v := regValue(s, r.Offset)
		val := fmt.Sprintf("0x%08x", v)
		if r.Width == 64 {
			val = fmt.Sprintf("0x%016x", v)
		}
		line := fmt.Sprintf("  %-10s +0x%04x %-2s %-18s %s", r.Name, r.Offset, r.Access, val, regDecode(s, r.Offset, v, upstream))
		fmt.Fprintf(b, "%s\n", strings.TrimRight(line, " "))
	}
	fmt.Fprintf(b, "ring state: sq_head=%d sq_tail=%d cq_tail=%d cq_head=%d phase=%d busy=%s stalled=%s\n",
		s.SQHead, s.SQTail, s.CQTail, s.CQHead, s.Phase, yesNo(s.Busy), yesNo(s.Stalled))
}

// ---------------------------------------------------------------------------
// info rings

// dmaReader reads memory at DMA addresses the way the device would reach it (page
// tables when translation is on), for inspection.
type dmaReader struct {
	m         *machine.Machine
	translate bool
}

func (d dmaReader) read(iova uint64, buf []byte) bool { return readIOVA(d.m, iova, buf) }

func (d dmaReader) describe(iova uint64) string {
	if !d.translate {
		return "DMA address = physical: translation off"
	}
	phys, _, ok := walkTranslate(d.m.IOMMU(), iova)
	if !ok {
		return "not mapped in the I/O page tables"
	}
	return fmt.Sprintf("through the page tables: phys %#x", phys)
}

// inRing reports whether slot i lies in [from, to) going round a ring.
func inRing(i, from, to uint32) bool {
	if from <= to {
		return i >= from && i < to
	}
	return i >= from || i < to
}

// row prints one table row without trailing spaces.
func row(b *bytes.Buffer, format string, a ...any) {
	b.WriteString(strings.TrimRight(fmt.Sprintf(format, a...), " "))
	b.WriteByte('\n')
}

func marks(i uint32, names []string, idx []uint32) string {
	var at []string
	for k, name := range names {
		if idx[k] == i {
			at = append(at, name)
		}
	}
	if at == nil {
		return ""
	}
	return "  <- " + strings.Join(at, ", ")
}

// ringShown caps what a ring dump shows: a size register may hold anything while
// the device is disabled.
func ringShown(b *bytes.Buffer, name string, size uint32) bool {
	switch {
	case size == 0:
		fmt.Fprintf(b, "%s: not configured (%s_SIZE is 0)\n", name, name)
		return false
	case size > sacc.MaxRingSize:
		fmt.Fprintf(b, "%s: %s_SIZE %d is larger than any valid ring (%d); not shown\n", name, name, size, sacc.MaxRingSize)
		return false
	}
	return true
}

// infoRings decodes the SQ and the CQ from memory (§6), with the ownership rule of
// §7.1 for submission slots and the flow-control view of §7.3 for completion slots.
func infoRings(b *bytes.Buffer, m *machine.Machine) {
	s := m.Device().State()
	rd := dmaReader{m: m, translate: m.IOMMU().Enabled()}
	if ringShown(b, "SQ", s.SQSize) {
		owned := (s.SQTail + s.SQSize - s.SQHead%s.SQSize) % s.SQSize
		fmt.Fprintf(b, "SQ at %#x (%s), %d slots, sq_head=%d sq_tail=%d: %d owned by the device\n",
			s.SQBase, rd.describe(s.SQBase), s.SQSize, s.SQHead, s.SQTail, owned)
		fmt.Fprintf(b, "  slot owner  src                dst                length     opcode                    flags  req_id\n")
		var raw [sacc.DescriptorSize]byte
		for i := uint32(0); i < s.SQSize; i++ {
			owner := "driver"
			if inRing(i, s.SQHead, s.SQTail) {
				owner = "device"
			}
			mk := marks(i, []string{"sq_head", "sq_tail"}, []uint32{s.SQHead, s.SQTail})
			if !rd.read(s.SQBase+uint64(i)*sacc.DescriptorSize, raw[:]) {
				fmt.Fprintf(b, "  %4d %-6s <not readable at DMA address %#x>%s\n", i, owner, s.SQBase+uint64(i)*sacc.DescriptorSize, mk)
				continue
			}
			d := sacc.DecodeDescriptor(raw[:])
			flags := ""
			if d.Flags&sacc.FlagInterrupt != 0 {
				flags = " irq"
			}
			row(b, "  %4d %-6s 0x%016x 0x%016x 0x%08x 0x%04x %-18s 0x%04x 0x%08x%s%s",
				i, owner, d.Src, d.Dst, d.Length, d.Opcode, sacc.OpName(d.Opcode), d.Flags, d.ReqID, flags, mk)
		}
	}
	if ringShown(b, "CQ", s.CQSize) {
		unconsumed := (s.CQTail + s.CQSize - s.CQHead%s.CQSize) % s.CQSize
		fmt.Fprintf(b, "CQ at %#x (%s), %d slots, cq_head=%d cq_tail=%d, device phase %d: %d posted and not yet returned",
			s.CQBase, rd.describe(s.CQBase), s.CQSize, s.CQHead, s.CQTail, s.Phase, unconsumed)
		if s.Stalled {
			b.WriteString("; the device is stalled: ring full")
		}
		b.WriteByte('\n')
		fmt.Fprintf(b, "  slot owner  req_id     result_len status                            phase this-lap\n")
		var raw [sacc.CompletionSize]byte
		for i := uint32(0); i < s.CQSize; i++ {
			owner := "device"
			if inRing(i, s.CQHead, s.CQTail) {
				owner = "driver"
			}
			mk := marks(i, []string{"cq_head", "cq_tail"}, []uint32{s.CQHead, s.CQTail})
			if !rd.read(s.CQBase+uint64(i)*sacc.CompletionSize, raw[:]) {
				fmt.Fprintf(b, "  %4d %-6s <not readable at DMA address %#x>%s\n", i, owner, s.CQBase+uint64(i)*sacc.CompletionSize, mk)
				continue
			}
			c := sacc.DecodeCompletion(raw[:])
			lap := "-"
			if c.Phase == s.Phase {
				lap = "yes"
			}
			row(b, "  %4d %-6s 0x%08x 0x%08x 0x%04x %-26s %d     %-8s%s",
				i, owner, c.ReqID, c.ResultLen, uint16(c.Status), c.Status, c.Phase, lap, mk)
		}
		fmt.Fprintf(b, "  (a completion is new to the driver when its phase equals the driver's expected phase,\n"+
			"   which only the driver knows; this-lap marks entries carrying the device's current phase)\n")
	}
}

// ---------------------------------------------------------------------------
// info iommu

func permString(perm uint64) string {
	r, w := byte('-'), byte('-')
	if perm&sacc.PTERead != 0 {
		r = 'r'
	}
	if perm&sacc.PTEWrite != 0 {
		w = 'w'
	}
	return string([]byte{r, w})
}

func accessName(a uint8) string {
	if a == sacc.AccessWrite {
		return "write"
	}
	return "read"
}

// infoIOMMU shows the IOMMU's registers, IOTLB and fault log, and with an IOVA its
// page walk, all without touching the IOTLB or the log.
func infoIOMMU(b *bytes.Buffer, m *machine.Machine, iova uint64, walk bool) {
	u := m.IOMMU()
	st := u.State()
	onOff := "off (passthrough: DMA addresses are physical)"
	if u.Enabled() {
		onOff = "on"
	}
	fmt.Fprintf(b, "IOMMU at %#x: translation %s\n", uint64(sacc.IOMMUBase), onOff)
	fmt.Fprintf(b, "  CAP            0x%08x          iotlb=%d levels=%d iova-width=%d\n",
		uint32(sacc.IOMMUCapValue), sacc.IOTLBEntries, sacc.IOPTLevels, sacc.IOVAWidth)
	fmt.Fprintf(b, "  CTRL           0x%08x          TRANSLATE_ENABLE%c\n", st.CTRL, plusMinus(st.CTRL&sacc.IOMMUCtrlTranslate != 0))
	fmt.Fprintf(b, "  STATUS         0x%08x          active%c faults-logged%c overflow%c\n", st.STATUS,
		plusMinus(st.STATUS&sacc.IOMMUStatusActive != 0), plusMinus(st.STATUS&sacc.IOMMUStatusFaultsLog != 0),
		plusMinus(st.STATUS&sacc.IOMMUStatusOverflowed != 0))
	fmt.Fprintf(b, "  PT_ROOT        0x%016x\n", st.PTRoot)
	fmt.Fprintf(b, "  FAULT_BASE     0x%016x\n", st.FaultBase)
	fmt.Fprintf(b, "  FAULT_SIZE     0x%08x          %d records\n", st.FaultSize, st.FaultSize)
	fmt.Fprintf(b, "  FAULT_HEAD     0x%08x\n", st.FaultHead)
	fmt.Fprintf(b, "  FAULT_TAIL     0x%08x\n", st.FaultTail)
	note := ""
	if st.FaultMSIAddr == 0 {
		note = "no fault MSI"
	}
	fmt.Fprintf(b, "  FAULT_MSI_ADDR 0x%016x  %s\n", st.FaultMSIAddr, note)
	fmt.Fprintf(b, "  FAULT_MSI_DATA 0x%08x\n", st.FaultMSIData)

	tlb := u.IOTLB()
	fmt.Fprintf(b, "IOTLB: %d of %d entries, most recently used first\n", len(tlb), sacc.IOTLBEntries)
	for _, e := range tlb {
		stale := ""
		if phys, perm, ok := walkTranslate(u, e.IOVAPage); !ok || phys != e.PhysPage || perm != e.Perm {
			stale = "  (stale: the page tables now say "
			if ok {
				stale += fmt.Sprintf("%#x %s)", phys, permString(perm))
			} else {
				stale += "not present)"
			}
		}
		fmt.Fprintf(b, "  iova 0x%016x -> phys 0x%016x %s%s\n", e.IOVAPage, e.PhysPage, permString(e.Perm), stale)
	}

	size := st.FaultSize
	switch {
	case size == 0 || !sacc.IsPowerOfTwo(uint64(size)):
		fmt.Fprintf(b, "fault log: FAULT_SIZE %d is not a power of two: faults are dropped\n", size)
	default:
		head := st.FaultHead & (size - 1)
		n := (st.FaultTail + size - head) & (size - 1)
		fmt.Fprintf(b, "fault log: %d record(s) from FAULT_HEAD %d to FAULT_TAIL %d\n", n, head, st.FaultTail)
		var raw [sacc.FaultRecordSize]byte
		for k := uint32(0); k < n; k++ {
			i := (head + k) & (size - 1)
			addr := st.FaultBase + uint64(i)*sacc.FaultRecordSize
			if !m.RAM().Contains(addr, sacc.FaultRecordSize) {
				fmt.Fprintf(b, "  [%d] at %#x: not RAM\n", i, addr)
				continue
			}
			m.RAM().Read(addr, raw[:])
			r := sacc.DecodeFaultRecord(raw[:])
			fmt.Fprintf(b, "  [%d] iova=0x%x source=%02x:%02x.%x reason=%s access=%s\n", i, r.IOVA,
				r.SourceID>>8, r.SourceID>>3&0x1F, r.SourceID&7, r.Reason, accessName(r.Access))
		}
	}
	if walk {
		writeWalk(b, u, iova)
	}
}

// writeWalk shows the 4-level walk of §10 for one IOVA.
func writeWalk(b *bytes.Buffer, u *iommu.IOMMU, iova uint64) {
	fmt.Fprintf(b, "page walk for IOVA %#x (PT_ROOT %#x):\n", iova, u.State().PTRoot)
	if iova >= sacc.IOVALimit {
		fmt.Fprintf(b, "  beyond %d bits: a DMA here faults with reason %s before any walk\n", sacc.IOVAWidth, sacc.FaultAddressWidth)
		return
	}
	bits := [sacc.IOPTLevels]string{"47:39", "38:30", "29:21", "20:12"}
	perm := uint64(sacc.PTEPermMask)
	steps := u.Walk(iova)
	for _, s := range steps {
		fmt.Fprintf(b, "  L%d [%s] table 0x%016x index %3d: ", s.Level, bits[s.Level], s.Table, s.Index)
		switch {
		case s.NotRAM:
			b.WriteString("table is not RAM: not present\n")
			fmt.Fprintf(b, "  result: a DMA here faults (%s)\n", sacc.FaultNotPresent)
			return
		case !s.Entry.Present():
			fmt.Fprintf(b, "entry 0x%016x --: not present\n", uint64(s.Entry))
			fmt.Fprintf(b, "  result: a DMA here faults (%s)\n", sacc.FaultNotPresent)
			return
		}
		perm &= s.Entry.Perm()
		next := "next table"
		if s.Level == sacc.IOPTLevels-1 {
			next = "page"
		}
		fmt.Fprintf(b, "entry 0x%016x %s -> %s 0x%x\n", uint64(s.Entry), permString(s.Entry.Perm()), next, s.Entry.Addr())
	}
	if len(steps) == sacc.IOPTLevels {
		phys := steps[len(steps)-1].Entry.Addr() | iova&sacc.PageMask
		fmt.Fprintf(b, "  result: phys %#x, effective permission %s (the AND of all levels)\n", phys, permString(perm))
	}
	for _, e := range u.IOTLB() {
		if e.IOVAPage == iova&^uint64(sacc.PageMask) {
			fmt.Fprintf(b, "  IOTLB: cached -> phys %#x %s; the device uses this until INVALIDATE\n", e.PhysPage|iova&sacc.PageMask, permString(e.Perm))
		}
	}
}

// ---------------------------------------------------------------------------
// info irq

// infoIRQ shows both ends of an interrupt: the device's MSI-X state and what the
// CPU's interrupt window has received.
func infoIRQ(b *bytes.Buffer, m *machine.Machine) {
	s := m.Device().State()
	ctl := uint32(s.MSIXControl)
	fmt.Fprintf(b, "MSI-X: Enable%c FunctionMask%c (Message Control 0x%04x, %d vectors)\n",
		plusMinus(ctl&sacc.MSIXCtrlEnable != 0), plusMinus(ctl&sacc.MSIXCtrlFunctionMask != 0), ctl, ctl&sacc.MSIXCtrlTableSizeMask+1)
	use := [sacc.MSIXVectors]string{"completion", "device error"}
	for v, e := range s.MSIX {
		target := "ordinary DMA write (not the interrupt window)"
		if sacc.InIntWindow(e.Addr) {
			target = fmt.Sprintf("CPU vector 0x%02x", sacc.MSIVector(e.Data))
		}
		fmt.Fprintf(b, "  vector %d (%s): addr 0x%016x data 0x%08x Masked%c Pending%c -> %s\n", v, use[v],
			e.Addr, e.Data, plusMinus(e.Masked()), plusMinus(s.PBA&(1<<v) != 0), target)
	}
	fmt.Fprintf(b, "PBA: 0x%016x\n", s.PBA)
	fmt.Fprintf(b, "IRQ_STATUS: 0x%08x (completion-pending%c)\n", s.IRQStatus, plusMinus(s.IRQStatus&sacc.IRQCompletion != 0))
	b.WriteString("CPU interrupt window (MSIs delivered at 0xfee00000-0xfeefffff):\n")
	irqs := m.Interrupts()
	any := false
	for v := 0; v < 256; v++ {
		n, p := irqs.Count(uint8(v)), irqs.Pending(uint8(v))
		if n == 0 && !p {
			continue
		}
		any = true
		times := "times"
		if n == 1 {
			times = "time"
		}
		fmt.Fprintf(b, "  vector 0x%02x: raised %d %s, pending%c\n", v, n, times, plusMinus(p))
	}
	if !any {
		b.WriteString("  none raised\n")
	}
}
