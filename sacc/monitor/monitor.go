// Package monitor is saccbook's QEMU-style human monitor: one command per line, in
// QEMU's HMP syntax, against a run held by a runner.Runner. It stops, steps and
// steps back the run, and shows the machine the way QEMU and Linux tools do: lspci
// -vv for the endpoint, the memory tree, the device's registers and rings decoded,
// the IOMMU with its IOTLB, fault log and page walks, MSI-X and the CPU's
// interrupts, and x / xp memory dumps in QEMU's exact layout.
//
// The run is always held between commands. Every look at the machine is a
// Runner.View of the position shown and uses side-effect-free views — Device.State,
// IOMMU.State and Walk, RAM reads — so inspecting changes nothing and adds no event
// to the trace. The exception is xp of a register address, which is a real read,
// as in QEMU: at the run's frontier it is part of the run; at a position in the
// past it is a read of the runner's view, forgotten with the next look. The events
// step and a traced cont print come from the runner's log of the run, so stepping
// through the past prints the same lines as stepping through the run.
package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Monitor runs monitor commands against one run.
type Monitor struct {
	r   *runner.Runner
	out io.Writer

	traceOn bool
	dialect *trace.Dialect // the machine's profile's spelling, read on first use
	line    []byte
	// The x/xp format and unit size used when a command leaves them out, updated by
	// every command that gives them (QEMU's default_fmt_format and default_fmt_size).
	lastFormat byte
	lastSize   int
}

// New returns a monitor for r that writes everything to out. The monitor does not
// own r: closing it is the caller's job.
func New(r *runner.Runner, out io.Writer) *Monitor {
	return &Monitor{r: r, out: out, lastFormat: 'x', lastSize: 4}
}

// ---------------------------------------------------------------------------
// Running commands

// errInternal is a panic (or a stray stop) caught while running a command.
type errInternal struct{ v any }

func (e errInternal) Error() string { return fmt.Sprintf("internal error: %v", e.v) }

// internal turns what sim.Run caught into the error a command reports: the panic's
// value, as QEMU prints an internal error, or the stop.
func internal(err error) error {
	if p := (*sim.Panic)(nil); errors.As(err, &p) {
		return errInternal{p.Value}
	}
	return errInternal{err}
}

// do looks at the machine at the position shown (Runner.View). A panic in fn ends
// fn only (the runner runs each look under sim.Run) and is returned.
func (mo *Monitor) do(fn func(m *machine.Machine)) error {
	err := mo.r.View(fn)
	if err == nil || errors.Is(err, runner.ErrClosed) {
		return err
	}
	return internal(err)
}

// view runs fn on the machine's goroutine, collecting what it writes, and copies
// that to out.
func (mo *Monitor) view(fn func(b *bytes.Buffer, m *machine.Machine)) error {
	var b bytes.Buffer
	err := mo.do(func(m *machine.Machine) { fn(&b, m) })
	mo.out.Write(b.Bytes())
	return err
}

// Exec parses and runs one command line, writing its output to out. It reports
// whether the command was quit. It never panics: a parse error is printed as
// QEMU prints it, and anything unexpected as one "internal error" line.
func (mo *Monitor) Exec(line string) (quit bool) {
	err := sim.Run(func() error {
		quit = mo.exec(line)
		return nil
	})
	if err != nil {
		fmt.Fprintf(mo.out, "%v\n", internal(err))
		return false
	}
	return quit
}

func (mo *Monitor) exec(line string) (quit bool) {
	c, err := Parse(line)
	if err != nil {
		var pe *ParseError
		switch {
		case errors.As(err, &pe) && pe.Unknown:
			fmt.Fprintf(mo.out, "%s (try \"help\")\n", pe.Msg)
		case errors.As(err, &pe) && pe.Cmd != "":
			fmt.Fprintf(mo.out, "%s\nTry \"help %s\" for more information\n", pe.Msg, pe.Cmd)
		default:
			fmt.Fprintf(mo.out, "%s\n", err)
		}
		return false
	}
	if c.Name == "quit" {
		return true
	}
	if err := mo.run(c); err != nil {
		fmt.Fprintf(mo.out, "%s: %v\n", c.Name, err)
	}
	return false
}

// run runs a parsed command (Exec without the parsing).
func (mo *Monitor) run(c Command) error {
	switch c.Name {
	case "":
		return nil
	case "help":
		mo.help(c.Args)
		return nil
	case "stop":
		return mo.where(mo.r.State(), true)
	case "cont":
		return mo.cont()
	case "step":
		return mo.step(c.N)
	case "back":
		return mo.back(c.N)
	case "trace":
		return mo.trace(c)
	case "info":
		return mo.info(c)
	case "x", "xp":
		return mo.dump(c)
	}
	return fmt.Errorf("not implemented")
}

