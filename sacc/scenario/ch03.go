package scenario

import (
	"fmt"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/sacc/user"
)

// Chapter 3, "The doorbell page": the tail write that hands descriptors to the
// device, what it costs the CPU, what one doorbell for many descriptors looks
// like, the tail wrapping, and why the doorbell has a 4 KiB page of its own.

var _ = register(Scenario{
	Chapter: 3, Primary: true, Name: "doorbell",
	Summary: "the doorbell: one tail write hands descriptors over, posted and cheap; batching, wrapping, and the page a process may map",
	Quirks:  []quirk.Quirk{quirk.MapRegisterPage, quirk.DoorbellOutOfRange},
	Run:     DoorbellTour,
})

// ch03Watch records, from the trace, what happened after each doorbell.
type ch03Watch struct {
	ringAt  sim.Time // the last SQ_TAIL write
	fetchAt sim.Time // the first fetch after it
	slots   []string // the slots fetched since the last doorbell
}

func (w *ch03Watch) record(ev trace.Event) {
	switch ev.Kind {
	case trace.Doorbell:
		w.ringAt, w.fetchAt, w.slots = ev.Time, 0, nil
	case trace.Fetch:
		if w.fetchAt == 0 {
			w.fetchAt = ev.Time
		}
		w.slots = append(w.slots, fmt.Sprint(ev.Args[0]))
	}
}

// DoorbellTour submits through the driver and then from a process that mapped only
// the doorbell page.
func DoorbellTour(m *machine.Machine, env *Env) error {
	log := env.Log
	h, err := host.BootOn(m, host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: 8}})
	env.Host = h
	if err != nil {
		return err
	}
	bar0 := h.Dev.PCI().BAR[0].Start
	fmt.Fprintf(log, "BAR0 page 0 at %#x holds the registers; page 1 at %#x is the doorbell page: SQ_TAIL at %#x, CQ_HEAD_DB at %#x\n",
		bar0, bar0+sacc.DoorbellPage, bar0+sacc.RegSQTail, bar0+sacc.RegCQHeadDB)

	var w ch03Watch
	detach := m.Tracer().Attach(trace.Func(w.record))
	defer detach()
	dev, c := h.Dev, h.CPU

	// One descriptor, one doorbell.
	r := &driver.Request{Opcode: sacc.OpNOP}
	t := m.Now()
	if err := dev.Submit(r); err != nil {
		return err
	}
	submitted := m.Now()
	fmt.Fprintf(log, "one NOP: descriptor stores, wmb, then SQ_TAIL = 1; the doorbell write cost the CPU %d ns (submit took %d ns in all)\n",
		m.Cost().MMIOWriteIssue, submitted-t)
	if err := dev.Wait(r); err != nil {
		return err
	}
	// The doorbell is posted: the CPU issued it as its last act of the submit, and
	// the device's sacc_reg_write is the moment it landed.
	issued := submitted - m.Cost().MMIOWriteIssue
	fetched := "as it landed"
	if w.fetchAt != w.ringAt {
		fetched = fmt.Sprintf("%d ns after it landed", w.fetchAt-w.ringAt)
	}
	fmt.Fprintf(log, "the doorbell reached the device %d ns after the CPU wrote it, and the device fetched slot %s %s; the completion was found %d ns after the write\n",
		w.ringAt-issued, strings.Join(w.slots, ", "), fetched, r.Completed-issued)
	// Let the CQ_HEAD write the reap just posted land first, so the read below
	// waits for its own round trip only.
	c.Delay(m.Cost().MMIOWrite)
	t = m.Now()
	c.Readl(bar0 + sacc.RegSTATUS)
	fmt.Fprintf(log, "for comparison, one ioread32 of STATUS, with no posted write ahead of it, kept the CPU waiting %d ns\n", m.Now()-t)

	// Many descriptors, one doorbell; then the tail wraps.
	for _, what := range []string{"four NOPs, one doorbell", "four more: the tail wraps past slot 7"} {
		reqs := make([]*driver.Request, 4)
		for i := range reqs {
			reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
		}
		before := dev.Stats.Doorbells
		if _, err := dev.SubmitBatch(reqs); err != nil {
			return err
		}
		if err := dev.Wait(reqs[3]); err != nil {
			fmt.Fprintf(log, "%s: %v\n", what, err)
			return err
		}
		tail := m.Device().State().SQTail // the posted doorbell has long landed

		fmt.Fprintf(log, "%s: %d doorbell write, SQ_TAIL = %d; the device fetched slots %s\n",
			what, dev.Stats.Doorbells-before, tail, strings.Join(w.slots, ", "))
	}

	// A process may map the doorbell page, and only that page.
	p := h.K.NewProcess("app")
	fd, err := p.Open(driver.DevPath)
	if err != nil {
		return err
	}
	if va, err := p.Mmap(fd, sacc.RegisterPage, sacc.PageSize); err != nil {
		fmt.Fprintf(log, "mmap of BAR0 page 0 (the registers): refused, %v\n", err)
	} else {
		fmt.Fprintf(log, "mmap of BAR0 page 0 (the registers) succeeded at %#x: the process reads MAGIC %#x there, and could write CTRL just as easily\n",
			va, p.Load32(va+sacc.RegMAGIC))
	}
	va, err := p.Mmap(fd, sacc.DoorbellPage, sacc.PageSize)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "mmap of BAR0 page 1 (the doorbell page): mapped at %#x\n", va)
	if err := p.Close(fd); err != nil {
		return err
	}

	q, err := user.Open(p, 8)
	if err != nil {
		return err
	}
	calls := p.Stats.Syscalls
	q.Put(sacc.Descriptor{Opcode: sacc.OpNOP})
	q.Ring()
	cpl, err := q.Wait(100_000)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "the process wrote a descriptor, rang the doorbell with a plain store and got req_id %#x back: %d system calls\n",
		cpl.ReqID, p.Stats.Syscalls-calls)
	return q.Close()
}
