// Package check is what every exercise's tests share: a booted machine whose
// events are recorded from power-on, failure messages that speak to a learner
// (what was expected, what the machine saw last, how to replay the run and where
// to get a hint), and a watchdog that stops a learner's code that never returns.
//
// A test boots a machine, hands the learner's function to Do, and then asks the
// machine, never the learner's code, what happened:
//
//	m := check.Boot(t, host.Config{})
//	var got Function
//	var err error
//	m.Do("FindSACC", 1_000_000, func() { got, err = FindSACC(m.CPU) }) // 1 ms of virtual time
//	if err != nil || got.Dev != 3 {
//		m.Fatalf("FindSACC returned %v, %v; want device 3", got, err)
//	}
//
// Fatalf and Errorf add the last trace events since the learner's code was
// called, the exercise's replay command and chapter (from its meta.json),
// "saccbook hint ID", and the address of the run in the browser: every test
// leaves a record of its run in exercises/.runs/ID.json when it ends (record.go),
// which `saccbook serve` replays.
package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// LastEvents is how many trace events a failure message shows.
const LastEvents = 10

// WallClockLimit is how long Do lets a learner's function run in real time before
// it gives up on it (a loop that never touches the machine never reaches the
// virtual-time watchdog).
const WallClockLimit = 10 * time.Second

// Meta is the part of an exercise's meta.json the tests use for their messages.
type Meta struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Chapter    int    `json:"chapter"`
	ChapterURL string `json:"chapter_url"`
	Replay     string `json:"replay"`
}

