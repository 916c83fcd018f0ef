package machine

import (
	"slices"

	"github.com/saccbook/saccbook/sacc/device"
	"github.com/saccbook/saccbook/sacc/iommu"
)

// Saved is what can be looked at in a machine at one moment, besides RAM: the
// device, the IOMMU, the CPU's interrupts, the configuration latch and BAR
// decoding and the posted writes on the wire. The time is not part of it (a state
// unchanged over many events is one state), and RAM is kept apart, by a
// mem.Journal, because it is large and each moment changes little of it.
//
// A saved state is for looking at a past moment in a view (Load), not for running
// on from it: what is scheduled on the clock is not part of it, and neither is the
// software above the bus, whose state is in ordinary Go variables.
type Saved struct {
	dev    *device.Saved
	mmu    *iommu.Saved
	irqs   *Interrupts
	cf8    uint32
	bars   [2]uint64
	posted []postedWrite
}

// Save returns the machine's state now. Parts that have not changed since prev
// (which may be nil) are shared with it, and when nothing has, prev itself is
// returned: saving at every event costs a comparison, and memory only for what
// changed.
func (m *Machine) Save(prev *Saved) *Saved {
	var p Saved
	if prev != nil {
		p = *prev
	}
	dev := m.dev.Save(p.dev)
	mmu := m.iommu.Save(p.mmu)
	irqs := p.irqs
	if irqs == nil || *irqs != m.irqs {
		c := m.irqs
		irqs = &c
	}
	if prev != nil && dev == p.dev && mmu == p.mmu && irqs == p.irqs && m.cf8 == p.cf8 && m.bars == p.bars &&
		slices.Equal(m.posted, p.posted) {
		return prev
	}
	return &Saved{dev: dev, mmu: mmu, irqs: irqs, cf8: m.cf8, bars: m.bars, posted: slices.Clone(m.posted)}
}

// Load puts a view in state s, saved from a machine with the same configuration.
// Nothing is scheduled, and the view's clock does not move: a view answers what the
// machine looked like, and anything done to it is the view's own.
func (m *Machine) Load(s *Saved) {
	m.dev.Load(s.dev)
	m.iommu.Load(s.mmu)
	m.irqs = *s.irqs
	m.cf8, m.bars = s.cf8, s.bars
	m.posted = append(m.posted[:0], s.posted...)
}

// View returns a new machine with m's configuration, a copy of m's RAM and m's
// state loaded (Load), for looking at m's past without touching m. Its tracer has no
// sinks, and its clock stands at 0.
func (m *Machine) View() (*Machine, error) {
	v, err := New(m.cfg)
	if err != nil {
		return nil, err
	}
	v.ram = m.ram.Clone()
	v.Load(m.Save(nil))
	return v, nil
}
