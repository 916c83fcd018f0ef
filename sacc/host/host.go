// Package host assembles a whole system — machine, CPU, kernel and the SACC
// driver — from one configuration, the way a scenario, a test or a browser
// session wants it.
package host

import (
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/driver"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
)

// Config is everything that decides a run.
type Config struct {
	Machine machine.Config
	CPU     cpu.Config
	Kernel  kernel.Config
	Driver  driver.Config
	// NoDriver boots without loading the SACC driver.
	NoDriver bool
}

// Host is a booted system.
type Host struct {
	M   *machine.Machine
	CPU *cpu.CPU
	K   *kernel.Kernel
	Drv *driver.Driver
	Dev *driver.Device
}

// Boot builds the machine, boots the kernel on it and loads the driver.
func Boot(cfg Config) (*Host, error) {
	m, err := machine.New(cfg.Machine)
	if err != nil {
		return nil, err
	}
	return BootOn(m, cfg)
}

// BootOn boots the kernel and the driver on an existing machine (for a runner,
// which builds the machine itself).
func BootOn(m *machine.Machine, cfg Config) (*Host, error) {
	c := cpu.New(m, cfg.CPU)
	if cfg.Kernel.Quirks == 0 {
		cfg.Kernel.Quirks = cfg.Machine.Quirks
	}
	k, err := kernel.Boot(c, cfg.Kernel)
	if err != nil {
		return nil, err
	}
	h := &Host{M: m, CPU: c, K: k}
	if cfg.NoDriver {
		return h, nil
	}
	d, err := driver.Register(k, cfg.Driver)
	if err != nil {
		return h, err
	}
	h.Drv, h.Dev = d, d.Dev
	return h, nil
}
