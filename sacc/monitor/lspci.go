package monitor

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/pci"
)

// Standard configuration-space bits lspci decodes (PCI Local Bus 3.0, PCIe 3.0).
const (
	cmdIO          = 1 << 0
	cmdMemory      = 1 << 1
	cmdMaster      = 1 << 2
	cmdSpecial     = 1 << 3
	cmdInvalidate  = 1 << 4
	cmdVGAPalette  = 1 << 5
	cmdParity      = 1 << 6
	cmdWait        = 1 << 7
	cmdSERR        = 1 << 8
	cmdFastBack    = 1 << 9
	cmdDisableINTx = 1 << 10

	stINTx          = 1 << 3
	stCapList       = 1 << 4
	st66MHz         = 1 << 5
	stUDF           = 1 << 6
	stFastBack      = 1 << 7
	stParity        = 1 << 8
	stDevselMask    = 3 << 9
	stSigTgtAbort   = 1 << 11
	stRecTgtAbort   = 1 << 12
	stRecMstAbort   = 1 << 13
	stSigSysErr     = 1 << 14
	stDetectedParit = 1 << 15
)

// pm is lspci's FLAG(): '+' when the bit is set.
func pm(v, bit uint32) byte {
	if v&bit != 0 {
		return '+'
	}
	return '-'
}

// bdf is the endpoint's slot name as lspci prints it.
func bdf() string {
	return fmt.Sprintf("%02x:%02x.%d", sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction)
}

// className names a class code the way pci.ids does, for the classes a SACC machine
// can show.
func className(class uint32) string {
	switch class >> 8 {
	case 0x1200:
		return "Processing accelerators"
	}
	return fmt.Sprintf("Class %04x", class>>8)
}

// WriteLSPCI prints function 00:03.0 as lspci does at verbosity 0 (one line), 1
// (-v) or 2 (-vv). Vendor and device names are not looked up (there is no pci.ids
// entry for 1b36:1092), so they print as numbers, as lspci does for unknown IDs.
// It reads the configuration space directly: nothing is traced.
func WriteLSPCI(w io.Writer, f *pci.Function, verbose int) {
	var b strings.Builder
	class := uint32(f.Get8(sacc.CfgClassCode+2))<<16 | uint32(f.Get8(sacc.CfgClassCode+1))<<8 | uint32(f.Get8(sacc.CfgClassCode))
	fmt.Fprintf(&b, "%s %s: Device %04x:%04x", bdf(), className(class), f.Get16(sacc.CfgVendorID), f.Get16(sacc.CfgDeviceID))
	if rev := f.Get8(sacc.CfgRevision); rev != 0 {
		fmt.Fprintf(&b, " (rev %02x)", rev)
	}
	if verbose > 0 {
		if pi := f.Get8(sacc.CfgClassCode); pi != 0 {
			fmt.Fprintf(&b, " (prog-if %02x)", pi)
		}
	}
	b.WriteByte('\n')
	if verbose == 0 {
		io.WriteString(w, b.String())
		return
	}
	if sv, sd := f.Get16(sacc.CfgSubsystemVID), f.Get16(sacc.CfgSubsystemID); sv != 0 && sv != 0xFFFF {
		fmt.Fprintf(&b, "\tSubsystem: Device %04x:%04x\n", sv, sd)
	}
	cmd := uint32(f.Get16(sacc.CfgCommand))
	status := uint32(f.Get16(sacc.CfgStatus))
	latency := f.Get8(sacc.CfgLatencyTimer)
	devsel := [...]string{"fast", "medium", "slow", "??"}[status&stDevselMask>>9]
	pin := f.Get8(sacc.CfgInterruptPin)
	if verbose > 1 {
		fmt.Fprintf(&b, "\tControl: I/O%c Mem%c BusMaster%c SpecCycle%c MemWINV%c VGASnoop%c ParErr%c Stepping%c SERR%c FastB2B%c DisINTx%c\n",
			pm(cmd, cmdIO), pm(cmd, cmdMemory), pm(cmd, cmdMaster), pm(cmd, cmdSpecial),
			pm(cmd, cmdInvalidate), pm(cmd, cmdVGAPalette), pm(cmd, cmdParity), pm(cmd, cmdWait),
			pm(cmd, cmdSERR), pm(cmd, cmdFastBack), pm(cmd, cmdDisableINTx))
		fmt.Fprintf(&b, "\tStatus: Cap%c 66MHz%c UDF%c FastB2B%c ParErr%c DEVSEL=%s >TAbort%c <TAbort%c <MAbort%c >SERR%c <PERR%c INTx%c\n",
			pm(status, stCapList), pm(status, st66MHz), pm(status, stUDF), pm(status, stFastBack),
			pm(status, stParity), devsel, pm(status, stSigTgtAbort), pm(status, stRecTgtAbort),
			pm(status, stRecMstAbort), pm(status, stSigSysErr), pm(status, stDetectedParit), pm(status, stINTx))
		if cmd&cmdMaster != 0 {
			fmt.Fprintf(&b, "\tLatency: %d", latency)
			if cls := f.Get8(sacc.CfgCacheLineSize); cls != 0 {
				fmt.Fprintf(&b, ", Cache Line Size: %d bytes", int(cls)*4)
			}
			b.WriteByte('\n')
		}
		if pin != 0 {
			fmt.Fprintf(&b, "\tInterrupt: pin %c routed to IRQ %d\n", 'A'+pin-1, f.Get8(sacc.CfgInterruptLine))
		}
	} else {
		b.WriteString("\tFlags: ")
		if cmd&cmdMaster != 0 {
			b.WriteString("bus master, ")
		}
		fmt.Fprintf(&b, "%s devsel", devsel)
		if cmd&cmdMaster != 0 {
			fmt.Fprintf(&b, ", latency %d", latency)
		}
		b.WriteByte('\n')
	}
	writeBARs(&b, f, verbose)
	writeCaps(&b, f, verbose)
	io.WriteString(w, b.String())
}