// where says where the run is held; with event, it also shows the event the run is
// held in.
func (mo *Monitor) where(st runner.State, event bool) error {
	switch {
	case st.Done && st.Err != nil:
		fmt.Fprintf(mo.out, "program failed after event %d at t=%d ns: %v\n", st.Seq, st.Time, st.Err)
	case st.Done:
		fmt.Fprintf(mo.out, "program finished after event %d at t=%d ns\n", st.Seq, st.Time)
	case st.Seq == 0:
		fmt.Fprintf(mo.out, "stopped before the first event, t=%d ns\n", st.Time)
	default:
		fmt.Fprintf(mo.out, "stopped after event %d at t=%d ns\n", st.Seq, st.Time)
	}
	if !event || st.Seq == 0 {
		return nil
	}
	return mo.printEvents(st.Seq-1, st.Seq)
}

// printEvents prints the events of the run's log in (after, upTo], in the
// machine's dialect.
func (mo *Monitor) printEvents(after, upTo uint64) error {
	if mo.dialect == nil {
		var d trace.Dialect
		if err := mo.do(func(m *machine.Machine) { d = m.Tracer().Dialect() }); err != nil {
			return err
		}
		mo.dialect = &d
	}
	mo.r.Events(after, upTo, func(ev *trace.Event) {
		mo.line = append(mo.dialect.AppendText(mo.line[:0], *ev), '\n')
		mo.out.Write(mo.line)
	})
	return nil
}

func (mo *Monitor) cont() error {
	if st := mo.r.State(); st.Done {
		fmt.Fprintf(mo.out, "the program has already finished\n")
		return mo.where(st, false)
	}
	before := mo.r.State()
	st, err := mo.r.Continue()
	if err != nil {
		return err
	}
	if mo.traceOn {
		if err := mo.printEvents(before.Seq, st.Seq); err != nil {
			return err
		}
	}
	return mo.where(st, false)
}

// step lets n events happen and prints each one.
func (mo *Monitor) step(n uint64) error {
	before := mo.r.State()
	if before.Done {
		fmt.Fprintf(mo.out, "the program has finished: nothing left to step\n")
		return mo.where(before, false)
	}
	st, err := mo.r.Step(n)
	if err != nil {
		return err
	}
	if err := mo.printEvents(before.Seq, st.Seq); err != nil {
		return err
	}
	return mo.where(st, false)
}

// back goes n events back: the runner shows the machine as it was then.
func (mo *Monitor) back(n uint64) error {
	st := mo.r.State()
	target := uint64(0)
	if n < st.Seq {
		target = st.Seq - n
	}
	if target == st.Seq {
		fmt.Fprintf(mo.out, "already at the start\n")
		return mo.where(st, true)
	}
	st, err := mo.r.RunTo(target)
	if err != nil {
		return err
	}
	return mo.where(st, true)
}

func (mo *Monitor) trace(c Command) error {
	if !c.HasOn {
		state := "off"
		if mo.traceOn {
			state = "on"
		}
		fmt.Fprintf(mo.out, "trace is %s\n", state)
		return nil
	}
	mo.traceOn = c.On
	return nil
}

// help lists the commands as QEMU's help does: "name params -- text".
func (mo *Monitor) help(topic string) {
	w := mo.out
	if topic == "" {
		for _, c := range cmdTable {
			fmt.Fprintf(w, "%s %s -- %s\n", strings.Join(c.names, "|"), c.params, c.help)
		}
		return
	}
	fields := strings.Fields(topic)
	if fields[0] == "info" {
		if len(fields) == 1 {
			mo.infoHelp()
			return
		}
		if c, ok := lookup(infoTable, fields[1]); ok {
			fmt.Fprintf(w, "info %s %s -- %s\n", c.names[0], c.params, c.help)
			return
		}
		fmt.Fprintf(w, "unknown command: 'info %s'\n", fields[1])
		return
	}
	c, ok := lookup(cmdTable, fields[0])
	if !ok {
		fmt.Fprintf(w, "unknown command: '%s'\n", fields[0])
		return
	}
	fmt.Fprintf(w, "%s %s -- %s\n", strings.Join(c.names, "|"), c.params, c.help)
	if c.long != "" {
		fmt.Fprintf(w, "%s\n", c.long)
	}
}

func (mo *Monitor) infoHelp() {
	for _, c := range infoTable {
		fmt.Fprintf(mo.out, "info %s %s -- %s\n", c.names[0], c.params, c.help)
	}
}

// HelpText is the command list for the CLI's help.
func HelpText() string {
	var b strings.Builder
	for _, c := range cmdTable {
		fmt.Fprintf(&b, "  %-18s %s\n", strings.TrimSpace(strings.Join(c.names, "|")+" "+c.params), c.help)
	}
	for _, c := range infoTable {
		fmt.Fprintf(&b, "  %-18s %s\n", strings.TrimSpace("info "+c.names[0]+" "+c.params), c.help)
	}
	return b.String()
}
