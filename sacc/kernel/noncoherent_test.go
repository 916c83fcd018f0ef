package kernel_test

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/trace"
)

func nonCoherent(arch cpu.Arch, iommu bool) host.Config {
	return host.Config{CPU: cpu.Config{NonCoherent: true, Arch: arch}, Kernel: kernel.Config{IOMMU: iommu}}
}

var ncCases = []struct {
	name  string
	arch  cpu.Arch
	iommu bool
}{
	{"x86", cpu.X86, false},
	{"arm64", cpu.ARM64, false},
	{"arm64+iommu", cpu.ARM64, true},
}

func TestCoherentMemoryIsUncachedOnANonCoherentCPU(t *testing.T) {
	for _, tc := range ncCases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			c := h.CPU
			coh, _, err := d.DMAAllocCoherent(pg)
			if err != nil {
				t.Fatal(err)
			}
			cached, _ := h.K.AllocPages(pg)
			c.Store32(coh+0x40, 0x1111_2222)
			c.Store32(cached+0x40, 0x3333_4444)
			c.WMB() // drain the store buffer
			if v := h.M.RAM().Load(coh+0x40, 4); v != 0x1111_2222 {
				t.Errorf("coherent store not in RAM after the store buffer drained: %#x", v)
			}
			if v := h.M.RAM().Load(cached+0x40, 4); v != 0 {
				t.Errorf("a cached store reached RAM without a clean: %#x (the test assumes a write-back cache)", v)
			}
			// The device's writes are seen at once too.
			h.M.RAM().Store(coh+0x80, 4, 0xDEAD_BEEF)
			if v := c.Load32(coh + 0x80); v != 0xDEAD_BEEF {
				t.Errorf("CPU reads %#x from coherent memory the device wrote", v)
			}
			if c.Load32(coh+0x80) != 0xDEAD_BEEF || c.Load32(coh+0xC0) != 0 {
				t.Error("coherent reads")
			}
			h.M.RAM().Store(coh+0x80, 4, 0xFEED_F00D)
			if v := c.Load32(coh + 0x80); v != 0xFEED_F00D {
				t.Errorf("a second device write is hidden by a cached line: %#x", v)
			}
		})
	}
}

func TestDMAMapSingleCleansForTheDevice(t *testing.T) {
	for _, tc := range ncCases {
		for _, dir := range []kernel.Direction{kernel.DMAToDevice, kernel.DMABidirectional, kernel.DMAFromDevice} {
			t.Run(tc.name+"/"+dir.String(), func(t *testing.T) {
				h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
				c := h.CPU
				buf, _ := h.K.AllocPages(2 * pg)
				data := pattern(int(pg+0x100), 5)
				c.StoreBytes(buf, data)
				c.WMB()
				if bytes.Equal(ramBytes(h, buf, uint64(len(data))), data) {
					t.Fatal("the data reached RAM without a clean")
				}
				evs := record(t, h, trace.CPUCache)
				dma := mapSingle(t, d, buf, uint64(len(data)), dir)
				cleaned := bytes.Equal(ramBytes(h, buf, uint64(len(data))), data)
				if want := dir != kernel.DMAFromDevice; cleaned != want {
					t.Fatalf("after map %v: data in RAM %v, want %v", dir, cleaned, want)
				}
				var cleans []trace.Event
				for _, ev := range *evs {
					if ev.Args[0] == trace.CacheClean {
						cleans = append(cleans, ev)
					}
				}
				wantCleans := 0
				if dir != kernel.DMAFromDevice {
					wantCleans = 1
				}
				if len(cleans) != wantCleans || (wantCleans == 1 && (cleans[0].Args[1] != buf || cleans[0].Args[2] != uint64(len(data)))) {
					t.Fatalf("cache cleans %v, want %d of [%#x, +%#x)", cleans, wantCleans, buf, len(data))
				}
				d.DMAUnmapSingle(dma, uint64(len(data)), dir)
			})
		}
	}
}

func TestDMASyncSingleForCPUInvalidates(t *testing.T) {
	for _, tc := range ncCases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			c := h.CPU
			buf, _ := h.K.AllocPages(pg)
			dma := mapSingle(t, d, buf, pg, kernel.DMAFromDevice)
			if c.Load64(buf+8) != 0 { // the line is now cached
				t.Fatal("fresh buffer not zero")
			}
			h.M.RAM().Store(buf+8, 8, 0x0123_4567_89AB_CDEF) // the device writes memory
			if v := c.Load64(buf + 8); v != 0 {
				t.Fatalf("CPU sees %#x before any sync: the cache should be stale (non-coherent)", v)
			}
			// Syncing for the device, or a to-device buffer for the CPU, does not invalidate.
			d.DMASyncSingleForCPU(dma, pg, kernel.DMAToDevice)
			if v := c.Load64(buf + 8); v != 0 {
				t.Fatalf("a DMA_TO_DEVICE sync for the CPU invalidated: %#x", v)
			}
			d.DMASyncSingleForCPU(dma, pg, kernel.DMAFromDevice)
			if v := c.Load64(buf + 8); v != 0x0123_4567_89AB_CDEF {
				t.Fatalf("after dma_sync_single_for_cpu CPU reads %#x", v)
			}
			// Unmapping a from-device buffer invalidates as well.
			h.M.RAM().Store(buf+8, 8, 42)
			d.DMAUnmapSingle(dma, pg, kernel.DMAFromDevice)
			if v := c.Load64(buf + 8); v != 42 {
				t.Fatalf("after dma_unmap_single CPU reads %#x", v)
			}
		})
	}
}

