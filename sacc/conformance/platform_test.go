package conformance

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc"
)

// unmappedAddrs are guest-physical addresses that no range of the §1 map covers on
// a machine at power-on (default RAM, BARs unassigned, COMMAND = 0).
var unmappedAddrs = []uint64{
	unmappedPA,            // just past 128 MiB of RAM
	0x4000_0000,           // between RAM and ECAM
	0xAFFF_FFF0,           // just below ECAM
	0xC000_0000,           // MMIO window, nothing assigned
	0xD000_0000,           // MMIO window, nothing assigned
	0xFED0_0000,           // between the MMIO window and the IOMMU block
	0xFED9_1000,           // just past the IOMMU block
	0xFEF0_0000,           // just past the interrupt window
	0x1_0000_0000,         // 4 GiB
	0xFFFF_FFFF_FFFF_F000, // top of the 64-bit space
}

// §1: "Reads of unmapped guest-physical addresses return all ones."
func TestUnmappedReadReturnsAllOnes(t *testing.T) {
	c := newClient(t)
	for _, a := range unmappedAddrs {
		if v := c.readb(a); v != 0xFF {
			t.Errorf("readb 0x%x = 0x%x, want 0xff", a, v)
		}
		if v := c.readw(a); v != 0xFFFF {
			t.Errorf("readw 0x%x = 0x%x, want 0xffff", a, v)
		}
		if v := c.readl(a); v != 0xFFFF_FFFF {
			t.Errorf("readl 0x%x = 0x%x, want 0xffffffff", a, v)
		}
		if v := c.readq(a); v != ^uint64(0) {
			t.Errorf("readq 0x%x = 0x%x, want all ones", a, v)
		}
		if b := c.read(a, 8); !bytes.Equal(b, bytes.Repeat([]byte{0xFF}, 8)) {
			t.Errorf("read 0x%x 8 = %x, want all ones", a, b)
		}
	}
}

// §1: "Reads of unmapped guest-physical addresses return all ones" — byte by byte,
// so a read that runs off the end of RAM returns RAM bytes, then ones.
func TestReadAcrossEndOfRAM(t *testing.T) {
	c := newClient(t)
	c.write(unmappedPA-4, []byte{1, 2, 3, 4})
	got := c.read(unmappedPA-4, 8)
	want := []byte{1, 2, 3, 4, 0xFF, 0xFF, 0xFF, 0xFF}
	if !bytes.Equal(got, want) {
		t.Fatalf("read 0x%x 8 = %x, want %x", unmappedPA-4, got, want)
	}
}

// §1: writes to unmapped guest-physical addresses "are dropped": they change
// nothing there and nothing elsewhere (no aliasing onto RAM).
func TestUnmappedWriteIsDropped(t *testing.T) {
	c := newClient(t)
	for _, a := range unmappedAddrs {
		c.writel(a, 0x1234_5678)
		c.writeq(a, 0x1122_3344_5566_7788)
		if v := c.readl(a); v != 0xFFFF_FFFF {
			t.Errorf("after writes, readl 0x%x = 0x%x, want 0xffffffff", a, v)
		}
	}
	// The RAM bytes a write would hit if addresses wrapped modulo the RAM size.
	for _, a := range unmappedAddrs {
		alias := a % sacc.DefaultRAMSize
		if v := c.readq(alias); v != 0 {
			t.Errorf("RAM at 0x%x = 0x%x after writes to unmapped 0x%x, want 0", alias, v, a)
		}
	}
}

// §1: RAM is 128 MiB by default; "reads of untouched RAM return 0".
func TestUntouchedRAMReadsZero(t *testing.T) {
	c := newClient(t)
	for _, a := range []uint64{0, 0x1000, 0x0123_4560, sacc.DefaultRAMSize - 8} {
		if v := c.readq(a); v != 0 {
			t.Errorf("readq 0x%x = 0x%x, want 0 (untouched RAM)", a, v)
		}
	}
	c.writeq(sacc.DefaultRAMSize-8, 0x0102_0304_0506_0708)
	if v := c.readq(sacc.DefaultRAMSize - 8); v != 0x0102_0304_0506_0708 {
		t.Errorf("last RAM quadword reads 0x%x after a write, want 0x0102030405060708", v)
	}
}

