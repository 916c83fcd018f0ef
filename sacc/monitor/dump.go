package monitor

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/iommu"
	"github.com/saccbook/saccbook/sacc/machine"
)

// dump runs x or xp: it settles the format and size as QEMU's parser does (a given
// format or size becomes the default for the next command; without /fmt both
// defaults are used and kept), then dumps.
func (mo *Monitor) dump(c Command) error {
	format, size := c.Format, c.Size
	if format == 0 {
		format = mo.lastFormat
	}
	if size == 0 {
		size = mo.lastSize
	}
	mo.lastFormat, mo.lastSize = format, size
	if c.Count*size > maxDumpLen {
		return fmt.Errorf("%d units of %d bytes is more than the %d bytes one dump may show", c.Count, size, maxDumpLen)
	}
	return mo.view(func(b *bytes.Buffer, m *machine.Machine) {
		var read func(addr uint64, buf []byte, unit int) bool
		if c.Name == "xp" {
			read = func(addr uint64, buf []byte, unit int) bool { return readPhys(m, addr, buf, unit) }
		} else {
			read = func(addr uint64, buf []byte, _ int) bool { return readIOVA(m, addr, buf) }
		}
		memoryDump(b, read, c.Count, format, size, c.Addr)
	})
}

// memoryDump is QEMU's memory_dump (monitor/hmp-cmds-target.c) line for line: the
// address as 16 hex digits and a colon, then 16 bytes' worth of units per line (8
// for bytes), each as " 0x%0*x" (x), "%*d"/"%*u" (d, u, width enough for the
// largest value), "%#*o" (o) or a quoted character (c, one per byte whatever the
// size). A line that cannot be read ends the dump with " Cannot access memory".
func memoryDump(b *bytes.Buffer, read func(addr uint64, buf []byte, unit int) bool, count int, format byte, wsize int, addr uint64) {
	length := wsize * count
	lineSize := 16
	if wsize == 1 {
		lineSize = 8
	}
	unit := wsize // the access size for registers
	maxDigits := 0
	switch format {
	case 'o':
		maxDigits = (wsize*8 + 2) / 3
	case 'u', 'd':
		maxDigits = (wsize*8*10 + 32) / 33
	case 'c':
		wsize = 1
	default: // 'x'
		maxDigits = wsize * 8 / 4
	}
	var buf [16]byte
	for length > 0 {
		fmt.Fprintf(b, "%016x:", addr)
		l := min(length, lineSize)
		if !read(addr, buf[:l], unit) {
			b.WriteString(" Cannot access memory\n")
			break
		}
		for i := 0; i < l; i += wsize {
			var v uint64
			switch wsize {
			case 1:
				v = uint64(buf[i])
			case 2:
				v = uint64(binary.LittleEndian.Uint16(buf[i:]))
			case 4:
				v = uint64(binary.LittleEndian.Uint32(buf[i:]))
			default:
				v = binary.LittleEndian.Uint64(buf[i:])
			}
			b.WriteByte(' ')
			switch format {
			case 'o':
				fmt.Fprintf(b, "%#*o", maxDigits, v)
			case 'u':
				fmt.Fprintf(b, "%*d", maxDigits, v)
			case 'd':
				fmt.Fprintf(b, "%*d", maxDigits, int64(v))
			case 'c':
				printc(b, byte(v))
			default:
				fmt.Fprintf(b, "0x%0*x", maxDigits, v)
			}
		}
		b.WriteByte('\n')
		addr += uint64(l)
		length -= l
	}
}

// printc is QEMU's monitor_printc.
func printc(b *bytes.Buffer, c byte) {
	b.WriteByte('\'')
	switch {
	case c == '\'':
		b.WriteString(`\'`)
	case c == '\\':
		b.WriteString(`\\`)
	case c == '\n':
		b.WriteString(`\n`)
	case c == '\r':
		b.WriteString(`\r`)
	case c >= 32 && c <= 126:
		b.WriteByte(c)
	default:
		fmt.Fprintf(b, `\x%02x`, c)
	}
	b.WriteByte('\'')
}

// readPhys reads guest-physical memory for xp. RAM is read directly, so looking
// creates no trace event; registers (ECAM, the BARs, the IOMMU block) are read
// through the address map in units of the dump's size, a real access as in QEMU.
// Addresses nothing claims, and the write-only interrupt window, cannot be read.
func readPhys(m *machine.Machine, addr uint64, buf []byte, unit int) bool {
	ram := m.RAM()
	for off := 0; off < len(buf); off += unit {
		a := addr + uint64(off)
		piece := buf[off : off+unit]
		if ram.Contains(a, uint64(unit)) {
			ram.Read(a, piece)
			continue
		}
		first, _ := m.Decode(a)
		last, _ := m.Decode(a + uint64(unit) - 1)
		if unit > 1 && (first != last || first == machine.RegionRAM || a+uint64(unit)-1 < a) {
			// The unit straddles two regions: byte by byte.
			if !readPhys(m, a, piece, 1) {
				return false
			}
			continue
		}
		switch first {
		case machine.RegionUnmapped, machine.RegionIntWindow:
			return false
		}
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], m.Read(a, unit))
		copy(piece, v[:unit])
	}
	return true
}

// readIOVA reads memory as the device's DMA sees it, for x: through the I/O page
// tables when translation is on (a read-only walk: no IOTLB fill, no fault), the
// physical address otherwise. DMA reaches RAM only.
func readIOVA(m *machine.Machine, iova uint64, buf []byte) bool {
	u := m.IOMMU()
	for len(buf) > 0 {
		n := min(uint64(len(buf)), sacc.PageSize-iova&sacc.PageMask)
		phys := iova
		if u.Enabled() {
			p, _, ok := walkTranslate(u, iova)
			if !ok {
				return false
			}
			phys = p
		}
		if iova+n-1 < iova || !m.RAM().Contains(phys, n) {
			return false
		}
		m.RAM().Read(phys, buf[:n])
		buf = buf[n:]
		iova += n
	}
	return true
}

// walkTranslate translates iova by walking the page tables without side effects:
// the physical address, the effective permission (the AND of all levels) and
// whether every level was present.
func walkTranslate(u *iommu.IOMMU, iova uint64) (phys, perm uint64, ok bool) {
	steps := u.Walk(iova)
	if len(steps) != sacc.IOPTLevels {
		return 0, 0, false
	}
	perm = sacc.PTEPermMask
	for _, s := range steps {
		if s.NotRAM || !s.Entry.Present() {
			return 0, 0, false
		}
		perm &= s.Entry.Perm()
	}
	return steps[len(steps)-1].Entry.Addr() | iova&sacc.PageMask, perm, true
}
