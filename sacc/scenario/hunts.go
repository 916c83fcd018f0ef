package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

// The bug hunts' own scenarios (package sacc/hunt runs them with one secret quirk
// switched on). Each is a workload that reports what a user of the driver would
// notice — a copy whose data is wrong, a job that never completes, a device that
// resets, memory that changed when nothing should have touched it — and never why:
// finding the why, in the trace, is the hunt. Their parameters are options, so
// that every learner's variant can differ.

var (
	_ = register(Scenario{Name: "hunt-jobs",
		Summary: "a stream of copies through the driver, each one checked when it completes: what a user would notice, and nothing about why",
		Options: []Option{cpuOption("x86"),
			{Name: "irq", Doc: "completions by interrupt instead of polling", Default: "off", Values: values("off", "on")},
			{Name: "iommu", Doc: "DMA through the IOMMU", Default: "off", Values: values("off", "on")},
			{Name: "size", Doc: "slots in each ring", Default: "8", Values: values("4", "8", "16")},
			{Name: "jobs", Doc: "how many copies", Default: "16", Values: values("8", "16", "32")},
			{Name: "len", Doc: "bytes in each copy", Default: "256", Values: values("64", "256", "1024")},
			{Name: "batch", Doc: "copies queued behind each doorbell, at most", Default: "4", Values: values("1", "2", "4", "8")},
			{Name: "warmup", Doc: "the first copy goes alone, as a check that the path works", Default: "off", Values: values("off", "on")},
		},
		Quirks: []quirk.Quirk{quirk.MissingWMB, quirk.MissingRMB, quirk.BodyBeforePhase, quirk.ExpectedPhaseZero, quirk.NoPhaseFlip,
			quirk.NoCQHead, quirk.FullIsTailEqHead, quirk.DoorbellOutOfRange, quirk.ReqIDReuse, quirk.SkipBusMaster,
			quirk.PhaseFirst, quirk.VectorLeftMasked},
		Run: HuntJobs})
)

// huntTimeout is how long the hunts' driver waits for one completion: long
// enough for the slowest copy of any variant, short enough that a stuck queue
// ends the run quickly.
const huntTimeout = 50_000

// huntOption reads a numeric option whose values the scenario declares.
func huntOption(env *Env, s Scenario, name string) (int, error) {
	o, _ := s.Option(name)
	v := env.Option(name, o.Default)
	n, err := strconv.Atoi(v)
	if err != nil || !o.Takes(v) {
		return 0, fmt.Errorf("%s=%s: want %s", name, v, strings.Join(o.ValueNames(), " or "))
	}
	return n, nil
}

