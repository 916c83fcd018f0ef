package dmacopy

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// budget is how much virtual time one Copy may take: two allocations, a few
// thousand stores and loads, and one command of a few microseconds.
const budget sim.Time = 10_000_000

// realDevice is the SACC driver behind the Device interface; it remembers every
// descriptor it was given.
type realDevice struct {
	dev   *driver.Device
	given []sacc.Descriptor
}

func (d *realDevice) Run(x sacc.Descriptor) (sacc.Completion, error) {
	d.given = append(d.given, x)
	r := &driver.Request{Opcode: x.Opcode, Src: x.Src, Dst: x.Dst, Length: x.Length}
	err := d.dev.Do(r)
	if r.Done {
		return sacc.Completion{ReqID: r.ReqID, ResultLen: r.ResultLen, Status: r.Status, Phase: 1}, nil
	}
	return sacc.Completion{}, err
}

// failingDevice completes every command with a bad-address status, moving nothing.
type failingDevice struct{ given []sacc.Descriptor }

func (d *failingDevice) Run(x sacc.Descriptor) (sacc.Completion, error) {
	d.given = append(d.given, x)
	return sacc.Completion{Status: sacc.StatusBadAddress, Phase: 1}, nil
}

type rig struct {
	*check.Machine
	pdev  *kernel.PCIDev
	dev   *realDevice
	iommu bool
}

func setUp(t *testing.T, iommu bool) *rig {
	m := check.Boot(t, host.Config{Kernel: kernel.Config{IOMMU: iommu}})
	drv, err := driver.Register(m.K, driver.Config{RingSize: 8})
	if err != nil {
		t.Fatalf("check: load the driver: %v", err)
	}
	return &rig{Machine: m, pdev: drv.Dev.PCI(), dev: &realDevice{dev: drv.Dev}, iommu: iommu}
}

// copyOn runs the learner's Copy and returns its results, the events it caused,
// and how much memory it left allocated.
func (r *rig) copyOn(dev Device, src []byte) ([]byte, []trace.Event, uint64, error) {
	var out []byte
	var err error
	inUse := r.K.MemInUse()
	mark := r.Mark()
	r.Do("Copy", budget, func() { out, err = Copy(r.CPU, r.pdev, dev, src) })
	return out, r.Since(mark), r.K.MemInUse() - inUse, err
}

func (r *rig) leak(leaked uint64) {
	if leaked != 0 {
		r.Fatalf("Copy returned, but left %d bytes of DMA memory allocated: free both buffers with "+
			"pdev.DMAFreeCoherent (dma_free_coherent), on every path, errors included (defer helps).", leaked)
	}
}

// checkCopied is what every good copy shows: the right bytes, one MEMCPY the
// device read and wrote itself, and nothing left allocated.
func (r *rig) checkCopied(src, out []byte, err error, evs []trace.Event, leaked uint64) {
	n := len(src)
	given := r.dev.given
	if err != nil {
		msg := fmt.Sprintf("Copy of %d bytes returned an error: %v", n, err)
		if len(given) == 1 {
			msg += fmt.Sprintf("\nThe descriptor it gave the device: src_addr %#x, dst_addr %#x, length %d, opcode %s.",
				given[0].Src, given[0].Dst, given[0].Length, sacc.OpName(given[0].Opcode))
		}
		if faults := check.Find(evs, trace.IOMMUFault); len(faults) > 0 {
			msg += fmt.Sprintf("\nThe IOMMU blocked the device at %#x: nothing is mapped there for it. "+
				"A descriptor carries DMA addresses (the second result of DMAAllocCoherent), never CPU addresses.", faults[0].Args[0])
		}
		r.Fatalf("%s", msg)
	}
	if len(given) != 1 || given[0].Opcode != sacc.OpMEMCPY || given[0].Length != uint32(n) {
		var got []string
		for _, d := range given {
			got = append(got, fmt.Sprintf("%s of %d bytes", sacc.OpName(d.Opcode), d.Length))
		}
		r.Fatalf("Copy of %d bytes gave the device %d descriptors (%s); want one MEMCPY of %d bytes.",
			n, len(given), strings.Join(got, ", "), n)
	}
	d := given[0]
	reads, writes := check.Find(evs, trace.DMARead), check.Find(evs, trace.DMAWrite)
	var dstPhys []uint64
	for _, w := range writes {
		if w.Args[0] >= d.Dst && w.Args[0] < d.Dst+uint64(n) {
			dstPhys = append(dstPhys, w.Args[1], w.Args[2])
		}
	}
	readSrc := false
	for _, rd := range reads {
		readSrc = readSrc || rd.Args[0] == d.Src
	}
	if !readSrc || len(dstPhys) == 0 {
		r.Fatalf("The device did not read the source at %#x and write the destination at %#x by DMA.", d.Src, d.Dst)
	}
	if !bytes.Equal(out, src) {
		r.Fatalf("Copy returned %d bytes that differ from the source: %q…\nwant %q…\n"+
			"The device wrote the destination at DMA address %#x. Read it back through the destination's CPU address "+
			"(the first result of DMAAllocCoherent) after Run, and fill the source through its CPU address before.",
			len(out), head(out), head(src), d.Dst)
	}
	// The result must be what the device wrote: no CPU store into the
	// destination after the device's write, and every line of it read by the CPU
	// afterwards. (A store before the copy is harmless: the device overwrites it.)
	var lastDMA trace.Event
	for _, w := range writes {
		if w.Args[0] >= d.Dst && w.Args[0] < d.Dst+uint64(n) {
			lastDMA = w
		}
	}
	inDst := func(a uint64) bool {
		for i := 0; i < len(dstPhys); i += 2 {
			if a >= dstPhys[i] && a < dstPhys[i]+dstPhys[i+1] {
				return true
			}
		}
		return false
	}
	after := false
	read := map[uint64]bool{} // cache lines of the destination the CPU read after the device wrote them
	for _, ev := range evs {
		switch {
		case ev == lastDMA:
			after = true
		case after && ev.Kind == trace.CPUWrite && inDst(ev.Args[0]):
			r.Fatalf("The bytes are right, but after the device wrote the destination the CPU stored into it itself (%s): "+
				"what Copy returns must be what the device wrote. The CPU writes only the source.", ev.String())
		case after && ev.Kind == trace.CPURead && inDst(ev.Args[0]):
			read[ev.Args[0]&^(lineSize-1)] = true
		}
	}
	for i := 0; i < len(dstPhys); i += 2 {
		for line := dstPhys[i] &^ (lineSize - 1); line < dstPhys[i]+dstPhys[i+1]; line += lineSize {
			if !read[line] {
				r.Fatalf("The bytes are right, but the CPU never read the destination at %#x after the device wrote it: "+
					"they did not come from the device. Read the result back through the destination's CPU address.", max(line, dstPhys[i]))
			}
		}
	}
	r.leak(leaked)
}