func TestDMASyncSingleForDeviceCleans(t *testing.T) {
	for _, tc := range ncCases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			c := h.CPU
			buf, _ := h.K.AllocPages(pg)
			dma := mapSingle(t, d, buf, pg, kernel.DMAToDevice)
			c.Store64(buf+16, 0xABCD)
			c.WMB()
			if h.M.RAM().Load(buf+16, 8) != 0 {
				t.Fatal("store reached RAM without a clean")
			}
			d.DMASyncSingleForDevice(dma, pg, kernel.DMAFromDevice) // wrong direction: nothing
			if h.M.RAM().Load(buf+16, 8) != 0 {
				t.Fatal("a DMA_FROM_DEVICE sync for the device cleaned")
			}
			d.DMASyncSingleForDevice(dma, pg, kernel.DMAToDevice)
			if v := h.M.RAM().Load(buf+16, 8); v != 0xABCD {
				t.Fatalf("after dma_sync_single_for_device RAM holds %#x", v)
			}
		})
	}
}

func TestDMAMapSGCleansAndUnmapInvalidates(t *testing.T) {
	for _, tc := range ncCases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			c := h.CPU
			p := scattered(t, h, 2)
			sg := []kernel.SG{{Phys: p[0], Len: pg}, {Phys: p[1], Len: 0x40}}
			c.Store64(p[0], 1)
			c.Store64(p[1], 2)
			c.WMB()
			if _, err := d.DMAMapSG(sg, kernel.DMABidirectional); err != nil {
				t.Fatal(err)
			}
			if h.M.RAM().Load(p[0], 8) != 1 || h.M.RAM().Load(p[1], 8) != 2 {
				t.Fatal("DMAMapSG did not clean the pieces")
			}
			h.M.RAM().Store(p[1], 8, 3)
			d.DMAUnmapSG(sg, kernel.DMABidirectional)
			if v := c.Load64(p[1]); v != 3 {
				t.Fatalf("after DMAUnmapSG CPU reads %#x", v)
			}
		})
	}
}

// TestAllocPagesIsZeroForANonCoherentCPU: a page that a previous owner wrote
// through the cache and freed must read as zero for its next owner (Linux zeroes
// pages through the cache), and the old owner's dirty lines must not be written
// back later over what the device put in coherent memory (Linux's
// arch_dma_prep_coherent flushes them).
func TestAllocPagesIsZeroForANonCoherentCPU(t *testing.T) {
	for _, tc := range ncCases {
		// dirty leaves a dirty cached line on a page and frees the page.
		dirty := func(h *host.Host) uint64 {
			p, _ := h.K.AllocPages(pg)
			h.CPU.Store64(p, 0x0BAD)
			h.CPU.WMB()
			if h.M.RAM().Load(p, 8) != 0 {
				t.Fatal("the store reached RAM: the line is not dirty")
			}
			h.K.FreePages(p, pg)
			return p
		}
		t.Run(tc.name+"/fresh page reads zero", func(t *testing.T) {
			h, _ := bare(t, nonCoherent(tc.arch, tc.iommu))
			p := dirty(h)
			q, _ := h.K.AllocPages(pg)
			if q != p {
				t.Fatalf("got %#x, want the freed page %#x", q, p)
			}
			if v := h.CPU.Load64(q); v != 0 {
				t.Errorf("the CPU reads the previous owner's %#x from a fresh page", v)
			}
		})
		t.Run(tc.name+"/no stale write-back into coherent memory", func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			p := dirty(h)
			coh, _, err := d.DMAAllocCoherent(pg)
			if err != nil || coh != p {
				t.Fatalf("coherent allocation at %#x (%v), want %#x", coh, err, p)
			}
			if v := h.CPU.Load64(coh); v != 0 {
				t.Errorf("CPU reads %#x from fresh coherent memory", v)
			}
			h.M.RAM().Store(coh, 8, 0x600D) // the device writes it
			h.CPU.FlushRange(coh, pg)       // anything still cached there is written back now
			if v := h.M.RAM().Load(coh, 8); v != 0x600D {
				t.Errorf("a stale dirty line overwrote coherent memory: RAM holds %#x", v)
			}
		})
	}
}

func TestDMAFreeCoherentMakesTheMemoryCachedAgain(t *testing.T) {
	for _, tc := range ncCases {
		t.Run(tc.name, func(t *testing.T) {
			h, d := bare(t, nonCoherent(tc.arch, tc.iommu))
			c := h.CPU
			coh, dma, err := d.DMAAllocCoherent(100) // the whole page is uncached
			if err != nil {
				t.Fatal(err)
			}
			c.Store64(coh+pg-8, 1)
			c.WMB()
			if h.M.RAM().Load(coh+pg-8, 8) != 1 {
				t.Fatal("the end of the page is cached: coherent memory is uncached by page")
			}
			d.DMAFreeCoherent(100, coh, dma)
			p, _ := h.K.AllocPages(pg)
			if p != coh {
				t.Fatalf("page not reused: %#x, want %#x", p, coh)
			}
			c.Store64(p, 2)
			c.WMB()
			if v := h.M.RAM().Load(p, 8); v != 0 {
				t.Fatalf("a store to a freed coherent page reached RAM at once (%#x): still uncached", v)
			}
		})
	}
}
