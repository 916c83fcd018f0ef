package scenario

import (
	"bytes"
	"fmt"
	"io"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Chapter 07, Ordering and coherency: the write barrier before the doorbell on a
// weakly ordered CPU, and cache maintenance when DMA does not see the CPU cache.

var (
	_ = register(Scenario{Chapter: 7, Primary: true, Name: "barriers",
		Summary: "the same eight copies with and without wmb before the doorbell, on x86 and on arm64",
		Options: []Option{cpuOption("arm64"),
			{Name: "wmb", Doc: "the driver's wmb before the doorbell", Default: "on", Values: values("on", "off")}},
		Quirks: []quirk.Quirk{quirk.MissingWMB},
		Run:    Barriers})
	_ = register(Scenario{Chapter: 7, Name: "dma-sync",
		Summary: "a CPU whose cache DMA does not see: copies with and without dma_sync_single_for_device and dma_sync_single_for_cpu",
		Options: []Option{{Name: "coherent", Doc: "DMA sees the CPU's cache", Default: "no", Values: values("no", "yes")}},
		Run:     DMASync})
)

// ch07Copies is how many copies each configuration runs.
const ch07Copies = 8

// Barriers runs eight copies on the chosen CPU with or without the barrier, shows
// what the device read for each one, then compares all four configurations.
func Barriers(m *machine.Machine, env *Env) error {
	arch, err := cpu.ParseArch(env.Option("cpu", "arm64"))
	if err != nil {
		return err
	}
	wmb := env.Option("wmb", "on")
	if wmb != "on" && wmb != "off" {
		return fmt.Errorf("wmb=%s: want on or off", wmb)
	}
	seen := ch06Record(m, trace.Descriptor)
	ok, err := ch07Run(m, env, arch, wmb == "on", seen)
	seen.stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "%s, wmb %s: %d of %d copies arrived\n", arch, wmb, ok, ch07Copies)

	// The other three configurations, each on a fresh machine with the same seed.
	var table []string
	for _, a := range []cpu.Arch{cpu.X86, cpu.ARM64} {
		for _, w := range []bool{true, false} {
			n := ok
			if a != arch || w != (wmb == "on") {
				mm, err := machine.New(m.Config())
				if err != nil {
					return err
				}
				if n, err = ch07Run(mm, &Env{Log: io.Discard}, a, w, nil); err != nil {
					return err
				}
			}
			table = append(table, fmt.Sprintf("%s wmb %s %d/%d", a, map[bool]string{true: "on", false: "off"}[w], n, ch07Copies))
		}
	}
	fmt.Fprintf(env.Log, "all four (seed %d): %s, %s, %s, %s\n", m.Config().Seed, table[0], table[1], table[2], table[3])
	return nil
}

// ch07Run boots a driver with or without the barrier on m and copies eight
// buffers of distinct bytes. With a log of descriptor events it says what the
// device read instead of each copy that went wrong.
func ch07Run(m *machine.Machine, env *Env, arch cpu.Arch, wmb bool, seen *ch06Log) (int, error) {
	mc := m.Config()
	cfg := host.Config{Machine: mc, CPU: cpu.Config{Arch: arch}, Driver: driver.Config{RingSize: 8, Timeout: 20_000}}
	cfg.Kernel.Quirks = mc.Quirks
	if !wmb {
		cfg.Kernel.Quirks = cfg.Kernel.Quirks.With(quirk.MissingWMB)
	}
	h, err := host.BootOn(m, cfg)
	if seen != nil {
		env.Host = h
	}
	if err != nil {
		return 0, err
	}
	ok := 0
	for i := range ch07Copies {
		payload := bytes.Repeat([]byte{byte(i + 1)}, 64)
		src, err := kernelBuffer(h, payload)
		if err != nil {
			return 0, err
		}
		dst, err := kernelBuffer(h, make([]byte, 64))
		if err != nil {
			return 0, err
		}
		var first int
		if seen != nil {
			first = len(seen.evs)
		}
		r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: 64}
		err = h.Dev.Do(r)
		got := make([]byte, 64)
		h.CPU.LoadBytes(dst, got)
		if err == nil && bytes.Equal(got, payload) {
			ok++
			continue
		}
		if seen == nil {
			continue
		}
		read := "nothing"
		if len(seen.evs) > first {
			ev := seen.evs[first]
			read = fmt.Sprintf("%s req_id %#x length %d", sacc.OpName(uint16(ev.Args[1])), ev.Args[0], ev.Args[2])
		}
		fmt.Fprintf(env.Log, "copy %d (MEMCPY req_id %#x): the device read %s: the doorbell overtook the descriptor\n", i+1, r.ReqID, read)
	}
	return ok, nil
}

