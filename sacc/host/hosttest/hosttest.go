// Package hosttest boots hosts for tests of the software above the bus (the
// kernel, the driver, the bypass library), as net/http/httptest starts servers for
// the tests of handlers.
package hosttest

import (
	"bytes"
	"testing"

	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// Boot boots a host from cfg, or ends the test with the reason it could not.
func Boot(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	h, err := host.Boot(cfg)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	return h
}

// KernelBuffer allocates kernel pages holding data and returns their physical
// address.
func KernelBuffer(t testing.TB, h *host.Host, data []byte) uint64 {
	t.Helper()
	p, err := h.K.AllocPages(uint64(len(data)))
	if err != nil {
		t.Fatalf("allocate %d bytes of kernel memory: %v", len(data), err)
	}
	h.M.RAM().Write(p, data)
	return p
}

// Dmesg is k's log so far.
func Dmesg(t testing.TB, k *kernel.Kernel) string {
	t.Helper()
	var b bytes.Buffer
	if err := k.Dmesg(&b); err != nil {
		t.Fatalf("dmesg: %v", err)
	}
	return b.String()
}