// lineSize is the CPU's cache line: a load that misses reads one from memory,
// and the trace shows it.
const lineSize = 64

func head(b []byte) []byte { return b[:min(len(b), 24)] }

func message(n int) []byte {
	line := []byte("the device moves these bytes by DMA; the CPU only fills the source and reads the result. ")
	return bytes.Repeat(line, n/len(line)+1)[:n]
}

func TestCopyWithoutIOMMU(t *testing.T) {
	r := setUp(t, false)
	src := message(100)
	out, evs, leaked, err := r.copyOn(r.dev, src)
	r.checkCopied(src, out, err, evs, leaked)
}

func TestCopyBehindTheIOMMU(t *testing.T) {
	r := setUp(t, true)
	src := message(100)
	out, evs, leaked, err := r.copyOn(r.dev, src)
	r.checkCopied(src, out, err, evs, leaked)
}

func TestCopyAcrossPages(t *testing.T) {
	r := setUp(t, true)
	src := message(3*sacc.PageSize + 123)
	out, evs, leaked, err := r.copyOn(r.dev, src)
	r.checkCopied(src, out, err, evs, leaked)
}

func TestCopyReportsAFailedCommand(t *testing.T) {
	r := setUp(t, false)
	bad := &failingDevice{}
	out, _, leaked, err := r.copyOn(bad, message(64))
	if err == nil {
		r.Fatalf("The device completed the MEMCPY with status %d (bad address) and wrote nothing, yet Copy returned "+
			"%d bytes and no error. Check the completion's status: anything but sacc.StatusOK is a failure (§8).",
			sacc.StatusBadAddress, len(out))
	}
	r.leak(leaked)
}

// lostDevice never completes a command: Run gives up with an error.
type lostDevice struct{}

func (lostDevice) Run(sacc.Descriptor) (sacc.Completion, error) {
	return sacc.Completion{}, errors.New("no completion within 1 ms")
}

func TestCopyReportsALostCommand(t *testing.T) {
	r := setUp(t, false)
	out, _, leaked, err := r.copyOn(lostDevice{}, message(64))
	if err == nil {
		r.Fatalf("dev.Run returned an error (no completion came), yet Copy returned %d bytes and no error. Pass the error on.", len(out))
	}
	r.leak(leaked)
}

func TestCopyWhenMemoryRunsOut(t *testing.T) {
	for skip, which := range []string{"the first", "the second"} {
		t.Run(which, func(t *testing.T) {
			r := setUp(t, false)
			if err := r.K.InjectFault("dma_alloc_coherent", skip, kernel.ENOMEM); err != nil {
				t.Fatalf("check: %v", err)
			}
			out, _, leaked, err := r.copyOn(r.dev, message(64))
			if err == nil {
				r.Fatalf("The kernel refused %s dma_alloc_coherent of Copy (ENOMEM), yet Copy returned %d bytes and no error.", which, len(out))
			}
			r.leak(leaked)
		})
	}
}

func TestCopyRefusesNothing(t *testing.T) {
	r := setUp(t, false)
	_, _, leaked, err := r.copyOn(r.dev, nil)
	if err == nil {
		r.Fatalf("Copy of 0 bytes returned no error. A MEMCPY of length 0 is invalid (§6.3, status 3): " +
			"return an error for an empty source.")
	}
	r.leak(leaked)
}