// huntOptions reads the named numeric options of the hunt scenario called
// scenario, in order.
func huntOptions(env *Env, scenario string, names ...string) ([]int, error) {
	s, _ := Find(scenario)
	out := make([]int, len(names))
	for i, name := range names {
		n, err := huntOption(env, s, name)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// huntJob is one copy of a hunt's workload.
type huntJob struct {
	r        *driver.Request
	src, dst uint64 // CPU addresses
	want     byte
}

// HuntJobs streams copies through the driver as fast as the ring takes them:
// with warmup the first alone, then up to batch descriptors behind each doorbell, each
// followed by a wait for the oldest copy in flight, whose destination is
// checked at once. It stops at the first copy that
// never completes or that fails with the device.
func HuntJobs(m *machine.Machine, env *Env) error {
	cfg, err := hostConfig(m, env)
	if err != nil {
		return err
	}
	opts, err := huntOptions(env, "hunt-jobs", "size", "jobs", "len", "batch")
	if err != nil {
		return err
	}
	size, jobs, length, batch := opts[0], opts[1], opts[2], opts[3]
	warmup := env.Option("warmup", "off") == "on"
	if w := env.Option("warmup", "off"); w != "on" && w != "off" {
		return fmt.Errorf("warmup=%s: want on or off", w)
	}
	cfg.Driver.RingSize, cfg.Driver.Timeout = uint32(size), huntTimeout
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	mode := map[bool]string{false: "polling", true: "interrupts"}[cfg.Driver.Interrupts]
	fmt.Fprintf(log, "driver up: %d-entry rings, %s, CPU %s, IOMMU %s\n", size, mode, h.CPU.Arch(), map[bool]string{false: "off", true: "on"}[h.K.IOMMUOn()])
	all := make([]huntJob, jobs)
	for i := range all {
		j, err := huntCopy(h, byte(i+1), uint32(length), cfg.Driver.Interrupts)
		if err != nil {
			return err
		}
		all[i] = j
	}
	reqs := make([]*driver.Request, jobs)
	for i := range all {
		reqs[i] = all[i].r
	}
	logFrom := len(h.K.Log())
	start := m.Now()
	next, done, right := 0, 0, 0
	for done < jobs {
		if next < jobs {
			n := batch
			if next == 0 && warmup {
				n = 1
			}
			k, err := h.Dev.SubmitBatch(reqs[next:min(next+n, jobs)])
			if err != nil && !errors.Is(err, driver.ErrRingFull) {
				return err
			}
			next += k
		}
		if next == done {
			fmt.Fprintf(log, "job %d: the driver would not queue it, with nothing in flight\n", done+1)
			break
		}
		ok, stop := huntCheck(h, log, done+1, &all[done])
		if ok {
			right++
		}
		done++
		if stop {
			break
		}
	}
	fmt.Fprintf(log, HuntSummary+", in %d ns; %d doorbells, %d interrupts\n",
		done, jobs, right, m.Now()-start, h.Dev.Stats.Doorbells, h.Dev.Stats.Interrupts)
	huntKernelLog(h, log, logFrom)
	return nil
}

// huntCopy allocates and maps a source filled with want and a zeroed destination,
// and prepares their MEMCPY.
func huntCopy(h *host.Host, want byte, n uint32, irq bool) (huntJob, error) {
	pd := h.Dev.PCI()
	src, err := kernelBuffer(h, bytes.Repeat([]byte{want}, int(n)))
	if err != nil {
		return huntJob{}, err
	}
	dst, err := kernelBuffer(h, make([]byte, n))
	if err != nil {
		return huntJob{}, err
	}
	sd, err := pd.DMAMapSingle(src, uint64(n), kernel.DMAToDevice)
	if err != nil {
		return huntJob{}, err
	}
	dd, err := pd.DMAMapSingle(dst, uint64(n), kernel.DMAFromDevice)
	if err != nil {
		return huntJob{}, err
	}
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: n, IRQ: irq}
	return huntJob{r: r, src: src, dst: dst, want: want}, nil
}

// huntCheck waits for job number n and checks its destination, saying what went
// wrong as a user would see it. stop is set when the queue cannot go on: the
// copy never completed, or the device had to be reset.
func huntCheck(h *host.Host, log interface{ Write([]byte) (int, error) }, n int, j *huntJob) (ok, stop bool) {
	r := j.r
	start := h.M.Now()
	err := h.Dev.Wait(r)
	switch {
	case errors.Is(err, driver.ErrTimeout):
		fmt.Fprintf(log, "job %d (req_id %#x): "+HuntNoCompletion+" %d ns; %d copies in flight\n", n, r.ReqID, huntTimeout, h.Dev.InFlight())
		return false, true
	case err != nil && r.Err != nil && h.M.Now()-start >= huntTimeout:
		fmt.Fprintf(log, "job %d (req_id %#x): "+HuntNoCompletion+" %d ns, then the driver found the device halted: %v\n", n, r.ReqID, huntTimeout, err)
		return false, true
	case err != nil && r.Err != nil:
		fmt.Fprintf(log, "job %d (req_id %#x): %v\n", n, r.ReqID, err)
		return false, true
	case err != nil:
		fmt.Fprintf(log, "job %d (req_id %#x): "+HuntBadStatus+" %v\n", n, r.ReqID, r.Status)
		return false, false
	}
	h.Dev.PCI().DMASyncSingleForCPU(r.Dst, uint64(r.Length), kernel.DMAFromDevice)
	got := make([]byte, r.Length)
	h.CPU.LoadBytes(j.dst, got)
	for i, b := range got {
		if b != j.want {
			fmt.Fprintf(log, "job %d (req_id %#x): "+HuntWrongData+" %#02x at byte %d, want %#02x\n", n, r.ReqID, b, i, j.want)
			return false, false
		}
	}
	return true, false
}

// huntKernelLog repeats what the kernel logged since line from, as dmesg would
// show it: the driver's own complaints are part of what a user sees.
func huntKernelLog(h *host.Host, log interface{ Write([]byte) (int, error) }, from int) {
	lines := h.K.Log()
	const most = 4
	for i, l := range lines[from:] {
		if i == most {
			fmt.Fprintf(log, "dmesg: … %d more lines\n", len(lines)-from-most)
			break
		}
		fmt.Fprintf(log, "dmesg: [%d ns] %s\n", l.Time, l.Text)
	}
}

// What the hunts' scenarios say when something goes wrong. Package sacc/hunt
// checks each hunt's symptom in these words, so they are said once, here.
const (
	// HuntNoCompletion starts the line of a copy the driver gave up on.
	HuntNoCompletion = "no completion within"
	// HuntWrongData is a copy reported done whose destination is not its data.
	HuntWrongData = "reported done, but its destination holds"
	// HuntBadStatus is a copy that completed with an error status.
	HuntBadStatus = "completed with status"
)

// HuntSummary is the last line of hunt-jobs' narrative, and its format:
// checked, total, right.
const HuntSummary = "%d of %d copies checked, %d right"

var _ = register(Scenario{Name: "hunt-sweep",
	Summary: "a copy-size sweep with interrupts: each doorbell a NOP and a copy a little larger than the last, each pair waited for",
	Options: []Option{
		{Name: "from", Doc: "bytes in the first copy", Default: "960", Values: values("896", "960", "1024")},
		{Name: "step", Doc: "bytes added from one copy to the next", Default: "16", Values: values("8", "16", "24", "32")},
	},
	Quirks: []quirk.Quirk{quirk.DrainThenAck, quirk.AckWithoutReadback, quirk.NoCQHead, quirk.NoPhaseFlip},
	Run:    HuntSweep})

// huntSweepSpan is how far a sweep goes past its first size.
const huntSweepSpan = 384

// HuntSweep measures completion latency over a range of copy sizes, the way a
// benchmark sweeps them: every doorbell queues a NOP and a copy, both asking
// for an interrupt, and the driver sleeps until the copy is done.
func HuntSweep(m *machine.Machine, env *Env) error {
	opts, err := huntOptions(env, "hunt-sweep", "from", "step")
	if err != nil {
		return err
	}
	from, step := opts[0], opts[1]
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{Interrupts: true, Timeout: huntTimeout, RingSize: 8}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	last := from + huntSweepSpan
	src, err := kernelBuffer(h, bytes.Repeat([]byte{0xA5}, last))
	if err != nil {
		return err
	}
	dst, err := h.K.AllocPages(uint64(last))
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "sweep: copies of %d to %d bytes, %d bytes apart, each behind a NOP in one doorbell; interrupts\n", from, last, step)
	start, pairs := m.Now(), 0
	for n := from; n <= last; n += step {
		a := &driver.Request{Opcode: sacc.OpNOP, IRQ: true}
		b := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: uint32(n), IRQ: true}
		if _, err := h.Dev.SubmitBatch([]*driver.Request{a, b}); err != nil {
			fmt.Fprintf(log, "copy of %d bytes: not queued: %v\n", n, err)
			break
		}
		t := m.Now()
		if err := h.Dev.Wait(b); err != nil {
			fmt.Fprintf(log, "copy of %d bytes (req_id %#x): "+HuntNoCompletion+" %d ns (%v)\n", n, b.ReqID, huntTimeout, err)
			break
		}
		if !a.Done {
			fmt.Fprintf(log, "copy of %d bytes: done, but the NOP before it is not\n", n)
		}
		fmt.Fprintf(log, "copy of %d bytes: %d ns\n", n, b.Completed-t)
		pairs++
	}
	fmt.Fprintf(log, "%d pairs in %d ns; %d interrupts, %d of them with nothing to reap\n",
		pairs, m.Now()-start, h.Dev.Stats.Interrupts, h.Dev.Stats.SpuriousInterrupts)
	return nil
}

