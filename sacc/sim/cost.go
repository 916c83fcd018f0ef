package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Cost is the cost model of the specification's §11: what each action costs in
// virtual nanoseconds, and the link's bandwidth. Every default is of the right order
// for a PCIe Gen3/Gen4 host and names its source in Costs below.
type Cost struct {
	MMIORead         Time   // CPU stalls for a non-posted read round trip to a BAR
	MMIOWrite        Time   // a posted MMIO write travels to the device
	MMIOWriteIssue   Time   // the CPU issues a posted MMIO write and moves on
	PortIO           Time   // legacy port I/O (0xCF8/0xCFC) as the CPU sees it
	ConfigAccess     Time   // an ECAM access: a non-posted MMIO read or write
	DMAReadLatency   Time   // device issues a read request; first data returns
	DMAWriteLatency  Time   // a posted DMA write lands in host memory
	LinkBytesPerUs   uint64 // effective link bandwidth in bytes per microsecond
	DeviceCommand    Time   // device-internal time to decode and start a command
	IOTLBMiss        Time   // a 4-level page walk after an IOTLB miss
	MSIDelivery      Time   // MSI write reaches the interrupt controller
	InterruptEntry   Time   // CPU enters the handler after delivery
	Syscall          Time   // one system call or kernel crossing, round trip
	MemoryPoll       Time   // a load that hits the CPU cache (polling host memory)
	CPURelax         Time   // cpu_relax(): the pause in a polling loop
	MemoryStore      Time   // a store into the CPU's store buffer
	CacheMissLoad    Time   // a load that goes to DRAM (first look at a DMA-written line)
	EnableLatency    Time   // CTRL.ENABLE to STATUS.READY (§7.5, v1)
	Barrier          Time   // draining the store buffer (wmb/mb)
	IOMMUFaultRecord Time   // writing one fault record to the log
}

// Param documents one field of Cost.
type Param struct {
	Name    string
	Doc     string
	Default uint64
	Source  string
	field   func(*Cost) *uint64
}

func timeField(f func(*Cost) *Time) func(*Cost) *uint64 {
	return func(c *Cost) *uint64 { return (*uint64)(f(c)) }
}

