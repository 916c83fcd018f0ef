package workbook

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// mistake is one classic mistake of an exercise's chapter: a version of the
// learner's file that makes it (solutions/mistakes/ID/name.go) and a phrase the
// exercise's tests must print when they fail on it, so that the learner is
// told what went wrong and not only that something did.
type mistake struct {
	name string // the file, without .go
	what string // the mistake, in a few words
	want string // printed by a failing test
}

// alternative is a correct solution written another way
// (solutions/alternatives/ID/name.go): the tests must pass on it.
type alternative struct {
	name string
	what string
}

// mistakes is the catalogue of the mistakes each exercise's tests are known to
// catch, exercise by exercise.
var mistakes = map[string][]mistake{
	"01-find-device": {
		{"first-answer", "takes the first slot that answers", "a host bridge"},
		{"vendor-only", "compares the vendor ID only", "QEMU's NVMe controller"},
		{"slot-3-assumed", "looks in slot 3 only", "On this machine the SACC sits in slot"},
		{"thirty-one-slots", "scans slots 0 to 30", "sits in slot 31"},
		{"unwrapped-error", "formats ErrNotFound with %v instead of wrapping it", "wraps ErrNotFound"},
		{"class-and-revision-swapped", "takes the class code from the low bits", "class code and revision"},
		{"stops-at-empty-slot", "ends the scan at the first empty slot", "FindSACC returned an error"},
		{"hardcoded-answer", "returns the datasheet's values without a scan", "sits in slot 17"},
	},
	"01-size-bar": {
		{"no-restore", "never writes the saved address back", "the address the firmware assigned"},
		{"type-bits-kept", "keeps the type bits in the mask", "its low 4 bits read 0b1000"},
		{"no-plus-one", "takes the inverted mask for the size", "want 0x2000"},
		{"unimplemented-is-error", "calls a BAR that reads back 0 an error", "which is an answer, not an error"},
		{"no-range-check", "sizes BAR 6 and beyond", "BARs 0 to 5 only"},
		{"checks-after-writing", "checks the BAR number after sizing", "but first it wrote configuration space"},
		{"restores-before-reading", "writes the address back before reading the mask", "want 0x2000"},
		{"type-bits-ored-in", "sets the type bits instead of clearing them", "its low 4 bits read 0b1000"},
		{"bar-off-by-one", "accepts BAR 6", "BARs 0 to 5 only"},
	},
	"02-read-identity": {
		{"all-ones-only", "compares MAGIC with all ones only", "the device there is not a SACC"},
		{"no-version-check", "never checks VERSION", "but VERSION reads 2"},
		{"every-mismatch-not-decoding", "calls every wrong MAGIC ErrNotDecoding", "which wraps ErrNotDecoding"},
		{"no-all-ones-check", "treats all ones as just another wrong MAGIC", "want an error that wraps ErrNotDecoding"},
		{"unwrapped", "returns a new error instead of wrapping ErrNotDecoding", "want an error that wraps ErrNotDecoding"},
		{"enables-the-device", "turns memory decoding on itself", "turned memory decoding on"},
		{"sixteen-bit-reads", "reads MAGIC as two 16-bit halves", "as the wrong width"},
		{"datasheet-values", "returns the datasheet's values", "did not come from the device"},
		{"checks-scratch", "tests SCRATCH by writing it", "it should only read"},
	},
	"02-enable-device": {
		{"enable-first", "sets ENABLE before the ring registers", "before the ring registers were all written"},
		{"low-halves-only", "writes only the low halves of the bases", "the high halves at 0x14 and 0x24 too"},
		{"one-look", "reads STATUS once, right after ENABLE", "was not ready when Start said it was"},
		{"ignores-error", "never looks at STATUS.ERROR", "READY will never come once STATUS.ERROR is 1"},
		{"error-only-at-timeout", "looks at STATUS.ERROR only when the time is up", "READY will never come once STATUS.ERROR is 1"},
		{"no-err-code", "leaves ERR_CODE out of the error", "put it in the error"},
		{"counts-polls", "gives up after a number of polls", "Measure the deadline in time"},
		{"no-deadline", "waits for READY for ever", "it should have given up"},
		{"ready-by-equality", "tests STATUS for equality instead of a bit", "Start should have waited for it and returned nil"},
	},
	"03-ring-doorbell": {
		{"relaxed-no-wmb", "writel_relaxed with no barrier before it", "The doorbell overtook the descriptor stores"},
		{"wmb-after-doorbell", "the barrier after the doorbell instead of before", "The doorbell overtook the descriptor stores"},
		{"tail-is-the-slot", "rings with the slot of the descriptor", "the slot of the descriptor itself"},
		{"no-wrap", "never wraps the tail", "must wrap to 0"},
		{"tail-not-kept", "rings the right tail but never moves q.Tail", "the next Submit would write"},
		{"sixteen-byte-slots", "puts slot i at SQ + 16*i", "That is an empty slot"},
		{"no-queue-check", "accepts a tail outside the ring", "There is no such slot"},
		{"checks-after-storing", "checks the queue after storing the descriptor", "but it touched the ring or the device first"},
		{"tail-check-off-by-one", "accepts a tail equal to Size", "There is no such slot"},
		{"addresses-swapped", "puts the source address in the destination field", "the copy went wrong"},
		{"two-doorbells", "rings the doorbell twice", "rang the doorbell 2 times"},
	},
	"03-batch-doorbell": {
		{"doorbell-per-descriptor", "rings once per descriptor", "write every descriptor first"},
		{"size-in-flight", "lets Size descriptors be in flight", "means an empty ring"},
		{"no-room-check", "never checks for room", "slots are free, yet SubmitBatch returned nil"},
		{"stores-then-refuses", "stores the batch before deciding it does not fit", "is refused whole"},
		{"unwrapped-full", "refuses with an error that does not wrap ErrRingFull", "want an error that wraps ErrRingFull"},
		{"no-wrap", "never wraps the tail", "the tail must wrap to 0"},
		{"in-flight-not-counted", "leaves q.InFlight as it was", "the queue must remember"},
		{"relaxed-no-wmb", "writel_relaxed with no barrier", "The doorbell overtook the descriptor stores"},
		{"wmb-before-last-store", "a barrier before each store, none after the last", "The doorbell overtook the descriptor stores"},
		{"empty-batch-rings", "rings the doorbell for an empty batch", "it should do nothing"},
		{"all-in-slot-zero", "stores every descriptor into the same slot", "Each descriptor goes into the next slot"},
	},
	"03-doorbell-budget": {
		{"doorbell-per-job", "rings once per descriptor", "the budget is"},
		{"size-in-flight", "lets Size descriptors be in flight", "which the device reads as empty"},
		{"no-wrap", "never wraps the tail", "A doorbell value is a slot number"},
		{"returns-when-submitted", "returns once the last job is submitted", "it must wait for all of them"},
		{"never-reaps", "waits by counting, never calls reap", "it must wait for all of them"},
		{"one-job-per-doorbell-wait", "hands over one job and waits for it", "the budget is"},
	},
	"04-coherent-rings": {
		{"cpu-address-in-registers", "programs the CPU addresses", "the CPU address of the ring; the device needs its DMA address"},
		{"same-size-rings", "allocates 16 bytes per SQ entry", "The allocation is too small"},
		{"results-swapped", "takes the DMA address for the CPU one and back", "Is that really the DMA address"},
		{"one-address-kept", "uses the DMA address as the CPU address", "gives two different addresses: keep both"},
		{"enables", "sets CTRL.ENABLE", "SetUpRings set CTRL.ENABLE"},
		{"no-size-check", "accepts any size", "Return an error instead"},
		{"power-of-two-only", "accepts 1 and 8192", "Return an error instead"},
		{"checks-after-allocating", "allocates before checking the size", "bytes allocated: check the size before"},
		{"leaks-the-sq", "keeps the SQ when the CQ cannot be allocated", "free what you allocated before giving up"},
		{"ignores-allocation-errors", "ignores the allocations' errors", "rings that do not exist cannot be used"},
		{"low-halves-only", "writes the low halves of the bases only", "its high half (the register at +4) still holds"},
	},
	"04-dma-copy": {
		{"cpu-addresses-in-descriptor", "puts CPU addresses in the descriptor", "never CPU addresses"},
		{"returns-the-source", "returns a copy of src", "the CPU never read the destination"},
		{"cpu-copies-afterwards", "copies src into the destination with the CPU after the device", "the CPU stored into it itself"},
		{"no-status-check", "ignores the completion's status", "Check the completion's status"},
		{"ignores-run-error", "ignores Run's error", "Pass the error on"},
		{"frees-only-on-success", "frees the buffers only on the way out of a success", "bytes of DMA memory allocated"},
		{"leaks-when-second-fails", "frees nothing when the second allocation fails", "bytes of DMA memory allocated"},
		{"reads-before-run", "reads the destination before the copy", "differ from the source"},
		{"source-never-filled", "never stores src into the source", "differ from the source"},
		{"copy-per-page", "one MEMCPY per page", "want one MEMCPY"},
	},
	"05-ring": {
		{"full-is-tail-eq-head", "Full as Tail == Head", "Head == Tail is empty, never full"},
		{"never-full", "Full never true", "looks exactly like an empty one"},
		{"push-no-wrap", "Push never wraps Tail", "the tail wraps to 0"},
		{"pop-no-wrap", "Pop never wraps Head", "the head wraps to 0"},
		{"len-without-wrap", "Len as a plain Tail − Head", "Len() ="},
		{"push-returns-new-tail", "Push returns the slot after the one it claimed", "the old Tail"},
		{"pop-on-empty", "Pop on an empty ring succeeds", "it must refuse and change nothing"},
		{"full-one-late", "Full when all Size slots are used", "looks exactly like an empty one"},
		{"mask-with-size", "wraps modulo Size − 1", "the tail wraps to 0"},
	},
	"05-cq-head": {
		{"never-tells", "never writes CQ_HEAD", "CQ_HEAD was never written"},
		{"writes-the-count", "writes the number of completions read", "not the slot you will read next"},
		{"no-wrap", "never wraps Head", "out of range"},
		{"writes-old-head", "writes Head before moving it", "not the slot you will read next"},
		{"last-slot-read", "writes the last slot read instead of the next", "not the slot you will read next"},
		{"writes-for-nothing", "writes CQ_HEAD when nothing was read", "with nothing read there is nothing to tell the device"},
	},
	"06-reap": {
		{"no-rmb", "no read barrier between the phase and the body", "a read barrier (c.RMB()) must come after the phase"},
		{"rmb-after-body", "the read barrier after the body loads", "a read barrier (c.RMB()) must come after the phase"},
		{"body-first", "reads the whole entry, then looks at its phase", "Reap took an entry before the device had written it"},
		{"no-phase-flip", "never flips the expected phase", "did you flip q.Phase"},
		{"phase-zero-is-new", "takes an entry whose phase differs as new", "before the device had written them"},
		{"head-per-entry", "writes CQ_HEAD after every entry", "one CQ_HEAD write per Reap is enough"},
		{"no-cq-head", "never writes CQ_HEAD", "CQ_HEAD was never written"},
		{"cq-head-always", "writes CQ_HEAD even when nothing was new", "found nothing new but wrote a register"},
		{"flip-one-early", "flips the phase one slot before the wrap", "Reap took an entry before the device had written it"},
	},
	"06-wait": {
		{"inverted-compare", "waits for the other phase", "returned before the device wrote"},
		{"any-phase-is-new", "takes phase 1 as new on every lap", "returned before the device wrote anything new"},
		{"long-rest", "rests 5 µs between looks", "Does it rest too long between looks"},
		{"gives-up-early", "gives up 10 µs before the deadline", "gave up before the deadline"},
		{"no-deadline", "never gives up", "still running after"},
		{"wrong-offset", "looks at the status field instead of the phase", "never saw the completion"},
	},
	"07-doorbell": {
		{"no-wmb", "no barrier before writel_relaxed", "the doorbell reached the device while"},
		{"rmb-instead", "a read barrier where a write barrier belongs", "the doorbell reached the device while"},
		{"wmb-before-each-store", "a barrier before each store, none after the last", "the doorbell reached the device while"},
		{"wmb-after-doorbell", "the barrier after the doorbell", "the doorbell reached the device while"},
		{"doorbell-per-descriptor", "one barrier and one doorbell per descriptor", "one doorbell per Publish"},
		{"no-wrap", "never wraps the tail", "a tail must be a slot number"},
	},
	"07-dma-sync": {
		{"no-sync-for-device", "no clean before the device reads", "your bytes were still in dirty cache lines"},
		{"no-sync-for-cpu", "no invalidate before the CPU reads", "the CPU read its own stale cache line"},
		{"sync-for-cpu-before-run", "invalidates before the device writes", "before the device had written it"},
		{"sync-before-store", "cleans before storing the data", "your bytes were still in dirty cache lines"},
		{"cpu-addresses", "syncs by CPU address", "your bytes were still in dirty cache lines"},
		{"cpu-addresses-to-run", "gives run the CPU addresses", "run was given src"},
		{"wrong-directions", "the directions swapped", "your bytes were still in dirty cache lines"},
	},
	"07-fewest-barriers": {
		{"as-written-on-x86", "no barrier at all, as the driver came", "the doorbell reached the device while descriptor stores"},
		{"rmb-per-entry", "a read barrier per completion", "then one barrier, then all the bodies"},
		{"wmb-per-descriptor", "a write barrier per descriptor", "is enough for the whole batch"},
		{"barrier-on-every-poll", "a read barrier even when nothing is new", "an idle poll needs none"},
		{"rmb-before-the-phases", "the read barrier before the phase loads", "an idle poll needs none"},
		{"wmb-before-the-stores", "the write barrier before the stores", "the doorbell reached the device while descriptor stores"},
		{"only-the-wmb", "the write barrier only, no read barrier", "the body's loads were performed before the phase loads"},
	},
	"08-msix": {
		{"unmask-first", "unmasks before writing the address and data", "you unmasked it before"},
		{"left-masked", "never unmasks", "still masked"},
		{"no-high-half", "leaves the address's high half as it was", "its low half at +0 and its high half at +4"},
		{"entry-stride-four", "entries 4 bytes apart", "only entry v may change"},
		{"always-entry-zero", "always writes entry 0", "only entry v may change"},
		{"no-range-check", "writes past the table for a bad vector", "the table has 2 entries, 0 to 1"},
		{"pending-any-bit", "reports any pending bit", "bit v of the PBA is vector v"},
		{"pending-unshifted", "tests the PBA against v instead of 1 << v", "Pending(0) ="},
		{"pending-in-table", "reads the vector control word instead of the PBA", "Pending(0) ="},
	},
	"08-irq-handler": {
		{"drain-then-ack", "drains, then acknowledges", "after the handler's last look at the CQ"},
		{"never-acks", "never acknowledges", "never acknowledged"},
		{"never-reaps", "never reaps", "reaped nothing"},
		{"acks-with-zero", "writes 0 to IRQ_ACK", "never acknowledged"},
		{"acks-irq-status", "writes IRQ_STATUS, which is read-only", "never acknowledged"},
		{"returns-the-recheck", "drain, ack, drain, but returns only the second count", "Handle returned"},
		{"ack-then-drain", "acknowledges, then drains without reading a register back", "without reading a register back"},
	},
	"08-irq-readback": {
		{"no-read-back", "acknowledges and drains with no read between", "with no register read between"},
		{"drain-then-ack", "drains, then acknowledges", "for the last time before its IRQ_ACK"},
		{"read-before-ack", "the read before the acknowledgement", "with no register read between"},
		{"read-after-drain", "the read after the drain", "with no register read between"},
		{"never-acks", "never acknowledges", "never acknowledged"},
		{"returns-one", "returns whether anything was reaped", "return what reap found"},
		{"drain-ack-recheck", "drains, acknowledges, drains again with no read between", "with no register read between"},
	},
	"09-map-iova": {
		{"no-wmb", "no write barrier at the end", "Did MapPage end with a write barrier"},
		{"tables-with-leaf-rights", "gives the table entries the leaf's rights", "the device's rights on the page are"},
		{"replaces-tables", "always takes a new table", "asked newTable for"},
		{"rights-swapped", "read for DMA_FROM_DEVICE, write for DMA_TO_DEVICE", "the device's rights on the page are"},
		{"both-rights-always", "read and write whatever the direction", "the device's rights on the page are"},
		{"no-alignment-check", "accepts unaligned addresses", "returned nil; it must return an error"},
		{"no-width-check", "accepts an IOVA of 49 bits", "returned nil; it must return an error"},
		{"ignores-new-table-error", "goes on when newTable fails", "Return newTable's error"},
		{"levels-reversed", "indexes the top table with the leaf's bits", "finds no leaf"},
		{"iova-in-leaf", "puts the IOVA in the leaf instead of phys", "leads to physical page"},
	},
	"09-remap-iova": {
		{"no-invalidate", "never invalidates", "Remap never wrote INVALIDATE"},
		{"invalidates-phys", "invalidates the physical page instead of the IOVA", "but not for the page"},
		{"invalidates-first", "invalidates before storing the new entry", "invalidated the IOTLB before its new leaf entry had reached RAM"},
		{"ignores-perm", "always gives read and write", "Remap was asked for write-only rights"},
		{"no-leaf-check", "remaps a leaf that is absent", "yet Remap returned nil"},
		{"rewrites-the-top-entry", "takes rights away at the top level too", "changed the mapping of its neighbour"},
	},
	"10-open-queue": {
		{"maps-the-register-page", "maps both pages from offset 0", "the process has the register page mapped"},
		{"swapped-rings", "swaps the SQ and the CQ in the argument", "Did SETUP_RINGS get the right addresses and size"},
		{"size-in-bytes", "gives the ring size in bytes", "Open(p, 16) returned an error"},
		{"argument-never-filled", "passes an argument block never filled in", "Open(p, 16) returned an error"},
		{"no-close-on-failure", "leaves the file open when it gives up", "never closed the device file"},
		{"ignores-ioctl-error", "ignores the ioctl's error", "Return the error the ioctl gave you"},
		{"doorbell-not-returned", "returns the doorbell page's offset, not its mapped address", "Doorbell must be the address p.Mmap returned"},
	},
	"10-user-queue": {
		{"no-wmb", "no write barrier before the doorbell store", "with no write barrier between the descriptor's stores and the doorbell"},
		{"wmb-before-the-stores", "the write barrier before the descriptor stores", "with no write barrier between the descriptor's stores and the doorbell"},
		{"no-rmb", "no read barrier between the phase and the body", "with no read barrier between the phase load and the body loads"},
		{"body-first", "reads the whole entry before looking at the phase", "Completion"},
		{"no-cq-head", "never writes CQ_HEAD_DB", "CQ_HEAD_DB was never written"},
		{"cq-head-count", "writes a count to CQ_HEAD_DB", "never freed enough slots"},
		{"no-phase-flip", "never flips the phase", "did you flip q.Phase when q.Head wraps"},
		{"doorbell-old-tail", "rings with the slot just written", "must carry the tail after the descriptor just written"},
	},
	"11-error-kind": {
		{"err-code-for-completed", "takes a failed command's code from ERR_CODE", "holds only the most recent failure"},
		{"reads-status-anyway", "reads STATUS even with a completion in hand", "and still touched the device"},
		{"no-completion-is-halted", "takes every missing completion for a halted device", "want Late and 0"},
		{"never-halted", "never looks at STATUS", "want DeviceHalted"},
		{"status-as-code", "returns STATUS as the code", "want DeviceHalted"},
		{"err-code-decides", "reads ERR_CODE to decide", "yet Diagnose read ERR_CODE"},
		{"status-ignored-for-failures", "calls every completed command a success", "want CommandFailed"},
		{"not-ready-is-halted", "takes READY clear for a halted device", "READY clear is not that"},
	},
	"11-recover": {
		{"no-reset", "never resets the device", "never saw CTRL.RESET"},
		{"err-code-after-reset", "reads ERR_CODE after the reset cleared it", "Read ERR_CODE before the RESET"},
		{"cq-not-zeroed", "leaves the old entries in the CQ", "still holds"},
		{"half-the-cq", "zeroes Size × 8 bytes of the CQ", "still holds"},
		{"indices-kept", "keeps the driver's old indices", "and so must the driver"},
		{"phase-zero", "restarts expecting phase 0", "and so must the driver"},
		{"requests-not-failed", "never fails the requests in flight", "its caller would wait for ever"},
		{"in-flight-kept", "fails the requests but keeps them in q.InFlight", "requests are still in q.InFlight"},
		{"unwrapped", "errors that do not wrap ErrDeviceHalted", "does not wrap ErrDeviceHalted"},
		{"no-code-in-error", "leaves ERR_CODE out of the requests' errors", "Read ERR_CODE before the RESET"},
		{"rings-not-reprogrammed", "enables without writing the ring registers again", "The device refused ENABLE"},
		{"no-wait", "returns without waiting for READY", "the device is not READY"},
		{"no-deadline", "waits for READY for ever", "it should have given up"},
	},
	"11-recover-requests": {
		{"resubmits-everything", "runs every request again, completed or not", "the requests that did not complete, in their order"},
		{"never-harvests", "reads the CQ but marks nothing done", "take the completions the CQ holds"},
		{"zeroes-the-cq-first", "wipes the CQ before reading it", "take the completions the CQ holds"},
		{"never-resubmits", "writes the descriptors again but never rings", "An old entry left in the CQ looks new"},
		{"rings-without-rewriting", "rings for the requests without writing them again from slot 0", "An old entry left in the CQ looks new"},
		{"cq-not-zeroed", "leaves the old entries in the CQ", "An old entry left in the CQ looks new"},
		{"harvest-ignores-the-wrap", "does not flip the phase when the harvest wraps", "take the completions the CQ holds"},
		{"harvest-from-slot-zero", "harvests from slot 0 instead of q.Head", "take the completions the CQ holds"},
		{"resubmits-in-reverse", "submits the rest again in reverse order", "An old entry left in the CQ looks new"},
		{"keeps-the-old-tail", "writes the requests again after the old tail", "starts again at slot 0 with phase 1"},
	},
	"11-find-the-bug": {
		{"as-shipped", "the driver as it came: every slot may fill", "What does the device make of that doorbell"},
		{"over-cautious", "keeps two slots empty", "the ring holds up to Size − 1 in flight, and no more"},
		{"cap-ignores-in-flight", "caps each batch at Size − 1 whatever is in flight", "What does the device make of that doorbell"},
		{"one-at-a-time", "takes one job per Submit", "the ring holds up to Size − 1 in flight, and no more"},
		{"fix-in-reap", "patches the count in Reap instead", "What does the device make of that doorbell"},
	},
	"12-pin-pages": {
		{"pins-va", "pins the buffer's address instead of its page", "not the start of a page"},
		{"counts-pages", "counts the pages by division", "does not touch the next page"},
		{"no-offset", "starts the first piece at its page", "must start at the buffer's offset"},
		{"no-unpin", "leaves pages pinned when pin fails", "unpin the pages pinned so far"},
		{"steps-by-a-page", "moves on by a page, not by the piece", "Pin(va"},
		{"empty-is-fine", "accepts an empty buffer", "returned no error"},
		{"chunk-ignores-offset", "takes a whole page for the first piece", "Pin(va"},
	},
	"12-split-copy": {
		{"no-length-cap", "no 1 MiB cap on a descriptor", "Cut where 1 MiB is full too"},
		{"source-pieces-only", "cuts at the source's piece ends only", "whichever comes first"},
		{"no-offsets", "forgets how far into each piece it is", "copied in the wrong order or to the wrong places"},
		{"no-total-check", "accepts lists of different totals", "destination bytes returned no error"},
		{"cuts-every-page", "cuts at every page as well", "a new one only where a piece ends or 1 MiB is full"},
		{"pairs-pieces", "pairs the i-th pieces of both lists", "one per stretch that is contiguous on both sides"},
	},
	"13-queue": {
		{"latency-from-run-start", "latency from the start of Run", "A job's latency runs from just before"},
		{"latency-at-batch-end", "every job's latency taken when the whole batch is in", "A job's latency runs from just before"},
		{"latency-between-completions", "latency as the time since the previous completion", "A job's latency runs from just before"},
		{"doorbell-per-job", "a doorbell per job", "rang the doorbell"},
		{"batch-not-capped", "batches of more than Size − 1", "More than Size − 1"},
		{"no-cq-head", "never writes CQ_HEAD", "CQ_HEAD was never written"},
		{"long-pause", "rests 5 µs between looks", "Is Run waiting longer than it must"},
		{"total-without-the-end", "Total that is not the time Run took", "measure with c.Now()"},
		{"ignores-status", "ignores failed completions", "Check each completion's status"},
		{"mean-over-batches", "divides the latencies by the number of batches", "A job's latency runs from just before"},
	},
	"13-submit-batch": {
		{"no-wmb", "no barrier before writel_relaxed", "the doorbell reached the device while descriptor stores"},
		{"interrupt-on-every-job", "asks for an interrupt on every job", "descriptor of the batch only"},
		{"interrupt-on-the-first", "asks for the interrupt on the first job", "descriptor of the batch only"},
		{"doorbell-per-job", "rings once per job", "rang the doorbell"},
		{"no-wrap", "never wraps the tail", "(it wraps at"},
		{"same-req-id", "gives every job the same req_id", "cannot be told apart"},
		{"empty-rings", "rings the doorbell for an empty batch", "An empty batch rings no doorbell"},
		{"src-and-dst-swapped", "swaps source and destination", "in the right fields"},
	},
	"13-queue-from-scratch": {
		{"cpu-addresses-in-registers", "programs the rings' CPU addresses", "the device needs the DMA address"},
		{"no-wait-for-ready", "returns before the device is READY", "wait for READY before returning"},
		{"no-rmb", "no read barrier in Reap", "with no read barrier between the phase loads and the body loads"},
		{"relaxed-no-wmb", "writel_relaxed with no barrier", "a store into that slot landed only after it"},
		{"size-in-flight", "lets Size requests be in flight", "which the device reads as empty"},
		{"keeps-the-callers-req-id", "keeps the req_id the caller put in d", "cannot be told apart"},
		{"no-cq-head", "never writes CQ_HEAD", "nothing has come back for 200 µs"},
		{"no-phase-flip", "never flips the phase", "that is an entry from the last lap"},
		{"close-leaves-it-enabled", "Close frees the rings of a running device", "would DMA into rings that are gone"},
		{"close-leaks", "Close frees nothing", "are still allocated"},
		{"no-size-check", "accepts any size", "ring sizes are powers of two from 2 to 4096"},
		{"leaks-on-timeout", "keeps the rings when the device never becomes READY", "free the rings before returning the error"},
		{"full-without-the-wrap", "full when the tail reaches the last slot", "Submit refused"},
	},
	"14-fence-wait": {
		{"equals-point", "waits for value == point", "not when value == point"},
		{"no-rmb", "no read barrier once the point is reached", "End Wait with a read barrier"},
		{"no-deadline", "waits for ever", "Every wait needs a deadline"},
		{"sleep-first", "rests before the first look", "a point already passed costs one load"},
		{"one-look", "looks once", "again and again"},
		{"counts-looks", "gives up after a number of looks", "Wait for the whole limit"},
		{"returns-the-point", "returns the point asked for, not the value seen", "a point long passed"},
	},
	"14-fence-emit": {
		{"one-slot", "every fence copies from slot 0", "from the same slot"},
		{"fence-first", "queues the fence before the jobs", "before the job it should follow"},
		{"no-wmb", "no write barrier before the doorbell", "a write barrier (c.P.Kernel().CPU.WMB()) must come after"},
		{"no-wrap", "never wraps the tail", "segmentation fault at"},
		{"doorbell-per-descriptor", "rings once per descriptor", "ring it once"},
		{"fence-per-job", "a fence behind every job of a batch", "One Submit is one fence"},
		{"user-address-src", "the slot's user address as the fence's source", "which is not in the slots page"},
		{"no-doorbell", "never rings the doorbell", "never saw a doorbell"},
		{"old-point-stored", "stores the point before counting it", "did not hold the point"},
		{"fence-to-the-slot", "the fence copies into the next slot, not the fence page", "Dst must be c.Fence"},
	},
}