// HuntTouched is said of memory that a command changed although it should not
// have: one that failed, or that the device should have refused.
const HuntTouched = "changed although"

var _ = register(Scenario{Name: "hunt-selftest",
	Summary: "the driver's self-test of the device's protections: a copy that runs past its mapping, and a copy with bus mastering off, must leave memory alone",
	Options: []Option{
		{Name: "over", Doc: "bytes the guard copy runs past the end of its mapping", Default: "512", Values: values("64", "512", "2048")},
		{Name: "at", Doc: "where in its mapped page the guard copy starts", Default: "0", Values: values("0", "1024", "3072")},
	},
	Quirks: []quirk.Quirk{quirk.WriteBeforeCheck, quirk.IgnoreBusMaster},
	Run:    HuntSelfTest})

// huntCanary is what the self-test fills the memory it watches with.
const huntCanary = 0xEE

// HuntSelfTest runs two checks a careful driver makes before it trusts a
// device behind an IOMMU: a copy whose destination runs past the one page
// mapped for it must fail and write nothing, and a copy queued while bus
// mastering is off must not happen at all. After each it looks at the memory
// involved.
func HuntSelfTest(m *machine.Machine, env *Env) error {
	opts, err := huntOptions(env, "hunt-selftest", "over", "at")
	if err != nil {
		return err
	}
	over, at := opts[0], opts[1]
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8, Timeout: huntTimeout}, Kernel: kernel.Config{IOMMU: true}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log, pd := env.Log, h.Dev.PCI()
	n := uint64(sacc.PageSize - at + over)
	src, err := kernelBuffer(h, bytes.Repeat([]byte{0x5A}, int(n)))
	if err != nil {
		return err
	}
	sd, err := pd.DMAMapSingle(src, n, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	// The destination: two pages of canary, of which only the first is mapped,
	// and mapped last, so that the IOVA page after it is mapped to nothing.
	dst, err := kernelBuffer(h, bytes.Repeat([]byte{huntCanary}, 2*sacc.PageSize))
	if err != nil {
		return err
	}
	dd, err := pd.DMAMapSingle(dst, sacc.PageSize, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd + uint64(at), Length: uint32(n)}
	err = h.Dev.Do(r)
	fmt.Fprintf(log, "guard copy: %d bytes from offset %d of a one-page mapping, %d past its end: %s\n", n, at, over, huntResult(r, err))
	huntWatch(h, log, "the guard copy's page", dst, sacc.PageSize)

	// Bus mastering off: the device may not read the descriptor, let alone move
	// data. The driver finds it halted and resets it.
	pd.ClearMaster()
	dst2, err := kernelBuffer(h, bytes.Repeat([]byte{huntCanary}, 256))
	if err != nil {
		return err
	}
	dd2, err := pd.DMAMapSingle(dst2, 256, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	r = &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd2, Length: 256}
	err = h.Dev.Do(r)
	fmt.Fprintf(log, "copy with bus mastering off: %s\n", huntResult(r, err))
	huntWatch(h, log, "its destination", dst2, 256)
	pd.SetMaster()

	// And the device still works.
	dst3, err := kernelBuffer(h, make([]byte, 256))
	if err != nil {
		return err
	}
	dd3, err := pd.DMAMapSingle(dst3, 256, kernel.DMAFromDevice)
	if err != nil {
		return err
	}
	r = &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd3, Length: 256}
	err = h.Dev.Do(r)
	fmt.Fprintf(log, "a copy after pci_set_master: %s\n", huntResult(r, err))
	return nil
}

