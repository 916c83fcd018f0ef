package sim_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
)

// costFields maps every parameter name to the Cost field it must control, written out
// independently of the Costs table so a table entry pointing at the wrong field shows.
var costFields = map[string]func(*sim.Cost) uint64{
	"mmio_read":          func(c *sim.Cost) uint64 { return uint64(c.MMIORead) },
	"mmio_write":         func(c *sim.Cost) uint64 { return uint64(c.MMIOWrite) },
	"mmio_write_issue":   func(c *sim.Cost) uint64 { return uint64(c.MMIOWriteIssue) },
	"port_io":            func(c *sim.Cost) uint64 { return uint64(c.PortIO) },
	"config_access":      func(c *sim.Cost) uint64 { return uint64(c.ConfigAccess) },
	"dma_read_latency":   func(c *sim.Cost) uint64 { return uint64(c.DMAReadLatency) },
	"dma_write_latency":  func(c *sim.Cost) uint64 { return uint64(c.DMAWriteLatency) },
	"link_bytes_per_us":  func(c *sim.Cost) uint64 { return c.LinkBytesPerUs },
	"device_command":     func(c *sim.Cost) uint64 { return uint64(c.DeviceCommand) },
	"iotlb_miss":         func(c *sim.Cost) uint64 { return uint64(c.IOTLBMiss) },
	"msi_delivery":       func(c *sim.Cost) uint64 { return uint64(c.MSIDelivery) },
	"interrupt_entry":    func(c *sim.Cost) uint64 { return uint64(c.InterruptEntry) },
	"syscall":            func(c *sim.Cost) uint64 { return uint64(c.Syscall) },
	"memory_poll":        func(c *sim.Cost) uint64 { return uint64(c.MemoryPoll) },
	"cpu_relax":          func(c *sim.Cost) uint64 { return uint64(c.CPURelax) },
	"memory_store":       func(c *sim.Cost) uint64 { return uint64(c.MemoryStore) },
	"cache_miss_load":    func(c *sim.Cost) uint64 { return uint64(c.CacheMissLoad) },
	"enable_latency":     func(c *sim.Cost) uint64 { return uint64(c.EnableLatency) },
	"barrier":            func(c *sim.Cost) uint64 { return uint64(c.Barrier) },
	"iommu_fault_record": func(c *sim.Cost) uint64 { return uint64(c.IOMMUFaultRecord) },
}

func TestCostsCoverEveryFieldOnce(t *testing.T) {
	if n := reflect.TypeFor[sim.Cost]().NumField(); len(sim.Costs) != n || len(costFields) != n {
		t.Fatalf("Cost has %d fields, Costs %d entries, this test knows %d", n, len(sim.Costs), len(costFields))
	}
	seen := map[string]bool{}
	for _, p := range sim.Costs {
		if seen[p.Name] {
			t.Errorf("parameter %q listed twice", p.Name)
		}
		seen[p.Name] = true
		if costFields[p.Name] == nil {
			t.Errorf("parameter %q is not known to this test", p.Name)
		}
	}
	// Setting each parameter to a distinct value must land in a distinct field.
	var c sim.Cost
	for i, p := range sim.Costs {
		if err := c.Set(p.Name, uint64(1000+i)); err != nil {
			t.Fatalf("Set(%q): %v", p.Name, err)
		}
	}
	for i, p := range sim.Costs {
		if f := costFields[p.Name]; f != nil && f(&c) != uint64(1000+i) {
			t.Errorf("Set(%q, %d) left field at %d", p.Name, 1000+i, f(&c))
		}
	}
}

func TestDefaultCostMatchesEveryCostsDefault(t *testing.T) {
	c := sim.DefaultCost()
	for _, p := range sim.Costs {
		if got, ok := c.Get(p.Name); !ok || got != p.Default {
			t.Errorf("DefaultCost().Get(%q) = %d, %v; want %d", p.Name, got, ok, p.Default)
		}
		if f := costFields[p.Name]; f != nil && f(&c) != p.Default {
			t.Errorf("DefaultCost() field for %q = %d, want %d", p.Name, f(&c), p.Default)
		}
	}
}

