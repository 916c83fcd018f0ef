package sim

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// stop is the panic value of Stop. It is unexported so that no other package can
// raise it or recognise it: only Run catches it. It is an error so that one that
// escapes every Run says, in the runtime's "panic:" line, what happened.
type stop struct {
	reason error
	stack  string // set when Forward passes on a stop an inner Run caught
}

func (s stop) Error() string {
	return fmt.Sprintf("sim.Stop called outside sim.Run: there is no run on this goroutine to stop (reason: %v)", s.reason)
}

// Stop ends the run under way on this goroutine: it unwinds the goroutine, from
// however deep in the CPU-side program it is called (a trace sink, a device event,
// a page-table lookup), to the innermost Run, which returns a *Stopped carrying
// reason. reason may be nil: the run is then stopped with no reason given. Stop
// never returns. Called where no Run is on the goroutine's stack it panics with a
// message that says so.
func Stop(reason error) {
	panic(stop{reason: reason})
}

// Stopped is what Run returns when a Stop ended its program.
type Stopped struct {
	Reason error  // what Stop was given; nil if it was given nothing
	Stack  string // the goroutine's stack at the Stop, as runtime/debug.Stack prints it
}

// Error is the reason's text ("stopped" when there is none): a stop is told by
// why it happened, so a caller can put it where a panic's value would go.
func (s *Stopped) Error() string {
	if s.Reason == nil {
		return "stopped"
	}
	return s.Reason.Error()
}

// Unwrap is the reason, so that errors.Is and errors.As see through the stop.
func (s *Stopped) Unwrap() error { return s.Reason }

// Panic is what Run returns when its program panicked: a genuine failure, not a
// Stop.
type Panic struct {
	Value any    // what was passed to panic
	Stack string // the goroutine's stack where it panicked, as runtime/debug.Stack prints it
}

// Error reads "panicked: VALUE", to follow the name of what panicked:
// fmt.Errorf("program %w", p).
func (p *Panic) Error() string { return fmt.Sprintf("panicked: %v", p.Value) }

// Unwrap is the panic value when it is an error (a runtime error, say).
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// Run runs program and returns what it returned, unless a Stop ended it (Run
// returns a *Stopped) or it panicked (Run returns a *Panic, with the stack of the
// panic; a *Panic passed on by Forward from an inner Run comes out unchanged, with
// its first stack). Either way nothing of the panic goes past Run: the caller
// decides what a stop or a failure means for it. Runs nest; a Stop ends the
// innermost.
//
// Run is also the crash protection of the goroutines that serve a machine (a web
// socket, a monitor, a qtest connection): there a *Panic is a bug to report with
// its stack, and a *Stopped a Stop that reached code that was not expecting one.
func Run(program func() error) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return // no panic (since Go 1.21, panic(nil) panics with a *runtime.PanicNilError)
		}
		switch v := v.(type) {
		case stop:
			s := &Stopped{Reason: v.reason, Stack: v.stack}
			if s.Stack == "" {
				s.Stack = string(debug.Stack())
			}
			err = s
		case *Panic:
			err = v
		default:
			err = &Panic{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return program()
}

// Forward passes on, to the Run around the caller, a stop or a panic that an
// inner Run caught and its caller does not handle: if err is (or wraps) a *Stopped,
// the enclosing run is stopped with the same reason and stack; if it is a *Panic,
// that panic goes on. Any other err, or nil, is the caller's: Forward returns.
func Forward(err error) {
	var s *Stopped
	if errors.As(err, &s) {
		panic(stop{reason: s.Reason, stack: s.Stack})
	}
	var p *Panic
	if errors.As(err, &p) {
		panic(p)
	}
}