// alternatives is the catalogue of correct solutions in other styles that each
// exercise's tests are known to accept.
var alternatives = map[string][]alternative{
	"01-find-device": {
		{"one-compare", "compares the whole dword at once and returns ErrNotFound itself"},
		{"reads-everything-first", "reads the first four dwords of every slot"},
	},
	"01-size-bar": {
		{"lowest-set-bit", "takes the lowest set bit of the mask"},
		{"deferred-restore", "restores with defer and reads the mask twice"},
	},
	"02-read-identity": {
		{"read-both-first", "reads both registers before checking either"},
		{"switch", "a switch on MAGIC, errors returned bare"},
	},
	"02-enable-device": {
		{"writeq-and-relax", "64-bit base writes, cpu_relax between polls"},
		{"tight-poll-ready-first", "polls without a pause, READY tested before ERROR"},
	},
	"03-ring-doorbell": {
		{"wmb-and-relaxed", "c.WMB(), then writel_relaxed"},
		{"writel-alone-field-stores", "field-by-field stores and writel's own barrier"},
		{"mb-and-mask", "a full barrier, the wrap by mask"},
	},
	"03-batch-doorbell": {
		{"relaxed-with-wmb", "c.WMB(), then writel_relaxed"},
		{"unsigned-room-writel-only", "room tested in unsigned arithmetic, writel's own barrier"},
	},
	"03-doorbell-budget": {
		{"drain-then-refill", "fills the ring only when it is empty"},
		{"refill-at-half", "refills once half the ring is free"},
	},
	"04-coherent-rings": {
		{"writeq-and-defer", "64-bit base writes, the SQ freed by a deferred function"},
		{"bit-trick-size-check", "the size checked with a bit trick"},
	},
	"04-dma-copy": {
		{"zeroes-destination-first", "clears the destination with the CPU before the copy"},
		{"frees-by-hand-reads-twice", "frees by hand on every path, reads the result twice"},
	},
	"05-ring": {
		{"modulo-and-len", "modulo arithmetic, Empty and Full from Len"},
		{"branches", "wraps with a comparison, Len by cases"},
	},
	"05-cq-head": {
		{"doorbell-page-one-slot-at-a-time", "CQ_HEAD_DB, one write per slot"},
		{"mask", "the wrap by mask"},
	},
	"06-reap": {
		{"mb-and-field-loads", "a full barrier, the body read field by field"},
		{"phases-first-one-barrier", "all the phases first, one barrier, then all the bodies"},
	},
	"06-wait": {
		{"for-condition", "the deadline in the loop condition, one last look after it"},
	},
	"07-doorbell": {
		{"mb", "a full barrier"},
		{"wmb-after-each-store", "a barrier after every store"},
		{"wmb-each-and-after-last", "a barrier before each descriptor and one after the last"},
		{"wmb-then-mb", "a redundant second barrier before the doorbell"},
	},
	"07-dma-sync": {
		{"bidirectional-both-sides", "DMA_BIDIRECTIONAL, and a clean of the destination too"},
	},
	"07-fewest-barriers": {
		{"mb-both", "full barriers in both places"},
		{"last-phase-only", "the phases into an array first, then one barrier"},
	},
	"08-msix": {
		{"mask-first-then-unmask", "masks first, unmasks by clearing the bit, tests the PBA by shifting"},
	},
	"08-irq-handler": {
		{"drain-ack-read-drain", "drains, acknowledges, reads STATUS back, drains again"},
		{"until-status-clear", "acknowledges, reads IRQ_STATUS back, drains, until the status reads clear"},
	},
	"08-irq-readback": {
		{"drain-ack-read-drain", "drains, acknowledges, reads STATUS back, drains again"},
		{"until-status-clear", "acknowledges, reads IRQ_STATUS back, drains, until the status reads clear"},
	},
	"09-map-iova": {
		{"recursive-mb", "a recursive walk"},
	},
	"09-remap-iova": {
		{"invalidate-all-writeq-barrier", "flushes the whole IOTLB, with Writeq's own barrier"},
	},
	"10-open-queue": {
		{"one-block-defer-close", "one allocation for both rings and the argument, the file closed by a deferred function"},
	},
	"10-user-queue": {
		{"mb-and-fields", "full barriers, the body read field by field"},
		{"wmb-before-and-after", "a redundant barrier before the stores as well as the one after them"},
	},
	"11-error-kind": {
		{"switch", "one switch"},
	},
	"11-recover": {
		{"enable-off-first-writes-in-a-table", "ENABLE cleared before RESET, the CQ zeroed with one StoreBytes, the registers from a table"},
	},
	"11-recover-requests": {
		{"by-position", "matches completions to requests by position, not by a map"},
	},
	"11-find-the-bug": {
		{"loop-until-full", "stops at the slot that would bring the tail onto the head"},
	},
	"12-pin-pages": {
		{"pages-first", "pins every page first, then cuts the pieces"},
	},
	"12-split-copy": {
		{"offsets-into-the-whole", "walks the copy by its offset in the whole buffer"},
	},
	"13-queue": {
		{"slices-and-mb", "start times in a slice indexed from the batch's first req_id, a full barrier"},
	},
	"13-submit-batch": {
		{"writel-and-append", "a full barrier, the req_ids appended"},
		{"wmb-per-descriptor", "a barrier after every descriptor"},
		{"mb-and-relaxed", "a full barrier, then writel_relaxed"},
	},
	"13-queue-from-scratch": {
		{"slot-ids-relaxed-wmb", "the slot number as req_id, an explicit wmb before writel_relaxed"},
	},
	"14-fence-wait": {
		{"for-condition-mb", "the deadline in the loop condition, a full barrier"},
		{"reached-helper", "the look in a closure, the time measured from the start"},
	},
	"14-fence-emit": {
		{"number-first-mb", "the number first, the descriptors stored in runs, a full barrier"},
	},
}

