package hosttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/host"
)

func TestBootBufferAndLog(t *testing.T) {
	h := Boot(t, host.Config{})
	data := []byte("saccbook")
	p := KernelBuffer(t, h, data)
	got := make([]byte, len(data))
	h.M.RAM().Read(p, got)
	if !bytes.Equal(got, data) {
		t.Fatalf("kernel buffer at %#x holds %q, want %q", p, got, data)
	}
	if log := Dmesg(t, h.K); !strings.Contains(log, "SACC v1 ready") {
		t.Fatalf("the kernel log does not show the driver bound:\n%s", log)
	}
}
