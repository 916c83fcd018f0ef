package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
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

With --hunt N it runs your variant of bug hunt N (saccbook hunt start N): the
scenario, its parameters and its secret bug come from your hunt key, so no
scenario, --set, --seed, --cost, --ram or --quirks goes with it. The text trace
then starts every event with its number, the one saccbook hunt submit --event
asks for.

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
			huntN := fs.Int("hunt", 0, "run your variant of bug hunt `N` (see saccbook hunt)")
			root := rootFlag(fs)
			details := fs.Bool("details", false, "text trace: also print detail events (stores entering the store buffer, page-walk levels)")
			return func(ctx context.Context, e *env, args []string) error {
				if *format != "text" && *format != "json" && *format != "perfetto" {
					return usageError("unknown format %q", *format)
				}
				if isSet(fs, "hunt") {
					v, s, cfg, err := huntRun(fs, *huntN, *root, args, e)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "# hunt %d: %s (your variant; its bug is not named here)\n", v.Hunt.Number, v.Hunt.Title)
					return runScenario(e, s, v.Options, cfg, *format, *out, *dmesg, *details, true)
				}
				if isSet(fs, "root") {
					return usageError("--root goes with --hunt")
				}
				s, opts, err := pickScenario(args, *set)
				if err != nil {
					return err
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				return runScenario(e, s, opts, cfg, *format, *out, *dmesg, *details, false)
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

// runScenario runs s and writes its trace; details adds the detail events to a
// text trace, and numbered starts every text line with the event's sequence
// number.
func runScenario(e *env, s scenario.Scenario, opts map[string]string, cfg machine.Config, format, outPath string, dmesg, details, numbered bool) (err error) {
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
		if numbered {
			m.Tracer().Attach(numberedText{w: bw, d: m.Tracer().Dialect(), details: details})
		} else {
			tw := trace.NewTextWriter(bw).In(m.Tracer().Dialect())
			tw.Details = details
			m.Tracer().Attach(tw)
		}
	case "json":
		m.Tracer().Attach(trace.NewJSONWriter(bw))
		story = prefixWriter{w: e.stderr, prefix: "# "}
	case "perfetto":
		m.Tracer().Attach(&buf)
		story = prefixWriter{w: e.stderr, prefix: "# "}
	}
	sv := &scenario.Env{Log: story, Options: opts}
	if err := s.Run(m, sv); err != nil {
		if format == "perfetto" {
			// A broken run is the one worth opening in Perfetto: its events
			// are written as far as it went, as text and JSON stream them.
			if werr := trace.WritePerfetto(bw, buf.Events, m.Cost().LinkBytesPerUs); werr != nil {
				return fmt.Errorf("scenario %s: %w (and its trace: %v)", s.Name, err, werr)
			}
		}
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

// numberedText is the text trace with each event's sequence number first:
// "   150      2000 sacc_reg_write reg=SQ_TAIL size=4 val=0x1".
// Like the plain text trace it leaves out the detail kinds unless asked, and
// spells the events in the machine's dialect.
type numberedText struct {
	w       *bufio.Writer
	d       trace.Dialect
	details bool
}

func (n numberedText) Record(ev *trace.Event) {
	if !n.details && ev.Kind.Detail() {
		return
	}
	var b [160]byte
	line := strconv.AppendUint(b[:0], ev.Seq, 10)
	for len(line) < 6 {
		line = append([]byte{' '}, line...)
	}
	line = append(line, ' ')
	line = n.d.AppendText(line, *ev)
	line = append(line, '\n')
	_, _ = n.w.Write(line)
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
