package kernel_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/sacc/kernel"
)

func TestErrnoNamesAndWraps(t *testing.T) {
	for _, tc := range []struct {
		err  kernel.Errno
		num  uint8
		text string
	}{
		{kernel.EPERM, 1, "EPERM: operation not permitted"},
		{kernel.ENOENT, 2, "ENOENT: no such file or device"},
		{kernel.EIO, 5, "EIO: input/output error"},
		{kernel.EBADF, 9, "EBADF: bad file descriptor"},
		{kernel.EAGAIN, 11, "EAGAIN: try again"},
		{kernel.ENOMEM, 12, "ENOMEM: out of memory"},
		{kernel.EBUSY, 16, "EBUSY: device or resource busy"},
		{kernel.EINVAL, 22, "EINVAL: invalid argument"},
	} {
		if uint8(tc.err) != tc.num || tc.err.Error() != tc.text {
			t.Errorf("errno %d %q, want %d %q", uint8(tc.err), tc.err.Error(), tc.num, tc.text)
		}
		wrapped := fmt.Errorf("open /dev/sacc0: %w", tc.err)
		if !errors.Is(wrapped, tc.err) {
			t.Errorf("errors.Is(%v, %v) is false", wrapped, tc.err)
		}
	}
	if errors.Is(kernel.EPERM, kernel.EBUSY) {
		t.Error("EPERM is EBUSY")
	}
	if got := kernel.Errno(99).Error(); got != "errno 99" {
		t.Errorf("unknown errno reads %q", got)
	}
}
