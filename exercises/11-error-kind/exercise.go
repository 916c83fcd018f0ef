// Exercise 11-error-kind: a job that failed, or a device that stopped?
//
// SACC has two kinds of error (specification §7.6, chapter 11):
//
//   - a per-command error (bad opcode 1, bad address 2, bad length 3) ends one
//     command: the device posts its completion with that status, writes the
//     code into ERR_CODE, and goes on with the next descriptor. STATUS.ERROR
//     stays 0. ERR_CODE holds only the most recent code: by the time a driver
//     looks, a later command may have replaced it. The completion is the answer;
//   - a device error halts the device: STATUS (0x0C) bit 1, ERROR, becomes 1,
//     READY (bit 0) becomes 0, ERR_CODE (0x3C) says why, and no completion will
//     ever come for what was in flight.
//
// A driver whose command did not end well must tell these apart, and must do it
// cheaply: every register read is an MMIO round trip of about 1 µs.
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

// Diagnose says what became of a command. done reports whether its completion
// arrived, and cpl is that completion.
//
// With a completion in hand it reads no register. Without one it reads STATUS,
// and ERR_CODE only if the device has halted. It returns the kind and the code
// that explains it: the completion's status for a completed command, ERR_CODE
// for a halted device, and sacc.StatusOK when the command is late. It never
// writes a register.
func Diagnose(regs Registers, cpl sacc.Completion, done bool) (Kind, sacc.Status) {
	// TODO
	return Succeeded, sacc.StatusOK
}