// DMASync runs three copies on a CPU whose cache DMA does not snoop: the data the
// CPU writes has to be cleaned out to memory before the device reads it, and the
// CPU's cached copy of a buffer has to be dropped before it reads what the device
// wrote.
func DMASync(m *machine.Machine, env *Env) error {
	coherent := env.Option("coherent", "no")
	if coherent != "no" && coherent != "yes" {
		return fmt.Errorf("coherent=%s: want no or yes", coherent)
	}
	cfg := host.Config{Machine: m.Config(), CPU: cpu.Config{Arch: cpu.ARM64, NonCoherent: coherent == "no"}, Driver: driver.Config{RingSize: 8}}
	h, err := boot(m, env, cfg)
	if err != nil {
		return err
	}
	pd := h.Dev.PCI()
	kind := "DMA does not snoop the CPU cache"
	if coherent == "yes" {
		kind = "DMA is coherent: the syncs find nothing to do"
	}
	fmt.Fprintf(env.Log, "arm64, %s\n", kind)
	const n = 64
	for i, c := range []struct{ forDevice, forCPU bool }{{false, true}, {true, false}, {true, true}} {
		src, err := h.K.AllocPages(n)
		if err != nil {
			return err
		}
		dst, err := h.K.AllocPages(n)
		if err != nil {
			return err
		}
		sd, err := pd.DMAMapSingle(src, n, kernel.DMAToDevice)
		if err != nil {
			return err
		}
		dd, err := pd.DMAMapSingle(dst, n, kernel.DMAFromDevice)
		if err != nil {
			return err
		}
		// The buffer is filled after it was mapped, as a driver that reuses a
		// mapping does: the bytes sit in the CPU's cache.
		payload := bytes.Repeat([]byte{0xA0 + byte(i)}, n)
		h.CPU.StoreBytes(src, payload)
		_ = h.CPU.Load64(dst) // the CPU has looked at dst: its line is in the cache
		if c.forDevice {
			pd.DMASyncSingleForDevice(sd, n, kernel.DMAToDevice)
		}
		if err := h.Dev.Do(&driver.Request{Opcode: sacc.OpMEMCPY, Src: sd, Dst: dd, Length: n}); err != nil {
			return err
		}
		var inRAM [1]byte
		m.RAM().Read(dst, inRAM[:])
		if c.forCPU {
			pd.DMASyncSingleForCPU(dd, n, kernel.DMAFromDevice)
		}
		seen := h.CPU.Load8(dst)
		verdict := "right"
		switch {
		case inRAM[0] != payload[0]:
			verdict = "wrong: the device read memory, and the bytes were still in the CPU's cache"
		case seen != payload[0]:
			verdict = "wrong: memory is right, but the CPU read its own stale cache line"
		}
		fmt.Fprintf(env.Log, "copy %d: sync for device %s, sync for CPU %s: the device wrote %#02x, the CPU reads %#02x, want %#02x: %s\n",
			i+1, ch07OnOff(c.forDevice), ch07OnOff(c.forCPU), inRAM[0], seen, payload[0], verdict)
		pd.DMAUnmapSingle(dd, n, kernel.DMAFromDevice)
		pd.DMAUnmapSingle(sd, n, kernel.DMAToDevice)
	}
	return nil
}

func ch07OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
