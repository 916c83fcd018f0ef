// Exercise 06-reap: find new completions by their phase.
//
// The CQ is never wiped, so a slot always holds some completion: a new one, or
// the one from the lap before. Bit 0 of the 16-bit phase field (bytes 14–15 of
// the entry, sacc.CplPhaseOff) tells them apart (specification §7.2):
//
//   - the CQ starts zeroed, and the driver starts out expecting phase 1;
//   - the device writes the rest of the entry first and the phase last;
//   - an entry is new if and only if its phase equals the phase the driver
//     expects;
//   - the driver flips the phase it expects every time its head wraps from
//     Size − 1 back to 0.
//
// Read the phase first; only if it is new, c.RMB() and then the body (req_id at
// offset 0, result_len at 4, status at 12: sacc.DecodeCompletion can decode all
// 16 bytes). When you have taken every new entry, tell the device which slot you
// will read next by writing CQ_HEAD (chapter 5): once per Reap, not per entry.
//
// Edit this file, then run:
//
//	go test ./exercises/06-reap/
//	saccbook check 06-reap
package reap

import (
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Writel(off uint32, v uint32)
}

// CQ is the driver's view of the completion queue.
type CQ struct {
	Base  uint64 // CPU address of slot 0; slot i is at Base + 16*i
	Size  uint32 // CQ_SIZE
	Head  uint32 // the next slot to look at
	Phase uint8  // the phase a new entry carries now: 1 on the first lap
}

// Reap consumes every new completion, in ring order, and calls done with each
// one. Then, if it consumed any, it writes the new head to CQ_HEAD. It returns how
// many it consumed.
func Reap(c *cpu.CPU, regs Registers, q *CQ, done func(sacc.Completion)) int {
	// TODO: while the entry at q.Head carries q.Phase: rmb, read it, call done,
	// move q.Head on (and flip q.Phase when it wraps). Then write CQ_HEAD.
	return 0
}
