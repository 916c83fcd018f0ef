package device

import (
	"slices"

	"github.com/saccbook/saccbook/sacc/pci"
)

// Saved is the device's state at one moment: registers, rings, the command in
// flight, the MSI-X table and configuration space. It does not hold what is
// scheduled on the clock; it is for looking at a past moment (Load into another
// device), not for running on from it.
type Saved struct {
	core     core
	msix     *msix
	src, dst []segment
	late     []lateWrite
	cfg      *pci.Function
}

// Save returns the device's state now. When nothing has changed since prev (which
// may be nil) it returns prev itself, and a saved state that differs only in its
// configuration space shares prev's, so that saving at every event keeps only what
// changed.
func (d *Device) Save(prev *Saved) *Saved {
	sameCfg := prev != nil && prev.cfg.Writes() == d.cfg.Writes()
	sameMSIX := prev != nil && *prev.msix == d.msix
	if sameCfg && sameMSIX && prev.core == d.core && slices.Equal(prev.src, d.src) && slices.Equal(prev.dst, d.dst) &&
		slices.Equal(prev.late, d.late) {
		return prev
	}
	s := &Saved{core: d.core, src: slices.Clone(d.src), dst: slices.Clone(d.dst), late: slices.Clone(d.late)}
	if sameMSIX {
		s.msix = prev.msix
	} else {
		x := d.msix
		s.msix = &x
	}
	if sameCfg {
		s.cfg = prev.cfg
	} else {
		cfg := *d.cfg
		s.cfg = &cfg
	}
	return s
}

// Load puts the device in state s, saved from a device of the same profile.
// Nothing is scheduled: events the saved device had queued stay with it.
func (d *Device) Load(s *Saved) {
	d.core = s.core
	d.msix = *s.msix
	d.src = append(d.src[:0], s.src...)
	d.dst = append(d.dst[:0], s.dst...)
	d.late = append(d.late[:0], s.late...)
	*d.cfg = *s.cfg
}
