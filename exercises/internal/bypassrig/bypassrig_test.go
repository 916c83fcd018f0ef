package bypassrig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/cpu"
	"github.com/saccbook/saccbook/sacc/kernel"
)

// fakeT stands in for an exercise's *testing.T: it keeps the fatal message, and
// Fatal ends the goroutine as testing's does.
type fakeT struct {
	testing.TB
	fatal string
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

// rig brings a rig up for a fake test, in a directory with a meta.json as an
// exercise's is, runs body with it on a goroutine of its own, and returns what
// the fake test was told when it stopped, or "".
func rig(t *testing.T, body func(r *Rig)) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"id": "10-test"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(Up(ft, cpu.X86, 1))
	}()
	<-done
	return ft.fatal
}

func TestSafelyTurnsASegfaultIntoAnError(t *testing.T) {
	var err, mapped error
	msg := rig(t, func(r *Rig) {
		q := r.Open(8)
		err = Safely(func() { r.P.Load32(q.Doorbell - sacc.PageSize) })
		mapped = Safely(func() { r.P.Load32(q.SQ) })
	})
	if msg != "" {
		t.Fatalf("the rig stopped: %q", msg)
	}
	var sf *kernel.Segfault
	if !errors.As(err, &sf) || err.Error() != fmt.Sprintf("segmentation fault at %#x", sf.Addr) {
		t.Errorf("Safely of a load below the doorbell page = %v (%T), want the *kernel.Segfault itself", err, err)
	}
	if mapped != nil {
		t.Errorf("Safely of a load of the process's SQ = %v", mapped)
	}
}

// TestSafelyPassesOnWhatIsNotAFault: inside Do, a watchdog that fires or a panic
// in code run by Safely reaches Do, which reports it as it would without Safely.
func TestSafelyPassesOnWhatIsNotAFault(t *testing.T) {
	returned := false
	msg := rig(t, func(r *Rig) {
		r.Do("Spin", 100_000, func() {
			returned = Safely(func() {
				for {
					r.CPU.Delay(1000)
				}
			}) == nil
		})
	})
	if returned || !strings.Contains(msg, "Spin is still running after 100 µs of virtual time") {
		t.Errorf("a watchdog inside Safely: Safely returned %v, the test was told %q", returned, msg)
	}

	returned = false
	msg = rig(t, func(r *Rig) {
		r.Do("Broken", 100_000, func() {
			returned = Safely(func() { panic("not a fault") }) == nil
		})
	})
	if returned || !strings.Contains(msg, "Broken panicked: not a fault\n") {
		t.Errorf("a panic inside Safely: Safely returned %v, the test was told %q", returned, msg)
	}
}
