package monitor

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/sacc/trace"
)

func TestScratch(t *testing.T) {
	r := newRun(t, "mixed")
	seq := firstEvent(t, "mixed", trace.CQFull)
	if _, err := r.RunTo(seq); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	mo := New(r, &out)
	fmt.Print(session(mo, &out, "stop", "info pci", "info mtree", "info registers", "info rings", "info iommu 0x210000", "info irq",
		"xp /8xw 0xb0018000", "xp/4xg 0x110000", "x /16c 0x200000", "xp /3xb 0xc0000000", "xp 0x1000", "step 3", "back 2", "stop", "cont", "info rings", "info iommu", "xp /2dg 0x110000", "xp /5o 0x110000", "xp /5uh 0x110000"))
}
