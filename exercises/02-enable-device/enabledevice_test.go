package enabledevice

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/device"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how long the watchdog lets Start run: far past ReadyTimeout, so
// only a wait without a deadline meets it.
const budget sim.Time = 20_000_000 // 20 ms

// ringSize is the number of entries in each ring the tests allocate.
const ringSize = 8

// rig is a booted machine with BAR0 mapped and two rings allocated, the state a
// driver's probe is in just before it starts the device.
type rig struct {
	*check.Machine
	regs  *kernel.IOMem
	rings Rings
}

// setUp boots a machine whose cost model has the given enable latency (0: the
// default, 2 µs).
func setUp(t *testing.T, enableLatency sim.Time) *rig {
	cfg := host.Config{}
	if enableLatency != 0 {
		cfg.Machine = machine.Config{Cost: check.Cost(t, fmt.Sprintf("enable_latency=%d", enableLatency))}
	}
	m := check.Boot(t, cfg)
	devs := m.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("check: the kernel found %d PCI functions, want 1", len(devs))
	}
	pdev := devs[0]
	if err := pdev.EnableDevice(); err != nil {
		t.Fatalf("check: pci_enable_device: %v", err)
	}
	pdev.SetMaster()
	regs, err := pdev.IOMap(0)
	if err != nil {
		t.Fatalf("check: pci_iomap: %v", err)
	}
	_, sq, err := pdev.DMAAllocCoherent(ringSize * sacc.DescriptorSize)
	if err != nil {
		t.Fatalf("check: allocate the SQ: %v", err)
	}
	_, cq, err := pdev.DMAAllocCoherent(ringSize * sacc.CompletionSize)
	if err != nil {
		t.Fatalf("check: allocate the CQ: %v", err)
	}
	return &rig{Machine: m, regs: regs, rings: Rings{SQBase: sq, SQSize: ringSize, CQBase: cq, CQSize: ringSize}}
}

// start runs the learner's Start and returns its error and what the device saw
// while it ran.
func (r *rig) start(rings Rings) ([]trace.Event, error) {
	var err error
	mark := r.Mark()
	r.Do("Start", budget, func() { err = Start(r.CPU, r.regs, rings) })
	return r.Since(mark), err
}

func (r *rig) state() device.State { return r.M.Device().State() }

// timeOf is the time of the first event of kind k, if there is one.
func timeOf(evs []trace.Event, k trace.Kind) (sim.Time, bool) {
	if e := check.Find(evs, k); len(e) > 0 {
		return e[0].Time, true
	}
	return 0, false
}

// order explains, if the device saw ENABLE before the ring registers were all
// written, what it saw instead.
func order(evs []trace.Event) string {
	enabled := false
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.RegWrite && ev.Args[0] == sacc.RegCTRL && ev.Args[2]&sacc.CtrlEnable != 0:
			enabled = true
		case ev.Kind == trace.RegWrite && enabled && isRingRegister(uint32(ev.Args[0])):
			return fmt.Sprintf("The device saw CTRL.ENABLE before the ring registers were all written: %s came after it.\n"+
				"While ENABLE is 1 the ring registers cannot change (§5), and ENABLE itself is refused unless they "+
				"already hold a valid configuration (§7.5). The register writes the device saw, in order:\n%s",
				sacc.RegName(uint32(ev.Args[0])), check.Lines(check.Find(evs, trace.RegWrite)))
		}
	}
	return ""
}

func isRingRegister(off uint32) bool {
	switch off {
	case sacc.RegSQBaseLo, sacc.RegSQBaseHi, sacc.RegSQSize, sacc.RegCQBaseLo, sacc.RegCQBaseHi, sacc.RegCQSize:
		return true
	}
	return false
}

