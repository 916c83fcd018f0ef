// Package sgrig is what the exercises of chapter 12 share: a machine without an
// IOMMU, the SACC driver loaded, and a process whose buffers are scattered over
// physical memory, as user memory is.
package sgrig

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Rig is a booted system with the driver bound and one process, "app".
type Rig struct {
	*check.Machine
	Dev *driver.Device
	P   *kernel.Process
	t   testing.TB
}

// Up boots the machine, loads the driver and starts a process.
func Up(t testing.TB) *Rig {
	t.Helper()
	m := check.Boot(t, host.Config{})
	d, err := driver.Register(m.K, driver.Config{RingSize: 16})
	if err != nil {
		t.Fatalf("check: load the driver: %v", err)
	}
	return &Rig{Machine: m, Dev: d.Dev, P: m.K.NewProcess("app"), t: t}
}

// Buffer allocates pages for n bytes starting off bytes into the first page,
// fills them with a pattern unique to seed, and returns the user address of the
// buffer and the bytes it holds.
func (r *Rig) Buffer(off, n uint64, seed byte) (uint64, []byte) {
	r.t.Helper()
	base, err := r.P.Alloc(off + n)
	if err != nil {
		r.t.Fatalf("check: alloc: %v", err)
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = seed + byte(i/7)
	}
	r.P.StoreBytes(base+off, data)
	r.CPU.WMB()
	return base + off, data
}

// Truth is the scatterlist of n bytes at va, from the kernel's own
// pin_user_pages (the pages are unpinned again at once).
func (r *Rig) Truth(va, n uint64) []kernel.SG {
	r.t.Helper()
	sg, err := r.P.PinUserPages(va, n)
	if err != nil {
		r.t.Fatalf("check: pin_user_pages: %v", err)
	}
	r.P.UnpinUserPages(sg)
	return sg
}

// PinPage pins the page at user address page (4 KiB aligned) and returns its
// physical address: one page of pin_user_pages.
func (r *Rig) PinPage(page uint64) (uint64, error) {
	if page&sacc.PageMask != 0 {
		return 0, fmt.Errorf("pin %#x: not the start of a page (pin takes page-aligned user addresses)", page)
	}
	sg, err := r.P.PinUserPages(page, sacc.PageSize)
	if err != nil {
		return 0, err
	}
	return sg[0].Phys, nil
}

// UnpinPage releases a page pinned by PinPage.
func (r *Rig) UnpinPage(phys uint64) {
	r.P.UnpinUserPages([]kernel.SG{{Phys: phys &^ sacc.PageMask, Len: sacc.PageSize}})
}

// Read copies n bytes of physical memory at phys, without cost or trace.
func (r *Rig) Read(phys, n uint64) []byte {
	b := make([]byte, n)
	r.M.RAM().Read(phys, b)
	return b
}