// showSize is lspci's show_size: " [size=8K]".
func showSize(x uint64) string {
	if x == 0 {
		return ""
	}
	suffix := []string{"", "K", "M", "G", "T"}
	i := 0
	for ; i < len(suffix)-1 && x >= 1024; i++ {
		x /= 1024
	}
	return fmt.Sprintf(" [size=%d%s]", x, suffix[i])
}

// writeBARs is lspci's show_bases for a type-0 header: 32-bit memory BARs only, as
// that is all the device implements.
func writeBARs(b *strings.Builder, f *pci.Function, verbose int) {
	cmd := uint32(f.Get16(sacc.CfgCommand))
	for i := 0; i < sacc.NumBARs; i++ {
		flg := f.Get32(uint32(sacc.CfgBAR0 + 4*i))
		size := f.BARSize(i)
		if flg == 0xFFFFFFFF {
			flg = 0
		}
		if flg == 0 && size == 0 {
			continue
		}
		if verbose > 1 {
			fmt.Fprintf(b, "\tRegion %d: ", i)
		} else {
			b.WriteByte('\t')
		}
		if flg&sacc.BARIOSpace != 0 {
			fmt.Fprintf(b, "I/O ports at %04x", flg&^3)
		} else {
			addr := uint64(flg &^ sacc.BARTypeMask)
			b.WriteString("Memory at ")
			if addr != 0 {
				fmt.Fprintf(b, "%08x", addr)
			} else {
				b.WriteString("<unassigned>")
			}
			typ := "32-bit"
			switch flg >> 1 & 3 {
			case 1:
				typ = "low-1M"
			case 2:
				typ = "64-bit"
			case 3:
				typ = "type 3"
			}
			pre := "non-"
			if flg&sacc.BARPrefetchable != 0 {
				pre = ""
			}
			fmt.Fprintf(b, " (%s, %sprefetchable)", typ, pre)
			if cmd&cmdMemory == 0 {
				b.WriteString(" [disabled]")
			}
		}
		b.WriteString(showSize(size))
		b.WriteByte('\n')
	}
}

// PCI Express capability registers, relative to the capability (PCIe 3.0 §7.8).
const (
	expFlags   = 0x02
	expDevCap  = 0x04
	expDevCtl  = 0x08
	expDevSta  = 0x0A
	expLnkCap  = 0x0C
	expLnkCtl  = 0x10
	expLnkSta  = 0x12
	expLnkCap2 = 0x2C
)

