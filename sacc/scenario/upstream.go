package scenario

import (
	"errors"
	"fmt"
	"io"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/sim"
)

// Upstream SACC's own driver (github.com/jnros/sacc, driver/sacc.c) brought up on
// this machine: its probe step by step as upstream writes it, which never sets
// CTRL.ENABLE. The machine's profile decides what the device makes of that; the
// story then says what the other profile makes of it too.

var _ = register(Scenario{
	Name: "upstream-bringup",
	Summary: "upstream SACC's own driver: 64-entry rings, one NOP, the doorbell with ENABLE never set; " +
		"it completes on --profile upstream-v0.1 and halts v1 with device error 4",
	Run: UpstreamBringUp,
})

// The shape of upstream's bring-up.
const (
	upstreamDepth  = 64     // SQ and CQ entries
	upstreamPolls  = 1000   // READ_ONCE of the phase, at most this many times
	upstreamPollNS = 10_000 // udelay(10) between two of them
	upstreamReqID  = 1
)

var errUpstreamTimeout = errors.New("timed out waiting for the completion")

// upstreamDriver is upstream's driver as far as it goes: one device, its two
// rings, one NOP. Like upstream's, its error paths give nothing back.
type upstreamDriver struct {
	log        io.Writer // the story, told as the probe goes
	c          *cpu.CPU
	regs       *kernel.IOMem
	sqCPU      uint64
	cqCPU      uint64
	sqDMA      uint64
	cqDMA      uint64
	doorbellAt sim.Time // when the SQ_TAIL write was issued
	foundAt    sim.Time // when the poll saw the new phase
	polls      int
	cpl        sacc.Completion
}

// probe is upstream's sacc_pci_probe, step by step.
func (u *upstreamDriver) probe(d *kernel.PCIDev) error {
	d.Info("sacc: probe detected, initializing...")
	if err := d.EnableDevice(); err != nil { // pci_enable_device
		return err
	}
	if err := d.RequestRegions("sacc"); err != nil { // pci_request_region(pdev, 0, "sacc")
		return err
	}
	regs, err := d.IOMap(0) // pci_iomap
	if err != nil {
		return err
	}
	u.regs = regs
	if magic := regs.Readl(sacc.RegMAGIC); magic != sacc.MagicValue {
		return fmt.Errorf("bad magic num, expected 0x%08X got 0x%08X", sacc.MagicValue, magic)
	}
	d.Info("magic BAR validated 0x%08X, initializing...", uint32(sacc.MagicValue))
	if err := d.DMASetMaskAndCoherent(kernel.DMABitMask(64)); err != nil {
		return err
	}
	d.SetMaster()
	if u.sqCPU, u.sqDMA, err = d.DMAAllocCoherent(upstreamDepth * sacc.DescriptorSize); err != nil {
		return err
	}
	if u.cqCPU, u.cqDMA, err = d.DMAAllocCoherent(upstreamDepth * sacc.CompletionSize); err != nil {
		return err
	}
	fmt.Fprintf(u.log, "upstream's driver, as driver/sacc.c writes it, probes %s (upstream's run_qemu.sh puts the device behind a root port, at 0000:%02x:%02x.%d)\n",
		d.Name(), sacc.UpstreamBus, sacc.UpstreamDevice, sacc.UpstreamFunction)
	fmt.Fprintf(u.log, "%d-entry rings from dma_alloc_coherent (SQ at dma %#x, CQ at dma %#x), DMA mask 64 bits, bus mastering on\n",
		upstreamDepth, u.sqDMA, u.cqDMA)

	// The rings, one iowrite32 per register, then a read back so that the posted
	// writes have reached the device. CTRL is never written.
	regs.Writel(sacc.RegSQBaseLo, uint32(u.sqDMA))
	regs.Writel(sacc.RegSQBaseHi, uint32(u.sqDMA>>32))
	regs.Writel(sacc.RegSQSize, upstreamDepth)
	regs.Writel(sacc.RegCQBaseLo, uint32(u.cqDMA))
	regs.Writel(sacc.RegCQBaseHi, uint32(u.cqDMA>>32))
	regs.Writel(sacc.RegCQSize, upstreamDepth)
	regs.Readl(sacc.RegCQSize)
	fmt.Fprintf(u.log, "ring registers written with iowrite32 and read back to flush the posted writes; CTRL is never written, so ENABLE stays 0\n")

	// One NOP in slot 0 and the doorbell. There is no wmb before it, and on Linux
	// none is needed: iowrite32 is writel, which orders the stores before it.
	var desc [sacc.DescriptorSize]byte
	sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: upstreamReqID}.Encode(desc[:])
	u.c.StoreBytes(u.sqCPU, desc[:])
	fmt.Fprintf(u.log, "one NOP (req_id %d) in slot 0, then iowrite32(1) to SQ_TAIL at BAR0 + 0x1000 with no wmb before it: iowrite32 orders the descriptor's stores itself\n", upstreamReqID)
	u.doorbellAt = u.c.Now()
	regs.Writel(sacc.RegSQTail, 1)

	// Poll slot 0's phase: READ_ONCE, udelay(10), at most 1000 times.
	for u.polls = 1; ; u.polls++ {
		if u.c.Load16(u.cqCPU+sacc.CplPhaseOff)&sacc.CplPhaseBit == 1 { // READ_ONCE
			u.foundAt = u.c.Now()
			break
		}
		if u.polls == upstreamPolls {
			d.Info("timeout waiting for NOP completion")
			return errUpstreamTimeout
		}
		u.c.Delay(upstreamPollNS) // udelay(10)
	}
	u.c.RMB() // dma_rmb: the entry's fields after its phase
	var b [sacc.CompletionSize]byte
	u.c.LoadBytes(u.cqCPU, b[:])
	u.cpl = sacc.DecodeCompletion(b[:])
	regs.Writel(sacc.RegCQHead, 1)
	d.Info("NOP complete: req_id %d, status %d", u.cpl.ReqID, u.cpl.Status)
	return nil
}

