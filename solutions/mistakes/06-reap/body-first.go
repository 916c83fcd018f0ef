// Exercise 06-reap: find new completions by their phase.
//
// The CQ is never wiped, so a slot always holds some completion: a new one, or
// the one from the lap before. The phase bit tells them apart. Write Reap, the
// loop at the heart of every NVMe-style driver's completion path (Linux's
// nvme_poll_cq).
//
// What you need to know (docs/SPEC.md §6.2, §7.2, §7.3; chapter 6):
//
//   - entry i is the 16 bytes at Base + 16*i: req_id at offset 0, result_len at
//     4, status at 12, and the 16-bit phase field at 14 (sacc.CplPhaseOff),
//     whose bit 0 is the phase; sacc.DecodeCompletion decodes all 16 bytes;
//   - the CQ starts zeroed, and the driver starts out expecting phase 1;
//   - the device writes the rest of an entry first and the phase last;
//   - an entry is new if and only if its phase equals the phase the driver
//     expects, and the driver flips the phase it expects every time its head
//     wraps from Size − 1 back to 0;
//   - on a weakly ordered CPU (arm64) a load may be performed early, before the
//     load that comes first in the program, unless a read barrier (c.RMB(), or
//     c.MB()) stands between them: reading the phase and then the body is not
//     enough by itself;
//   - CQ_HEAD (sacc.RegCQHead) hands the slots back (chapter 5): it takes the
//     slot the driver will read next.
//
// The contract the tests hold Reap to (three laps of a small CQ, on x86 and on
// arm64 with several seeds, called over and over while the device works):
//
//   - it hands done every new completion, once, in ring order, with the body
//     the device wrote for it, and stops at the first entry that is not new;
//   - it leaves q.Head and q.Phase where the next Reap must start;
//   - if it consumed anything, it writes the new head to CQ_HEAD once, after
//     the last entry; if it consumed nothing, it writes nothing;
//   - it returns how many it consumed.
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

// Reap consumes every new completion, calls done with each, hands the slots
// back, and returns how many it consumed.
func Reap(c *cpu.CPU, regs Registers, q *CQ, done func(sacc.Completion)) int {
	n := 0
	for n < int(q.Size) {
		slot := q.Base + uint64(q.Head)*sacc.CompletionSize
		var b [sacc.CompletionSize]byte
		c.LoadBytes(slot, b[:])
		if sacc.DecodeCompletion(b[:]).Phase != q.Phase {
			break // not written yet, or last lap's entry
		}
		done(sacc.DecodeCompletion(b[:]))
		n++
		if q.Head++; q.Head == q.Size {
			q.Head, q.Phase = 0, q.Phase^1 // a new lap carries the other phase
		}
	}
	if n > 0 {
		regs.Writel(sacc.RegCQHead, q.Head)
	}
	return n
}
