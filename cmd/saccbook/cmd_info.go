package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/sim"
)

func costsCommand() command {
	return command{
		name:    "costs",
		summary: "print the cost model: every default with its source",
		usage:   "[-v]",
		help: `Prints the virtual-time cost of every action the machine models. Each default is
of the right order for a PCIe Gen3/Gen4 host and names where the number comes from.
Change any of them with --cost name=value on the commands that build a machine.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			verbose := fs.Bool("v", false, "also print each parameter's source")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "NAME\tDEFAULT\tMEANING\n")
				for _, p := range sim.Costs {
					unit := "ns"
					if p.Name == "link_bytes_per_us" {
						unit = "B/µs"
					}
					fmt.Fprintf(tw, "%s\t%d %s\t%s\n", p.Name, p.Default, unit, p.Doc)
					if *verbose {
						fmt.Fprintf(tw, "\t\t  source: %s\n", p.Source)
					}
				}
				return tw.Flush()
			}
		},
	}
}

func quirksCommand() command {
	return command{
		name:    "quirks",
		summary: "list the machine's bug-injection points",
		usage:   "",
		help: `Lists every quirk: a named deviation from the specification that a bug hunt can
switch on (--quirks name,name on the commands that build a machine). All are off by
default; with none on, the machine follows the specification exactly.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "NAME\tSIDE\tHUNT\tEFFECT\n")
				for _, q := range quirk.All() {
					hunt := "-"
					if q.Hunt != 0 {
						hunt = fmt.Sprint(q.Hunt)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", q.Name, q.Side, hunt, q.Doc)
				}
				return tw.Flush()
			}
		},
	}
}

func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the version",
		usage:   "",
		help:    "Prints saccbook's version and the specification it implements.",
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				fmt.Fprintf(e.stdout, "saccbook %s (SACC specification v1)\n", version)
				return nil
			}
		},
	}
}
