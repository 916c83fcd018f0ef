package sim_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

var errTest = errors.New("the test stopped it")

// fault is a reason of its own type, as kernel.Segfault is.
type fault struct{ addr uint64 }

func (f *fault) Error() string { return fmt.Sprintf("fault at %#x", f.addr) }

func deepest(reason error) { sim.Stop(reason) }

func middle(reason error, unwound *bool) {
	defer func() { *unwound = true }()
	deepest(reason)
	panic("Stop returned")
}

func TestStopFromANestedCall(t *testing.T) {
	var unwound, after bool
	err := sim.Run(func() error {
		middle(errTest, &unwound)
		after = true
		return nil
	})
	var s *sim.Stopped
	if !errors.As(err, &s) {
		t.Fatalf("Run = %v (%T), want a *sim.Stopped", err, err)
	}
	if s.Reason != errTest || !errors.Is(err, errTest) {
		t.Errorf("reason %v, want %v (errors.Is %v)", s.Reason, errTest, errors.Is(err, errTest))
	}
	if got, want := err.Error(), "the test stopped it"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !unwound {
		t.Error("the deferred call of a function Stop unwound did not run")
	}
	if after {
		t.Error("the program went on after Stop")
	}
	if !strings.Contains(s.Stack, "sim_test.deepest") || !strings.Contains(s.Stack, "sim_test.middle") {
		t.Errorf("the stack does not show where Stop was called:\n%s", s.Stack)
	}
	var p *sim.Panic
	if errors.As(err, &p) {
		t.Error("a stop is also a *sim.Panic")
	}
}

func TestStopReasonIsFoundByErrorsAs(t *testing.T) {
	err := sim.Run(func() error {
		sim.Stop(fmt.Errorf("user access: %w", &fault{0x7f00}))
		return nil
	})
	var f *fault
	if !errors.As(err, &f) || f.addr != 0x7f00 {
		t.Fatalf("errors.As(%v) found %v", err, f)
	}
}

