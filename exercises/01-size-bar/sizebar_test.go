package sizebar

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how much virtual time sizing one BAR may take: four configuration
// accesses of about 1 µs each.
const budget sim.Time = 1_000_000

func boot(t *testing.T) (*check.Machine, *kernel.PCIDev) {
	m := check.Boot(t, host.Config{})
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	return m, devs[0]
}

func size(m *check.Machine, cfg ConfigSpace, bar int) (uint64, error) {
	var n uint64
	var err error
	m.Do(fmt.Sprintf("SizeBAR(BAR%d)", bar), budget, func() { n, err = SizeBAR(cfg, bar) })
	return n, err
}

// barValue is what BAR i holds now, read without a configuration cycle.
func barValue(m *check.Machine, i int) uint32 {
	return m.M.Device().Config().Get32(uint32(sacc.CfgBAR0 + 4*i))
}

// sizingReply is what the device answered to the all-ones write, if the
// learner's code read it back.
func sizingReply(evs []trace.Event, reg uint32) (uint32, bool) {
	wrote := false
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.ConfigWrite && ev.Args[1] == uint64(reg) && ev.Args[3] == 0xFFFF_FFFF:
			wrote = true
		case ev.Kind == trace.ConfigRead && ev.Args[1] == uint64(reg) && wrote:
			return uint32(ev.Args[3]), true
		}
	}
	return 0, false
}

func TestSizesBAR0And1(t *testing.T) {
	for _, tc := range []struct {
		bar  int
		want uint64
		what string
	}{
		{0, sacc.BAR0Size, "8 KiB: the register page and the doorbell page (§4)"},
		{1, sacc.BAR1Size, "4 KiB: the MSI-X table and the PBA (§4)"},
	} {
		t.Run(fmt.Sprintf("BAR%d", tc.bar), func(t *testing.T) {
			m, pdev := boot(t)
			mark := m.Mark()
			got, err := size(m, pdev, tc.bar)
			if err != nil {
				m.Fatalf("SizeBAR(BAR%d) returned an error: %v\nwant %#x bytes, %s", tc.bar, err, tc.want, tc.what)
			}
			if got != tc.want {
				reply := "SizeBAR never read the BAR back after writing all ones to it"
				if v, ok := sizingReply(m.Since(mark), uint32(sacc.CfgBAR0+4*tc.bar)); ok {
					reply = fmt.Sprintf("the device answered %#08x to the all-ones write", v)
				}
				m.Fatalf("SizeBAR(BAR%d) = %#x bytes, want %#x, %s.\n%s.", tc.bar, got, tc.want, tc.what, reply)
			}
		})
	}
}

func TestRestoresTheBAR(t *testing.T) {
	for bar := range 2 {
		t.Run(fmt.Sprintf("BAR%d", bar), func(t *testing.T) {
			m, pdev := boot(t)
			before := barValue(m, bar)
			if _, err := size(m, pdev, bar); err != nil {
				m.Fatalf("SizeBAR(BAR%d) returned an error: %v", bar, err)
			}
			after := barValue(m, bar)
			if after == before {
				return
			}
			// Show the consequence: the device no longer answers where the kernel
			// thinks it is.
			pdev.EnableDevice()
			seen := m.CPU.Readl(uint64(before &^ sacc.BARTypeMask))
			m.Fatalf("Before SizeBAR, BAR%d held %#08x: the address the firmware assigned. Afterwards it holds %#08x.\n"+
				"The kernel still believes BAR%d is at %#08x, but with memory decoding on, a read there now returns %#08x: "+
				"the device answers nowhere. Sizing must put the BAR back as it found it (§3).",
				bar, before, after, bar, before&^sacc.BARTypeMask, seen)
		})
	}
}

func TestMasksTheTypeBits(t *testing.T) {
	m, pdev := boot(t)
	// The same device, but its BAR0 says "prefetchable" (bit 3), as the large
	// memory BAR of a GPU does.
	cfg := prefetchable{pdev}
	mark := m.Mark()
	got, err := size(m, cfg, 0)
	if err != nil {
		m.Fatalf("SizeBAR(BAR0) of a prefetchable BAR returned an error: %v\nwant %#x bytes", err, sacc.BAR0Size)
	}
	if got != sacc.BAR0Size {
		reply := "SizeBAR never read the BAR back after writing all ones to it"
		if v, ok := sizingReply(m.Since(mark), sacc.CfgBAR0); ok {
			reply = fmt.Sprintf("the device answered %#08x to the all-ones write, and this BAR's type bits read %#x", v|sacc.BARPrefetchable, sacc.BARPrefetchable)
		}
		m.Fatalf("This time BAR0 is a prefetchable 32-bit memory BAR: its low 4 bits read 0b1000.\n"+
			"SizeBAR(BAR0) = %#x bytes, want %#x (8 KiB); %s.", got, sacc.BAR0Size, reply)
	}
}

func TestUnimplementedBARsAreZero(t *testing.T) {
	m, pdev := boot(t)
	for bar := 2; bar < sacc.NumBARs; bar++ {
		got, err := size(m, pdev, bar)
		if err != nil {
			m.Fatalf("SizeBAR(BAR%d) returned an error: %v\nBAR%d is not implemented: it reads back 0 after the all-ones write, "+
				"and its size is 0, which is an answer, not an error (§3).", bar, err, bar)
		}
		if got != 0 {
			m.Fatalf("SizeBAR(BAR%d) = %#x, want 0: BAR%d is not implemented and reads back 0 after the all-ones write (§3).", bar, got, bar)
		}
	}
}

func TestRejectsABadBARNumber(t *testing.T) {
	m, pdev := boot(t)
	for _, bar := range []int{-1, 6, 7} {
		mark := m.Mark()
		got, err := size(m, pdev, bar)
		if err == nil {
			m.Fatalf("SizeBAR(BAR%d) = %#x and no error; a type-0 header has BARs 0 to 5 only, so BAR%d is an error.", bar, got, bar)
		}
		if w := check.Find(m.Since(mark), trace.ConfigWrite); len(w) > 0 {
			m.Fatalf("SizeBAR(BAR%d) returned an error, but first it wrote configuration space (dword %#x is not a BAR):\n%s",
				bar, w[0].Args[1], check.Lines(w))
		}
	}
}

// prefetchable is a PCI function whose BAR0 carries the prefetchable bit, as
// real hardware sets it: read-only, in every read of the BAR.
type prefetchable struct{ ConfigSpace }

func (p prefetchable) ReadConfig32(reg uint32) uint32 {
	v := p.ConfigSpace.ReadConfig32(reg)
	if reg == sacc.CfgBAR0 {
		v |= sacc.BARPrefetchable
	}
	return v
}
