package runner

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/kernel"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
)

func factory() (*machine.Machine, error) { return machine.New(machine.Config{}) }

func oneJob(m *machine.Machine) error { return baremetal.OneJob(m, io.Discard) }

// snapshot is what a stopped machine looks like at one event.
type snapshot struct {
	dev  string
	ram  uint64
	time uint64
}

func look(t *testing.T, r *Runner) snapshot {
	t.Helper()
	var s snapshot
	if err := r.Do(func(m *machine.Machine) {
		st := m.Device().State()
		s.dev = fmt.Sprintf("%+v", st)
		s.ram = m.RAM().Load(baremetal.CQAddr+sacc.CplPhaseOff, 8)
		s.time = uint64(m.Now())
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStartsHeldBeforeTheFirstEvent(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st := r.State(); st.Seq != 0 || st.Done || !st.Stopped {
		t.Fatalf("initial state %+v", st)
	}
	st, err := r.Step(1)
	if err != nil || st.Seq != 1 {
		t.Fatalf("after one step: %+v %v", st, err)
	}
	st, err = r.Step(10)
	if err != nil || st.Seq != 11 {
		t.Fatalf("after ten more: %+v %v", st, err)
	}
}

func TestContinueRunsToTheEnd(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := r.Continue()
	if err != nil || !st.Done || st.Err != nil || st.Seq < 50 {
		t.Fatalf("continue: %+v %v", st, err)
	}
	again, _ := r.Step(1)
	if again.Seq != st.Seq {
		t.Fatalf("stepping past the end moved: %+v", again)
	}
}

// TestStepBackIsExact: going back to an event by re-execution shows exactly the
// state the run had there the first time.
func TestStepBackIsExact(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seen []snapshot
	for {
		st, _ := r.Step(5)
		seen = append(seen, look(t, r))
		if st.Done {
			break
		}
	}
	for i := len(seen) - 2; i >= 0; i -= 3 {
		if _, err := r.RunTo(uint64(5 * (i + 1))); err != nil {
			t.Fatal(err)
		}
		if got := look(t, r); got != seen[i] {
			t.Fatalf("at event %d after going back: %+v, first time: %+v", 5*(i+1), got, seen[i])
		}
	}
}

func TestRequestsThatCauseEventsDoNotDeadlock(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Step(3)
	var v uint64
	r.Do(func(m *machine.Machine) { v = m.Read(sacc.ECAMAddress(0, 3, 0, 0), 4) })
	if v != sacc.DeviceID<<16|sacc.VendorID {
		t.Fatalf("read %#x", v)
	}
	if st, _ := r.Step(1); st.Seq < 4 {
		t.Fatalf("%+v", st)
	}
}

func TestCloseWhileHeldReleasesTheProgram(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	r.Step(20)
	r.Close()
	if err := r.Do(func(*machine.Machine) {}); err != ErrClosed {
		t.Fatalf("Do after Close: %v", err)
	}
	select {
	case <-r.exited:
	default:
		t.Fatal("program goroutine still running after Close")
	}
}

// TestCloseReachesThroughANestedRun: a program that runs its work under a sim.Run
// of its own, and forwards what it does not handle, is still released by Close.
func TestCloseReachesThroughANestedRun(t *testing.T) {
	returned := false
	r, err := New(factory, func(m *machine.Machine) error {
		err := sim.Run(func() error { return oneJob(m) })
		sim.Forward(err)
		returned = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Step(20)
	r.Close()
	select {
	case <-r.exited:
	default:
		t.Fatal("program goroutine still running after Close")
	}
	if returned {
		t.Error("the program went on after the runner stopped it")
	}
}

// TestStepBackKeepsTheRunWhereItIs: going back shows the past without running
// anything; the program stays held at its frontier, and stepping forward again
// reaches it and goes on from there.
func TestStepBackKeepsTheRunWhereItIs(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Step(30)
	first := r.exited
	if st, err := r.RunTo(10); err != nil || st.Seq != 10 || !r.Past() {
		t.Fatalf("back to 10: %+v %v (past %v)", st, err, r.Past())
	}
	select {
	case <-first:
		t.Fatal("going back ended the run")
	default:
	}
	if st, err := r.Step(20); err != nil || st.Seq != 30 || r.Past() {
		t.Fatalf("forward to the frontier: %+v %v (past %v)", st, err, r.Past())
	}
	if st, err := r.Step(5); err != nil || st.Seq != 35 {
		t.Fatalf("past the frontier: %+v %v", st, err)
	}
	if r.exited != first {
		t.Fatal("the run was started again")
	}
	if st, err := r.Continue(); err != nil || !st.Done || st.Err != nil {
		t.Fatalf("continue: %+v %v", st, err)
	}
}

// TestDoInThePastReexecutes: a request that may act on the machine, at a position
// in the past, stops the first run and re-executes to that position, and the new
// run finishes with no error of the first run's.
func TestDoInThePastReexecutes(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Step(30)
	first := r.exited
	if _, err := r.RunTo(10); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	if err := r.Do(func(m *machine.Machine) { seq = m.Tracer().Seq() }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	default:
		t.Fatal("the first run's goroutine still running after acting in the past")
	}
	if seq != 10 || r.Past() || r.State().Seq != 10 {
		t.Fatalf("the new run is at %d (state %+v, past %v), want 10", seq, r.State(), r.Past())
	}
	if st, err := r.Continue(); err != nil || !st.Done || st.Err != nil {
		t.Fatalf("the replay: %+v %v", st, err)
	}
}

func TestPanickingProgramIsReported(t *testing.T) {
	r, err := New(factory, func(m *machine.Machine) error {
		m.Read(sacc.ECAMAddress(0, 3, 0, 0), 4)
		panic("the program broke")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := r.Continue()
	if err != nil || !st.Done || st.Err == nil {
		t.Fatalf("continue: %+v %v", st, err)
	}
	if got, want := st.Err.Error(), "program panicked: the program broke"; got != want {
		t.Errorf("Err = %q, want %q", got, want)
	}
	var p *sim.Panic
	if !errors.As(st.Err, &p) || p.Value != "the program broke" {
		t.Errorf("errors.As(Err, *sim.Panic) = %v", p)
	}
	// The run is held at its end and still answers requests.
	if v := look(t, r); v.time != st.Time {
		t.Errorf("a look after the panic: %+v", v)
	}
}

// TestProcessFaultEndsTheProgram: a user access to an unmapped page stops the
// program; the runner reports it as it reports a panic, with the fault inside.
func TestProcessFaultEndsTheProgram(t *testing.T) {
	const va = 0x1234
	r, err := New(factory, func(m *machine.Machine) error {
		h, err := host.BootOn(m, host.Config{NoDriver: true})
		if err != nil {
			return err
		}
		h.K.NewProcess("app").Load32(va)
		return errors.New("the access returned")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := r.Continue()
	if err != nil || !st.Done {
		t.Fatalf("continue: %+v %v", st, err)
	}
	if got, want := fmt.Sprint(st.Err), "program panicked: segmentation fault at 0x1234"; got != want {
		t.Errorf("Err = %q, want %q", got, want)
	}
	var sf *kernel.Segfault
	if !errors.As(st.Err, &sf) || sf.Addr != va {
		t.Errorf("errors.As(Err, *kernel.Segfault) = %v", sf)
	}
}

// TestRequestThatPanicsLeavesTheRunHeld: a request's panic is Do's error; the
// program is not unwound and the run goes on from where it was held.
func TestRequestThatPanicsLeavesTheRunHeld(t *testing.T) {
	r, err := New(factory, oneJob)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, _ := r.Step(5)
	err = r.Do(func(*machine.Machine) { panic("the request broke") })
	var p *sim.Panic
	if !errors.As(err, &p) || p.Value != "the request broke" {
		t.Fatalf("Do of a panicking request = %v (%T)", err, err)
	}
	err = r.Do(func(*machine.Machine) { sim.Stop(errors.New("the request stopped")) })
	var stopped *sim.Stopped
	if !errors.As(err, &stopped) || stopped.Reason.Error() != "the request stopped" {
		t.Fatalf("Do of a request that stops = %v (%T)", err, err)
	}
	if now := r.State(); now.Seq != st.Seq || now.Done {
		t.Fatalf("after the requests: %+v, before: %+v", now, st)
	}
	if end, err := r.Continue(); err != nil || !end.Done || end.Err != nil {
		t.Fatalf("continue after the requests: %+v %v", end, err)
	}
}