// minMistakes is the fewest mistakes an exercise's catalogue may list.
const minMistakes = 5

// TestCatalogueMatchesTheFiles keeps the tables above and the files under
// solutions/mistakes and solutions/alternatives in step: every entry has its
// file, every file its entry, and every file is gofmt'd.
func TestCatalogueMatchesTheFiles(t *testing.T) {
	b := openBook(t)
	known := map[string]bool{}
	for _, ex := range b.Exercises {
		known[ex.ID] = true
		t.Run(ex.ID, func(t *testing.T) {
			// Every exercise's tests are proved against its chapter's classic
			// mistakes and against another way of getting it right.
			if len(mistakes[ex.ID]) < minMistakes || len(alternatives[ex.ID]) == 0 {
				t.Errorf("the catalogue has %d mistakes and %d alternatives for %s; want at least %d and 1",
					len(mistakes[ex.ID]), len(alternatives[ex.ID]), ex.ID, minMistakes)
			}
			for _, c := range []struct {
				dir   string
				names []string
			}{{MistakesDir, mistakeNames(ex.ID)}, {AlternativesDir, alternativeNames(ex.ID)}} {
				trials, err := b.Catalogue(ex, c.dir)
				if err != nil {
					t.Fatal(err)
				}
				var files []string
				for _, tr := range trials {
					files = append(files, tr.Name)
					for _, p := range tr.Files {
						checkFormatted(t, p)
					}
				}
				sort.Strings(c.names)
				if strings.Join(files, " ") != strings.Join(c.names, " ") {
					t.Errorf("%s/%s holds %v; the catalogue lists %v", c.dir, ex.ID, files, c.names)
				}
			}
		})
	}
	for id := range mistakes {
		if !known[id] {
			t.Errorf("the mistakes catalogue lists %s, which is not an exercise", id)
		}
	}
	for id := range alternatives {
		if !known[id] {
			t.Errorf("the alternatives catalogue lists %s, which is not an exercise", id)
		}
	}
	for _, dir := range []string{MistakesDir, AlternativesDir} {
		entries, _ := os.ReadDir(filepath.Join(b.Root, dir))
		for _, e := range entries {
			if !known[e.Name()] {
				t.Errorf("%s/%s is not an exercise", dir, e.Name())
			}
		}
	}
}

