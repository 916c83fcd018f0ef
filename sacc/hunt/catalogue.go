package hunt

import (
	"github.com/saccbook/saccbook/sacc/quirk"
)

// The catalogue. Every hunt's parameters are chosen so that each candidate,
// with every combination of them, shows the hunt's symptom (catalogue_test.go
// runs them all): a variant in which the bug could not be seen would be a hunt
// nobody can win.
//
// Numbers are stable once published: a learner's progress is kept by number.

// Catalogue lists every hunt in number order.
func Catalogue() []*Hunt { return catalogue }

// Find looks a hunt up by number.
func Find(n int) (*Hunt, bool) {
	for _, h := range catalogue {
		if h.Number == n {
			return h, true
		}
	}
	return nil, false
}

// Lookup is Find with an error that says which hunts there are.
func Lookup(n int) (*Hunt, error) {
	if h, ok := Find(n); ok {
		return h, nil
	}
	return nil, inputErr("no hunt %d (there are hunts 1 to %d: saccbook hunt list)", n, len(catalogue))
}

// Common parameter ranges: the link and the device's latencies, as --cost sets
// them. Each is a real machine's spread, not a knob that hides the bug.
var (
	dmaRead  = cost("dma_read_latency", 600, 800, 1100)
	dmaWrite = cost("dma_write_latency", 200, 300)
	link     = cost("link_bytes_per_us", 3400, 7877)
)