func TestStopWithANilReason(t *testing.T) {
	err := sim.Run(func() error {
		sim.Stop(nil)
		return errors.New("not reached")
	})
	var s *sim.Stopped
	if !errors.As(err, &s) {
		t.Fatalf("Run = %v (%T), want a *sim.Stopped", err, err)
	}
	if s.Reason != nil || errors.Unwrap(err) != nil {
		t.Errorf("reason %v, want none", s.Reason)
	}
	if err.Error() != "stopped" {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestRunReturnsWhatTheProgramReturned(t *testing.T) {
	if err := sim.Run(func() error { return nil }); err != nil {
		t.Errorf("Run of a program returning nil = %v", err)
	}
	if err := sim.Run(func() error { return errTest }); err != errTest {
		t.Errorf("Run = %v, want the program's own error", err)
	}
}

func explode() { panic("boom") }

func at(s []int, i int) int { return s[i] }

func TestGenuinePanicComesBackWithItsStack(t *testing.T) {
	err := sim.Run(func() error {
		explode()
		return nil
	})
	var p *sim.Panic
	if !errors.As(err, &p) {
		t.Fatalf("Run = %v (%T), want a *sim.Panic", err, err)
	}
	if p.Value != "boom" || err.Error() != "panicked: boom" {
		t.Errorf("value %v, Error() %q", p.Value, err.Error())
	}
	if got := fmt.Errorf("program %w", err).Error(); got != "program panicked: boom" {
		t.Errorf("wrapped: %q", got)
	}
	if !strings.Contains(p.Stack, "sim_test.explode") {
		t.Errorf("the stack does not show where it panicked:\n%s", p.Stack)
	}
	var s *sim.Stopped
	if errors.As(err, &s) {
		t.Error("a panic is also a *sim.Stopped")
	}

	// A runtime error is found by errors.As through the panic.
	err = sim.Run(func() error {
		at(nil, 1)
		return nil
	})
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Errorf("Run of an index out of range = %v (%T), want a runtime.Error inside", err, err)
	}
}

func TestNestedRunStopsTheInnermost(t *testing.T) {
	var inner error
	err := sim.Run(func() error {
		inner = sim.Run(func() error {
			sim.Stop(errTest)
			return nil
		})
		return errors.New("the outer program went on")
	})
	if !errors.Is(inner, errTest) {
		t.Errorf("inner Run = %v, want stopped by %v", inner, errTest)
	}
	if err == nil || err.Error() != "the outer program went on" {
		t.Errorf("outer Run = %v", err)
	}
}

func TestForwardPassesAStopOnUnchanged(t *testing.T) {
	var inner *sim.Stopped
	err := sim.Run(func() error {
		e := sim.Run(func() error {
			deepest(&fault{0x10})
			return nil
		})
		errors.As(e, &inner)
		sim.Forward(e)
		return errors.New("Forward returned")
	})
	var s *sim.Stopped
	if !errors.As(err, &s) {
		t.Fatalf("outer Run = %v (%T), want a *sim.Stopped", err, err)
	}
	var f *fault
	if !errors.As(err, &f) || f.addr != 0x10 {
		t.Errorf("outer reason %v", s.Reason)
	}
	if inner == nil || s.Stack != inner.Stack || !strings.Contains(s.Stack, "sim_test.deepest") {
		t.Errorf("the forwarded stop lost the stack of the first:\n%s", s.Stack)
	}
}

func TestForwardPassesAPanicOnUnchanged(t *testing.T) {
	var inner error
	err := sim.Run(func() error {
		inner = sim.Run(func() error {
			explode()
			return nil
		})
		sim.Forward(inner)
		return errors.New("Forward returned")
	})
	var p *sim.Panic
	if !errors.As(err, &p) || err != inner {
		t.Fatalf("outer Run = %v (%T), want the inner *sim.Panic %p", err, err, inner)
	}
	if !strings.Contains(p.Stack, "sim_test.explode") {
		t.Errorf("the forwarded panic lost its stack:\n%s", p.Stack)
	}
}

func TestForwardLeavesOtherErrorsToTheCaller(t *testing.T) {
	err := sim.Run(func() error {
		sim.Forward(nil)
		sim.Forward(errTest)
		return errors.New("went on")
	})
	if err == nil || err.Error() != "went on" {
		t.Errorf("Run = %v", err)
	}
}

// stopAt is a trace sink that stops the run at the first event of its kind.
type stopAt struct {
	kind  trace.Kind
	seen  int // events recorded
	after int // events recorded after the stop
	fired bool
}

func (s *stopAt) Record(ev *trace.Event) {
	if s.fired {
		s.after++
		return
	}
	s.seen++
	if ev.Kind == s.kind {
		s.fired = true
		sim.Stop(errTest)
	}
}

// TestStopInATraceSinkDuringADeviceEvent: a sink that stops the run while the
// device is handling one of its own events (a descriptor fetch, scheduled after
// the doorbell) unwinds through the event queue and the CPU-side program.
func TestStopInATraceSinkDuringADeviceEvent(t *testing.T) {
	m, err := machine.New(machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sink := &stopAt{kind: trace.Fetch}
	m.Tracer().Attach(sink)
	returned := false
	err = sim.Run(func() error {
		err := baremetal.OneJob(m, io.Discard)
		returned = true
		return err
	})
	var s *sim.Stopped
	if !errors.As(err, &s) || s.Reason != errTest {
		t.Fatalf("Run = %v (%T), want stopped by the sink", err, err)
	}
	if !sink.fired || returned || sink.after != 0 {
		t.Fatalf("fired %v, program returned %v, %d events after the stop", sink.fired, returned, sink.after)
	}
	if uint64(sink.seen) != m.Tracer().Seq() {
		t.Errorf("the sink saw %d events, the tracer numbered %d", sink.seen, m.Tracer().Seq())
	}
	if !strings.Contains(s.Stack, "(*Sim).RunUntil") || !strings.Contains(s.Stack, "baremetal.OneJob") {
		t.Errorf("the stop did not come from an event run under the program:\n%s", s.Stack)
	}

	// The same job on a fresh machine, with nothing stopping it, finishes.
	m, err = machine.New(machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(func() error { return baremetal.OneJob(m, io.Discard) }); err != nil {
		t.Fatalf("the job on a fresh machine: %v", err)
	}
}

// TestStopOutsideRunIsAClearPanic runs itself in a child process that calls Stop
// with no Run around it, and reads what the runtime printed.
func TestStopOutsideRunIsAClearPanic(t *testing.T) {
	if os.Getenv("SACC_SIM_STOP_OUTSIDE_RUN") == "1" {
		sim.Stop(errTest)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopOutsideRunIsAClearPanic$")
	cmd.Env = append(os.Environ(), "SACC_SIM_STOP_OUTSIDE_RUN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child exited cleanly:\n%s", out)
	}
	want := "panic: sim.Stop called outside sim.Run: there is no run on this goroutine to stop (reason: the test stopped it)"
	if !strings.Contains(string(out), want) {
		t.Fatalf("the child's output does not contain %q:\n%s", want, out)
	}
}
