// Package cpu is the host CPU as the driver and user programs see it: costed loads
// and stores, a store buffer that barriers drain, MMIO and port I/O, a cache that is
// coherent with DMA or (optionally) not, and interrupts taken between operations.
//
// Go's own memory model would hide every ordering bug a driver can have, so this
// CPU makes ordering explicit. Plain stores to RAM wait in a store buffer and become
// visible to the device only when they drain. On x86 (TSO) they drain in program
// order, and every MMIO or port access drains them first, so a doorbell can never
// overtake a descriptor. On arm64 each buffered store lingers for a seeded random
// time and they drain in any order; only a barrier (wmb, mb) or writel's built-in
// barrier forces them out, and writel_relaxed does not. Loads are weak on arm64
// too: a load that directly follows another load, with no rmb or mb between, may
// be performed early and see memory as it was up to MaxHoist before, which is why
// a driver reads a completion's phase, then rmb, then its body. Driver code stays ordinary
// sequential Go: every operation charges its cost in virtual time, and the device's
// events that fall due in that time run before the operation returns.
package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Arch is a memory model.
type Arch uint8

const (
	X86   Arch = iota // total store order
	ARM64             // weak: stores drain in a seeded order
)

func (a Arch) String() string {
	if a == ARM64 {
		return "arm64"
	}
	return "x86"
}

// ParseArch reads "x86" or "arm64".
func ParseArch(s string) (Arch, error) {
	switch s {
	case "x86", "x86_64", "amd64":
		return X86, nil
	case "arm64", "aarch64":
		return ARM64, nil
	}
	return 0, fmt.Errorf("unknown CPU model %q (want x86 or arm64)", s)
}

// DefaultMaxHoist is how early, by default, an arm64 load that nothing orders may
// be performed: about one turn of a polling loop (a cached load and cpu_relax).
const DefaultMaxHoist sim.Time = 50

// Config chooses a CPU.
type Config struct {
	Arch Arch
	// NonCoherent gives the CPU a write-back cache that DMA does not snoop: the
	// device reads stale memory until the CPU cleans lines, and the CPU reads stale
	// lines until it invalidates them (dma_sync_*).
	NonCoherent bool
	// StoreBuffer is the number of stores that can wait; 0 means 56.
	StoreBuffer int
	// MaxLinger bounds how long an arm64 store may wait in the buffer; 0 means
	// four times the cost model's mmio_write, longer than a doorbell takes to
	// reach the device, so a store nothing orders may land after the fetch.
	MaxLinger sim.Time
	// NoSource records no source lines at all. Sources are only looked for
	// when an event goes to a sink that reads them, so this saves time only
	// beside such a sink (a ring recorder, a live session).
	NoSource bool
	// MaxHoist bounds how early an arm64 load may be performed ahead of its
	// place in the program when nothing orders it (a load right after another
	// load, no rmb between): 0 means 50 ns, about one turn of a polling loop.
	MaxHoist sim.Time
}

// Stats counts what the CPU did.
type Stats struct {
	Loads, Stores, MMIOReads, MMIOWrites, PortIO, Barriers, Interrupts uint64
	CacheMisses                                                        uint64
	// EarlyLoads counts loads that returned an older value because nothing
	// ordered them after the load before (arm64 without rmb).
	EarlyLoads uint64
}

type pendingStore struct {
	addr uint64
	size int
	val  uint64
	due  sim.Time // arm64: when it drains by itself
	pc   uintptr  // the code that made the store, for the event when it lands
}

// CPU is one host CPU attached to a machine.
type CPU struct {
	m     *machine.Machine
	cost  *sim.Cost
	cfg   Config
	rng   *rand.Rand
	trace *trace.Tracer

	sb    []pendingStore // program order
	cache cache

	irqHandler func(vector uint8) bool
	irqReturn  func()
	irqOn      bool
	inIRQ      bool

	stats    Stats
	accessor map[uintptr]bool // program counter → lies in an accessor (see begin)

	// Early loads (arm64): a load that directly follows another load, with no
	// rmb or mb between, may take the value memory had up to MaxHoist earlier.
	hoistRng    *rand.Rand
	lastWasLoad bool
	runStart    sim.Time // when the first load of the current run was issued
	lastOrder   sim.Time // when the last rmb or mb ran
}