var expTypes = map[uint32]string{
	0: "Endpoint", 1: "Legacy Endpoint", 4: "Root Port", 5: "Upstream Port", 6: "Downstream Port",
	7: "PCI-Express to PCI/PCI-X Bridge", 8: "PCI/PCI-X to PCI-Express Bridge",
	9: "Root Complex Integrated Endpoint", 10: "Root Complex Event Collector",
}

func writeCaps(b *strings.Builder, f *pci.Function, verbose int) {
	for _, c := range f.Capabilities() {
		at, id := c[0], c[1]
		fmt.Fprintf(b, "\tCapabilities: [%02x] ", at)
		flags := uint32(f.Get16(at + 2))
		switch id {
		case sacc.CapIDPCIe:
			writeExpress(b, f, at, flags, verbose)
		case sacc.CapIDMSIX:
			fmt.Fprintf(b, "MSI-X: Enable%c Count=%d Masked%c\n",
				pm(flags, sacc.MSIXCtrlEnable), flags&sacc.MSIXCtrlTableSizeMask+1, pm(flags, sacc.MSIXCtrlFunctionMask))
			if verbose > 1 {
				t := f.Get32(at + sacc.CapMSIXTableOff)
				fmt.Fprintf(b, "\t\tVector table: BAR=%d offset=%08x\n", t&7, t&^7)
				p := f.Get32(at + sacc.CapMSIXPBAOff)
				fmt.Fprintf(b, "\t\tPBA: BAR=%d offset=%08x\n", p&7, p&^7)
			}
		default:
			fmt.Fprintf(b, "#%02x [%04x]\n", id, flags)
		}
	}
}

func linkSpeed(code uint32) string {
	switch code {
	case 1:
		return "2.5GT/s"
	case 2:
		return "5GT/s"
	case 3:
		return "8GT/s"
	case 4:
		return "16GT/s"
	case 5:
		return "32GT/s"
	case 6:
		return "64GT/s"
	}
	return "unknown"
}

