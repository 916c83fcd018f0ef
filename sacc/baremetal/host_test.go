package baremetal

import (
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
)

func TestCQAddrForKeepsTheRingsApart(t *testing.T) {
	for _, size := range []uint32{2, 8, 2048, 2049, 4096} {
		sqEnd := uint64(SQAddr) + uint64(size)*sacc.DescriptorSize
		cq := CQAddrFor(size)
		if cq < sqEnd || cq%sacc.PageSize != 0 || cq+sacc.MaxRingSize*sacc.CompletionSize > DataAddr {
			t.Errorf("SQ of %d entries ends at %#x; CQ at %#x", size, sqEnd, cq)
		}
		if size <= 2048 && cq != CQAddr {
			t.Errorf("SQ of %d entries: CQ moved to %#x from %#x", size, cq, uint64(CQAddr))
		}
	}
}

// TestFullSizeRingsWrap runs more than a lap of 4096-entry rings: the largest
// the specification allows.
func TestFullSizeRingsWrap(t *testing.T) {
	m, err := machine.New(machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	const size = sacc.MaxRingSize
	if err := h.Start(SQAddr, size, CQAddrFor(size), size); err != nil {
		t.Fatal(err)
	}
	for i := range uint32(size + 10) {
		h.Put(sacc.Descriptor{Opcode: sacc.OpNOP, ReqID: i})
		h.Ring()
		for {
			if c, ok := h.Poll(); ok {
				if c.ReqID != i || c.Status != sacc.StatusOK {
					t.Fatalf("job %d: completion %+v", i, c)
				}
				break
			}
			if !m.Step() {
				t.Fatalf("job %d never completed; STATUS %#x ERR_CODE %#x", i, h.Reg(sacc.RegSTATUS), h.Reg(sacc.RegErrCode))
			}
		}
	}
}

func TestStartRefusesOverlappingRings(t *testing.T) {
	m, err := machine.New(machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Enumerate(m)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(SQAddr, sacc.MaxRingSize, CQAddr, sacc.MaxRingSize)
	if err == nil || !strings.Contains(err.Error(), "rings overlap") {
		t.Fatalf("Start with the SQ over the CQ: %v", err)
	}
}
