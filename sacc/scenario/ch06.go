package scenario

import (
	"bytes"
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 06, Phase bits: how the driver tells a new completion from an old one
// by looking at its own memory only.

var _ = register(Scenario{Chapter: 6, Primary: true, Name: "phases",
	Summary: "three laps of a 4-entry CQ: the phase written last, flipped on every wrap, and a stale entry from the last lap left alone",
	Quirks:  []quirk.Quirk{quirk.NoPhaseFlip, quirk.ExpectedPhaseZero, quirk.PhaseFirst},
	Run:     Phases})

// Phases runs twelve copies, one at a time, through 4-entry rings, and looks at
// the CQ slot the driver will read next before and after each completion.
func Phases(m *machine.Machine, env *Env) error {
	const size, laps, n = 4, 3, 64
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: size, Timeout: 50_000}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	dev, pd := h.Dev, h.Dev.PCI()
	cq := m.Device().State().CQBase // the DMA address is the physical one: no IOMMU here
	fmt.Fprintf(env.Log, "CQ of %d entries at %#x, zeroed; device and driver both start expecting phase 1\n", size, cq)
	c := ch06Peek(h, cq)
	fmt.Fprintf(env.Log, "before any job, slot 0 holds req_id %#x phase %d: not the expected 1, so not new\n", c.ReqID, c.Phase)

	posts := ch06Record(m, trace.CQPost, trace.PhaseFlip)
	defer posts.stop()
	src, err := kernelBuffer(h, make([]byte, n))
	if err != nil {
		return err
	}
	dst, err := kernelBuffer(h, make([]byte, n))
	if err != nil {
		return err
	}
	for job := range size * laps {
		lap, slot := job/size+1, uint32(job%size)
		payload := bytes.Repeat([]byte{byte(job + 1)}, n)
		h.CPU.StoreBytes(src, payload)
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: n}
		if err := dev.Submit(r); err != nil {
			return err
		}
		if lap == 2 && slot == 0 {
			// The moment the phase bit exists for: the slot still holds last lap's
			// completion, and nothing in it says "old" except the phase.
			c := ch06Peek(h, cq)
			fmt.Fprintf(env.Log, "lap 2 begins: slot 0 still holds lap 1's entry (req_id %#x, status %d, phase %d); a driver that flipped its phase on the wrap expects 0 and leaves it alone\n",
				c.ReqID, c.Status, c.Phase)
		}
		before := len(posts.evs)
		err := dev.Wait(r)
		pd.DMASyncSingleForCPU(dst, n, kernel.DMAFromDevice)
		got := make([]byte, n)
		h.CPU.LoadBytes(dst, got)
		posted := len(posts.evs) > before
		switch {
		case err != nil:
			ch05TellStuck(env, h, r, err)
			return nil
		case !posted || !bytes.Equal(got, payload):
			fmt.Fprintf(env.Log, "job %d (req_id %#x) was reported done before the device had posted it (dst still holds %#02x bytes, want %#02x): the driver took an old entry for a new one\n",
				job, r.ReqID, got[0], payload[0])
			return nil
		}
		if slot == size-1 {
			fmt.Fprintf(env.Log, "lap %d: %s\n", lap, posts.lap())
		}
	}
	return nil
}

// ch06Peek reads a CQ entry the way the driver would, phase first.
func ch06Peek(h *host.Host, addr uint64) sacc.Completion {
	var c sacc.Completion
	c.Phase = uint8(h.CPU.Load16(addr+sacc.CplPhaseOff) & sacc.CplPhaseBit)
	h.CPU.RMB()
	c.ReqID = h.CPU.Load32(addr + sacc.CplReqIDOff)
	c.Status = sacc.Status(h.CPU.Load16(addr + sacc.CplStatusOff))
	return c
}

// ch06Log keeps the events of some kinds from the moment it is made.
type ch06Log struct {
	evs  []trace.Event
	next int // first event not yet summarised
	stop func()
}

func ch06Record(m *machine.Machine, kinds ...trace.Kind) *ch06Log {
	l := &ch06Log{}
	l.stop = m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		for _, k := range kinds {
			if ev.Kind == k {
				l.evs = append(l.evs, ev)
			}
		}
	}))
	return l
}

// lap summarises the completions posted since the last summary: which slots got
// which phase, and the flip at the wrap.
func (l *ch06Log) lap() string {
	var b bytes.Buffer
	for _, ev := range l.evs[l.next:] {
		switch ev.Kind {
		case trace.CQPost:
			fmt.Fprintf(&b, "slot %d phase %d, ", ev.Args[0], ev.Args[3])
		case trace.PhaseFlip:
			fmt.Fprintf(&b, "wrap: the device now writes phase %d", ev.Args[0])
		}
	}
	l.next = len(l.evs)
	return b.String()
}