// New attaches a CPU to m. Its random choices come from the machine's seed.
func New(m *machine.Machine, cfg Config) *CPU {
	if cfg.StoreBuffer <= 0 {
		cfg.StoreBuffer = 56
	}
	if cfg.MaxLinger == 0 {
		cfg.MaxLinger = max(4*m.Cost().MMIOWrite, 1)
	}
	if cfg.MaxHoist == 0 {
		cfg.MaxHoist = DefaultMaxHoist
	}
	c := &CPU{m: m, cost: m.Cost(), cfg: cfg, rng: m.Sim().Rand(), trace: m.Tracer(), accessor: map[uintptr]bool{}}
	c.trace.SetPCFinder(c.findSource)
	c.cache.init(cfg.NonCoherent)
	if cfg.Arch == ARM64 && !cfg.NonCoherent {
		c.cache.keepHistory = true
		// A stream of its own, so early loads never change the store-drain order
		// a seed gives.
		c.hoistRng = rand.New(rand.NewPCG(m.Sim().Seed(), 0x10AD_0F_0EA2))
	}
	m.Tracer().Attach(snoop{c})
	return c
}

// snoop is the bus as the cache sees it: in a coherent system a DMA write
// invalidates the lines it touches, so the next load misses. It asks the tracer
// for DMA writes alone, reads them in place and never their source, so it costs
// the other events nothing: a ring recorder beside it still builds them in place.
type snoop struct{ c *CPU }

func (s snoop) Record(ev *trace.Event) { s.c.cache.drop(ev.Args[1], ev.Args[2], ev.Time) }

// Wants makes the snoop a trace.KindSink: DMA writes, when DMA is coherent.
func (s snoop) Wants(k trace.Kind) bool { return k == trace.DMAWrite && !s.c.cfg.NonCoherent }

// IgnoresPC makes the snoop trace.PCBlind.
func (snoop) IgnoresPC() {}

// Machine is the machine the CPU drives.
func (c *CPU) Machine() *machine.Machine { return c.m }

// Arch is the CPU's memory model.
func (c *CPU) Arch() Arch { return c.cfg.Arch }

// NonCoherent reports whether DMA bypasses the CPU cache.
func (c *CPU) NonCoherent() bool { return c.cfg.NonCoherent }

// Stats returns the counters.
func (c *CPU) Stats() Stats { return c.stats }

// Now is the virtual time.
func (c *CPU) Now() sim.Time { return c.m.Now() }

// ---------------------------------------------------------------------------
// Time and interrupts

// begin marks the events of the operation under way as caused by its caller.
// Which line that is, the tracer asks findSource only when one of the
// operation's events needs it: most loads emit nothing, and walking the Go stack
// on every access was the largest cost of a run.
func (c *CPU) begin() {
	if c.cfg.NoSource {
		return
	}
	c.trace.DeferPC()
}

// findSource is the tracer's PC finder: it walks the Go stack from the code that
// is emitting an event (the tracer, the machine, a device the access reached)
// up to the CPU, then past the accessors (this package and thin wrappers such as
// iowrite32), to the code that asked for the access.
func (c *CPU) findSource() uintptr {
	// A few frames at a time: the walk costs by the frame, and the code behind
	// an access is usually within eight of the event.
	var pcs [8]uintptr
	skip := 2 // runtime.Callers and findSource
	belowCPU := true
	for {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			acc := c.isAccessor(pc)
			switch {
			case belowCPU:
				belowCPU = !acc
			case !acc:
				return pc
			}
		}
		if n < len(pcs) {
			return 0
		}
		skip += n
	}
}