// huntResult says how a request ended.
func huntResult(r *driver.Request, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("completed, status %v, %d bytes", r.Status, r.ResultLen)
	case r.Err != nil:
		return fmt.Sprintf("failed: %v", err)
	default:
		return fmt.Sprintf("completed with status %v", r.Status)
	}
}

// huntWatch checks that n bytes at the CPU address p still hold the canary.
func huntWatch(h *host.Host, log interface{ Write([]byte) (int, error) }, what string, p uint64, n int) {
	got := make([]byte, n)
	h.CPU.LoadBytes(p, got)
	changed, first := 0, -1
	for i, b := range got {
		if b != huntCanary {
			changed++
			if first < 0 {
				first = i
			}
		}
	}
	if changed == 0 {
		fmt.Fprintf(log, "%s: untouched\n", what)
		return
	}
	fmt.Fprintf(log, "%s: %d bytes "+HuntTouched+" the command should not have written them, from offset %d\n", what, changed, first)
}

var _ = register(Scenario{Name: "hunt-tenant",
	Summary: "two processes share the device: an application copies through the kernel, and a monitoring tool pokes at what mmap gives it",
	Options: []Option{
		{Name: "before", Doc: "copies the application makes before the tool runs", Default: "2", Values: values("1", "2", "4")},
		{Name: "after", Doc: "copies it makes after", Default: "4", Values: values("2", "4", "8")},
	},
	Quirks: []quirk.Quirk{quirk.MapRegisterPage},
	Run:    HuntTenant})