// refused lists accesses the device turned away as the wrong width.
func refused(evs []trace.Event) string {
	var bad []trace.Event
	for _, ev := range check.Find(evs, trace.GuestError) {
		if ev.Args[2] == trace.ErrWidth {
			bad = append(bad, ev)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("\nThe device refused %d accesses as the wrong width (every register access is 32 bits, "+
		"or 64 bits at SQ_BASE and CQ_BASE, §5):\n%s", len(bad), check.Lines(bad))
}

// ringsProgrammed compares the ring registers with what Start was given.
func (r *rig) ringsProgrammed(want Rings) string {
	st := r.state()
	var bad []string
	if st.SQBase != want.SQBase {
		bad = append(bad, fmt.Sprintf("SQ_BASE holds %#x, want %#x", st.SQBase, want.SQBase))
	}
	if st.SQSize != want.SQSize {
		bad = append(bad, fmt.Sprintf("SQ_SIZE holds %d, want %d", st.SQSize, want.SQSize))
	}
	if st.CQBase != want.CQBase {
		bad = append(bad, fmt.Sprintf("CQ_BASE holds %#x, want %#x", st.CQBase, want.CQBase))
	}
	if st.CQSize != want.CQSize {
		bad = append(bad, fmt.Sprintf("CQ_SIZE holds %d, want %d", st.CQSize, want.CQSize))
	}
	return strings.Join(bad, "\n")
}

// checkStarted is what every successful start must show: no error, the rings
// in the registers, ENABLE set, and READY already 1 when Start returned.
func (r *rig) checkStarted(err error, evs []trace.Event, latency string) {
	if o := order(evs); o != "" {
		r.Fatalf("%s", o)
	}
	if err != nil {
		r.Fatalf("Start returned an error: %v\nThe rings are valid and the device becomes READY %s after ENABLE: "+
			"Start should have waited for it and returned nil.%s", err, latency, refused(evs))
	}
	if bad := r.ringsProgrammed(r.rings); bad != "" {
		r.Fatalf("After Start the ring registers do not hold the rings Start was given:\n%s%s", bad, refused(evs))
	}
	enabledAt, ok := timeOf(evs, trace.Enable)
	if !ok {
		r.Fatalf("Start returned nil, but the device never saw CTRL.ENABLE set.%s", refused(evs))
	}
	if r.state().Status&sacc.StatusReady == 0 {
		readyAt := "it has not happened yet"
		if t, ok := timeOf(evs, trace.Ready); ok {
			readyAt = fmt.Sprintf("at t=%d ns", t)
		}
		r.Fatalf("Start returned nil at t=%d ns, %s after ENABLE was set, but the device becomes READY %s after ENABLE (%s): "+
			"the device was not ready when Start said it was.\nREADY never comes at the same instant as ENABLE (§7.5): "+
			"keep reading STATUS until bit 0 is 1.", r.M.Now(), check.Duration(r.M.Now()-enabledAt), latency, readyAt)
	}
}

func TestStartEnablesTheDevice(t *testing.T) {
	r := setUp(t, 0)
	evs, err := r.start(r.rings)
	r.checkStarted(err, evs, "2 µs (the default enable latency)")
	if s := refused(evs); s != "" {
		r.Errorf("Start worked, but not every access was clean.%s", s)
	}
	if g := check.Find(evs, trace.GuestError, trace.EnableRefused); len(g) > 0 {
		r.Errorf("Start worked, but the device logged these along the way:\n%s", check.Lines(g))
	}
}

func TestStartWaitsForASlowDevice(t *testing.T) {
	const latency = 60_000
	r := setUp(t, latency)
	evs, err := r.start(r.rings)
	r.checkStarted(err, evs, "60 µs (this machine's enable latency: a slow device)")
}

func TestStartWritesEveryRingRegister(t *testing.T) {
	r := setUp(t, 0)
	// An earlier driver left its own configuration behind, high halves included.
	for _, w := range [][2]uint32{{sacc.RegSQBaseLo, 0x5000}, {sacc.RegSQBaseHi, 0x1}, {sacc.RegSQSize, 64},
		{sacc.RegCQBaseLo, 0x9000}, {sacc.RegCQBaseHi, 0x2}, {sacc.RegCQSize, 64}} {
		r.regs.Writel(w[0], w[1])
	}
	evs, err := r.start(r.rings)
	if o := order(evs); o != "" {
		r.Fatalf("%s", o)
	}
	if bad := r.ringsProgrammed(r.rings); bad != "" {
		r.Fatalf("An earlier driver left SQ_BASE = 0x100005000, CQ_BASE = 0x200009000 and sizes of 64 in the registers.\n"+
			"After Start the ring registers do not hold the rings Start was given:\n%s\n"+
			"Every ring register must be written, the high halves at 0x14 and 0x24 too.%s", bad, refused(evs))
	}
	r.checkStarted(err, evs, "2 µs (the default enable latency)")
}

func TestStartStopsWhenEnableIsRefused(t *testing.T) {
	r := setUp(t, 0)
	bad := r.rings
	bad.SQSize = 3 // not a power of two: §7.5 refuses ENABLE
	evs, err := r.start(bad)
	refusedAt, ok := timeOf(evs, trace.EnableRefused)
	if !ok {
		if o := order(evs); o != "" {
			r.Fatalf("%s", o)
		}
		r.Fatalf("Start was given an SQ of 3 entries (not a power of two), but the device never saw ENABLE with that configuration "+
			"(there is no sacc_enable_refused event). Write the rings exactly as given, then set ENABLE.%s", refused(evs))
	}
	if err == nil {
		r.Fatalf("Start was given an SQ of 3 entries. The device refused ENABLE at t=%d ns (STATUS.ERROR set, ERR_CODE %d), "+
			"yet Start returned nil. A refused ENABLE is an error: check STATUS bit 1 (ERROR) while you wait.",
			refusedAt, sacc.StatusRingConfig)
	}
	if waited := r.M.Now() - refusedAt; waited > ReadyTimeout/4 {
		r.Fatalf("Start returned an error, but it kept waiting for %s after the device refused ENABLE (STATUS.ERROR was set at t=%d ns). "+
			"READY will never come once STATUS.ERROR is 1: check bit 1 of STATUS on every poll and stop at once.",
			check.Duration(waited), refusedAt)
	}
	if !strings.Contains(err.Error(), "6") {
		r.Errorf("Start returned %q. The device says why it refused in ERR_CODE (0x3C), which reads 6 here "+
			"(invalid ring configuration, §8): put it in the error, so whoever reads the log knows.", err)
	}
}

func TestStartGivesUpOnADeadDevice(t *testing.T) {
	const latency = 10_000_000 // 10 ms: far past ReadyTimeout
	r := setUp(t, latency)
	evs, err := r.start(r.rings)
	enabledAt, ok := timeOf(evs, trace.Enable)
	if !ok {
		r.Fatalf("Start never set CTRL.ENABLE.%s", refused(evs))
	}
	waited := r.M.Now() - enabledAt
	if err == nil {
		r.Fatalf("This device takes 10 ms to become READY, far past ReadyTimeout (%s). Start returned nil after %s: "+
			"it should have given up and returned an error once ReadyTimeout had passed.",
			check.Duration(ReadyTimeout), check.Duration(waited))
	}
	if waited > 2*ReadyTimeout {
		r.Fatalf("Start gave up, but not before %s after ENABLE; ReadyTimeout is %s. Measure the deadline in time (c.Now()), "+
			"not in a number of polls.", check.Duration(waited), check.Duration(ReadyTimeout))
	}
}