// accessorPrefixes name the functions that only pass an access on: the CPU's own
// methods and the kernel's MMIO, configuration and user-memory wrappers.
var accessorPrefixes = []string{
	"github.com/saccbook/saccbook/sacc/cpu.",
	"github.com/saccbook/saccbook/sacc/kernel.(*IOMem).",
	"github.com/saccbook/saccbook/sacc/kernel.(*PCIDev).ReadConfig",
	"github.com/saccbook/saccbook/sacc/kernel.(*PCIDev).WriteConfig",
	"github.com/saccbook/saccbook/sacc/kernel.(*Process).Load",
	"github.com/saccbook/saccbook/sacc/kernel.(*Process).Store",
	"github.com/saccbook/saccbook/sacc/driver.(*Device).readReg",
	"github.com/saccbook/saccbook/sacc/driver.(*Device).writeReg",
	"github.com/saccbook/saccbook/sacc/kernel.(*Kernel).TraceDriverCQ",
	"github.com/saccbook/saccbook/sacc/kernel.(*Process).TraceDriverCQ",
}

// isAccessor reports whether pc lies in an accessor; answers are cached per pc.
func (c *CPU) isAccessor(pc uintptr) bool {
	if v, ok := c.accessor[pc]; ok {
		return v
	}
	name := ""
	if f := runtime.FuncForPC(pc - 1); f != nil {
		name = f.Name()
	}
	v := false
	for _, p := range accessorPrefixes {
		if strings.HasPrefix(name, p) {
			v = true
			break
		}
	}
	c.accessor[pc] = v
	return v
}

// end charges d and lets the machine run; interrupts are taken at this boundary.
//
// Every operation ends here, so the usual boundary — no store waiting, no
// interrupt pending — costs two tests, not two calls.
func (c *CPU) end(d sim.Time) {
	c.lastWasLoad = false
	c.trace.SetPC(0)
	c.m.Advance(d)
	if len(c.sb) > 0 {
		c.drainDue()
	}
	if c.m.Interrupts().Any() {
		c.takeInterrupts()
	}
}

// Tracepoint lets software above the CPU record what only it knows, as a
// Linux tracepoint does: emit runs at once, and its events carry the source line
// of the code that hit the tracepoint. It costs no virtual time.
func (c *CPU) Tracepoint(emit func(tr *trace.Tracer)) {
	saved := c.trace.SavePC()
	c.begin()
	emit(c.trace)
	c.trace.RestorePC(saved)
}

// SetIRQHandler installs the kernel's interrupt entry: it is called with the
// vector and reports whether a handler claimed it.
func (c *CPU) SetIRQHandler(h func(vector uint8) bool) { c.irqHandler = h }

// SetIRQReturn installs what the kernel runs when the CPU comes back from its
// interrupts to process context (the point where Linux's workers get the CPU).
func (c *CPU) SetIRQReturn(f func()) { c.irqReturn = f }

// EnableIRQs and DisableIRQs are local_irq_enable and local_irq_disable.
func (c *CPU) EnableIRQs() {
	c.irqOn = true
	c.takeInterrupts()
}

// DisableIRQs masks interrupts at the CPU.
func (c *CPU) DisableIRQs() { c.irqOn = false }

// IRQsEnabled reports whether the CPU takes interrupts.
func (c *CPU) IRQsEnabled() bool { return c.irqOn }

// InIRQ reports whether an interrupt handler is running.
func (c *CPU) InIRQ() bool { return c.inIRQ }

func (c *CPU) takeInterrupts() {
	if !c.irqOn || c.inIRQ || c.irqHandler == nil {
		return
	}
	took := false
	for {
		v, ok := c.m.Interrupts().Take()
		if !ok {
			break
		}
		c.stats.Interrupts++
		c.inIRQ = true
		c.trace.EmitIRQEntry(uint64(v))
		c.m.Advance(c.cost.InterruptEntry)
		handled := c.irqHandler(v)
		h := uint64(0)
		if handled {
			h = 1
		}
		c.trace.EmitIRQExit(uint64(v), h)
		c.inIRQ = false
		took = true
	}
	if took && c.irqReturn != nil {
		c.irqReturn()
	}
}

// Relax is cpu_relax(): a polling loop's pause.
func (c *CPU) Relax() { c.end(c.cost.CPURelax) }