// §1: "All multi-byte values are little-endian."
func TestRAMIsLittleEndian(t *testing.T) {
	c := newClient(t)
	c.writel(0x2000, 0x4433_2211)
	if b := c.read(0x2000, 4); !bytes.Equal(b, []byte{0x11, 0x22, 0x33, 0x44}) {
		t.Fatalf("read after writel 0x44332211 = %x, want 11223344", b)
	}
	c.write(0x3000, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	if v := c.readq(0x3000); v != 0x0807_0605_0403_0201 {
		t.Fatalf("readq = 0x%x, want 0x0807060504030201", v)
	}
	if v := c.readw(0x3002); v != 0x0403 {
		t.Fatalf("readw 0x3002 = 0x%x, want 0x0403", v)
	}
}

// §1: "ECAM address = base + (bus << 20) + (device << 15) + (function << 12) +
// register"; "the SACC endpoint is at 00:03.0". Enumerating bus 0 through ECAM
// finds it there.
func TestECAMEnumerationFindsSACCAt00_03_0(t *testing.T) {
	c := newClient(t)
	expectSACCAt0003(t, enumerate(c.ecamRead32), c.ecamRead32)
}

// §1: mechanism #1 (CONFIG_ADDRESS at 0xCF8, data at 0xCFC) enumerates the same
// hierarchy: the SACC endpoint at 00:03.0.
func TestConfigMechanism1EnumerationFindsSACCAt00_03_0(t *testing.T) {
	c := newClient(t)
	expectSACCAt0003(t, enumerate(c.portRead32), c.portRead32)
}

// expectSACCAt0003 checks that among the enumerated functions the SACC is at
// 00:03.0 and nowhere else.
func expectSACCAt0003(t *testing.T, found []bdf, read32 func(bdf, uint32) uint32) {
	t.Helper()
	var sacc0 []bdf
	for _, b := range found {
		if id := read32(b, sacc.CfgVendorID); uint16(id) == sacc.VendorID && uint16(id>>16) == sacc.DeviceID {
			sacc0 = append(sacc0, b)
		}
	}
	if len(sacc0) != 1 || sacc0[0] != (bdf{sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction}) {
		t.Fatalf("SACC (1b36:1092) found at %v (all functions: %v), want exactly 00:03.0", sacc0, found)
	}
}

// §1: "Absent functions read vendor ID 0xFFFF."
func TestECAMAbsentFunctionReadsFFFF(t *testing.T) {
	c := newClient(t)
	absent := [][3]uint32{{0, 3, 1}, {0, 3, 7}, {0, 4, 0}, {0, 31, 0}, {1, 0, 0}, {1, 3, 0}, {255, 31, 7}}
	for _, bdf := range absent {
		v := c.readl(sacc.ECAMAddress(bdf[0], bdf[1], bdf[2], sacc.CfgVendorID))
		if uint16(v) != sacc.AbsentVendorID {
			t.Errorf("%02x:%02x.%d vendor ID = 0x%04x, want 0xffff", bdf[0], bdf[1], bdf[2], uint16(v))
		}
	}
}

// §1: port 0xCF8 is CONFIG_ADDRESS (bit 31 enable, bus, device, function, dword
// register) and 0xCFC–0xCFF the data window; §3: mechanism #1 reaches the first 256
// bytes. Every dword it reads equals the ECAM view of the same register.
func TestConfigMechanism1ReadsSameAsECAM(t *testing.T) {
	c := newClient(t)
	for reg := uint32(0); reg < sacc.LegacyConfigSpaceSize; reg += 4 {
		c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, reg))
		viaPorts := c.inl(sacc.PortConfigData)
		viaECAM := c.readl(ecam(reg))
		if viaPorts != viaECAM {
			t.Errorf("config dword 0x%02x: mechanism #1 reads 0x%08x, ECAM 0x%08x", reg, viaPorts, viaECAM)
		}
	}
}

// §1: "Port 0xCFC + n (n = 0..3) is the data window (byte, word or dword)."
func TestConfigMechanism1DataWindowWidths(t *testing.T) {
	c := newClient(t)
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, sacc.CfgVendorID))
	if v := c.inl(sacc.PortConfigData); v != sacc.DeviceID<<16|sacc.VendorID {
		t.Errorf("inl 0xcfc = 0x%08x, want 0x%08x", v, sacc.DeviceID<<16|sacc.VendorID)
	}
	if v := c.inw(sacc.PortConfigData); v != sacc.VendorID {
		t.Errorf("inw 0xcfc = 0x%04x, want vendor 0x%04x", v, sacc.VendorID)
	}
	if v := c.inw(sacc.PortConfigData + 2); v != sacc.DeviceID {
		t.Errorf("inw 0xcfe = 0x%04x, want device 0x%04x", v, sacc.DeviceID)
	}
	want := []uint8{sacc.VendorID & 0xFF, sacc.VendorID >> 8, sacc.DeviceID & 0xFF, sacc.DeviceID >> 8}
	for n := range 4 {
		if v := c.inb(sacc.PortConfigData + uint16(n)); v != want[n] {
			t.Errorf("inb 0x%x = 0x%02x, want 0x%02x", sacc.PortConfigData+n, v, want[n])
		}
	}
}

