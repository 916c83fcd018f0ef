package scenario

import (
	"fmt"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// Chapter 11, when things go wrong: a job that fails, and a device that stops.

var _ = register(Scenario{
	Chapter: 11, Primary: true, Name: "errors",
	Summary: "per-command errors (bad opcode, bad length, bad address) that the device reports and survives; a device error that halts it, the error vector, reset and recovery",
	Options: []Option{{Name: "errvec", Doc: "the error vector's mask", Default: "on", Values: values("on", "masked")}},
	Quirks:  []quirk.Quirk{quirk.DoorbellOutOfRange, quirk.SkipBusMaster},
	Run:     Errors,
})

// ch11Timeout is how long the driver waits for a completion before it looks
// at STATUS (polling mode finds a halted device only this way).
const ch11Timeout = 50_000

// ch11Regs reads STATUS and ERR_CODE the way a driver does: two MMIO reads.
func ch11Regs(h *host.Host) (status, errCode uint32) {
	bar0 := h.Dev.PCI().BAR[0].Start
	return h.CPU.Readl(bar0 + sacc.RegSTATUS), h.CPU.Readl(bar0 + sacc.RegErrCode)
}

// ch11Do runs one request and says how it ended, without giving up on error.
func ch11Do(h *host.Host, env *Env, what string, r *driver.Request) {
	start := h.M.Now()
	err := h.Dev.Do(r)
	took := h.M.Now() - start
	switch {
	case r.Err != nil:
		fmt.Fprintf(env.Log, "%s: no completion, %v (after %d ns)\n", what, r.Err, took)
	case err != nil && r.Done:
		st, code := ch11Regs(h)
		fmt.Fprintf(env.Log, "%s: completed with status %d (%v); STATUS %#x, ERR_CODE %#x\n", what, r.Status, r.Status, st, code)
	case err != nil:
		fmt.Fprintf(env.Log, "%s: %v (after %d ns)\n", what, err, took)
	default:
		fmt.Fprintf(env.Log, "%s: OK in %d ns\n", what, took)
	}
}

// Errors shows both kinds of error of §7.6 through the driver.
func Errors(m *machine.Machine, env *Env) error {
	cfg := host.Config{Machine: m.Config(), Kernel: kernel.Config{IOMMU: true},
		Driver: driver.Config{RingSize: 8, Timeout: ch11Timeout, Interrupts: true}}
	masked := false
	switch env.Option("errvec", "on") {
	case "on":
	case "masked":
		masked = true
	default:
		return fmt.Errorf("errvec=%s: want on or masked", env.Option("errvec", ""))
	}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	const irq = true
	pd := h.Dev.PCI()
	if masked {
		// Vector 1's control word in the MSI-X table (BAR1): bit 0 masks it.
		h.CPU.Writel(pd.BAR[1].Start+uint64(sacc.MSIXVectorError)*16+12, 1)
	}
	fmt.Fprintf(env.Log, "driver up: %d-entry rings, a %d µs deadline on every wait, IOMMU on, interrupts on: vector 0 for completions, vector 1 for device errors%s\n",
		h.Dev.RingSize(), ch11Timeout/1000, map[bool]string{true: " (vector 1 masked)", false: ""}[masked])

	src, err := h.K.AllocPages(64 << 10) // zeroed pages
	if err != nil {
		return err
	}
	dst, err := h.K.AllocPages(64 << 10)
	if err != nil {
		return err
	}
	sd, err := pd.DMAMapSingle(src, 64<<10, kernel.DMAToDevice)
	if err != nil {
		return err
	}
	dd, err := pd.DMAMapSingle(dst, 64<<10, kernel.DMAFromDevice)
	if err != nil {
		return err
	}

	// 1. Per-command errors: the device completes the command with an error
	// status, records the code in ERR_CODE, and carries on.
	ch11Do(h, env, "NOP", &driver.Request{Opcode: sacc.OpNOP, IRQ: irq})
	ch11Do(h, env, "opcode 0x0105 (reserved)", &driver.Request{Opcode: 0x0105, IRQ: irq})
	ch11Do(h, env, "MEMCPY of 0 bytes", &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: 0, IRQ: irq})
	ch11Do(h, env, "MEMCPY of 2 MiB", &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: 2 << 20, IRQ: irq})
	ch11Do(h, env, "MEMCPY from unmapped dma 0x90000000", &driver.Request{Opcode: sacc.OpMEMCPY, Src: 0x9000_0000, Dst: dd, Length: 64, IRQ: irq})
	ch09DrainFaults(h, env.Log)
	ch11Do(h, env, "NOP after four failed commands", &driver.Request{Opcode: sacc.OpNOP, IRQ: irq})

	// 2. A device error: with a 64 KiB copy in flight, a buggy write puts 200 in
	// SQ_TAIL of an 8-entry ring. The device halts.
	big := &driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: 64 << 10, IRQ: irq}
	if err := h.Dev.Submit(big); err != nil {
		return err
	}
	// Interrupts off at the CPU for a moment (as under spin_lock_irqsave), so
	// the two register reads see the halted device before the handler runs.
	h.CPU.DisableIRQs()
	bad := h.M.Now()
	h.CPU.Writel(pd.BAR[0].Start+sacc.RegSQTail, 200)
	st, code := ch11Regs(h)
	fmt.Fprintf(env.Log, "SQ_TAIL = 200 written with a 64 KiB copy in flight: STATUS %#x (ERROR), ERR_CODE %#x (%v), PBA %#x\n",
		st, code, sacc.Status(code), h.CPU.Readl(pd.BAR[1].Start+sacc.MSIXPBAOffset))
	h.CPU.EnableIRQs()
	err = h.Dev.Wait(big)
	fmt.Fprintf(env.Log, "the copy in flight: %v\n", err)
	fmt.Fprintf(env.Log, "the driver noticed and reset the device %d ns after the bad write\n", h.M.Now()-bad)
	st, code = ch11Regs(h)
	fmt.Fprintf(env.Log, "after recovery: STATUS %#x (READY), ERR_CODE %#x; resets so far: %d\n", st, code, h.Dev.Stats.Resets)
	ch11Do(h, env, "the copy, submitted again", big)

	// 3. Business as usual: more jobs than the ring has slots.
	ok := 0
	for range 10 {
		if h.Dev.Do(&driver.Request{Opcode: sacc.OpNOP, IRQ: irq}) == nil {
			ok++
		}
	}
	fmt.Fprintf(env.Log, "10 NOPs: %d OK; resets in total: %d\n", ok, h.Dev.Stats.Resets)
	pd.DMAUnmapSingle(dd, 64<<10, kernel.DMAFromDevice)
	pd.DMAUnmapSingle(sd, 64<<10, kernel.DMAToDevice)
	return nil
}
