package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
)

func lspciCommand() command {
	return command{
		name:    "lspci",
		summary: "show the PCI device the way lspci does, after firmware enumeration",
		usage:   "[-v|-vv]",
		help: `Builds a machine, lets the firmware step of the job workload enumerate the bus
(find 00:03.0, size and assign its BARs, enable memory decoding and bus mastering)
and prints the device as lspci would: one line, or with -v / -vv the header,
regions and capabilities decoded from configuration space. -vv is the monitor's
'info pci' view.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			v := fs.Bool("v", false, "verbose: header, regions and capabilities")
			vv := fs.Bool("vv", false, "very verbose: every decoded register, as lspci -vv")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				m, err := machine.New(cfg)
				if err != nil {
					return err
				}
				if _, err := baremetal.Enumerate(m); err != nil {
					return err
				}
				level := 0
				switch {
				case *vv:
					level = 2
				case *v:
					level = 1
				}
				monitor.WriteLSPCI(e.stdout, m.Device().Config(), level)
				if level > 0 {
					fmt.Fprintln(e.stdout) // lspci ends each verbose device with a blank line
				}
				return nil
			}
		},
	}
}