// upstreamBringUp boots the kernel without saccbook's driver and loads
// upstream's, which tells log what it does; it returns the driver and what
// loading it returned.
func upstreamBringUp(m *machine.Machine, log io.Writer) (*host.Host, *upstreamDriver, error, error) {
	h, err := host.BootOn(m, host.Config{Machine: m.Config(), NoDriver: true})
	if err != nil {
		return h, nil, nil, err
	}
	u := &upstreamDriver{log: log, c: h.CPU}
	probeErr := h.K.RegisterDriver(&kernel.PCIDriver{
		Name: "sacc", IDs: []kernel.DeviceID{{Vendor: sacc.VendorID, Device: sacc.DeviceID}},
		Probe: u.probe,
	})
	return h, u, probeErr, nil
}

// UpstreamBringUp runs upstream's driver on the machine's profile, says what the
// device made of it, and what the other profile makes of the same driver.
func UpstreamBringUp(m *machine.Machine, env *Env) error {
	log := env.Log
	prof := m.Config().Profile
	h, u, probeErr, err := upstreamBringUp(m, log)
	env.Host = h
	if err != nil {
		return err
	}
	st := m.Device().State()
	tellUpstream(log, prof, u, probeErr, st.Status, st.ErrCode)

	// The other profile, the same driver, on a machine of its own: only what it
	// came to is told.
	other := profile.UpstreamV01()
	if prof.Engine == profile.EngineUpstreamV01 {
		other = profile.V1()
	}
	cfg := m.Config()
	cfg.Profile = other
	om, err := machine.New(cfg)
	if err != nil {
		return err
	}
	_, ou, oerr, err := upstreamBringUp(om, io.Discard)
	if err != nil {
		return err
	}
	ost := om.Device().State()
	fmt.Fprintf(log, "the same driver on --profile %s (run it with that flag for its trace):\n", other.Name)
	tellUpstream(indented{log}, other, ou, oerr, ost.Status, ost.ErrCode)
	return nil
}

// tellUpstream says what one profile's device made of the bring-up.
func tellUpstream(log io.Writer, prof profile.Profile, u *upstreamDriver, probeErr error, status, errCode uint32) {
	if probeErr == nil {
		fmt.Fprintf(log, "%s: the completion (req_id %#x, status %d, phase %d) was there at poll %d, %d ns after the doorbell was issued\n",
			prof.Name, u.cpl.ReqID, u.cpl.Status, u.cpl.Phase, u.polls, u.foundAt-u.doorbellAt)
		fmt.Fprintf(log, "%s: STATUS reads %#x and ERR_CODE %d: nothing asked for READY and nothing went wrong; CQ_HEAD = 1 written at 0x30\n",
			prof.Name, status, errCode)
		if prof.Engine == profile.EngineUpstreamV01 {
			fmt.Fprintf(log, "%s: upstream's device ran the whole ring inside the doorbell write, with no ENABLE to wait for\n", prof.Name)
		}
		return
	}
	fmt.Fprintf(log, "%s: the probe failed: %v\n", prof.Name, probeErr)
	if status&sacc.StatusError != 0 {
		fmt.Fprintf(log, "%s: the doorbell came while STATUS.READY was 0: device error %d (%v), STATUS %#x; the device stays halted until RESET (§7.6)\n",
			prof.Name, errCode, sacc.Status(errCode), status)
	}
	if errors.Is(probeErr, errUpstreamTimeout) {
		fmt.Fprintf(log, "%s: the driver polled the phase %d times, %d µs apart, and gave up; v1 wants CTRL.ENABLE and then STATUS.READY before the first doorbell (§7.5)\n",
			prof.Name, u.polls, upstreamPollNS/1000)
	}
}

// indented writes each line it is given two spaces in.
type indented struct{ w io.Writer }

func (i indented) Write(b []byte) (int, error) {
	if _, err := io.WriteString(i.w, "  "+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
