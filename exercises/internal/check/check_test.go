package check

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/host"
)

// fakeT stands in for an exercise's *testing.T: it keeps what the harness
// reports, and Fatal ends the goroutine as testing's does.
type fakeT struct {
	testing.TB
	fatal  string
	errors []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeT) Error(args ...any) { f.errors = append(f.errors, fmt.Sprint(args...)) }

// harness boots a machine for a fake test (in a directory with a meta.json, as an
// exercise's is), runs body with it on a goroutine of its own, and returns what
// the fake test was told when it stopped, or "".
func harness(t *testing.T, body func(m *Machine)) string {
	t.Helper()
	dir := t.TempDir()
	meta := `{"id": "00-test", "chapter_url": "/chapters/00-test", "replay": "saccbook run job"}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(Boot(ft, host.Config{}))
	}()
	<-done
	return ft.fatal
}

func TestDoReturns(t *testing.T) {
	ran := false
	msg := harness(t, func(m *Machine) {
		m.Do("Nothing", 1_000_000, func() { ran = true })
	})
	if msg != "" || !ran {
		t.Fatalf("Do of a function that returns: ran %v, stopped with %q", ran, msg)
	}
}

func TestDoReportsAPanic(t *testing.T) {
	msg := harness(t, func(m *Machine) {
		m.Do("Broken", 1_000_000, func() {
			m.CPU.Delay(10)
			panic("the learner's bug")
		})
		m.t.Fatal("Do returned")
	})
	if !strings.Contains(msg, "Broken panicked: the learner's bug\n") || !strings.Contains(msg, "saccbook hint 00-test") {
		t.Fatalf("Do of a panicking function: %q", msg)
	}
}

func TestDoReportsASegfault(t *testing.T) {
	msg := harness(t, func(m *Machine) {
		p := m.K.NewProcess("app")
		m.Do("Probe", 1_000_000, func() { p.Store32(0x1234, 1) })
		m.t.Fatal("Do returned")
	})
	if !strings.Contains(msg, "Probe panicked: segmentation fault at 0x1234\n") {
		t.Fatalf("Do of a function whose process faults: %q", msg)
	}
}

func TestDoStopsALoopWithoutEnd(t *testing.T) {
	iterations := 0
	msg := harness(t, func(m *Machine) {
		m.Do("Wait", 1_000_000, func() {
			for {
				iterations++
				m.CPU.Delay(1000)
			}
		})
		m.t.Fatal("Do returned")
	})
	if !strings.Contains(msg, "Wait is still running after 1 ms of virtual time") {
		t.Fatalf("Do of a loop without end: %q", msg)
	}
	if iterations < 1000 {
		t.Errorf("the loop ran %d times of 1 µs: it was stopped before its budget of 1 ms", iterations)
	}
}

func TestLearnerFramesKeepsTheExerciseSource(t *testing.T) {
	stack := strings.Join([]string{
		"goroutine 7 [running]:",
		"runtime/debug.Stack()",
		"\t/usr/local/go/src/runtime/debug/stack.go:26 +0x5e",
		"github.com/saccbook/saccbook/sacc/kernel.(*Process).translate(...)",
		"\t/src/saccbook/sacc/kernel/proc.go:240",
		"github.com/saccbook/saccbook/exercises/10-open-queue.Open(...)",
		"\t/src/saccbook/exercises/10-open-queue/exercise.go:42 +0x1c",
		"\t/src/saccbook/exercises/10-open-queue/openqueue_test.go:21 +0x1c",
		"\t/src/saccbook/exercises/internal/check/check.go:200 +0x1c",
	}, "\n")
	if got, want := learnerFrames(stack), "    at /src/saccbook/exercises/10-open-queue/exercise.go:42 +0x1c"; got != want {
		t.Errorf("learnerFrames = %q, want %q", got, want)
	}
}

func TestDoWithinLetsTheTestGoOn(t *testing.T) {
	var finished, waited bool
	msg := harness(t, func(m *Machine) {
		waited = !m.DoWithin("Wait", 100_000, func() {
			for {
				m.CPU.Delay(1000)
			}
		})
		finished = m.DoWithin("Nothing", 100_000, func() {})
	})
	if msg != "" || !waited || !finished {
		t.Fatalf("DoWithin: stopped %v, then returned %v, with the message %q", waited, finished, msg)
	}
}
