// Exercise 06-wait: wait for a completion by looking at your own memory.
//
// The driver could ask the device how far it has got, but a register read is a
// non-posted round trip: the CPU stalls for it, about 1 µs on this machine. The
// CQ entry is in host memory, usually in the CPU's cache: a look costs a few
// nanoseconds. Write WaitPhase, the polling wait of a driver that does not use
// interrupts.
//
// What you need to know (docs/SPEC.md §6.2, §7.2, §11; chapter 6):
//
//   - the phase is bit 0 (sacc.CplPhaseBit) of the 16-bit field at offset 14 of
//     the entry (sacc.CplPhaseOff); the other bits of that field are 0;
//   - a slot that has not been written on this lap still holds last lap's
//     entry, with the other phase, or zeros on the first lap;
//   - c.Load16 reads host memory; c.Now() is the virtual time in ns; c.Relax()
//     is cpu_relax, the pause of a polling loop (about 40 ns).
//
// The contract the tests hold WaitPhase to:
//
//   - it reports true once the entry's phase equals phase, and returns within
//     500 ns of the device writing it;
//   - it reports false once c.Now() has reached deadline without that, within
//     500 ns after it, never before it;
//   - it reads no device register.
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

// WaitPhase waits until the phase bit of the CQ entry at the CPU address entry
// equals phase, and reports true; or until deadline, and reports false.
func WaitPhase(c *cpu.CPU, entry uint64, phase uint8, deadline sim.Time) bool {
	return false
}
