package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

func runCommand() command {
	return command{
		name:    "run",
		summary: "run a workload on a fresh machine and print its trace",
		usage:   "[flags] [workload]",
		help: `Builds a machine, runs a bare-metal workload on it and prints every event of the
run with its virtual time: configuration reads during enumeration, register writes,
the doorbell, the descriptor fetch, DMA crossing the link, the completion and its
phase, the interrupt. Lines starting with '#' say what the workload checked.

Workloads:
` + workloadList() + `
With --format perfetto the trace is Chrome trace-event JSON: open it at
ui.perfetto.dev. With --format json each event is one JSON object per line.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			format := fs.String("format", "text", "trace format: text, json or perfetto")
			out := fs.String("o", "", "write the trace to this file instead of standard output")
			return func(ctx context.Context, e *env, args []string) error {
				name := "job"
				switch len(args) {
				case 0:
				case 1:
					name = args[0]
				default:
					return usageError("one workload at most, got %d", len(args))
				}
				w, ok := baremetal.FindWorkload(name)
				if !ok {
					return usageError("no workload %q", name)
				}
				if *format != "text" && *format != "json" && *format != "perfetto" {
					return usageError("unknown format %q", *format)
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				return runWorkload(e, w, cfg, *format, *out)
			}
		},
	}
}

func workloadList() string {
	var b strings.Builder
	for _, w := range baremetal.Workloads {
		fmt.Fprintf(&b, "  %-6s %s\n", w.Name, w.Doc)
	}
	return b.String()
}

func runWorkload(e *env, w baremetal.Workload, cfg machine.Config, format, outPath string) (err error) {
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
		m.Tracer().Attach(trace.NewTextWriter(bw))
	case "json":
		m.Tracer().Attach(trace.NewJSONWriter(bw))
		story = prefixWriter{w: e.stderr, prefix: "# "}
	case "perfetto":
		m.Tracer().Attach(&buf)
		story = prefixWriter{w: e.stderr, prefix: "# "}
	}
	if err := w.Run(m, story); err != nil {
		return fmt.Errorf("workload %s: %w", w.Name, err)
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