// §1: "With bit 31 clear ... reads return all ones."
func TestConfigMechanism1BitClearReadsAllOnes(t *testing.T) {
	c := newClient(t)
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, 0)&^sacc.ConfigAddressEnable)
	if v := c.inl(sacc.PortConfigData); v != 0xFFFF_FFFF {
		t.Errorf("inl 0xcfc with CONFIG_ADDRESS bit 31 clear = 0x%x, want 0xffffffff", v)
	}
	if v := c.inw(sacc.PortConfigData); v != 0xFFFF {
		t.Errorf("inw 0xcfc with bit 31 clear = 0x%x, want 0xffff", v)
	}
	if v := c.inb(sacc.PortConfigData + 3); v != 0xFF {
		t.Errorf("inb 0xcff with bit 31 clear = 0x%x, want 0xff", v)
	}
}

// §1: "With bit 31 clear, or for an absent function, reads return all ones."
func TestConfigMechanism1AbsentFunctionReadsAllOnes(t *testing.T) {
	c := newClient(t)
	for _, bdf := range [][3]uint32{{0, 3, 1}, {0, 4, 0}, {1, 0, 0}, {255, 31, 7}} {
		c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(bdf[0], bdf[1], bdf[2], 0))
		if v := c.inl(sacc.PortConfigData); v != 0xFFFF_FFFF {
			t.Errorf("%02x:%02x.%d dword 0 via 0xcfc = 0x%x, want 0xffffffff", bdf[0], bdf[1], bdf[2], v)
		}
	}
}

// §1: the data window also writes: a COMMAND write through 0xCFC is the same
// register ECAM sees.
func TestConfigMechanism1Writes(t *testing.T) {
	c := newClient(t)
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, sacc.CfgBAR0))
	c.outl(sacc.PortConfigData, bar0Base)
	c.outl(sacc.PortConfigAddress, sacc.ConfigAddress(0, 3, 0, sacc.CfgCommand))
	c.outw(sacc.PortConfigData, sacc.CmdMemorySpace)
	if v := c.cfgRead16(sacc.CfgCommand); v != sacc.CmdMemorySpace {
		t.Fatalf("COMMAND via ECAM = 0x%x after outw 0xcfc 0x2, want 0x2", v)
	}
	if v := c.readl(ecam(sacc.CfgBAR0)); v != bar0Base {
		t.Fatalf("BAR0 via ECAM = 0x%x after outl, want 0x%x", v, bar0Base)
	}
	if v := c.readl(bar0Base + sacc.RegMAGIC); v != sacc.MagicValue {
		t.Fatalf("MAGIC through a BAR set up by port I/O = 0x%x, want 0x%x", v, sacc.MagicValue)
	}
}

// §1: "Power-on state: BARs unassigned (zero), COMMAND = 0."
func TestPowerOnBARsZeroAndCommandZero(t *testing.T) {
	c := newClient(t)
	if v := c.cfgRead16(sacc.CfgCommand); v != 0 {
		t.Errorf("COMMAND at power-on = 0x%x, want 0", v)
	}
	for i := uint32(0); i < sacc.NumBARs; i++ {
		if v := c.cfgRead32(sacc.CfgBAR0 + 4*i); v != 0 {
			t.Errorf("BAR%d at power-on = 0x%x, want 0", i, v)
		}
	}
}

// Project decision on §1/§3: a BAR decodes only when its address lies in the MMIO
// window 0xC0000000–0xFEBFFFFF (and COMMAND bit 1 is set).
func TestBARsDecodeOnlyInsideMMIOWindow(t *testing.T) {
	c := newClient(t)
	c.setCommand(sacc.CmdMemorySpace)

	outside := uint64(0x4000_0000)
	c.cfgWrite32(sacc.CfgBAR0, uint32(outside))
	if v := c.readl(outside + sacc.RegMAGIC); v != 0xFFFF_FFFF {
		t.Errorf("BAR0 at 0x%x (outside the MMIO window): MAGIC reads 0x%x, want all ones", outside, v)
	}

	// The last 8 KiB of the window: BAR0 decodes there, doorbell page included.
	last := uint64(sacc.MMIOWindowEnd + 1 - sacc.BAR0Size)
	c.cfgWrite32(sacc.CfgBAR0, uint32(last))
	if v := c.readl(last + sacc.RegMAGIC); v != sacc.MagicValue {
		t.Errorf("BAR0 at 0x%x (end of the window): MAGIC reads 0x%x, want 0x%x", last, v, sacc.MagicValue)
	}
	if v := c.readl(last + sacc.DoorbellEnd); v != 0 {
		t.Errorf("BAR0 at 0x%x: reserved doorbell-page offset reads 0x%x, want 0", last, v)
	}
	if v := c.readl(outside + sacc.RegMAGIC); v != 0xFFFF_FFFF {
		t.Errorf("old BAR0 address 0x%x still decodes after the BAR moved (reads 0x%x)", outside, v)
	}
}
