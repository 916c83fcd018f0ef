package recoverrequests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const (
	budget sim.Time = 20_000_000 // 20 ms: far past ReadyTimeout
	size            = 8
	jobs            = 5
	length          = 64 << 10 // each copy takes the device about 40 µs
)

// scenario is a device that halted with requests in flight.
type scenario struct {
	*ringrig.Rig
	q        *Queue
	all      []*Request // every request submitted, in order
	read     int        // how many the driver had taken before the halt
	unread   int        // how many completed before the halt, unread
	src, dst uint64
}

// halt builds it: the rings start at slot start; five copies are submitted;
// the driver takes the first read completions; once read+unread have completed,
// a stray doorbell (SQ_TAIL 200) halts the device.
func halt(t *testing.T, start uint32, read, unread int) *scenario {
	r := ringrig.Up(t, host.Config{}, size)
	rd := ringrig.NewReader()
	for range start {
		r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: 0xFFFF})
		if !r.Until(50_000, 200, func() bool { _, ok := rd.Next(r); return ok }) {
			t.Fatal("check: a NOP did not complete")
		}
		r.Regs.Writel(sacc.RegCQHead, rd.Head)
	}
	s := &scenario{Rig: r, read: read, unread: unread}
	var err error
	if s.src, err = r.K.AllocPages(jobs * length); err != nil {
		t.Fatal(err)
	}
	if s.dst, err = r.K.AllocPages(jobs * length); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(jobs) {
		r.M.RAM().Fill(s.src+i*length, length, byte(0x31+i))
	}
	s.q = &Queue{SQ: r.SQ, CQ: r.CQ, Size: size, Head: rd.Head, Phase: rd.Phase}
	for i := range uint64(jobs) {
		d := sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: s.src + i*length, Dst: s.dst + i*length, Length: length, ReqID: 0x500 + uint32(i)}
		r.NextID = d.ReqID
		r.Submit(d)
		req := &Request{Desc: d}
		s.all = append(s.all, req)
		s.q.InFlight = append(s.q.InFlight, req)
	}
	s.q.Tail = r.Tail
	if !r.Until(1_000_000, 200, func() bool { return r.State().CQTail == (start+uint32(read+unread))%size }) {
		t.Fatalf("check: %d copies did not complete", read+unread)
	}
	for range read {
		c, _ := rd.Next(r)
		s.q.InFlight[0].Done, s.q.InFlight[0].Status = true, c.Status
		s.q.InFlight = s.q.InFlight[1:]
	}
	s.q.Head, s.q.Phase = rd.Head, rd.Phase
	r.Regs.Writel(sacc.RegCQHead, rd.Head)
	r.Regs.Writel(sacc.RegSQTail, 200) // out of range: the device halts
	r.CPU.Delay(1_000)
	if st := r.State(); st.Status&sacc.StatusError == 0 || st.CQTail != (start+uint32(read+unread))%size {
		t.Fatalf("check: the device did not halt as planned: %+v", st)
	}
	return s
}

func ids(reqs []*Request) string {
	var out []string
	for _, r := range reqs {
		out = append(out, fmt.Sprintf("%#x", r.Desc.ReqID))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// recoverAndFinish runs the learner's Recover, checks what it left, lets the
// resubmitted requests complete, and checks that every request ran once.
func (s *scenario) recoverAndFinish() {
	r, q := s.Rig, s.q
	where := fmt.Sprintf("The device halted with %d of %d copies done: %d taken by the driver, %d completed but unread; "+
		"the CQ head was at slot %d.", s.read+s.unread, jobs, s.read, s.unread, q.Head)
	var err error
	r.Do("Recover", budget, func() { err = Recover(r.CPU, r.Regs, q) })
	if err != nil {
		r.Fatalf("%s\nRecover returned an error: %v", where, err)
	}
	st := r.State()
	if st.Status&sacc.StatusReady == 0 || st.Status&sacc.StatusError != 0 {
		r.Fatalf("%s\nRecover returned nil, but STATUS reads %#x: the device is not READY (a RESET, the ring registers again, "+
			"ENABLE, and a wait for READY).", where, st.Status)
	}
	for i, req := range s.all {
		switch {
		case i < s.read+s.unread && (!req.Done || req.Status != sacc.StatusOK):
			r.Fatalf("%s\nRequest req_id %#x had completed (status OK) before the halt, but after Recover it is Done %v, status %v: "+
				"take the completions the CQ holds, from q.Head with q.Phase, before anything else.", where, req.Desc.ReqID, req.Done, req.Status)
		case i >= s.read+s.unread && req.Done:
			r.Fatalf("%s\nRequest req_id %#x never completed, yet after Recover it is marked Done: only a completion in the CQ "+
				"says a request is done.", where, req.Desc.ReqID)
		}
	}
	want := s.all[s.read+s.unread:]
	if ids(q.InFlight) != ids(want) {
		r.Fatalf("%s\nAfter Recover q.InFlight is %s; want %s: the requests that did not complete, in their order.",
			where, ids(q.InFlight), ids(want))
	}
	if q.Tail != uint32(len(want))%size || q.Head != 0 || q.Phase != 1 {
		r.Fatalf("%s\nAfter Recover q.Tail, q.Head and q.Phase are %d, %d and %d; want %d, 0 and 1: after RESET the device "+
			"starts again at slot 0 with phase 1, and the %d requests go in from slot 0.", where, q.Tail, q.Head, q.Phase, len(want)%size, len(want))
	}
	// The resubmitted requests complete, in order, from CQ slot 0.
	rd := ringrig.NewReader()
	var got []string
	r.Until(2_000_000, 500, func() bool {
		for {
			c, ok := rd.Next(r)
			if !ok {
				return len(got) >= len(want)
			}
			got = append(got, fmt.Sprintf("%#x", c.ReqID))
		}
	})
	if strings.Join(got, " ") != strings.TrimSuffix(strings.TrimPrefix(ids(want), "["), "]") {
		r.Fatalf("%s\nAfter Recover the CQ, read from slot 0 with phase 1, gave req_ids [%s]; want %s, each once. "+
			"An old entry left in the CQ looks new to the driver, and a descriptor left out is never run.",
			where, strings.Join(got, " "), ids(want))
	}
	// Each request ran to completion on the device exactly once.
	posts := map[uint32]int{}
	for _, ev := range check.Find(r.Events(), trace.CQPost) {
		posts[uint32(ev.Args[1])]++
	}
	for _, req := range s.all {
		if n := posts[req.Desc.ReqID]; n != 1 {
			r.Fatalf("%s\nThe device completed request req_id %#x %d times; want exactly once: a request that completed before "+
				"the halt must not run again, and one that did not must run once more.", where, req.Desc.ReqID, n)
		}
	}
	for i := range uint64(jobs) {
		if b := r.M.RAM().Load(s.dst+i*length, 1); b != 0x31+i {
			r.Fatalf("%s\nEvery request completed, but copy %d's destination starts with %#x, not %#x.", where, i, b, 0x31+i)
		}
	}
}

func TestSomeCompletedUnread(t *testing.T) {
	halt(t, 0, 0, 2).recoverAndFinish()
}

func TestSomeTakenSomeUnreadAcrossTheWrap(t *testing.T) {
	// The copies sit in slots 6, 7, 0, 1, 2: the unread completions cross the
	// CQ's wrap, where the phase flips.
	halt(t, 6, 1, 2).recoverAndFinish()
}

func TestNoneCompleted(t *testing.T) {
	halt(t, 3, 0, 0).recoverAndFinish()
}

func TestAllCompleted(t *testing.T) {
	halt(t, 5, 2, 3).recoverAndFinish()
}
