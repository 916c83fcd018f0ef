package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/qtest"
	"github.com/saccbook/saccbook/sacc/trace"
)

func qtestCommand() command {
	return command{
		name:    "qtest",
		summary: "serve the QEMU qtest protocol: poke the machine by hand or from a test",
		usage:   "[flags]",
		help: fmt.Sprintf(`Serves QEMU's qtest protocol: one request per line, one reply per line. The
client stands in for the CPU: it reads and writes guest-physical memory and I/O ports
and steps the virtual clock. Without --listen it serves standard input and output;
with --listen each connection gets its own fresh machine.

With --listen, at most --max-conns connections are served at once; one more is
answered "FAIL too many connections" and closed. A connection whose first line is
an HTTP request (a web page can make the browser send one to a local port) is
closed before anything on it runs, and so is one that leaves a reply unread for
a minute. On TCP one read, write, b64read, b64write or
memset moves at most %d MiB (a request line is at most %d MiB), so that no client
pins much memory; on a Unix socket and on standard input the limit is %d MiB.
A Unix socket left behind by a server that is no longer running is replaced.

Requests: outb/outw/outl PORT VAL, inb/inw/inl PORT, writeb/w/l/q ADDR VAL,
readb/w/l/q ADDR, read ADDR SIZE, write ADDR SIZE 0xDATA, b64read ADDR SIZE,
b64write ADDR SIZE B64, memset ADDR SIZE VAL, clock_step [NS], clock_set NS,
endianness, trace on|off, help [REQUEST]. A malformed request is answered
FAIL <reason>. help answers on one line, as every request does: all the requests
with their arguments, or what one of them does. A line is one request, with no
comments: "readl 0 # MAGIC" is refused.

Example (read the device's vendor and device ID through ECAM):
  $ echo 'readl 0xb0018000' | saccbook qtest
  OK 0x0000000010921b36`, qtest.TCPMaxTransfer>>20, qtest.TCPMaxLine>>20, qtest.MaxTransfer>>20),
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var mf machineFlags
			mf.register(fs)
			listen := fs.String("listen", "", "serve on tcp:HOST:PORT or unix:PATH instead of stdin/stdout")
			traceOn := fs.Bool("trace", false, "echo every trace event on standard error from the start")
			maxConns := fs.Int("max-conns", qtest.DefaultMaxConns, "with --listen: the most connections served at once (each has a machine of its own)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				cfg, err := mf.config()
				if err != nil {
					return err
				}
				newMachine := func() (qtest.Machine, error) {
					m, err := machine.New(cfg)
					if err != nil {
						return nil, err
					}
					if *traceOn {
						m.Tracer().Attach(trace.NewTextWriter(e.stderr).In(m.Tracer().Dialect()))
					}
					return m, nil
				}
				if *maxConns < 1 {
					return usageError("--max-conns %d: want at least 1", *maxConns)
				}
				if *listen == "" {
					m, err := newMachine()
					if err != nil {
						return err
					}
					return qtest.Serve(ctx, e.stdin, e.stdout, m, e.stderr)
				}
				ln, err := qtest.Listen(*listen, e.stderr)
				if err != nil {
					return err
				}
				if !qtest.IsLocal(ln.Addr()) {
					fmt.Fprintf(e.stderr, "WARNING: qtest is listening on %s, which is not a loopback address.\n"+
						"WARNING: anyone who can reach it can drive this machine.\n", ln.Addr())
				}
				fmt.Fprintf(e.stderr, "qtest: listening on %s %s\n", ln.Addr().Network(), ln.Addr())
				srv := &qtest.Server{NewMachine: newMachine, Log: e.stderr, MaxConns: *maxConns}
				return srv.Serve(ctx, ln)
			}
		},
	}
}
