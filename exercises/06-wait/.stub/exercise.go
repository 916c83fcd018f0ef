// Exercise 06-wait: wait for a completion by looking at your own memory.
//
// The driver could ask the device how far it has got, but a register read is a
// non-posted round trip: the CPU stalls for it, about 1 µs on this machine
// (mmio_read). The CQ entry is in host memory, usually in the CPU's cache: a look
// costs a few nanoseconds (memory_poll). So a driver waits for a completion by
// reading the entry's phase field until it carries the phase it expects
// (specification §7.2), resting with cpu_relax (c.Relax()) between looks.
//
// Every wait needs a way out: if the device never answers, give up at the
// deadline instead of spinning for ever.
//
// Edit this file, then run:
//
//	go test ./exercises/06-wait/
//	saccbook check 06-wait
package wait

import (
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/sim"
)

// WaitPhase polls the CQ entry at the CPU address entry until bit 0 of its phase
// field (the 16 bits at entry + sacc.CplPhaseOff) equals phase, and reports true.
// It pauses with c.Relax() between looks and reads no device register. If
// c.Now() passes deadline first, it reports false.
func WaitPhase(c *cpu.CPU, entry uint64, phase uint8, deadline sim.Time) bool {
	// TODO: look at the phase, relax, look again, until it matches or time is up.
	return false
}
