package machine_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
)

// FuzzUpstreamDevice throws random BAR0 accesses, ring sizes and ring contents at
// a device built to the upstream-v0.1 profile. It must never panic, and what
// upstream's device never sets must stay clear.
func FuzzUpstreamDevice(f *testing.F) {
	f.Add([]byte{2, 0x18, 0, 0, 0, 0, 0, 0, 0, 2, 8, 0, 0, 0, 0, 0, 0, 0, 3, 5})
	f.Add([]byte("\x02\x28\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x03\x07\x00\x04\x10"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// 1 MiB of RAM bounds the completions one doorbell can write.
		m, err := machine.New(machine.Config{RAMSize: 1 << 20, Profile: profile.UpstreamV01()})
		if err != nil {
			t.Fatal(err)
		}
		h, err := baremetal.Enumerate(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]uint64{{sacc.RegSQBaseLo, baremetal.SQAddr}, {sacc.RegSQSize, 8},
			{sacc.RegCQBaseLo, baremetal.CQAddr}, {sacc.RegCQSize, 8}} {
			m.Write(h.BAR0+r[0], 4, r[1])
		}
		o := &ops{data}
		for n := 0; o.more() && n < 256; n++ {
			switch o.u8() % 5 {
			case 0: // any BAR0 write, any width
				m.Write(h.BAR0+o.u64()%sacc.BAR0Size, sizes[o.u8()%4], o.u64())
			case 1: // any BAR0 read
				m.Read(h.BAR0+o.u64()%sacc.BAR0Size, sizes[o.u8()%4])
			case 2: // a ring register, a value of the input
				m.Write(h.BAR0+o.u64()%(sacc.RegCQHead+4)&^3, 4, o.u64())
			case 3: // the doorbell
				m.Write(h.BAR0+sacc.RegSQTail, 4, uint64(o.u8()))
			case 4: // scribble over the rings
				m.Write(baremetal.SQAddr+o.u64()%(2*sacc.PageSize), 8, o.u64())
			}
			s := m.Device().State()
			if s.Status != 0 || s.ErrCode != 0 || s.IRQStatus != 0 || s.Phase > 1 || s.Busy || s.Stalled {
				t.Fatalf("upstream's device set what it never sets: %+v", s)
			}
			if m.Step() {
				t.Fatalf("upstream's device scheduled work at %d ns", m.Now())
			}
		}
	})
}