// HuntTenant runs an application's copies through ioctl, lets another process
// — a monitoring tool that wants to watch the device — map pages of the device
// file and write to what it got, then runs the application's copies again. The
// narrative is the application's: it knows nothing of the tool.
func HuntTenant(m *machine.Machine, env *Env) error {
	opts, err := huntOptions(env, "hunt-tenant", "before", "after")
	if err != nil {
		return err
	}
	before, after := opts[0], opts[1]
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8, Timeout: huntTimeout}, Kernel: kernel.Config{IOMMU: true}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	log := env.Log
	app := h.K.NewProcess("app")
	fd, err := app.Open(driver.DevPath)
	if err != nil {
		return err
	}
	const n = 512
	src, err := app.Alloc(n)
	if err != nil {
		return err
	}
	dst, err := app.Alloc(n)
	if err != nil {
		return err
	}
	args, err := app.Alloc(sacc.PageSize)
	if err != nil {
		return err
	}
	copyOnce := func(i int) {
		want := byte(0x30 + i)
		app.StoreBytes(src, bytes.Repeat([]byte{want}, n))
		sub := driver.SubmitArgs{Opcode: sacc.OpMEMCPY, Length: n, Src: src, Dst: dst}
		sub.Store(app, args)
		_, err := app.Ioctl(fd, driver.IocSubmit, args)
		got := make([]byte, n)
		app.LoadBytes(dst, got)
		switch {
		case err != nil:
			fmt.Fprintf(log, "app: copy %d failed: %v\n", i, err)
		case !bytes.Equal(got, bytes.Repeat([]byte{want}, n)):
			fmt.Fprintf(log, "app: copy %d: "+HuntWrongData+" %#02x, want %#02x\n", i, got[0], want)
		default:
			fmt.Fprintf(log, "app: copy %d: right\n", i)
		}
	}
	for i := 1; i <= before; i++ {
		copyOnce(i)
	}

	// The tool: it asks for the first page of the device file, which it takes
	// for a page of counters, falls back to the doorbell page if refused, and
	// clears the words it believes are its own at offsets 8 to 15.
	tool := h.K.NewProcess("tool")
	tfd, err := tool.Open(driver.DevPath)
	if err != nil {
		return err
	}
	page, err := tool.Mmap(tfd, sacc.RegisterPage, sacc.PageSize)
	if err != nil {
		if page, err = tool.Mmap(tfd, sacc.DoorbellPage, sacc.PageSize); err != nil {
			return err
		}
	}
	tool.Store32(page+8, 0)
	tool.Store32(page+12, 0)
	if err := tool.Close(tfd); err != nil {
		return err
	}

	for i := before + 1; i <= before+after; i++ {
		copyOnce(i)
	}
	return app.Close(fd)
}

var _ = register(Scenario{Name: "hunt-firmware",
	Summary: "bare metal: copies polled for, then copies one at a time, each waited for by sleeping until its interrupt and then looking at the completion queue",
	Options: []Option{
		{Name: "polled", Doc: "copies polled for before the firmware turns to interrupts", Default: "2", Values: values("1", "2", "3")},
		{Name: "len", Doc: "bytes in each copy", Default: "256", Values: values("64", "256", "1024")},
	},
	Quirks: []quirk.Quirk{quirk.MSIBeforeCompletion},
	Run:    HuntFirmware})

// HuntNothingNew is said of an interrupt after which the completion queue held
// nothing new.
const HuntNothingNew = "nothing new in the completion queue"

// Bare-metal bring-up of hunt-firmware: the completion vector's message and
// how many copies it waits for by interrupt.
const (
	huntFirmwareMSI   = 0x41
	huntFirmwareIRQs  = 4
	huntFirmwareSleep = 20_000 // ns the firmware sleeps for one interrupt before it gives up
)