func writeExpress(b *strings.Builder, f *pci.Function, at, flags uint32, verbose int) {
	typ := flags >> 4 & 0xF
	b.WriteString("Express ")
	if verbose > 1 {
		fmt.Fprintf(b, "(v%d) ", flags&0xF)
	}
	if name, ok := expTypes[typ]; ok {
		b.WriteString(name)
	} else {
		fmt.Fprintf(b, "Unknown type %d", typ)
	}
	fmt.Fprintf(b, ", MSI %02x\n", flags>>9&0x1F)
	if verbose < 2 {
		return
	}
	l0s := [...]string{"<64ns", "<128ns", "<256ns", "<512ns", "<1us", "<2us", "<4us", "unlimited"}
	l1 := [...]string{"<1us", "<2us", "<4us", "<8us", "<16us", "<32us", "<64us", "unlimited"}

	t := f.Get32(at + expDevCap)
	fmt.Fprintf(b, "\t\tDevCap:\tMaxPayload %d bytes, PhantFunc %d, Latency L0s %s, L1 %s\n",
		128<<(t&7), 1<<(t>>3&3)-1, l0s[t>>6&7], l1[t>>9&7])
	power := float64(t>>18&0xFF) * [...]float64{1, 0.1, 0.01, 0.001}[t>>26&3]
	fmt.Fprintf(b, "\t\t\tExtTag%c AttnBtn%c AttnInd%c PwrInd%c RBE%c FLReset%c SlotPowerLimit %sW\n",
		pm(t, 1<<5), pm(t, 1<<12), pm(t, 1<<13), pm(t, 1<<14), pm(t, 1<<15), pm(t, 1<<28),
		strconv.FormatFloat(power, 'g', -1, 64))
	w := uint32(f.Get16(at + expDevCtl))
	fmt.Fprintf(b, "\t\tDevCtl:\tCorrErr%c NonFatalErr%c FatalErr%c UnsupReq%c\n",
		pm(w, 1<<0), pm(w, 1<<1), pm(w, 1<<2), pm(w, 1<<3))
	fmt.Fprintf(b, "\t\t\tRlxdOrd%c ExtTag%c PhantFunc%c AuxPwr%c NoSnoop%c", pm(w, 1<<4), pm(w, 1<<8), pm(w, 1<<9), pm(w, 1<<10), pm(w, 1<<11))
	if t&(1<<28) != 0 {
		fmt.Fprintf(b, " FLReset%c", pm(w, 1<<15))
	}
	fmt.Fprintf(b, "\n\t\t\tMaxPayload %d bytes, MaxReadReq %d bytes\n", 128<<(w>>5&7), 128<<(w>>12&7))
	w = uint32(f.Get16(at + expDevSta))
	fmt.Fprintf(b, "\t\tDevSta:\tCorrErr%c NonFatalErr%c FatalErr%c UnsupReq%c AuxPwr%c TransPend%c\n",
		pm(w, 1<<0), pm(w, 1<<1), pm(w, 1<<2), pm(w, 1<<3), pm(w, 1<<4), pm(w, 1<<5))

	lc := f.Get32(at + expLnkCap)
	aspm := [...]string{"not supported", "L0s", "L1", "L0s L1"}[lc>>10&3]
	fmt.Fprintf(b, "\t\tLnkCap:\tPort #%d, Speed %s, Width x%d, ASPM %s", lc>>24, linkSpeed(lc&0xF), lc>>4&0x3F, aspm)
	if lc>>10&3 != 0 {
		b.WriteString(", Exit Latency")
		if lc&(1<<10) != 0 {
			fmt.Fprintf(b, " L0s %s", l0s[lc>>12&7])
		}
		if lc&(1<<11) != 0 {
			fmt.Fprintf(b, " L1 %s", l1[lc>>15&7])
		}
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "\t\t\tClockPM%c Surprise%c LLActRep%c BwNot%c ASPMOptComp%c\n",
		pm(lc, 1<<18), pm(lc, 1<<19), pm(lc, 1<<20), pm(lc, 1<<21), pm(lc, 1<<22))
	w = uint32(f.Get16(at + expLnkCtl))
	rcb := 64
	if w&(1<<3) != 0 {
		rcb = 128
	}
	fmt.Fprintf(b, "\t\tLnkCtl:\tASPM %s; RCB %d bytes, Disabled%c CommClk%c\n",
		[...]string{"Disabled", "L0s Enabled", "L1 Enabled", "L0s L1 Enabled"}[w&3], rcb, pm(w, 1<<4), pm(w, 1<<6))
	fmt.Fprintf(b, "\t\t\tExtSynch%c ClockPM%c AutWidDis%c BWInt%c AutBWInt%c\n",
		pm(w, 1<<7), pm(w, 1<<8), pm(w, 1<<9), pm(w, 1<<10), pm(w, 1<<11))
	w = uint32(f.Get16(at + expLnkSta))
	compare := func(sta, lcap uint32) string {
		switch {
		case sta > lcap:
			return " (overdriven)"
		case sta < lcap:
			return " (downgraded)"
		}
		return ""
	}
	fmt.Fprintf(b, "\t\tLnkSta:\tSpeed %s%s, Width x%d%s\n",
		linkSpeed(w&0xF), compare(w&0xF, lc&0xF), w>>4&0x3F, compare(w>>4&0x3F, lc>>4&0x3F))
	fmt.Fprintf(b, "\t\t\tTrErr%c Train%c SlotClk%c DLActive%c BWMgmt%c ABWMgmt%c\n",
		pm(w, 1<<10), pm(w, 1<<11), pm(w, 1<<12), pm(w, 1<<13), pm(w, 1<<14), pm(w, 1<<15))
	if flags&0xF >= 2 {
		if c2 := f.Get32(at + expLnkCap2); c2 != 0 {
			fmt.Fprintf(b, "\t\tLnkCap2: Supported Link Speeds: %s, Crosslink%c Retimer%c 2Retimers%c DRS%c\n",
				linkSpeeds(c2>>1&0x7F), pm(c2, 1<<8), pm(c2, 1<<23), pm(c2, 1<<24), pm(c2, 1<<31))
		}
	}
}

// linkSpeeds is lspci's reading of the Supported Link Speeds vector: 2.5 GT/s up to
// the highest speed set.
func linkSpeeds(vec uint32) string {
	for bit := 6; bit >= 0; bit-- {
		if vec&(1<<bit) != 0 {
			if bit == 0 {
				return "2.5GT/s"
			}
			return "2.5-" + linkSpeed(uint32(bit)+1)
		}
	}
	return "RsvdP"
}