// Costs lists every parameter of the model with its default and the source of that
// number. DefaultCost is built from this table, so the two cannot disagree.
var Costs = []Param{
	{"mmio_read", "MMIO read round trip; the CPU stalls", 1000,
		"a modelling choice of the usual order (about 1 µs): no cited study measures a CPU read of a device register; Neugebauer et al., \"Understanding PCIe performance for end host networking\", SIGCOMM 2018, measured device-initiated DMA (64 B read medians of 533–546 ns on Xeon E5), and a CPU read adds the core-to-root-complex path both ways",
		timeField(func(c *Cost) *Time { return &c.MMIORead })},
	{"mmio_write", "posted MMIO write until it reaches the device", 500,
		"half the mmio_read round trip, a modelling choice: a posted write crosses the path once where a read crosses it twice (PCIe Base Specification, §2.4: memory writes are posted, no completion); the link alone is about 270 ns each way by Neugebauer et al., SIGCOMM 2018 (64 B DMA read medians of 533–546 ns)",
		timeField(func(c *Cost) *Time { return &c.MMIOWrite })},
	{"mmio_write_issue", "CPU time to issue a posted MMIO write", 30,
		"a modelling choice: the Intel SDM (vol. 3, §11.3, UC memory) gives no latency for issuing an uncached store; back-to-back UC writes are limited by throughput, not by this figure",
		timeField(func(c *Cost) *Time { return &c.MMIOWriteIssue })},
	{"port_io", "legacy port I/O access (0xCF8/0xCFC)", 1000,
		"port I/O is non-posted and serialising on x86 (Intel SDM vol. 3, §8.2.5 \"strengthening or weakening the memory-ordering model\"); same order as an MMIO read",
		timeField(func(c *Cost) *Time { return &c.PortIO })},
	{"config_access", "ECAM configuration access", 1000,
		"ECAM accesses are MMIO to the root complex, non-posted (PCI Firmware Specification 3.x, MCFG); same order as an MMIO read",
		timeField(func(c *Cost) *Time { return &c.ConfigAccess })},
	{"dma_read_latency", "DMA read request until the first data returns", 800,
		"Neugebauer et al., SIGCOMM 2018, pcie-bench data (lat_dma_sizes): 64 B device-initiated DMA read medians of 533–546 ns warm and about 600 ns cold on Xeon E5 v3/v4, about 1.2 µs on Xeon E3; 800 lies inside that range",
		timeField(func(c *Cost) *Time { return &c.DMAReadLatency })},
	{"dma_write_latency", "posted DMA write until it is visible in host memory", 300,
		"a modelling choice: DMA writes are posted (PCIe Base Specification, §2.4), so one crossing, about half the DMA read round trip of Neugebauer et al., SIGCOMM 2018; the root complex commits them to the cache hierarchy (Intel DDIO)",
		timeField(func(c *Cost) *Time { return &c.DMAWriteLatency })},
	{"link_bytes_per_us", "effective link bandwidth, bytes per µs", 3400,
		"Gen3 x4: 8 GT/s × 4 lanes × 128/130 encoding = 3938 MB/s raw; TLP headers at 256-byte payloads leave about 87% (PCI-SIG, \"PCI Express Base Specification 3.0\", §4.2 and §2.2)",
		func(c *Cost) *uint64 { return &c.LinkBytesPerUs }},
	{"device_command", "device decodes a descriptor and starts the command", 50,
		"a simple fixed-function engine at ~1 GHz needs tens of cycles to decode a 32-byte command; a modelling choice, not a measurement",
		timeField(func(c *Cost) *Time { return &c.DeviceCommand })},
	{"iotlb_miss", "IOMMU page walk after an IOTLB miss (4 levels)", 400,
		"Neugebauer et al., SIGCOMM 2018, pcie-bench data: with the IOMMU on and 4 KiB pages the 64 B DMA read median goes from about 600 to 826 ns once the window exceeds 256–512 KB, about 225 ns per miss; 400 is a modelling choice for a 4-level walk that misses the page-walk caches too",
		timeField(func(c *Cost) *Time { return &c.IOTLBMiss })},
	{"msi_delivery", "MSI write travels to the interrupt controller", 500,
		"an MSI is an ordinary posted DMA write (PCI Local Bus Specification 3.0, §6.8); same order as a DMA write landing",
		timeField(func(c *Cost) *Time { return &c.MSIDelivery })},
	{"interrupt_entry", "CPU takes the interrupt and enters the handler", 2000,
		"a modelling choice at the upper end for bare metal: MSI arrival to the handler's first instruction, with entry, dispatch and exit; it leaves out C-state exit latency (tens of µs from deep states), which dominates real interrupt-versus-poll comparisons",
		timeField(func(c *Cost) *Time { return &c.InterruptEntry })},
	{"syscall", "system call or kernel crossing, round trip", 500,
		"a modelling choice: Soares and Stumm, \"FlexSC\", OSDI 2010, measured a null system call at about 100 ns direct cost, before page-table isolation (KPTI, 2018) added a page-table switch on every crossing; 500 ns stands for a mitigated kernel and is not a measurement",
		timeField(func(c *Cost) *Time { return &c.Syscall })},
	{"memory_poll", "load that hits the CPU cache", 4,
		"L1/L2 hit latency is 1–4 ns on current x86 cores (Intel 64 and IA-32 Optimization Reference Manual, cache latency tables)",
		timeField(func(c *Cost) *Time { return &c.MemoryPoll })},
	{"cpu_relax", "cpu_relax() between two looks of a polling loop", 40,
		"x86 PAUSE takes ~140 cycles on Skylake and later (Intel 64 and IA-32 Optimization Reference Manual, §2.5.4 \"pause latency\"), about 40 ns",
		timeField(func(c *Cost) *Time { return &c.CPURelax })},
	{"memory_store", "store into the store buffer", 1,
		"a store retires into the store buffer in about one cycle (Intel Optimization Reference Manual)",
		timeField(func(c *Cost) *Time { return &c.MemoryStore })},
	{"cache_miss_load", "load that misses to DRAM or to a line the device just wrote", 90,
		"DRAM load latency of 80–100 ns on server parts (Intel Memory Latency Checker figures)",
		timeField(func(c *Cost) *Time { return &c.CacheMissLoad })},
	{"enable_latency", "CTRL.ENABLE until STATUS.READY", 2000,
		"SACC v1 specification §7.5: 2 µs by default",
		timeField(func(c *Cost) *Time { return &c.EnableLatency })},
	{"barrier", "draining the store buffer (wmb, mb)", 20,
		"an SFENCE/MFENCE or DMB costs tens of cycles when the store buffer is not empty (Intel Optimization Reference Manual; Arm Cortex-A optimisation guides)",
		timeField(func(c *Cost) *Time { return &c.Barrier })},
	{"iommu_fault_record", "IOMMU writes one fault record", 300,
		"a posted write of 16 bytes into host memory, same order as a DMA write",
		timeField(func(c *Cost) *Time { return &c.IOMMUFaultRecord })},
}

// DefaultCost returns the model with every default of Costs.
func DefaultCost() Cost {
	var c Cost
	for _, p := range Costs {
		*p.field(&c) = p.Default
	}
	return c
}

// Set changes one parameter by name.
func (c *Cost) Set(name string, value uint64) error {
	for _, p := range Costs {
		if p.Name == name {
			if name == "link_bytes_per_us" && value == 0 {
				return fmt.Errorf("cost %s must be positive", name)
			}
			*p.field(c) = value
			return nil
		}
	}
	return fmt.Errorf("unknown cost parameter %q (known: %s)", name, strings.Join(CostNames(), ", "))
}

// Get returns one parameter by name.
func (c *Cost) Get(name string) (uint64, bool) {
	for _, p := range Costs {
		if p.Name == name {
			return *p.field(c), true
		}
	}
	return 0, false
}

// ParseAssignment applies "name=value" (value in nanoseconds, or bytes per µs for
// the bandwidth) to the model.
func (c *Cost) ParseAssignment(s string) error {
	name, val, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("cost %q: want name=value", s)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(val), 0, 64)
	if err != nil {
		return fmt.Errorf("cost %q: value is not a non-negative integer", s)
	}
	return c.Set(strings.TrimSpace(name), v)
}

// CostNames lists the parameter names in sorted order.
func CostNames() []string {
	names := make([]string, len(Costs))
	for i, p := range Costs {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}

// Transfer is the time the link needs to carry n bytes, rounded up.
func (c *Cost) Transfer(n uint64) Time {
	if n == 0 {
		return 0
	}
	return Time((n*1000 + c.LinkBytesPerUs - 1) / c.LinkBytesPerUs)
}