// HuntFirmware is bring-up firmware with no operating system. It checks the
// path by polling for a few copies, then turns to interrupts: one copy at a
// time, it sleeps until the completion vector fires, looks at the completion
// queue at once, and acknowledges the interrupt. With one copy in flight,
// looking before acknowledging loses nothing: no other completion can come in
// between. Looking at once is right because the device writes the completion
// before it sends the interrupt, and PCIe keeps the two posted writes in order
// (SACC §9; PCIe Base Specification §2.4.1).
func HuntFirmware(m *machine.Machine, env *Env) error {
	opts, err := huntOptions(env, "hunt-firmware", "polled", "len")
	if err != nil {
		return err
	}
	polled, n := opts[0], opts[1]
	h, err := baremetal.Enumerate(m)
	if err != nil {
		return err
	}
	h.EnableMSIX(sacc.MSIXVectorComplete, sacc.IntWindowBase, huntFirmwareMSI)
	if err := h.Start(baremetal.SQAddr, 8, baremetal.CQAddr, 8); err != nil {
		return err
	}
	log := env.Log
	fmt.Fprintf(log, "firmware: device up, 8-entry rings; %d copies polled for, then %d by interrupt, %d bytes each\n", polled, huntFirmwareIRQs, n)
	vector := sacc.MSIVector(huntFirmwareMSI)
	src, dst := uint64(baremetal.DataAddr), uint64(baremetal.DataAddr+0x1000)
	woken, empty := 0, 0
	for i := 1; i <= polled+huntFirmwareIRQs; i++ {
		want := byte(0x10 + i)
		m.Fill(src, uint64(n), want)
		m.Fill(dst, uint64(n), 0)
		d := sacc.Descriptor{Src: src, Dst: dst, Length: uint32(n), Opcode: sacc.OpMEMCPY, ReqID: uint32(i)}
		byIRQ := i > polled
		if byIRQ {
			d.Flags = sacc.FlagInterrupt
		}
		h.Put(d)
		rung := m.Now()
		h.Ring()
		var c sacc.Completion
		if !byIRQ {
			if c, err = h.Wait(huntTimeout); err != nil {
				fmt.Fprintf(log, "copy %d (polled): %v\n", i, err)
				break
			}
		} else {
			var ok bool
			for !ok {
				if !huntSleep(m, vector, huntFirmwareSleep) {
					break
				}
				woken++
				c, ok = h.Poll()
				h.SetReg(sacc.RegIRQAck, sacc.IRQCompletion)
				if !ok {
					empty++
					fmt.Fprintf(log, "copy %d: woken by an interrupt %d ns after the doorbell, and "+HuntNothingNew+"\n", i, m.Now()-rung)
				}
			}
			if !ok {
				last := "a last look finds nothing either"
				if late, found := h.Poll(); found {
					last = fmt.Sprintf("a last look finds req_id %#x in the queue, status %v", late.ReqID, late.Status)
				}
				fmt.Fprintf(log, "copy %d: "+HuntNoCompletion+" %d ns of sleep: no interrupt came; %s\n", i, huntFirmwareSleep, last)
				break
			}
		}
		got := m.Read(dst, 1)
		how := map[bool]string{false: "polled", true: "by interrupt"}[byIRQ]
		if c.ReqID != d.ReqID || c.Status != sacc.StatusOK || got != uint64(want) {
			fmt.Fprintf(log, "copy %d (%s): req_id %#x status %v, first byte %#02x, want %#02x\n", i, how, c.ReqID, c.Status, got, want)
			break
		}
		fmt.Fprintf(log, "copy %d (%s): right, %d ns after the doorbell\n", i, how, m.Now()-rung)
	}
	for m.Step() {
	}
	fmt.Fprintf(log, "firmware: interrupts taken: %d, of them with the queue empty: %d; messages on vector %#x: %d\n",
		woken, empty, vector, m.Interrupts().Count(vector))
	return nil
}

// huntSleep is firmware waiting for an interrupt: the machine runs until
// vector v has a message pending, which the firmware takes; false if limit
// nanoseconds pass first.
func huntSleep(m *machine.Machine, v uint8, limit uint64) bool {
	deadline := m.Now() + sim.Time(limit)
	for !m.Interrupts().Pending(v) {
		t, ok := m.Sim().Next()
		if !ok || t > deadline {
			m.RunUntil(deadline)
			return false
		}
		m.Step()
	}
	m.Interrupts().Take()
	return true
}
