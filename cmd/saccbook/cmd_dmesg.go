package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
)

func dmesgCommand() command {
	return command{
		name:    "dmesg",
		summary: "run a scenario and print its kernel log",
		usage:   "[flags] [scenario]",
		help: `Runs a scenario that boots the kernel (default: driver) and prints the kernel log
as dmesg does: PCI enumeration, BAR assignment, the driver's probe, MSI-X vectors,
errors and resets, each with the virtual time it happened.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			set := fs.String("set", "", "scenario options, name=value,...")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					args = []string{"driver"}
				}
				s, opts, err := pickScenario(args, *set)
				if err != nil {
					return err
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				m, err := machine.New(cfg)
				if err != nil {
					return err
				}
				sv := &scenario.Env{Log: io.Discard, Options: opts}
				runErr := s.Run(m, sv)
				if sv.Host == nil {
					return fmt.Errorf("scenario %s boots no kernel, so there is no kernel log", s.Name)
				}
				if err := sv.Host.K.Dmesg(e.stdout); err != nil {
					return err
				}
				if runErr != nil {
					return fmt.Errorf("scenario %s: %w", s.Name, runErr)
				}
				return nil
			}
		},
	}
}
