package qtest

import (
	"encoding/binary"
	"math"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// fakeMachine stands in for *machine.Machine: sparse byte memory, ports that read back
// the last value written to them, and a real sim.Sim clock with a few queued events.
// Addresses from unmapped upward read as all ones in all 64 bits, whatever the size,
// so that tests can see the session truncate a machine's answer to the access width.
type fakeMachine struct {
	sim   *sim.Sim
	tr    *trace.Tracer
	pages map[uint64]*[4096]byte
	ports map[uint16]uint32

	outs    []portOut   // every Out call
	writes  []memWrite  // every Write call
	fired   []sim.Time  // when each queued event ran
	maxBulk int         // longest slice handed to ReadBytes or WriteBytes
	panics  interface{} // if non-nil, Read panics with it
}

const unmapped = 0xF000_0000_0000_0000

type portOut struct {
	port uint16
	size int
	val  uint32
}

type memWrite struct {
	addr uint64
	size int
	val  uint64
}

// newFake returns a fake with events queued at the given times.
func newFake(events ...sim.Time) *fakeMachine {
	s := sim.New(1)
	f := &fakeMachine{sim: s, tr: trace.NewTracer(s), pages: map[uint64]*[4096]byte{}, ports: map[uint16]uint32{}}
	for _, t := range events {
		s.Schedule(t, f, 0, 0, 0)
	}
	return f
}

func (f *fakeMachine) HandleEvent(ev sim.Event) { f.fired = append(f.fired, ev.At) }

func (f *fakeMachine) byteAt(a uint64) byte {
	if a >= unmapped {
		return 0xFF
	}
	if p := f.pages[a/4096]; p != nil {
		return p[a%4096]
	}
	return 0
}

func (f *fakeMachine) setByte(a uint64, v byte) {
	if a >= unmapped {
		return
	}
	p := f.pages[a/4096]
	if p == nil {
		if v == 0 {
			return
		}
		p = new([4096]byte)
		f.pages[a/4096] = p
	}
	p[a%4096] = v
}

func (f *fakeMachine) Read(addr uint64, size int) uint64 {
	if f.panics != nil {
		panic(f.panics)
	}
	var v uint64
	if addr >= unmapped {
		v = math.MaxUint64
	} else {
		var b [8]byte
		f.ReadBytes(addr, b[:size])
		v = binary.LittleEndian.Uint64(b[:])
	}
	f.tr.EmitCPURead(addr, uint64(size), v)
	return v
}

func (f *fakeMachine) Write(addr uint64, size int, val uint64) {
	f.writes = append(f.writes, memWrite{addr, size, val})
	for i := 0; i < size; i++ {
		f.setByte(addr+uint64(i), byte(val>>(8*i)))
	}
	f.tr.EmitCPUWrite(addr, uint64(size), val)
}

func (f *fakeMachine) ReadBytes(addr uint64, b []byte) {
	f.maxBulk = max(f.maxBulk, len(b))
	for i := range b {
		b[i] = f.byteAt(addr + uint64(i))
	}
}

func (f *fakeMachine) WriteBytes(addr uint64, b []byte) {
	f.maxBulk = max(f.maxBulk, len(b))
	for i, c := range b {
		f.setByte(addr+uint64(i), c)
	}
}

// In returns the whole 32-bit value last written to the port, whatever the size, so
// that tests see the session truncate it.
func (f *fakeMachine) In(port uint16, size int) uint32 {
	v := f.ports[port]
	f.tr.EmitPortIn(uint64(port), uint64(size), uint64(v))
	return v
}

func (f *fakeMachine) Out(port uint16, size int, val uint32) {
	f.outs = append(f.outs, portOut{port, size, val})
	f.ports[port] = val
	f.tr.EmitPortOut(uint64(port), uint64(size), uint64(val))
}

func (f *fakeMachine) Now() sim.Time         { return f.sim.Now() }
func (f *fakeMachine) Step() bool            { return f.sim.Step() }
func (f *fakeMachine) RunUntil(t sim.Time)   { f.sim.RunUntil(t) }
func (f *fakeMachine) Tracer() *trace.Tracer { return f.tr }

var _ Machine = (*fakeMachine)(nil)