// LoadMeta reads meta.json from the current directory, which is the exercise's
// package directory while `go test` runs it.
func LoadMeta(t testing.TB) Meta {
	t.Helper()
	b, err := os.ReadFile("meta.json")
	if err != nil {
		t.Fatalf("check: this exercise has no meta.json: %v", err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("check: meta.json: %v", err)
	}
	return m
}

// Machine is a booted host (machine, CPU, kernel; no SACC driver: the learner
// writes that) with every event since power-on recorded.
type Machine struct {
	*host.Host
	t    testing.TB
	meta Meta
	rec  trace.Buffer
	// from is where the learner's code began (the first Do), who its name;
	// failure messages show what happened from there on.
	from int
	who  string
	// fail is the first failure reported, for the run record.
	fail *failure
}

// Boot builds a machine from cfg and boots the kernel on it without the SACC
// driver. A failure to boot stops the test: it is never the learner's fault.
func Boot(t testing.TB, cfg host.Config) *Machine {
	t.Helper()
	m := &Machine{t: t, meta: LoadMeta(t)}
	mach, err := machine.New(cfg.Machine)
	if err != nil {
		t.Fatalf("check: build the machine: %v", err)
	}
	mach.Tracer().Attach(&m.rec)
	cfg.NoDriver = true
	h, err := host.BootOn(mach, cfg)
	if err != nil {
		t.Fatalf("check: boot the kernel: %v", err)
	}
	m.Host = h
	t.Cleanup(m.saveRecord)
	return m
}

// Cost is the default cost model with some parameters changed, each given as
// "name=value" (the names `saccbook costs` lists), for host.Config.Machine.Cost.
func Cost(t testing.TB, assignments ...string) *sim.Cost {
	t.Helper()
	c := sim.DefaultCost()
	for _, a := range assignments {
		if err := c.ParseAssignment(a); err != nil {
			t.Fatalf("check: %v", err)
		}
	}
	return &c
}

// Events is every event recorded since power-on.
func (m *Machine) Events() []trace.Event { return m.rec.Events }

// Mark is a position in the event record, for Since.
func (m *Machine) Mark() int { return len(m.rec.Events) }

// Since is the events recorded after mark.
func (m *Machine) Since(mark int) []trace.Event { return m.rec.Events[mark:] }

// Errorf reports a failure with the machine's context and lets the test go on.
func (m *Machine) Errorf(format string, a ...any) {
	m.t.Helper()
	m.t.Error(m.Report(fmt.Sprintf(format, a...)))
}

// Fatalf reports a failure with the machine's context and stops the test.
func (m *Machine) Fatalf(format string, a ...any) {
	m.t.Helper()
	m.t.Fatal(m.Report(fmt.Sprintf(format, a...)))
}

// Report is msg followed by the last events the machine recorded (from the
// moment the learner's code was first called, if it was), how to replay the run,
// and where the hints are.
func (m *Machine) Report(msg string) string {
	var seq uint64
	if n := len(m.rec.Events); n > 0 {
		seq = m.rec.Events[n-1].Seq
	}
	if m.fail == nil {
		m.fail = &failure{msg: strings.TrimSpace(msg), seq: seq}
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(strings.TrimSpace(msg))
	b.WriteString("\n\n")
	switch evs := m.rec.Events[m.from:]; {
	case m.who == "":
		b.WriteString("The machine recorded ")
		b.WriteString(FormatLast(evs, LastEvents))
	case len(evs) == 0:
		fmt.Fprintf(&b, "The machine recorded no events after %s was called: it never touched the hardware.\n", m.who)
	default:
		fmt.Fprintf(&b, "After %s was called, the machine recorded ", m.who)
		b.WriteString(FormatLast(evs, LastEvents))
	}
	b.WriteString(Footer(m.meta))
	if m.meta.ID != "" {
		b.WriteString(RunLink(m.meta.ID, m.fail.seq))
	}
	return b.String()
}

// FormatLast finishes the sentence "The machine recorded …": how many events there
// were and the last n of them, one per line, as the trace prints them.
func FormatLast(events []trace.Event, n int) string {
	if len(events) == 0 {
		return "no events.\n"
	}
	from := max(0, len(events)-n)
	var b strings.Builder
	if from == 0 {
		fmt.Fprintf(&b, "%d events (time in virtual ns):\n", len(events))
	} else {
		fmt.Fprintf(&b, "%d events; the last %d (time in virtual ns):\n", len(events), len(events)-from)
	}
	b.WriteString(Lines(events[from:]))
	return b.String()
}

// Footer says how to see the run again and where the hints are.
func Footer(meta Meta) string {
	var b strings.Builder
	b.WriteString("\n")
	if meta.Replay != "" {
		fmt.Fprintf(&b, "Watch the same steps done right:  %s\n", meta.Replay)
	}
	if meta.ChapterURL != "" {
		if addr := serveAddr(); addr != "" {
			fmt.Fprintf(&b, "Read it again in the browser:     open http://%s%s\n", addr, meta.ChapterURL)
		} else {
			fmt.Fprintf(&b, "Read it again in the browser:     saccbook serve, then open %s\n", meta.ChapterURL)
		}
	}
	if meta.ID != "" {
		fmt.Fprintf(&b, "Stuck?                            saccbook hint %s\n", meta.ID)
	}
	return b.String()
}

// Do runs the learner's code f under a watchdog and reports whether it returned.
// It stops the test, with a message a learner can act on, if f panics or faults
// (a user access to an unmapped page), if it is still running after budget
// nanoseconds of virtual time (measured from now) or after WallClockLimit of real
// time. what names the function ("FindSACC").
func (m *Machine) Do(what string, budget sim.Time, f func()) {
	m.t.Helper()
	if start, ok := m.run(what, budget, f); !ok {
		m.t.Fatal(m.Report(fmt.Sprintf("%s is still running after %s of virtual time (it started at t=%d ns). "+
			"A loop that waits for something that never comes? Every wait needs a deadline.", what, Duration(budget), start)))
	}
}

// DoWithin is Do for code that waits on the machine, when the test can say
// better than the watchdog why it is still waiting: if f is still running after
// budget nanoseconds of virtual time, DoWithin stops it and reports false, and
// the test goes on. A panic, a fault, or a loop that lets no virtual time pass
// still stops the test, as in Do.
func (m *Machine) DoWithin(what string, budget sim.Time, f func()) bool {
	m.t.Helper()
	_, ok := m.run(what, budget, f)
	return ok
}

// run is Do and DoWithin: it reports when f started, and false if the
// watchdog stopped it.
func (m *Machine) run(what string, budget sim.Time, f func()) (sim.Time, bool) {
	m.t.Helper()
	wd := &watchdog{}
	start := m.M.Now()
	if m.who == "" {
		m.from, m.who = m.Mark(), what
	}
	// MMIO writes are posted: what the harness wrote before f lands before f
	// starts, so that none of its events are counted as f's.
	if t := m.M.PostedLanded(); t > m.M.Now() {
		m.M.RunUntil(t)
	}
	m.M.Sim().Schedule(budget, wd, 0, 0, 0)
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }() // also when f ends the goroutine (runtime.Goexit)
		err = sim.Run(func() error {
			f()
			// MMIO writes are posted: the tests look at the device once what f
			// wrote has reached it, as a read-back by f would have made sure.
			if t := m.M.PostedLanded(); t > m.M.Now() {
				m.M.RunUntil(t)
			}
			return nil
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(WallClockLimit):
		// The learner's code still holds the machine: say so without touching it.
		m.t.Fatalf("\n%s is still running after %v of real time. A loop that never ends, "+
			"and never lets virtual time pass? Every wait on this machine needs a way out.\n%s",
			what, WallClockLimit, Footer(m.meta))
	}
	wd.disarmed = true
	var stopped *sim.Stopped
	var p *sim.Panic
	switch {
	case err == nil:
	case errors.As(err, &stopped) && stopped.Reason == errWatchdog:
		return start, false
	case errors.As(err, &stopped):
		// A fault of the learner's process (a *kernel.Segfault): told as a panic,
		// with the lines of the learner's code it came through.
		m.t.Fatal(m.Report(fmt.Sprintf("%s panicked: %v\n%s", what, stopped, learnerFrames(stopped.Stack))))
	case errors.As(err, &p):
		m.t.Fatal(m.Report(fmt.Sprintf("%s panicked: %v\n%s", what, p.Value, learnerFrames(p.Stack))))
	}
	return start, true
}

// Duration formats virtual nanoseconds as people say them: 100 µs, 2 ms.
func Duration(ns sim.Time) string {
	unit := func(n, per sim.Time, name string) string {
		if n%per == 0 {
			return fmt.Sprintf("%d %s", n/per, name)
		}
		return fmt.Sprintf("%.1f %s", float64(n)/float64(per), name)
	}
	switch {
	case ns >= 1_000_000:
		return unit(ns, 1_000_000, "ms")
	case ns >= 1_000:
		return unit(ns, 1_000, "µs")
	}
	return fmt.Sprintf("%d ns", ns)
}

// watchdog is a machine event that fires at the end of the budget. Any CPU
// operation that lets virtual time pass runs it; it stops the learner's code
// (sim.Stop), which returns from the sim.Run in Do.
type watchdog struct{ disarmed bool }

// errWatchdog is the reason the watchdog stops a run with.
var errWatchdog = errors.New("check: the virtual-time budget ran out")

func (w *watchdog) HandleEvent(sim.Event) {
	if !w.disarmed {
		sim.Stop(errWatchdog)
	}
}

// learnerFrames keeps the stack lines that point into the exercise's own source.
func learnerFrames(stack string) string {
	var out []string
	lines := strings.Split(stack, "\n")
	for i := 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.Contains(l, "/exercises/") && strings.Contains(l, ".go:") &&
			!strings.Contains(l, "_test.go") && !strings.Contains(l, "/internal/check/") {
			out = append(out, "    at "+l)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n")
}

// Find returns the events of the given kinds, in order.
func Find(events []trace.Event, kinds ...trace.Kind) []trace.Event {
	var out []trace.Event
	for _, ev := range events {
		for _, k := range kinds {
			if ev.Kind == k {
				out = append(out, ev)
				break
			}
		}
	}
	return out
}

// Lines formats events one per line, indented, for a failure message.
func Lines(events []trace.Event) string {
	if len(events) == 0 {
		return "  (none)\n"
	}
	var b strings.Builder
	for _, ev := range events {
		b.WriteString("  ")
		b.WriteString(ev.String())
		b.WriteString("\n")
	}
	return b.String()
}
