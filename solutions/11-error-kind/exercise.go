// Exercise 11-error-kind: a job that failed, or a device that stopped?
//
// This is the reference solution; the exercise's file explains the task.
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