var catalogue = []*Hunt{
	{
		Number: 1, Title: "The queue stops after a while",
		Story: `A benchmark streams copies through the driver as fast as the ring takes them. ` +
			`The first copies come back right; then one never completes, and the benchmark gives up ` +
			`after waiting 50 µs. Nothing is in the kernel log about a device error. ` +
			`The driver polls for completions; nobody has touched the device's firmware.`,
		Symptom:    "a copy never completes, after at least one has completed with the right data",
		Scenario:   "hunt-jobs",
		Options:    map[string]string{"batch": "8", "warmup": "on"},
		Candidates: []quirk.Quirk{quirk.NoCQHead, quirk.FullIsTailEqHead, quirk.NoPhaseFlip},
		Params:     []Param{option("size", "4", "8"), option("jobs", "16", "32"), option("len", "256", "1024"), option("iommu", "off", "on")},
		Shows:      stopsAfterAWhile,
	},
	{
		Number: 2, Title: "Now and then a copy is wrong on arm64",
		Story: `The same driver that passes every test on an x86 server runs on an arm64 board, and there ` +
			`a copy goes wrong now and then: wrong bytes, a copy that fails with a status nobody asked for, ` +
			`or one that never completes. Which copy it is changes with the seed of the run. ` +
			`The board's CPU is weakly ordered; the device is the same silicon as on the server.`,
		Symptom:    "on arm64, at least one copy of the stream does not arrive as it should",
		Scenario:   "hunt-jobs",
		Options:    map[string]string{"cpu": "arm64"},
		Candidates: []quirk.Quirk{quirk.MissingWMB, quirk.MissingRMB},
		Params:     []Param{seeds(1, 8), option("batch", "1", "4"), option("len", "256", "1024")},
		Shows:      notAllRight,
	},
	{
		Number: 3, Title: "Copies are reported done before their data is there",
		Story: `An application checks every copy's destination as soon as the driver says the copy is done. ` +
			`Some of them still hold zeroes, or the previous round's bytes: the driver returned too early. ` +
			`Looking again a little later, the data is there. The driver polls; x86, no IOMMU tricks.`,
		Symptom:    "a copy is reported done while its destination does not hold its data",
		Scenario:   "hunt-jobs",
		Candidates: []quirk.Quirk{quirk.ExpectedPhaseZero, quirk.NoPhaseFlip},
		Params:     []Param{option("size", "4", "8"), option("jobs", "16", "32"), option("batch", "1", "2", "4"), option("len", "64", "256")},
		Shows:      doneTooEarly,
	},
	{
		Number: 4, Title: "The device halts and the driver resets it",
		Story: `In the middle of a run of copies the device sets STATUS.ERROR and stops; the driver notices, ` +
			`resets it and fails every copy in flight. It happens on every run, on every machine, ` +
			`always at the same point of the run. The device's datasheet lists what makes it halt.`,
		Symptom:    "the device halts with a device error",
		Scenario:   "hunt-jobs",
		Candidates: []quirk.Quirk{quirk.DoorbellOutOfRange, quirk.SkipBusMaster},
		Params:     []Param{option("size", "4", "8", "16"), option("jobs", "16", "32"), option("batch", "1", "4"), option("iommu", "off", "on")},
		Shows:      deviceHalted,
	},
	{
		Number: 5, Title: "An interrupt never comes",
		Story: `The driver is switched from polling to interrupts, and before long it sleeps through its ` +
			`50 µs deadline, waiting for a copy whose interrupt never woke it. /proc/interrupts shows fewer ` +
			`interrupts for the device than copies, or none at all. The same copies complete when the driver polls.`,
		Symptom:    "the driver waits out its deadline for a completion that should have woken it",
		Scenario:   "hunt-jobs",
		Options:    map[string]string{"irq": "on"},
		Candidates: []quirk.Quirk{quirk.VectorLeftMasked, quirk.SkipBusMaster},
		Params:     []Param{option("size", "4", "8", "16"), option("batch", "2", "4"), option("len", "64", "256"), option("jobs", "8", "16")},
		Shows:      waitedInVain,
	},
	{
		Number: 6, Title: "A copy-size sweep stalls half-way",
		Story: `A latency benchmark sweeps copy sizes with interrupts on: every doorbell carries a NOP and a ` +
			`copy a little larger than the one before, and the driver sleeps until the copy is done. The ` +
			`first sizes come back in a few microseconds each; then one copy never wakes the driver. ` +
			`Which size it stops at does not change from run to run.`,
		Symptom:    "one copy of the sweep never completes, after at least one has",
		Scenario:   "hunt-sweep",
		Candidates: []quirk.Quirk{quirk.DrainThenAck, quirk.NoCQHead, quirk.NoPhaseFlip, quirk.AckWithoutReadback},
		Params:     []Param{option("from", "896", "960", "1024"), option("step", "8", "16", "24", "32")},
		Shows:      sweepStalled,
	},
	{
		Number: 7, Title: "The kernel log names a request nobody sent",
		Story: `dmesg fills with "completion for unknown req_id", and soon after a copy never completes. ` +
			`The req_id in the message is one the driver never handed out, or one already done. ` +
			`Several copies are queued behind each doorbell, all of them through the IOMMU; the driver polls.`,
		Symptom:    "the kernel log has a completion for a req_id no request in flight has",
		Scenario:   "hunt-jobs",
		Options:    map[string]string{"len": "64", "iommu": "on"},
		Candidates: []quirk.Quirk{quirk.PhaseFirst, quirk.BodyBeforePhase, quirk.ReqIDReuse},
		Params:     []Param{option("size", "4", "8", "16"), option("batch", "2", "4", "8"), option("jobs", "8", "16", "32")},
		Shows:      unknownReqID,
	},
	{
		Number: 8, Title: "The driver will not load: MAGIC reads all ones",
		Story: `On a freshly built kernel the SACC driver refuses to bind: its probe reads the device's MAGIC ` +
			`register and gets all ones back, the value of a read that nothing answered. lspci still lists ` +
			`the device with its vendor and device IDs. The driver is the one that worked yesterday.`,
		Symptom:    "the probe fails because MAGIC does not read 0x4a4e524f",
		Scenario:   "driver",
		Candidates: []quirk.Quirk{quirk.SkipMemoryEnable, quirk.BARSizingNoMask, quirk.WrongWidth},
		Params:     []Param{option("cpu", "x86", "arm64"), option("irq", "off", "on"), option("iommu", "off", "on"), cost("config_access", 800, 1000, 1200)},
		Shows:      probeFailedMagic,
	},
	{
		Number: 9, Title: "Copying a user buffer faults in the IOMMU",
		Story: `A program hands the driver a 12 KiB buffer of its own, spread over four pages, and then a kernel ` +
			`buffer that crosses a page. One of the copies fails with "bad address", and the IOMMU's fault ` +
			`log has a record of it. Without the IOMMU the same copies work.`,
		Symptom:    "the IOMMU blocks one of the copies' DMA and logs a fault",
		Scenario:   "sg",
		Candidates: []quirk.Quirk{quirk.WrongDMADirection, quirk.UnmapWhileInUse, quirk.FirstPageOnly, quirk.NoIOTLBInvalidate, quirk.IOTLBIgnoresInvalidate},
		Params:     []Param{dmaRead, dmaWrite, link},
		Shows:      iommuFault,
	},
	{
		Number: 10, Title: "A copy lands in a buffer that was given back",
		Story: `A test maps a buffer for the device, copies into it, unmaps it and maps a new buffer at the same ` +
			`IOVA. The next copy leaves the new buffer empty and changes the old one, which the kernel had ` +
			`taken back. The kernel is set for strict invalidation: an unmapped page's IOTLB entry should go at once.`,
		Symptom:    "after a remap, the copy writes the old buffer instead of the new one",
		Scenario:   "iommu",
		Candidates: []quirk.Quirk{quirk.NoIOTLBInvalidate, quirk.IOTLBIgnoresInvalidate},
		Params:     []Param{dmaRead, dmaWrite, link, cost("iotlb_miss", 300, 400, 600)},
		Shows:      oldBufferWritten,
	},
	{
		Number: 11, Title: "Copies through the kernel fail with bad address",
		Story: `A program compares kernel bypass with the kernel's own path. The bypass copies all work; the ` +
			`same copies through ioctl(SUBMIT) fail with "bad address", and the IOMMU is the one that says ` +
			`no. Both paths copy the same buffers of the same process.`,
		Symptom:    "a copy through the kernel path fails with bad address",
		Scenario:   "bypass",
		Candidates: []quirk.Quirk{quirk.WrongDMADirection, quirk.UnmapWhileInUse},
		Params:     []Param{option("cpu", "x86", "arm64"), dmaRead, dmaWrite, link},
		Shows:      kernelPathBadAddress,
	},
	{
		Number: 12, Title: "A command that failed still changed memory",
		Story: `Before it trusts the device, a careful driver checks its protections: a copy that runs past ` +
			`the one page mapped for it must fail and write nothing, and a copy queued while bus mastering ` +
			`is off must not happen at all. On this board one of the checks finds bytes changed that no ` +
			`command should have written. The driver and the kernel are the reference ones.`,
		Symptom:    "memory the self-test watches changes under a command that should not have written it",
		Scenario:   "hunt-selftest",
		Candidates: []quirk.Quirk{quirk.WriteBeforeCheck, quirk.IgnoreBusMaster},
		Params:     []Param{option("over", "64", "512", "2048"), option("at", "0", "1024", "3072"), dmaRead},
		Shows:      refusedButWrote,
	},
	{
		Number: 13, Title: "After another program ran, the device is dead",
		Story: `An application copies through the kernel without trouble. A colleague's monitoring tool runs ` +
			`for a moment on the same machine, as an ordinary user; from then on every copy of the ` +
			`application fails, and the driver has to reset the device. The tool has no special rights.`,
		Symptom:    "the application's copies fail after the tool ran",
		Scenario:   "hunt-tenant",
		Candidates: []quirk.Quirk{quirk.MapRegisterPage},
		Params:     []Param{option("before", "1", "2", "4"), option("after", "2", "4", "8"), dmaRead},
		Shows:      appFailed,
	},
	{
		Number: 14, Title: "The user-space queue loses completions when it fills",
		Story: `A process drives its own queue under the v0.1 rules, where nothing tells the device that ` +
			`completion slots are free again: the device must stall when the CQ fills, and go on once the ` +
			`process writes CQ_HEAD_DB. Here, after that write, the last NOPs never complete.`,
		Symptom:    "fewer completions arrive after CQ_HEAD_DB than there were NOPs waiting",
		Scenario:   "bypass-tour",
		Candidates: []quirk.Quirk{quirk.NoCQFullCheck},
		Params:     []Param{dmaRead, cost("iotlb_miss", 300, 400, 600), link, cost("device_command", 50, 100)},
		Shows:      completionsLost,
	},
	{
		Number: 15, Title: "The firmware's first job comes back as req_id 0",
		Story: `Bare-metal bring-up code, with no operating system, rings the doorbell for one MEMCPY with ` +
			`req_id 1 and polls the completion queue. The completion it finds has the new phase, but says ` +
			`req_id 0 and a result length of 0. The firmware's poller has been reviewed twice.`,
		Symptom:    "the firmware's completion says req_id 0",
		Scenario:   "job",
		Candidates: []quirk.Quirk{quirk.PhaseFirst},
		Params:     []Param{dmaRead, dmaWrite, link, cost("device_command", 50, 100, 200)},
		Shows:      firmwareSawReqIDZero,
	},
	{
		Number: 16, Title: "The firmware's IOTLB check fails",
		Story: `Bare-metal bring-up code tests the IOMMU: it copies into a page, remaps the IOVA to a new ` +
			`page, invalidates the IOTLB and copies again. The second copy is missing from the new page. ` +
			`The firmware writes INVALIDATE exactly as the datasheet says.`,
		Symptom:    "after the invalidation, the copy does not reach the new page",
		Scenario:   "mixed",
		Candidates: []quirk.Quirk{quirk.IOTLBIgnoresInvalidate},
		Params:     []Param{dmaRead, dmaWrite, link, cost("iotlb_miss", 300, 400, 600)},
		Shows:      staleAfterInvalidate,
	},
	{
		Number: 17, Title: "With interrupts, the queue stops after a while",
		Story: `The streaming benchmark of hunt 1 again, now with completions by interrupt: one copy goes ` +
			`first, alone, then the rest in bursts of eight. The first ones wake the driver as they should; ` +
			`then the driver sleeps through its 50 µs deadline waiting for one that never comes.`,
		Symptom:    "a copy never completes, after at least one has completed with the right data",
		Scenario:   "hunt-jobs",
		Options:    map[string]string{"irq": "on", "batch": "8", "warmup": "on"},
		Candidates: []quirk.Quirk{quirk.NoCQHead, quirk.FullIsTailEqHead, quirk.NoPhaseFlip},
		Params:     []Param{option("size", "4", "8"), option("jobs", "16", "32"), option("len", "256", "1024")},
		Shows:      stopsAfterAWhile,
	},
	{
		Number: 18, Title: "The ring tour never finishes its three laps",
		Story: `The ring tour pushes three laps' worth of NOPs through one ring, as fast as the driver can: ` +
			`each doorbell hands over as many descriptors as fit. It stops before the third lap with a NOP ` +
			`that never completed, and prints what the device's indices said at that moment.`,
		Symptom:    "a NOP of the tour never completes",
		Scenario:   "rings",
		Candidates: []quirk.Quirk{quirk.FullIsTailEqHead, quirk.NoCQHead, quirk.DoorbellOutOfRange},
		Params:     []Param{option("size", "4", "8", "16"), dmaRead, cost("device_command", 50, 100)},
		Shows:      neverCompleted,
	},
	{
		Number: 19, Title: "The interrupt tour loses a job",
		Story: `The interrupt tour compares polling with interrupts, masks and unmasks a vector, and queues ` +
			`a NOP and a copy behind one doorbell. One of its jobs never completes: the handler ran, or was ` +
			`expected to, and the job is still waiting when the driver gives up.`,
		Symptom:    "a job of the tour never completes",
		Scenario:   "interrupts",
		Candidates: []quirk.Quirk{quirk.VectorLeftMasked, quirk.DrainThenAck, quirk.AckWithoutReadback},
		Params:     []Param{cost("device_command", 50, 100, 150), cost("mmio_read", 800, 1000, 1200)},
		Shows:      neverCompleted,
	},
	{
		Number: 20, Title: "After a reset, not every NOP comes back",
		Story: `The error tour makes the device fail on purpose — a reserved opcode, bad lengths, an unmapped ` +
			`source, a doorbell far out of range — and the driver recovers each time. Every step reports ` +
			`what it should, but of the ten NOPs sent at the end, some never complete.`,
		Symptom:    "fewer than ten of the last ten NOPs complete",
		Scenario:   "errors",
		Candidates: []quirk.Quirk{quirk.NoPhaseFlip, quirk.NoCQHead, quirk.DoorbellOutOfRange},
		Params:     []Param{dmaRead, dmaWrite, link},
		Shows:      lostAfterReset,
	},
	{
		Number: 21, Title: "The interrupt comes, and the queue is empty",
		Story: `Bring-up firmware, with no operating system, polls for a copy or two to check the path, then ` +
			`turns to interrupts: it queues one copy, sleeps until the completion vector fires, looks at the ` +
			`completion queue and acknowledges. The first interrupt comes on time and the queue holds nothing new; ` +
			`no other interrupt comes, and when the firmware gives up, a last look finds the copy done after all. ` +
			`Its author points at the datasheet: the completion is written before the interrupt is sent.`,
		Symptom:    "an interrupt wakes the firmware, the completion queue has nothing new, and no other interrupt comes",
		Scenario:   "hunt-firmware",
		Candidates: []quirk.Quirk{quirk.MSIBeforeCompletion},
		Params:     []Param{option("polled", "1", "2", "3"), option("len", "64", "256", "1024"), dmaRead, dmaWrite},
		Shows:      wokenToNothing,
	},
}
