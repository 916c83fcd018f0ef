package runner

import (
	"fmt"
	"io"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
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
