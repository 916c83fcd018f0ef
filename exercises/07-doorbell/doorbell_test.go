package doorbell

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 1_000_000

// TestPublishesOnARM64 publishes five batches of two copies on an arm64 CPU,
// for five seeds, and checks that the device read every descriptor as it was
// written and that every copy arrived.
func TestPublishesOnARM64(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			publish(t, host.Config{Machine: machine.Config{Seed: seed}, CPU: cpu.Config{Arch: cpu.ARM64}}, "arm64", seed)
		})
	}
}

// TestPublishesOnX86: the same on x86, where the order is kept for free.
func TestPublishesOnX86(t *testing.T) {
	publish(t, host.Config{Machine: machine.Config{Seed: 1}}, "x86", 1)
}

func publish(t *testing.T, cfg host.Config, arch string, seed uint64) {
	const size = 8
	r := ringrig.Up(t, cfg, size)
	q := &Queue{SQ: r.SQ, Size: size}
	rd := ringrig.NewReader()
	id := uint32(0)
	for batch := range 5 { // ten descriptors in an 8-slot ring: the tail wraps
		var descs []sacc.Descriptor
		var dsts []uint64
		var want [][]byte
		for range 2 {
			payload := bytes.Repeat([]byte{byte(0x10 + id)}, 64)
			src := r.Buffer(t, payload)
			dst := r.Buffer(t, make([]byte, 64))
			descs = append(descs, sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 64, ReqID: id})
			dsts, want = append(dsts, dst), append(want, payload)
			id++
		}
		first := q.Tail
		mark := r.Mark()
		var err error
		r.Do(fmt.Sprintf("Publish (batch %d)", batch+1), budget, func() { err = Publish(r.CPU, r.Regs, q, descs) })
		if err != nil {
			r.Fatalf("Publish returned an error: %v", err)
		}
		got := 0
		r.Until(50_000, 200, func() bool {
			for {
				if _, ok := rd.Next(r); !ok {
					return got == len(descs)
				}
				got++
			}
		})
		r.Regs.Writel(sacc.RegCQHead, rd.Head)
		evs := r.Since(mark)
		if halt := check.Find(evs, trace.DeviceError); len(halt) > 0 {
			r.Fatalf("The device halted with error %#x after the doorbell: a tail must be a slot number, 0 to %d.", halt[0].Args[0], size-1)
		}
		if bells := check.Find(evs, trace.Doorbell); len(bells) != 1 {
			r.Fatalf("Publish of %d descriptors rang the doorbell %d times; want one doorbell per Publish, after all the descriptors.", len(descs), len(bells))
		}
		if late, bell, _ := ringrig.LateStores(evs, q.SQ, size, first, uint32(len(descs))); len(late) > 0 {
			r.Fatalf("On %s (seed %d) the doorbell reached the device while the descriptor's stores were still in the store buffer: "+
				"the CPU issued it\n  %s\nbut %d stores into the batch's slots landed only after that, the first:\n  %s\n"+
				"writel_relaxed orders nothing, and a barrier after the doorbell comes too late: put c.WMB() after the last "+
				"descriptor store and before the doorbell (§7.4).",
				arch, seed, bell, len(late), late[0])
		}
		seen := check.Find(evs, trace.Descriptor)
		for i, d := range descs {
			if i >= len(seen) {
				r.Fatalf("The device fetched %d descriptors after the doorbell; you published %d.", len(seen), len(descs))
			}
			ev := seen[i]
			if ev.Args[0] != uint64(d.ReqID) || ev.Args[1] != uint64(d.Opcode) || ev.Args[2] != uint64(d.Length) {
				r.Fatalf("On %s (seed %d) the device read %s req_id %#x length %d from slot %d, but you published MEMCPY req_id %#x length %d there: "+
					"the doorbell reached the device while the descriptor's stores were still in the store buffer. writel_relaxed orders nothing: "+
					"put c.WMB() after the last descriptor store and before the doorbell (§7.4).",
					arch, seed, sacc.OpName(uint16(ev.Args[1])), ev.Args[0], ev.Args[2], (first+uint32(i))%size, d.ReqID, d.Length)
			}
			var b [64]byte
			r.M.RAM().Read(dsts[i], b[:])
			if !bytes.Equal(b[:], want[i]) {
				r.Fatalf("The device read req_id %#x correctly, but its destination holds % x, want % x: were src and dst stored at offsets 0 and 8 of the slot?",
					d.ReqID, b[:8], want[i][:8])
			}
		}
	}
}
