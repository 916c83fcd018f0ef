package machine_test

import (
	"encoding/binary"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// ops reads a fuzz input as a stream of machine operations.
type ops struct{ b []byte }

func (o *ops) more() bool { return len(o.b) > 0 }

func (o *ops) u8() uint8 {
	if len(o.b) == 0 {
		return 0
	}
	v := o.b[0]
	o.b = o.b[1:]
	return v
}

func (o *ops) u64() uint64 {
	var buf [8]byte
	n := copy(buf[:], o.b)
	o.b = o.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

var sizes = [4]int{1, 2, 4, 8}

// checkDeviceInvariants holds what must be true of the device whatever software
// does to it.
func checkDeviceInvariants(t *testing.T, m *machine.Machine) {
	t.Helper()
	s := m.Device().State()
	if s.Status&sacc.StatusReady != 0 {
		if s.Status&sacc.StatusError != 0 {
			t.Fatalf("READY and ERROR both set: STATUS %#x", s.Status)
		}
		if !sacc.ValidRingConfig(s.SQBase, s.SQSize, s.CQBase, s.CQSize) {
			t.Fatalf("READY with an invalid ring configuration: %+v", s)
		}
		if s.SQHead >= s.SQSize || s.SQTail >= s.SQSize || s.CQTail >= s.CQSize || s.CQHead >= s.CQSize {
			t.Fatalf("ring index out of range while ready: %+v", s)
		}
		if s.Phase > 1 {
			t.Fatalf("phase %d", s.Phase)
		}
	}
	if s.ErrCode > uint32(sacc.StatusRingConfig) {
		t.Fatalf("ERR_CODE %#x is not a defined code", s.ErrCode)
	}
	if s.PBA&^uint64(1<<sacc.MSIXVectors-1) != 0 {
		t.Fatalf("PBA %#x has bits beyond the vectors", s.PBA)
	}
}

// FuzzDevice throws random register writes, configuration writes, memory contents
// and clock steps at a running device. It must never panic, and its state must stay
// coherent.
func FuzzDevice(f *testing.F) {
	f.Add([]byte{0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add([]byte("\x03\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x05\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := machine.New(machine.Config{RAMSize: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		h, err := baremetal.Enumerate(m)
		if err != nil {
			t.Fatal(err)
		}
		h.EnableMSIX(0, sacc.IntWindowBase, 0x30)
		if err := h.Start(baremetal.SQAddr, 8, baremetal.CQAddr, 8); err != nil {
			t.Fatal(err)
		}
		o := &ops{data}
		for n := 0; o.more() && n < 256; n++ {
			switch o.u8() % 8 {
			case 0: // BAR0 register or doorbell write
				m.Write(h.BAR0+o.u64()%sacc.BAR0Size, sizes[o.u8()%4], o.u64())
			case 1: // BAR0 read
				m.Read(h.BAR0+o.u64()%sacc.BAR0Size, sizes[o.u8()%4])
			case 2: // MSI-X table or PBA write
				m.Write(h.BAR1+o.u64()%sacc.BAR1Size, sizes[o.u8()%4], o.u64())
			case 3: // a descriptor from the input, then the doorbell
				var d [sacc.DescriptorSize]byte
				for i := range d {
					d[i] = o.u8()
				}
				desc := sacc.DecodeDescriptor(d[:])
				desc.Src %= 32 << 20 // mostly inside RAM, sometimes past it
				desc.Dst %= 32 << 20
				desc.Length %= 3 * sacc.PageSize
				h.Put(desc)
				h.Ring()
			case 4: // configuration write
				m.Write(sacc.ECAMAddress(0, sacc.SACCDevice, 0, uint32(o.u8())), sizes[o.u8()%3], o.u64())
			case 5: // run the clock
				m.Advance(sim.Time(o.u8()) * 400)
			case 6: // scribble over the rings
				m.Write(baremetal.SQAddr+o.u64()%(2*sacc.PageSize), 8, o.u64())
			case 7: // consume completions
				h.Poll()
			}
			checkDeviceInvariants(t, m)
		}
		m.Advance(1_000_000)
		checkDeviceInvariants(t, m)
	})
}

// FuzzIOMMUConfinement grants the device a random set of pages with random
// permissions, then lets it run random descriptors. With translation on, every
// byte the device reads must lie in a page it may read, and every byte it writes in
// a page it may write.
func FuzzIOMMUConfinement(f *testing.F) {
	f.Add(uint64(0x0F0F), uint64(0x3333), []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 1, 0})
	f.Add(uint64(0xFFFF), uint64(0xFFFF), []byte{0x20, 0, 0x21, 0, 0, 0, 0, 0, 0x18, 0x20, 0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, grants, writable uint64, data []byte) {
		if bad := confinementViolations(t, grants, writable, data, true); len(bad) > 0 {
			t.Fatalf("the device touched pages it was not granted:\n%v", bad)
		}
	})
}

// TestConfinementCheckSeesPassthrough proves the fuzz check can fail: with
// translation off, the same workload reaches pages that were never granted.
func TestConfinementCheckSeesPassthrough(t *testing.T) {
	data := []byte{0x20, 0x30, 0x21, 0, 0, 0, 0x18, 0x20, 0, 0, 2, 0, 0x40, 0x50, 0x40, 0x40, 1, 0}
	if bad := confinementViolations(t, 0x1, 0x1, data, true); len(bad) > 0 {
		t.Fatalf("with translation on: %v", bad)
	}
	if bad := confinementViolations(t, 0x1, 0x1, data, false); len(bad) == 0 {
		t.Fatal("with translation off the device should have reached ungranted pages")
	}
}

func confinementViolations(t *testing.T, grants, writable uint64, data []byte, translate bool) []string {
	m, err := machine.New(machine.Config{RAMSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	h, err := baremetal.Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := baremetal.NewPageTables(m, 0x0080_0000, 64*sacc.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	// Pages the device may use: the rings always; 64 data pages by the input.
	perm := map[uint64]uint64{}
	grant := func(page, p uint64) {
		if err := pt.Map(page, page, p); err != nil {
			t.Fatal(err)
		}
		perm[page] = p
	}
	grant(baremetal.SQAddr, sacc.PTERead)
	grant(baremetal.CQAddr, sacc.PTERead|sacc.PTEWrite)
	const data0 = baremetal.DataAddr
	for i := range uint64(64) {
		if grants&(1<<i) == 0 {
			continue
		}
		p := uint64(sacc.PTERead)
		if writable&(1<<i) != 0 {
			p |= sacc.PTEWrite
		}
		grant(data0+i*sacc.PageSize, p)
	}
	if translate {
		baremetal.IOMMU{M: m}.Enable(pt.Root, 0x0090_0000, 16)
	}

	var bad []string
	m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind != trace.DMARead && ev.Kind != trace.DMAWrite {
			return
		}
		want := uint64(sacc.PTERead)
		if ev.Kind == trace.DMAWrite {
			want = sacc.PTEWrite
		}
		phys, n := ev.Args[1], ev.Args[2]
		for p := phys &^ sacc.PageMask; p < phys+n; p += sacc.PageSize {
			if perm[p]&want == 0 {
				bad = append(bad, ev.String())
				return
			}
		}
	}))
	if err := h.Start(baremetal.SQAddr, 16, baremetal.CQAddr, 16); err != nil {
		t.Fatal(err)
	}
	o := &ops{data}
	for n := 0; o.more() && n < 64; n++ {
		// Addresses within the 64 data pages and one page either side.
		span := uint64(66 * sacc.PageSize)
		d := sacc.Descriptor{
			Src:    data0 - sacc.PageSize + uint64(o.u8())<<8%span,
			Dst:    data0 - sacc.PageSize + uint64(o.u8())<<10%span,
			Length: uint32(o.u8())<<6 + uint32(o.u8()),
			Opcode: uint16(o.u8() % 3),
			ReqID:  uint32(n),
		}
		if !h.Put(d) {
			for h.InFlight() > 0 {
				if _, err := h.Wait(1_000_000); err != nil {
					break
				}
			}
			h.Put(d)
		}
		if o.u8()%4 == 0 {
			h.Ring()
		}
	}
	h.Ring()
	for h.InFlight() > 0 {
		if _, err := h.Wait(1_000_000); err != nil {
			break
		}
	}
	return bad
}