// Idle halts until something happens or until the deadline, whichever comes
// first (the idle loop's hlt): the clock jumps to the next machine event.
func (c *CPU) Idle(until sim.Time) {
	now := c.m.Now()
	t := until
	if next, ok := c.m.Sim().Next(); ok && next < t {
		t = next
	}
	if t <= now {
		t = now + 1
	}
	c.end(t - now)
}

// Delay busy-waits ns nanoseconds (ndelay).
func (c *CPU) Delay(ns sim.Time) { c.end(ns) }

// ---------------------------------------------------------------------------
// RAM: loads and stores

func (c *CPU) isRAM(addr uint64, size int) bool { return c.m.RAM().Contains(addr, uint64(size)) }

// Load reads size bytes (1, 2, 4, 8) of RAM at addr. The CPU sees its own buffered
// stores; other loads come from the cache or from memory.
func (c *CPU) Load(addr uint64, size int) uint64 {
	c.begin()
	c.stats.Loads++
	if !c.isRAM(addr, size) {
		v := c.m.Read(addr, size) // not RAM: an uncached access
		c.end(c.cost.MMIORead)
		return v
	}
	if len(c.sb) > 0 {
		c.drainOverlapping(addr, size)
	}
	now := c.m.Now()
	v, miss := c.cache.load(c.m, addr, size)
	if !c.lastWasLoad {
		c.runStart = now // the first of a run of loads nothing orders among themselves
	} else if c.hoistRng != nil {
		// Nothing orders this load after the loads before it in the run: the CPU
		// may have performed it as early as the first of them, or up to MaxHoist
		// before that (while that one waited, or in a previous turn of a loop),
		// and then it sees memory as it was then.
		early := min(c.runStart, sim.Time(c.hoistRng.Uint64N(uint64(c.cfg.MaxHoist)+1)))
		at := max(c.runStart-early, c.lastOrder)
		if old, ok := c.cache.earlier(addr, size, at); ok && old != v {
			v = old
			c.stats.EarlyLoads++
		}
	}
	d := c.cost.MemoryPoll
	if miss {
		c.stats.CacheMisses++
		d = c.cost.CacheMissLoad
	}
	c.end(d)
	c.lastWasLoad = true
	return v
}

// Store writes size bytes of RAM at addr into the store buffer.
func (c *CPU) Store(addr uint64, size int, v uint64) {
	c.begin()
	c.stats.Stores++
	if !c.isRAM(addr, size) {
		c.drainAll() // not RAM: an uncached access, ordered like writel
		c.m.Write(addr, size, v)
		c.end(c.cost.MemoryStore)
		return
	}
	if len(c.sb) == c.cfg.StoreBuffer {
		c.drainOne()
	}
	ps := pendingStore{addr: addr, size: size, val: v, pc: c.trace.PC()}
	if c.cfg.Arch == ARM64 {
		ps.due = c.m.Now() + sim.Time(c.rng.Uint64N(uint64(c.cfg.MaxLinger)+1))
		// Stores to the same bytes stay in program order on every CPU (per-location
		// coherence): this one may not land before an older one it overlaps.
		for _, o := range c.sb {
			if overlaps(o, ps) && o.due > ps.due {
				ps.due = o.due
			}
		}
	}
	c.sb = append(c.sb, ps)
	c.trace.EmitCPUStore(addr, uint64(size), v, uint64(len(c.sb)))
	c.end(c.cost.MemoryStore)
}

// Load8 … Store64 are the usual widths.
func (c *CPU) Load8(addr uint64) uint8          { return uint8(c.Load(addr, 1)) }
func (c *CPU) Load16(addr uint64) uint16        { return uint16(c.Load(addr, 2)) }
func (c *CPU) Load32(addr uint64) uint32        { return uint32(c.Load(addr, 4)) }
func (c *CPU) Load64(addr uint64) uint64        { return c.Load(addr, 8) }
func (c *CPU) Store8(addr uint64, v uint8)      { c.Store(addr, 1, uint64(v)) }
func (c *CPU) Store16(addr uint64, v uint16)    { c.Store(addr, 2, uint64(v)) }
func (c *CPU) Store32(addr uint64, v uint32)    { c.Store(addr, 4, uint64(v)) }
func (c *CPU) Store64(addr uint64, v uint64)    { c.Store(addr, 8, v) }
func (c *CPU) LoadBytes(addr uint64, b []byte)  { c.loadBytes(addr, b) }
func (c *CPU) StoreBytes(addr uint64, b []byte) { c.storeBytes(addr, b) }

