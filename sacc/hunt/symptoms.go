package hunt

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

// The symptom checks: each reads a run's outcome the way the hunt's story says a
// user noticed it — in what the scenario reported, the kernel log, or the
// events a tool would count. They say nothing of which bug caused it.

// jobsSummary reads hunt-jobs' last line (its format, with each number a
// group): copies checked, in all, and right.
var jobsSummary = regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(scenario.HuntSummary), "%d", "([0-9]+)"))

// copies is hunt-jobs' count of copies: checked, in all, right; ok is false
// when the run never got to say it.
func copies(o *Outcome) (checked, total, right int, ok bool) {
	m := jobsSummary.FindStringSubmatch(o.Log)
	if m == nil {
		return 0, 0, 0, false
	}
	checked, _ = strconv.Atoi(m[1])
	total, _ = strconv.Atoi(m[2])
	right, _ = strconv.Atoi(m[3])
	return checked, total, right, true
}

// stopsAfterAWhile: a copy never completed, after at least one had completed
// with the right data.
func stopsAfterAWhile(o *Outcome) bool {
	_, _, right, ok := copies(o)
	return ok && right > 0 && o.Says(scenario.HuntNoCompletion)
}

// notAllRight: at least one copy did not arrive as it should (wrong data, an
// error status, a copy that never completed, a reset).
func notAllRight(o *Outcome) bool {
	_, total, right, ok := copies(o)
	return ok && right < total
}

// doneTooEarly: a copy was reported done while its destination did not hold
// its data.
func doneTooEarly(o *Outcome) bool { return o.Says(scenario.HuntWrongData) }

// deviceHalted: the device stopped with STATUS.ERROR (and the driver reset it).
func deviceHalted(o *Outcome) bool { return o.Count(trace.DeviceError) > 0 }

// waitedInVain: the driver waited out its whole deadline for a completion.
func waitedInVain(o *Outcome) bool { return o.Says(scenario.HuntNoCompletion) }

// unknownReqID: the kernel log has a completion for a req_id nobody was
// waiting for.
func unknownReqID(o *Outcome) bool { return o.Logged("completion for unknown req_id") }

// probeFailedMagic: the driver refused the device because MAGIC read wrong.
func probeFailedMagic(o *Outcome) bool { return o.Err != nil && o.Says("bad MAGIC") }

// iommuFault: the IOMMU blocked a DMA and logged it.
func iommuFault(o *Outcome) bool { return o.Count(trace.IOMMUFault) > 0 }

// oldBufferWritten: the iommu tour's remapped copy landed in the buffer that had
// been unmapped.
func oldBufferWritten(o *Outcome) bool { return o.Says("but the OLD one") }

// completionsArrive reads bypass-tour's "N of M completions arrive".
var completionsArrive = regexp.MustCompile(`([0-9]+) of ([0-9]+) completions arrive`)

// completionsLost: after the CQ filled and was given back, fewer completions
// arrived than there were NOPs.
func completionsLost(o *Outcome) bool {
	m := completionsArrive.FindStringSubmatch(o.Log)
	return m != nil && m[1] != m[2]
}

// firmwareSawReqIDZero: the bare-metal job's completion carried req_id 0.
func firmwareSawReqIDZero(o *Outcome) bool { return o.Says("completed: req_id 0x0,") }

// sweepPairs reads hunt-sweep's count of pairs done.
var sweepPairs = regexp.MustCompile(`([0-9]+) pairs in`)

// sweepStalled: one copy of the sweep never completed, after at least one had.
func sweepStalled(o *Outcome) bool {
	m := sweepPairs.FindStringSubmatch(o.Log)
	return m != nil && m[1] != "0" && o.Says(scenario.HuntNoCompletion)
}

// kernelPathBadAddress: a copy through the kernel's ioctl path failed with
// "bad address".
func kernelPathBadAddress(o *Outcome) bool { return o.Err != nil && o.Says("bad address") }

// refusedButWrote: memory the self-test watches changed under a command that
// should not have written it.
func refusedButWrote(o *Outcome) bool { return o.Says(scenario.HuntTouched) }

// appCopyFailed: one of the application's copies failed.
var appCopyFailed = regexp.MustCompile(`app: copy [0-9]+ failed`)

func appFailed(o *Outcome) bool { return appCopyFailed.MatchString(o.Log) }

// newPageEmpty: the bare-metal IOTLB check found its copy missing from the new
// page after the invalidation.
var newPageEmpty = regexp.MustCompile(`(?m)new page holds 0x0$`)

func staleAfterInvalidate(o *Outcome) bool { return newPageEmpty.MatchString(o.Log) }

// neverCompleted: a chapter tour reported a request that never completed.
func neverCompleted(o *Outcome) bool { return o.Says("never completed") }

// nopsAfterRecovery reads the error tour's last count.
var nopsAfterRecovery = regexp.MustCompile(`10 NOPs: ([0-9]+) OK`)

// lostAfterReset: of the ten NOPs after the recovery, not all came back.
func lostAfterReset(o *Outcome) bool {
	m := nopsAfterRecovery.FindStringSubmatch(o.Log)
	return m != nil && m[1] != "10"
}

// wokenToNothing: an interrupt woke the firmware, the completion queue had
// nothing new, and the firmware slept out its deadline.
func wokenToNothing(o *Outcome) bool {
	return o.Says(scenario.HuntNothingNew) && o.Says(scenario.HuntNoCompletion)
}
