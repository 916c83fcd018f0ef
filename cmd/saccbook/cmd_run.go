package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

func runCommand() command {
	return command{
		name:    "run",
		summary: "run a scenario on a fresh machine and print its trace",
		usage:   "[flags] [scenario]",
		help: `Builds a machine, runs a scenario on it and prints every event of the run with
its virtual time: configuration reads during enumeration, register writes, the
doorbell, the descriptor fetch, DMA crossing the link, the completion and its phase,
the interrupt. Lines starting with '#' say what the scenario checked.

Scenarios:
` + scenarioList() + `
With --format perfetto the trace is Chrome trace-event JSON: open it at
ui.perfetto.dev. With --format json each event is one JSON object per line.

The text trace leaves out the detail events that the browser draws: each store
entering the CPU's store buffer (cpu_store, and cpu_store_cached on a
non-coherent CPU) before it lands as cpu_write, each posted write to a BAR as the
CPU issues it (cpu_mmio_write) before it lands as sacc_reg_write, and each level
of an IOMMU page walk (iommu_walk). --details prints them too; json and perfetto
always have them.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			format := fs.String("format", "text", "trace format: text, json or perfetto")
			out := fs.String("o", "", "write the trace to this file instead of standard output")
			set := fs.String("set", "", "scenario options, name=value,... (for example cpu=arm64,irq=on)")
			dmesg := fs.Bool("dmesg", false, "print the kernel log after the run (scenarios that boot a kernel)")
			details := fs.Bool("details", false, "text trace: also print detail events (stores entering the store buffer, page-walk levels)")
			return func(ctx context.Context, e *env, args []string) error {
				s, opts, err := pickScenario(args, *set)
				if err != nil {
					return err
				}
				if *format != "text" && *format != "json" && *format != "perfetto" {
					return usageError("unknown format %q", *format)
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				return runScenario(e, s, opts, cfg, *format, *out, *dmesg, *details)
			}
		},
	}
}

func scenarioList() string {
	var b strings.Builder
	for _, s := range scenario.All() {
		fmt.Fprintf(&b, "  %-9s %s\n", s.Name, s.Summary)
		if doc := s.OptionsDoc(); doc != "" {
			fmt.Fprintf(&b, "  %-9s options: %s\n", "", doc)
		}
	}
	return b.String()
}

// pickScenario reads the scenario argument (default "job") and its options.
func pickScenario(args []string, set string) (scenario.Scenario, map[string]string, error) {
	name := "job"
	switch len(args) {
	case 0:
	case 1:
		name = args[0]
	default:
		return scenario.Scenario{}, nil, usageError("one scenario at most, got %d", len(args))
	}
	s, ok := scenario.Find(name)
	if !ok {
		return s, nil, usageError("no scenario %q (have: %s)", name, strings.Join(scenario.Names(), ", "))
	}
	opts, err := scenario.ParseOptions(set)
	if err == nil {
		err = s.CheckOptions(opts)
	}
	if err != nil {
		return s, nil, usageError("%v", err)
	}
	return s, opts, nil
}

func runScenario(e *env, s scenario.Scenario, opts map[string]string, cfg machine.Config, format, outPath string, dmesg, details bool) (err error) {
	m, err := machine.New(cfg)
	if err != nil {
		return err
	}
	var out io.Writer = e.stdout
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		out = f
	}
	bw := bufio.NewWriter(out)
	defer func() {
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
	}()
	// The narrative interleaves with a text trace; other formats keep stdout
	// machine-readable and tell the story on stderr.
	var story io.Writer = prefixWriter{w: bw, prefix: "# "}
	var buf trace.Buffer
	switch format {
	case "text":
		tw := trace.NewTextWriter(bw).In(m.Tracer().Dialect())
		tw.Details = details
		m.Tracer().Attach(tw)
	case "json":
		m.Tracer().Attach(trace.NewJSONWriter(bw))
		story = prefixWriter{w: e.stderr, prefix: "# "}
	case "perfetto":
		m.Tracer().Attach(&buf)
		story = prefixWriter{w: e.stderr, prefix: "# "}
	}
	sv := &scenario.Env{Log: story, Options: opts}
	if err := s.Run(m, sv); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	if dmesg {
		if sv.Host == nil {
			fmt.Fprintf(story, "(scenario %s boots no kernel: no kernel log)\n", s.Name)
		} else {
			sv.Host.K.Dmesg(prefixWriter{w: story, prefix: "dmesg: "})
		}
	}
	if format == "perfetto" {
		return trace.WritePerfetto(bw, buf.Events, m.Cost().LinkBytesPerUs)
	}
	return nil
}

// prefixWriter starts every line it writes with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