// loadBytes copies RAM into b eight bytes at a time (memcpy from memory).
func (c *CPU) loadBytes(addr uint64, b []byte) {
	for len(b) > 0 {
		n := sizeFor(min(len(b), 8-int(addr&7)))
		v := c.Load(addr, n)
		for i := range n {
			b[i] = byte(v >> (8 * i))
		}
		b, addr = b[n:], addr+uint64(n)
	}
}

// storeBytes copies b into RAM through the store buffer (memcpy to memory).
func (c *CPU) storeBytes(addr uint64, b []byte) {
	for len(b) > 0 {
		n := min(len(b), 8-int(addr&7))
		if n != 1 && n != 2 && n != 4 && n != 8 {
			n = 1
		}
		var v uint64
		for i := range n {
			v |= uint64(b[i]) << (8 * i)
		}
		c.Store(addr, n, v)
		b, addr = b[n:], addr+uint64(n)
	}
}

func sizeFor(n int) int {
	switch {
	case n >= 8:
		return 8
	case n >= 4:
		return 4
	case n >= 2:
		return 2
	}
	return 1
}

// ---------------------------------------------------------------------------
// The store buffer

// drainAll makes every buffered store visible, in program order.
func (c *CPU) drainAll() int {
	n := len(c.sb)
	for _, s := range c.sb {
		c.land(s)
	}
	c.sb = c.sb[:0]
	return n
}

// drainOne makes room: the oldest store on x86, a seeded choice on arm64.
func (c *CPU) drainOne() {
	i := 0
	if c.cfg.Arch == ARM64 {
		i = c.rng.IntN(len(c.sb))
	}
	c.drainAt(i)
}

func (c *CPU) drainAt(i int) {
	// An older store to the same bytes lands first (per-location coherence).
	for j := 0; j < i; j++ {
		if overlaps(c.sb[j], c.sb[i]) {
			c.drainAt(j)
			i--
			j--
		}
	}
	s := c.sb[i]
	c.sb = append(c.sb[:i], c.sb[i+1:]...)
	c.land(s)
}

func overlaps(a, b pendingStore) bool {
	return a.addr < b.addr+uint64(b.size) && b.addr < a.addr+uint64(a.size)
}

// land makes one buffered store visible, its event marked with the code that
// made the store.
func (c *CPU) land(s pendingStore) {
	saved := c.trace.SavePC()
	c.trace.SetPC(s.pc)
	c.cache.store(c.m, s.addr, s.size, s.val)
	c.trace.RestorePC(saved)
}