func TestDefaultCostIsOfTheRightOrder(t *testing.T) {
	// §11 gives the order of magnitude of the main defaults.
	c := sim.DefaultCost()
	cases := []struct {
		name     string
		got      sim.Time
		min, max sim.Time
	}{
		{"MMIO read round trip ~1 µs", c.MMIORead, 500, 2000},
		{"posted MMIO write about half the read round trip", c.MMIOWrite, c.MMIORead / 3, c.MMIORead * 2 / 3},
		{"DMA read latency 0.5–1 µs", c.DMAReadLatency, 500, 1000},
		{"MSI delivery + interrupt entry a few µs", c.MSIDelivery + c.InterruptEntry, 1000, 10000},
		{"system call 0.1–1 µs", c.Syscall, 100, 1000},
		{"cached memory poll a few ns", c.MemoryPoll, 1, 10},
		{"64 KiB DMA read well under 100 µs", c.DMAReadLatency + c.Transfer(64<<10), 1, 100_000},
	}
	for _, tc := range cases {
		if tc.got < tc.min || tc.got > tc.max {
			t.Errorf("%s: %d ns, want %d–%d", tc.name, tc.got, tc.min, tc.max)
		}
	}
}

func TestEveryCostIsDocumentedAndSourced(t *testing.T) {
	for _, p := range sim.Costs {
		if strings.TrimSpace(p.Name) == "" || strings.TrimSpace(p.Doc) == "" || strings.TrimSpace(p.Source) == "" {
			t.Errorf("parameter %+v: empty Name, Doc or Source", p)
		}
		if p.Default == 0 {
			t.Errorf("parameter %q has default 0", p.Name)
		}
	}
}

func TestCostNamesAreSortedAndComplete(t *testing.T) {
	names := sim.CostNames()
	if !slices.IsSorted(names) {
		t.Errorf("CostNames not sorted: %v", names)
	}
	if len(names) != len(sim.Costs) {
		t.Fatalf("CostNames has %d names, Costs %d", len(names), len(sim.Costs))
	}
	for _, p := range sim.Costs {
		if !slices.Contains(names, p.Name) {
			t.Errorf("CostNames lacks %q", p.Name)
		}
	}
}

func TestCostSetAndGet(t *testing.T) {
	cases := []struct {
		name    string
		param   string
		value   uint64
		wantErr bool
	}{
		{"time parameter", "mmio_read", 1234, false},
		{"time parameter to zero", "mmio_write", 0, false},
		{"largest value", "syscall", ^uint64(0), false},
		{"bandwidth", "link_bytes_per_us", 7877, false},
		{"bandwidth of one byte per µs", "link_bytes_per_us", 1, false},
		{"bandwidth zero rejected", "link_bytes_per_us", 0, true},
		{"unknown name", "mmio_reed", 5, true},
		{"empty name", "", 5, true},
		{"name is case-sensitive", "MMIO_READ", 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cost := sim.DefaultCost()
			err := cost.Set(c.param, c.value)
			if (err != nil) != c.wantErr {
				t.Fatalf("Set(%q, %d) error = %v, want error %v", c.param, c.value, err, c.wantErr)
			}
			if c.wantErr {
				if cost != sim.DefaultCost() {
					t.Errorf("failed Set changed the model: %+v", cost)
				}
				return
			}
			if got, ok := cost.Get(c.param); !ok || got != c.value {
				t.Errorf("Get(%q) = %d, %v; want %d, true", c.param, got, ok, c.value)
			}
			// Nothing else changed.
			for _, p := range sim.Costs {
				if p.Name == c.param {
					continue
				}
				if a, _ := cost.Get(p.Name); a != p.Default {
					t.Errorf("Set(%q) also changed %q to %d", c.param, p.Name, a)
				}
			}
		})
	}
}

func TestUnknownCostErrorListsKnownNames(t *testing.T) {
	var c sim.Cost
	err := c.Set("nope", 1)
	if err == nil {
		t.Fatal("Set of an unknown name succeeded")
	}
	if !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "mmio_read") {
		t.Errorf("error %q should name the bad parameter and the known ones", err)
	}
}

