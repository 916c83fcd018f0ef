// Exercise 11-error-kind: a job that failed, or a device that stopped?
//
// A driver whose command did not end well must tell two kinds of error apart,
// because they call for different answers: report one failed job, or recover
// the whole device. And it must do it cheaply: every register read is an MMIO
// round trip of about 1 µs. Write Diagnose.
//
// What you need to know (docs/SPEC.md §5, §7.6, §8; chapter 11):
//
//   - a per-command error (bad opcode 1, bad address 2, bad length 3) ends one
//     command: the device posts its completion with that status, writes the
//     code into ERR_CODE, and goes on with the next descriptor. STATUS.ERROR
//     stays 0. ERR_CODE holds only the most recent code: by the time a driver
//     looks, a later command may have replaced it;
//   - a device error halts the device: STATUS (0x0C) bit 1, ERROR, becomes 1,
//     READY (bit 0) becomes 0, ERR_CODE (0x3C) says why, and no completion will
//     ever come for what was in flight;
//   - while STATUS.ERROR is 0, ERR_CODE may hold an old per-command code that
//     says nothing about the device.
//
// The contract the tests hold Diagnose to:
//
//   - with a completion in hand (done), the completion alone decides:
//     Succeeded and sacc.StatusOK for status 0, CommandFailed and its status
//     otherwise, and no register is read;
//   - without one, it reads STATUS: ERROR set means DeviceHalted, with the code
//     ERR_CODE holds; ERROR clear means Late, with sacc.StatusOK, and then
//     ERR_CODE is not read;
//   - it never writes a register.
//
// Edit this file, then run:
//
//	go test ./exercises/11-error-kind/
//	saccbook check 11-error-kind
package errorkind

import (
	"github.com/saccbook/saccbook/sacc"
)

// Kind is what became of a command.
type Kind int

const (
	Succeeded     Kind = iota // it completed with status OK
	CommandFailed             // it completed with an error status; the device carries on
	DeviceHalted              // no completion, and the device has stopped (STATUS.ERROR)
	Late                      // no completion yet, and the device is still running
)

// Registers is the driver's mapping of BAR0 (*kernel.IOMem has this method).
type Registers interface {
	Readl(off uint32) uint32
}

// Diagnose says what became of a command, and the code that explains it. done
// reports whether its completion arrived, and cpl is that completion.
func Diagnose(regs Registers, cpl sacc.Completion, done bool) (Kind, sacc.Status) {
	if done {
		if cpl.Status == sacc.StatusOK {
			return Succeeded, sacc.StatusOK
		}
		return CommandFailed, cpl.Status
	}
	if regs.Readl(sacc.RegSTATUS)&sacc.StatusError != 0 {
		return DeviceHalted, sacc.Status(regs.Readl(sacc.RegErrCode))
	}
	return Late, sacc.StatusOK
}
