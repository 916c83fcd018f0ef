package driver_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// TestIoctlNumbersAreTheABI: the numbers are what user space was built
// against (and what traces print); they must never move.
func TestIoctlNumbersAreTheABI(t *testing.T) {
	for name, tc := range map[string]struct{ got, want uint32 }{
		"SUBMIT":        {driver.IocSubmit, 0xC0205301},
		"MAP_BUFFER":    {driver.IocMapBuffer, 0xC0205302},
		"UNMAP_BUFFER":  {driver.IocUnmapBuffer, 0x40205303},
		"SETUP_RINGS":   {driver.IocSetupRings, 0x40185304},
		"RELEASE_RINGS": {driver.IocReleaseRings, 0x00005305},
	} {
		if tc.got != tc.want {
			t.Errorf("%s is %#x, want %#x", name, tc.got, tc.want)
		}
		if size := tc.got >> 16 & 0x3FFF; name != "RELEASE_RINGS" && size == 0 {
			t.Errorf("%s carries no block size", name)
		}
	}
}

// TestArgumentBlockLayouts pins every block byte by byte, little-endian, as the
// documentation of each struct states it.
func TestArgumentBlockLayouts(t *testing.T) {
	le := func(v uint64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	sub := driver.SubmitArgs{Opcode: 0x0102, Flags: 0x0304, Length: 0x05060708, Src: 0x1112131415161718, Dst: 0x2122232425262728,
		Status: sacc.StatusBadLength, ResultLen: 0x31323334}
	wantSub := cat(le(0x0102, 2), le(0x0304, 2), le(0x05060708, 4), le(sub.Src, 8), le(sub.Dst, 8), le(uint64(sacc.StatusBadLength), 4), le(0x31323334, 4))
	var b [driver.SubmitArgsSize]byte
	sub.Encode(b[:])
	if !bytes.Equal(b[:], wantSub) || len(wantSub) != driver.SubmitArgsSize {
		t.Errorf("SubmitArgs encodes as % x, want % x", b, wantSub)
	}
	if got := driver.DecodeSubmitArgs(b[:]); got != sub {
		t.Errorf("SubmitArgs decodes as %+v, want %+v", got, sub)
	}

	m := driver.MapArgs{Addr: 0x7F00_0000_1000, Length: 0x3000, Dir: kernel.DMAFromDevice, DMA: 0x8000_2000}
	wantMap := cat(le(m.Addr, 8), le(m.Length, 8), le(uint64(kernel.DMAFromDevice), 4), le(0, 4), le(m.DMA, 8))
	var mb [driver.MapArgsSize]byte
	for i := range mb {
		mb[i] = 0xEE // the pad word is written, not left
	}
	m.Encode(mb[:])
	if !bytes.Equal(mb[:], wantMap) || len(wantMap) != driver.MapArgsSize {
		t.Errorf("MapArgs encodes as % x, want % x", mb, wantMap)
	}
	if got := driver.DecodeMapArgs(mb[:]); got != m {
		t.Errorf("MapArgs decodes as %+v, want %+v", got, m)
	}

	r := driver.RingArgs{SQ: 0x7F00_0000_2000, CQ: 0x7F00_0000_4000, Size: 16}
	wantRing := cat(le(r.SQ, 8), le(r.CQ, 8), le(16, 4), le(0, 4))
	var rb [driver.RingArgsSize]byte
	for i := range rb {
		rb[i] = 0xEE
	}
	r.Encode(rb[:])
	if !bytes.Equal(rb[:], wantRing) || len(wantRing) != driver.RingArgsSize {
		t.Errorf("RingArgs encodes as % x, want % x", rb, wantRing)
	}
	if got := driver.DecodeRingArgs(rb[:]); got != r {
		t.Errorf("RingArgs decodes as %+v, want %+v", got, r)
	}
}

// TestSubmitWritesBackOnlyTheResult: the kernel copies status and result_len
// out and leaves the caller's input fields alone, and LoadResult reads just
// those two.
func TestSubmitWritesBackOnlyTheResult(t *testing.T) {
	h := hosttest.Boot(t, host.Config{})
	u := newUserCopy(t, h, 256)
	in := driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: u.n, Src: u.src, Dst: u.dst, Status: 0x7777, ResultLen: 0xDEAD}
	in.Store(u.p, u.arg)
	if _, err := u.p.Ioctl(u.fd, driver.IocSubmit, u.arg); err != nil {
		t.Fatal(err)
	}
	var b [driver.SubmitArgsSize]byte
	u.p.LoadBytes(u.arg, b[:])
	got := driver.DecodeSubmitArgs(b[:])
	want := in
	want.Status, want.ResultLen = sacc.StatusOK, u.n
	if got != want {
		t.Fatalf("after SUBMIT the block holds %+v, want %+v", got, want)
	}
	res := driver.SubmitArgs{Opcode: 9, Src: 1}
	res.LoadResult(u.p, u.arg)
	if res != (driver.SubmitArgs{Opcode: 9, Src: 1, Status: sacc.StatusOK, ResultLen: u.n}) {
		t.Fatalf("LoadResult gave %+v", res)
	}
}

// TestIoctlsRefuseReservedFields: a set reserved field is EINVAL, before the
// kernel does anything with the block, so that it can be given a meaning later.
func TestIoctlsRefuseReservedFields(t *testing.T) {
	h := hosttest.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: true}})
	u := newUserCopy(t, h, 256)
	submitted := h.Dev.Stats.Submitted
	driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Flags: 1, Length: u.n, Src: u.src, Dst: u.dst}.Store(u.p, u.arg)
	if _, err := u.p.Ioctl(u.fd, driver.IocSubmit, u.arg); !errors.Is(err, kernel.EINVAL) {
		t.Errorf("SUBMIT with flags set: %v, want EINVAL", err)
	}
	if h.Dev.Stats.Submitted != submitted {
		t.Error("a refused SUBMIT reached the device")
	}
	for _, tc := range []struct {
		name string
		cmd  uint32
		size int
		fill func(b []byte)
	}{
		{"MAP_BUFFER pad", driver.IocMapBuffer, driver.MapArgsSize, func(b []byte) {
			driver.MapArgs{Addr: u.src, Length: 256, Dir: kernel.DMAToDevice}.Encode(b)
			b[20] = 1
		}},
		{"MAP_BUFFER direction", driver.IocMapBuffer, driver.MapArgsSize, func(b []byte) {
			driver.MapArgs{Addr: u.src, Length: 256, Dir: 3}.Encode(b)
		}},
		{"UNMAP_BUFFER pad", driver.IocUnmapBuffer, driver.MapArgsSize, func(b []byte) {
			driver.MapArgs{Addr: u.src, Length: 256, Dir: kernel.DMAToDevice}.Encode(b)
			b[23] = 0x80
		}},
		{"SETUP_RINGS pad", driver.IocSetupRings, driver.RingArgsSize, func(b []byte) {
			driver.RingArgs{SQ: u.src, CQ: u.dst, Size: 8}.Encode(b)
			b[21] = 1
		}},
	} {
		b := make([]byte, tc.size)
		tc.fill(b)
		u.p.StoreBytes(u.arg, b)
		mapped := h.K.IOMMUMappings()
		if _, err := u.p.Ioctl(u.fd, tc.cmd, u.arg); !errors.Is(err, kernel.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", tc.name, err)
		}
		if h.K.IOMMUMappings() != mapped || u.p.Pinned() != 0 {
			t.Errorf("%s: a refused block mapped or pinned memory", tc.name)
		}
	}
}