func TestCostGetUnknownName(t *testing.T) {
	c := sim.DefaultCost()
	if v, ok := c.Get("no_such_cost"); ok || v != 0 {
		t.Errorf("Get(unknown) = %d, %v; want 0, false", v, ok)
	}
}

func TestCostParseAssignment(t *testing.T) {
	cases := []struct {
		in      string
		param   string // checked when no error
		want    uint64
		wantErr bool
	}{
		{"mmio_read=250", "mmio_read", 250, false},
		{"mmio_read=0", "mmio_read", 0, false},
		{" dma_read_latency = 900 ", "dma_read_latency", 900, false},
		{"link_bytes_per_us=7877", "link_bytes_per_us", 7877, false},
		{"syscall=0x200", "syscall", 0x200, false},
		{"syscall=1_000", "syscall", 1000, false},
		{"barrier=18446744073709551615", "barrier", ^uint64(0), false},

		{"unknown=5", "", 0, true},
		{"=5", "", 0, true},
		{"mmio_read", "", 0, true},
		{"", "", 0, true},
		{"mmio_read=", "", 0, true},
		{"mmio_read=fast", "", 0, true},
		{"mmio_read=1.5", "", 0, true},
		{"mmio_read=1us", "", 0, true},
		{"mmio_read=-1", "", 0, true},
		{"mmio_read=-0x10", "", 0, true},
		{"barrier=18446744073709551616", "", 0, true},
		{"link_bytes_per_us=0", "", 0, true},
		{"link_bytes_per_us=0x0", "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			cost := sim.DefaultCost()
			err := cost.ParseAssignment(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("ParseAssignment(%q) error = %v, want error %v", c.in, err, c.wantErr)
			}
			if c.wantErr {
				if cost != sim.DefaultCost() {
					t.Errorf("failed ParseAssignment changed the model: %+v", cost)
				}
				return
			}
			if got, _ := cost.Get(c.param); got != c.want {
				t.Errorf("after ParseAssignment(%q), %s = %d, want %d", c.in, c.param, got, c.want)
			}
		})
	}
}

func TestTransferRoundsUp(t *testing.T) {
	cases := []struct {
		name string
		bw   uint64 // bytes per µs
		n    uint64
		want sim.Time
	}{
		{"zero bytes", 3400, 0, 0},
		{"zero bytes, slow link", 1, 0, 0},
		{"one byte rounds up to 1 ns", 3400, 1, 1},
		{"exact: 17 bytes at 3400/µs is 5 ns", 3400, 17, 5},
		{"just over: 18 bytes", 3400, 18, 6},
		{"exactly one µs of data", 3400, 3400, 1000},
		{"one byte more than a µs", 3400, 3401, 1001},
		{"64 KiB at the default bandwidth", 3400, 64 << 10, 19276}, // 65536000/3400 = 19275.29…
		{"1 MiB at 1000/µs", 1000, 1 << 20, 1 << 20},
		{"one byte per µs", 1, 3, 3000},
		{"bandwidth above 1 byte/ns", 8000, 8, 1},
		{"bandwidth above 1 byte/ns, rounds up", 8000, 9, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cost := sim.DefaultCost()
			if err := cost.Set("link_bytes_per_us", c.bw); err != nil {
				t.Fatal(err)
			}
			if got := cost.Transfer(c.n); got != c.want {
				t.Errorf("Transfer(%d) at %d B/µs = %d, want %d", c.n, c.bw, got, c.want)
			}
		})
	}
}

func TestTransferIsMonotonic(t *testing.T) {
	cost := sim.DefaultCost()
	prev := cost.Transfer(0)
	for n := uint64(1); n <= 20000; n++ {
		got := cost.Transfer(n)
		if got < prev {
			t.Fatalf("Transfer(%d) = %d < Transfer(%d) = %d", n, got, n-1, prev)
		}
		// Rounded up: got is the smallest time that carries n bytes.
		if got*sim.Time(cost.LinkBytesPerUs) < sim.Time(n*1000) || (got-1)*sim.Time(cost.LinkBytesPerUs) >= sim.Time(n*1000) {
			t.Fatalf("Transfer(%d) = %d is not the rounded-up time", n, got)
		}
		prev = got
	}
}