func mistakeNames(id string) []string {
	var out []string
	for _, m := range mistakes[id] {
		out = append(out, m.name)
	}
	return out
}

func alternativeNames(id string) []string {
	var out []string
	for _, a := range alternatives[id] {
		out = append(out, a.name)
	}
	return out
}

func checkFormatted(t *testing.T, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	formatted, err := format.Source(src)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if !bytes.Equal(src, formatted) {
		t.Errorf("gofmt would change %s", path)
	}
}

// TestMistakesFailAndAlternativesPass is the proof that the tests discriminate:
// every catalogued mistake fails them, in a test and with a message that names
// the mistake, and every catalogued alternative passes them. All the trials run
// in one go test, those of one exercise in one test binary (Book.Trials).
func TestMistakesFailAndAlternativesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on every catalogued mistake and alternative")
	}
	b := openBook(t)
	// SACCBOOK_TRIALS=03- runs only the exercises whose ID starts so, while
	// writing a catalogue.
	only := os.Getenv("SACCBOOK_TRIALS")
	var trials []Trial
	for _, ex := range b.Exercises {
		if !strings.HasPrefix(ex.ID, only) {
			continue
		}
		for _, dir := range []string{MistakesDir, AlternativesDir} {
			trs, err := b.Catalogue(ex, dir)
			if err != nil {
				t.Fatal(err)
			}
			trials = append(trials, trs...)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	results, err := b.Trials(ctx, trials)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range b.Exercises {
		if !strings.HasPrefix(ex.ID, only) {
			continue
		}
		t.Run(ex.ID, func(t *testing.T) {
			for _, m := range mistakes[ex.ID] {
				r := results[ex.ID+"/"+m.name]
				switch {
				case r == nil:
					t.Errorf("mistake %s (%s) did not run", m.name, m.what)
				case r.BuildFailed:
					t.Errorf("mistake %s (%s) does not build; it must compile and fail in the tests:\n%s", m.name, m.what, r.BuildOutput)
				case r.Passed:
					t.Errorf("mistake %s (%s) passes the tests: they must catch it", m.name, m.what)
				case !strings.Contains(r.Report(), m.want):
					t.Errorf("mistake %s (%s) fails, but no failing test says %q:\n%s", m.name, m.what, m.want, r.Report())
				}
			}
			for _, a := range alternatives[ex.ID] {
				r := results[ex.ID+"/"+a.name]
				switch {
				case r == nil:
					t.Errorf("alternative %s (%s) did not run", a.name, a.what)
				case !r.Passed:
					t.Errorf("alternative %s (%s) is correct, but the tests refuse it:\n%s", a.name, a.what, r.Report())
				}
			}
		})
	}
	t.Logf("%d mistakes and alternatives tested in %v", len(trials), time.Since(start).Round(time.Millisecond))
}