// drainDue lets arm64 stores whose time has come drain, earliest first. On x86
// stores drain at every operation boundary, in order: TSO keeps them in program
// order, and nothing observable happens between two operations.
func (c *CPU) drainDue() {
	if c.cfg.Arch == X86 {
		c.drainAll()
		return
	}
	now := c.m.Now()
	for {
		best := -1
		for i, s := range c.sb {
			if s.due <= now && (best < 0 || s.due < c.sb[best].due) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		c.drainAt(best)
	}
}

// drainOverlapping drains buffered stores that overlap a load, so the CPU reads
// its own writes (store-to-load forwarding, without splitting values).
func (c *CPU) drainOverlapping(addr uint64, size int) {
	for i := 0; i < len(c.sb); {
		s := c.sb[i]
		if s.addr < addr+uint64(size) && addr < s.addr+uint64(s.size) {
			c.drainAt(i)
			continue
		}
		i++
	}
}

// Pending is the number of stores still in the buffer.
func (c *CPU) Pending() int { return len(c.sb) }

// WMB is wmb(): every earlier store is visible before any later one.
func (c *CPU) WMB() { c.barrier(trace.BarrierWMB) }

// RMB is rmb(): later loads are not satisfied before earlier ones.
func (c *CPU) RMB() { c.barrier(trace.BarrierRMB) }

// MB is mb(): a full barrier.
func (c *CPU) MB() { c.barrier(trace.BarrierMB) }

func (c *CPU) barrier(op uint64) {
	c.begin()
	c.stats.Barriers++
	n := 0
	if op != trace.BarrierRMB {
		n = c.drainAll()
	}
	if op != trace.BarrierWMB {
		c.lastOrder = c.m.Now() // later loads are performed after this point
	}
	c.trace.EmitCPUBarrier(op, uint64(n))
	c.end(c.cost.Barrier)
}

// ---------------------------------------------------------------------------
// MMIO and port I/O

// mmioOrder applies the ordering an MMIO access has on this CPU: on x86 uncached
// accesses drain the store buffer; on arm64 only the non-relaxed writes do.
func (c *CPU) mmioOrder(barrier bool) {
	if c.cfg.Arch == X86 || barrier {
		if n := c.drainAll(); n > 0 && c.cfg.Arch == ARM64 {
			c.trace.EmitCPUBarrier(trace.BarrierWMB, uint64(n))
		}
	}
}

// Readl is readl()/ioread32(): a non-posted read; the CPU stalls for the round trip.
func (c *CPU) Readl(addr uint64) uint32 { return uint32(c.mmioRead(addr, 4)) }

// Readq reads 64 bits.
func (c *CPU) Readq(addr uint64) uint64 { return c.mmioRead(addr, 8) }

// Readw reads 16 bits (configuration space).
func (c *CPU) Readw(addr uint64) uint16 { return uint16(c.mmioRead(addr, 2)) }

// Readb reads 8 bits (configuration space).
func (c *CPU) Readb(addr uint64) uint8 { return uint8(c.mmioRead(addr, 1)) }

func (c *CPU) mmioRead(addr uint64, size int) uint64 {
	c.begin()
	c.stats.MMIOReads++
	c.mmioOrder(false)
	if r, _ := c.m.Decode(addr); r == machine.RegionBAR0 || r == machine.RegionBAR1 {
		// A read does not pass the posted writes before it to the same device
		// (PCIe ordering): the CPU stalls until they have landed, then makes its
		// round trip. This is why a read-back flushes a posted write.
		if t := c.m.PostedLanded(); t > c.m.Now() {
			c.m.RunUntil(t)
		}
	}
	v := c.m.Read(addr, size)
	d := c.cost.MMIORead
	if r, _ := c.m.Decode(addr); r == machine.RegionECAM {
		d = c.cost.ConfigAccess
	}
	c.end(d)
	return v
}

// Writel is writel()/iowrite32(): earlier stores are visible first (Linux's
// writel contains a wmb on weakly ordered CPUs), then one posted write, which
// reaches the device one mmio_write latency later; only a read from the device
// tells the CPU it has arrived.
func (c *CPU) Writel(addr uint64, v uint32) { c.mmioWrite(addr, 4, uint64(v), true) }

// WritelRelaxed is writel_relaxed(): no ordering against earlier stores to memory.
func (c *CPU) WritelRelaxed(addr uint64, v uint32) { c.mmioWrite(addr, 4, uint64(v), false) }

// Writeq writes 64 bits, ordered like Writel.
func (c *CPU) Writeq(addr uint64, v uint64) { c.mmioWrite(addr, 8, v, true) }

// Writew writes 16 bits (configuration space), ordered like Writel.
func (c *CPU) Writew(addr uint64, v uint16) { c.mmioWrite(addr, 2, uint64(v), true) }

// Writeb writes 8 bits, ordered like Writel.
func (c *CPU) Writeb(addr uint64, v uint8) { c.mmioWrite(addr, 1, uint64(v), true) }

func (c *CPU) mmioWrite(addr uint64, size int, v uint64, ordered bool) {
	c.begin()
	c.stats.MMIOWrites++
	c.mmioOrder(ordered)
	if r, _ := c.m.Decode(addr); r == machine.RegionECAM {
		c.m.Write(addr, size, v)
		c.end(c.cost.ConfigAccess) // configuration writes are non-posted
		return
	}
	// Posted: the CPU pays for issuing the write and moves on; the write reaches
	// the device mmio_write later, in order with the CPU's other MMIO writes.
	c.m.PostWrite(addr, size, v)
	c.end(c.cost.MMIOWriteIssue)
}

// Inl and Outl are port I/O (x86 in/out): serialising, like an MMIO read.
func (c *CPU) Inl(port uint16) uint32 { return c.portIn(port, 4) }

// Inw reads a 16-bit port.
func (c *CPU) Inw(port uint16) uint16 { return uint16(c.portIn(port, 2)) }

// Inb reads an 8-bit port.
func (c *CPU) Inb(port uint16) uint8 { return uint8(c.portIn(port, 1)) }

// Outl writes a 32-bit port.
func (c *CPU) Outl(port uint16, v uint32) { c.portOut(port, 4, v) }

// Outw writes a 16-bit port.
func (c *CPU) Outw(port uint16, v uint16) { c.portOut(port, 2, uint32(v)) }

// Outb writes an 8-bit port.
func (c *CPU) Outb(port uint16, v uint8) { c.portOut(port, 1, uint32(v)) }

func (c *CPU) portIn(port uint16, size int) uint32 {
	c.begin()
	c.stats.PortIO++
	c.drainAll()
	v := c.m.In(port, size)
	c.end(c.cost.PortIO)
	return v
}

func (c *CPU) portOut(port uint16, size int, v uint32) {
	c.begin()
	c.stats.PortIO++
	c.drainAll()
	c.m.Out(port, size, v)
	c.end(c.cost.PortIO)
}

// ---------------------------------------------------------------------------
// Cache maintenance for non-coherent DMA (what dma_sync_* does underneath)

// CleanRange writes dirty cache lines of [addr, addr+n) back to memory, so the
// device reads what the CPU wrote. It drains the store buffer first.
func (c *CPU) CleanRange(addr, n uint64) { c.cacheOp(trace.CacheClean, addr, n) }

// InvalidateRange drops the cache lines of [addr, addr+n), so the CPU's next loads
// read what the device wrote. Dirty data in those lines is lost, as on hardware.
func (c *CPU) InvalidateRange(addr, n uint64) { c.cacheOp(trace.CacheInvalidate, addr, n) }

// FlushRange cleans, then invalidates.
func (c *CPU) FlushRange(addr, n uint64) { c.cacheOp(trace.CacheFlush, addr, n) }

func (c *CPU) cacheOp(op uint64, addr, n uint64) {
	c.begin()
	c.drainAll()
	lines := 0
	if c.cfg.NonCoherent {
		if op == trace.CacheClean || op == trace.CacheFlush {
			lines += c.cache.clean(c.m, addr, n)
		}
		if op == trace.CacheInvalidate || op == trace.CacheFlush {
			lines += c.cache.invalidate(addr, n)
		}
	}
	c.trace.EmitCPUCache(op, addr, n, uint64(lines))
	c.end(c.cost.Barrier + sim.Time(lines)*c.cost.MemoryStore)
}

// SetUncached maps [addr, addr+n) uncached, as the kernel maps coherent DMA
// memory on a non-coherent system: accesses bypass the cache.
func (c *CPU) SetUncached(addr, n uint64) {
	c.cache.uncached = append(c.cache.uncached, span{addr, addr + n})
}

// ClearUncached undoes SetUncached for exactly that range.
func (c *CPU) ClearUncached(addr, n uint64) {
	for i, s := range c.cache.uncached {
		if s.lo == addr && s.hi == addr+n {
			c.cache.uncached = append(c.cache.uncached[:i], c.cache.uncached[i+1:]...)
			return
		}
	}
}
