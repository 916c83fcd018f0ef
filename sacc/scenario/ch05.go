package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 05, Rings: head and tail, wrap, full versus empty, and the flow
// control that CQ_HEAD gives the device.

var (
	_ = register(Scenario{Chapter: 5, Primary: true, Name: "rings",
		Summary: "one ring, three laps: the tail wraps, a full ring keeps one slot empty, CQ_HEAD hands completion slots back",
		Options: []Option{{Name: "size", Doc: "slots in each ring", Default: "8", Values: values("4", "8", "16")}},
		Quirks:  []quirk.Quirk{quirk.FullIsTailEqHead, quirk.NoCQHead},
		Run:     Rings})
	_ = register(Scenario{Chapter: 5, Name: "cq-stall",
		Summary: "a driver that never writes CQ_HEAD: the device stalls after CQ_SIZE − 1 completions, and one CQ_HEAD write sets it going again",
		Run:     CQStall})
)

// Rings pushes three laps' worth of NOPs through rings of the chosen size, as
// fast as the driver can: each doorbell hands over as many descriptors as fit.
func Rings(m *machine.Machine, env *Env) error {
	size, err := strconv.ParseUint(env.Option("size", "8"), 10, 32)
	if err != nil || (size != 4 && size != 8 && size != 16) {
		return fmt.Errorf("size=%s: want 4, 8 or 16", env.Option("size", ""))
	}
	cfg := host.Config{Machine: m.Config(), Driver: driver.Config{RingSize: uint32(size), Timeout: 50_000}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	dev := h.Dev
	st := m.Device().State()
	fmt.Fprintf(env.Log, "rings of %d slots: SQ at %#x (%d bytes each), CQ at %#x (%d bytes each); at most %d jobs in flight, one slot stays empty\n",
		size, st.SQBase, sacc.DescriptorSize, st.CQBase, sacc.CompletionSize, size-1)

	heads := ch05Count(m, trace.CQHeadWrite)
	defer heads.stop()
	jobs := 3 * int(size)
	reqs := make([]*driver.Request, jobs)
	for i := range reqs {
		reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
	}
	start := m.Now()
	for sent, bell := 0, 1; sent < jobs; bell++ {
		from := m.Device().State().SQTail
		k, err := dev.SubmitBatch(reqs[sent:])
		if err != nil && !errors.Is(err, driver.ErrRingFull) {
			return err
		}
		// The doorbell is a posted write still on its way: the tail it carries is
		// the old one plus the descriptors queued, modulo the ring size.
		to := (from + uint32(k)) % uint32(size)
		fill := "room left"
		if errors.Is(err, driver.ErrRingFull) {
			fill = "ring full"
		}
		fmt.Fprintf(env.Log, "doorbell %d: SQ_TAIL %d -> %d, %d descriptors in slots %s (%s)\n",
			bell, from, to, k, ch05SlotSpan(from, k, uint32(size)), fill)
		sent += k
		if k == 0 {
			return fmt.Errorf("the driver queued nothing with %d jobs in flight", dev.InFlight())
		}
		if err := dev.Wait(reqs[sent-1]); err != nil {
			ch05TellStuck(env, h, reqs[sent-1], err)
			return nil
		}
	}
	st = m.Device().State()
	fmt.Fprintf(env.Log, "%d jobs in %d ns: the SQ tail went round %d times; %d CQ_HEAD writes gave the slots back (CQ_HEAD now %d)\n",
		jobs, m.Now()-start, jobs/int(size), heads.n, st.CQHead)
	return nil
}

// CQStall runs a driver that consumes completions but never writes CQ_HEAD: the
// device believes the CQ is filling up, and stops fetching when one slot is left.
// Then the scenario writes the missing CQ_HEAD itself.
func CQStall(m *machine.Machine, env *Env) error {
	mc := m.Config()
	cfg := host.Config{Machine: mc, Driver: driver.Config{RingSize: 8, Timeout: 20_000}}
	cfg.Kernel.Quirks = mc.Quirks.With(quirk.NoCQHead)
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	dev := h.Dev
	reqs := make([]*driver.Request, 10)
	for i := range reqs {
		reqs[i] = &driver.Request{Opcode: sacc.OpNOP}
	}
	k, err := dev.SubmitBatch(reqs)
	if err != nil && !errors.Is(err, driver.ErrRingFull) {
		return err
	}
	if err := dev.Wait(reqs[k-1]); err != nil {
		ch05TellStuck(env, h, reqs[k-1], err)
		return nil
	}
	st := m.Device().State()
	fmt.Fprintf(env.Log, "%d jobs done; the driver consumed their completions but never wrote CQ_HEAD: the device still sees CQ tail %d, head %d\n",
		k, st.CQTail, st.CQHead)

	rest := reqs[k:]
	n, err := dev.SubmitBatch(rest)
	if err != nil || n != len(rest) {
		return fmt.Errorf("queue the last %d jobs: %d queued, %v", len(rest), n, err)
	}
	last := rest[len(rest)-1]
	if err := dev.Wait(last); !errors.Is(err, driver.ErrTimeout) {
		fmt.Fprintf(env.Log, "%d more jobs: expected a stall, got %v\n", n, err)
		return nil
	}
	st = m.Device().State()
	fmt.Fprintf(env.Log, "%d more jobs: doorbell SQ_TAIL %d, but (CQ tail %d + 1) mod %d = CQ head %d: the CQ is full, the device fetches nothing (stalled %v)\n",
		n, st.SQTail, st.CQTail, st.CQSize, st.CQHead, st.Stalled)

	// The one line the driver is missing: hand the consumed slots back.
	regs, err := dev.PCI().IOMap(0)
	if err != nil {
		return err
	}
	at := m.Now()
	regs.Writel(sacc.RegCQHead, st.CQTail)
	if err := dev.Wait(last); err != nil {
		ch05TellStuck(env, h, last, err)
		return nil
	}
	fmt.Fprintf(env.Log, "the scenario writes CQ_HEAD = %d: the device resumes by itself, no new doorbell; the %d waiting jobs completed %d ns later\n",
		st.CQTail, n, last.Completed-at)
	return nil
}

// ch05SlotSpan names k slots from first on a ring of size, showing the wrap:
// "7, 0-5".
func ch05SlotSpan(first uint32, k int, size uint32) string {
	if k == 0 {
		return "none"
	}
	span := func(a, b uint32) string {
		if a == b {
			return strconv.Itoa(int(a))
		}
		return fmt.Sprintf("%d-%d", a, b)
	}
	last := (first + uint32(k) - 1) % size
	if first+uint32(k) <= size {
		return span(first, last)
	}
	return span(first, size-1) + ", " + span(0, last)
}

// ch05TellStuck explains a request that never completed: what the device's indices
// say, which is where a learner looks first.
func ch05TellStuck(env *Env, h *host.Host, r *driver.Request, err error) {
	st := h.M.Device().State()
	fmt.Fprintf(env.Log, "req_id %#x never completed (%v): device SQ head %d tail %d, CQ tail %d head %d, phase %d, stalled %v, IRQ_STATUS %#x, PBA %#x\n",
		r.ReqID, err, st.SQHead, st.SQTail, st.CQTail, st.CQHead, st.Phase, st.Stalled, st.IRQStatus, st.PBA)
	for _, l := range h.K.Log() {
		if strings.Contains(l.Text, "unknown req_id") {
			fmt.Fprintf(env.Log, "dmesg at %d ns: %s\n", l.Time, l.Text)
			break
		}
	}
}

// ch05Counter counts trace events of one kind from the moment it is made.
type ch05Counter struct {
	n    int
	stop func()
}

func ch05Count(m *machine.Machine, k trace.Kind) *ch05Counter {
	c := &ch05Counter{}
	c.stop = m.Tracer().Attach(trace.Func(func(ev trace.Event) {
		if ev.Kind == k {
			c.n++
		}
	}))
	return c
}
