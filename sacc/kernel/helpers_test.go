package kernel_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/host/hosttest"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/trace"
)

const pg = sacc.PageSize

// bare boots the kernel without the SACC driver and returns the SACC function.
func bare(t *testing.T, cfg host.Config) (*host.Host, *kernel.PCIDev) {
	t.Helper()
	cfg.NoDriver = true
	h := hosttest.Boot(t, cfg)
	devs := h.K.Devices()
	if len(devs) != 1 {
		t.Fatalf("%d PCI devices, want 1", len(devs))
	}
	return h, devs[0]
}

// record collects trace events of the given kinds until the test ends.
func record(t *testing.T, h *host.Host, kinds ...trace.Kind) *[]trace.Event {
	t.Helper()
	var evs []trace.Event
	detach := h.M.Tracer().Attach(trace.Func(func(ev trace.Event) {
		for _, k := range kinds {
			if ev.Kind == k {
				evs = append(evs, ev)
			}
		}
	}))
	t.Cleanup(detach)
	return &evs
}

func ramBytes(h *host.Host, addr, n uint64) []byte {
	b := make([]byte, n)
	h.M.RAM().Read(addr, b)
	return b
}

// leaf is the IOMMU's leaf entry for iova as the tables say now (0 when any
// level is not present).
func leaf(h *host.Host, iova uint64) sacc.PTE {
	steps := h.M.IOMMU().Walk(iova)
	if len(steps) != sacc.IOPTLevels {
		return 0
	}
	return steps[sacc.IOPTLevels-1].Entry
}

// inIOTLB reports whether the IOTLB caches the page of iova.
func inIOTLB(h *host.Host, iova uint64) bool {
	for _, e := range h.M.IOMMU().IOTLB() {
		if e.IOVAPage == iova&^sacc.PageMask {
			return true
		}
	}
	return false
}

// pattern is n recognisable bytes.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>8)
	}
	return b
}

// doMemcpy has the driver run one MEMCPY between DMA addresses and wait for it.
func doMemcpy(h *host.Host, src, dst uint64, n uint32, irq bool) (*driver.Request, error) {
	r := &driver.Request{Opcode: sacc.OpMEMCPY, Src: src, Dst: dst, Length: n, IRQ: irq}
	return r, h.Dev.Do(r)
}
