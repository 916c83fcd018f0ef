// Package runner runs CPU-side code (a workload, a driver scenario) against a
// machine so that it can be stopped at any event boundary, stepped event by event,
// inspected while stopped, and taken back to an earlier event by deterministic
// re-execution.
//
// The program runs on its own goroutine, as ordinary sequential code. Every trace
// event passes through a gate; when the budget of events runs out, the gate holds
// the program inside the event and serves requests — closures that inspect or poke
// the machine — on that same goroutine, so no machine state is ever touched from two
// goroutines. The machine's own goroutine is the program's.
//
// The program runs under sim.Run. Closing the runner, or starting over to step
// back, while the program is held stops it (sim.Stop) from inside the gate, which
// unwinds it to that Run; any other stop (a user process's segmentation fault) or
// a panic ends the program as a failure, reported in State.Err. A request runs
// under a sim.Run of its own, so nothing it does unwinds the held program.
package runner

import (
	"errors"
	"fmt"
	"math"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Program is the CPU-side code of a run. It drives m and returns when it is done.
type Program func(m *machine.Machine) error

// Factory builds a fresh machine for a run (and for each replay).
type Factory func() (*machine.Machine, error)

// State is where a run is.
type State struct {
	Seq     uint64 // sequence number of the last event that happened
	Time    uint64 // virtual time of that moment, ns
	Done    bool   // the program has returned (the machine may still have events queued)
	Err     error  // what the program returned, or why it stopped
	Stopped bool   // the run is held at Seq (always true between calls)
}

type request struct {
	fn   func(m *machine.Machine)
	err  error // what sim.Run returned for fn; set before done closes
	done chan struct{}
}

type resume struct {
	budget uint64 // events to let through before holding again
}

// Runner is one run of a program.
type Runner struct {
	factory Factory
	program Program

	m       *machine.Machine
	reqs    chan *request
	resumes chan resume
	held    chan State
	quit    chan struct{}
	exited  chan struct{}

	state   State
	budget  uint64
	serving bool // a request is running on the program goroutine
	closing bool
}

// ErrClosed is returned by calls on a closed runner.
var ErrClosed = errors.New("runner: closed")

// errEnded is the reason the runner stops its own program with: the run is being
// closed, or thrown away to start over.
var errEnded = errors.New("runner: run ended")

// New builds a machine and starts the program, held before its first event.
func New(factory Factory, program Program) (*Runner, error) {
	r := &Runner{factory: factory, program: program}
	if err := r.start(0); err != nil {
		return nil, err
	}
	return r, nil
}

// start launches a fresh machine and program that hold after `budget` events.
func (r *Runner) start(budget uint64) error {
	m, err := r.factory()
	if err != nil {
		return err
	}
	r.m = m
	r.reqs = make(chan *request)
	r.resumes = make(chan resume)
	r.held = make(chan State)
	r.quit = make(chan struct{})
	r.exited = make(chan struct{})
	r.budget = budget
	r.state = State{}
	m.Tracer().Attach(trace.Func(r.gate))
	go r.run()
	r.state = <-r.held
	return nil
}

// run is the program goroutine.
func (r *Runner) run() {
	defer close(r.exited)
	err := sim.Run(func() error {
		if r.budget == 0 {
			r.hold(0, uint64(r.m.Now()))
		}
		return r.program(r.m)
	})
	var stopped *sim.Stopped
	var p *sim.Panic
	switch {
	case errors.As(err, &stopped) && stopped.Reason == errEnded:
		return
	case errors.As(err, &stopped):
		// A stop the runner did not ask for, such as a process's segmentation
		// fault: the program did not return, which is reported as a panic is.
		err = fmt.Errorf("program panicked: %w", stopped)
	case errors.As(err, &p):
		err = fmt.Errorf("program %w", p) // "program panicked: VALUE"
	}
	// The program is done; keep serving requests until closed. Device events still
	// queued run only when a request runs the clock.
	r.state.Done, r.state.Err = true, err
	r.hold(r.m.Tracer().Seq(), uint64(r.m.Now()))
}

// gate sees every event on the program goroutine.
func (r *Runner) gate(ev trace.Event) {
	if r.serving {
		return // an event caused by a request while held: not part of the budget
	}
	if r.budget > 0 {
		r.budget--
	}
	if r.budget == 0 {
		r.hold(ev.Seq, uint64(ev.Time))
	}
}

// hold parks the program, reports where it is, and serves requests until it is
// resumed or closed.
func (r *Runner) hold(seq, t uint64) {
	st := r.state
	st.Seq, st.Time, st.Stopped = seq, t, true
	select {
	case r.held <- st:
	case <-r.quit:
		r.unwind(st)
		return
	}
	for {
		select {
		case req := <-r.reqs:
			r.serving = true
			req.err = sim.Run(func() error {
				req.fn(r.m)
				return nil
			})
			r.serving = false
			close(req.done)
		case res := <-r.resumes:
			r.budget = res.budget
			return
		case <-r.quit:
			r.unwind(st)
			return
		}
	}
}

// unwind leaves the program goroutine when the runner closes: a program still
// running is stopped, which returns from the sim.Run in run.
func (r *Runner) unwind(st State) {
	if !st.Done {
		sim.Stop(errEnded)
	}
}

// wait collects the state the program reports when it holds again.
func (r *Runner) wait() State {
	r.state = <-r.held
	return r.state
}

// State reports where the run is held.
func (r *Runner) State() State { return r.state }

// Step lets n more events happen (n ≥ 1) and holds again, or stops at the end.
func (r *Runner) Step(n uint64) (State, error) {
	if r.closing {
		return State{}, ErrClosed
	}
	if n == 0 {
		n = 1
	}
	if r.state.Done {
		return r.state, nil
	}
	r.resumes <- resume{budget: n}
	return r.wait(), nil
}

// Continue runs to the end of the program.
func (r *Runner) Continue() (State, error) { return r.Step(math.MaxUint64) }

// RunTo runs until the event with sequence number seq has happened. A seq in the
// past re-executes the run from the start on a fresh machine (step back): the
// machine is deterministic, so the state at seq is exactly what it was.
func (r *Runner) RunTo(seq uint64) (State, error) {
	if r.closing {
		return State{}, ErrClosed
	}
	if seq < r.state.Seq {
		r.stop()
		if err := r.start(seq); err != nil {
			return State{}, err
		}
		return r.state, nil
	}
	if seq == r.state.Seq {
		return r.state, nil
	}
	return r.Step(seq - r.state.Seq)
}

// Do runs fn on the machine's goroutine while the run is held. fn may inspect
// anything; what it changes becomes part of the run (and is not replayed). fn
// runs under a sim.Run of its own: if it panics, or something in it stops the run
// (a user access to an unmapped page), Do returns that *sim.Panic or *sim.Stopped
// and the run stays held where it was.
func (r *Runner) Do(fn func(m *machine.Machine)) error {
	if r.closing {
		return ErrClosed
	}
	req := &request{fn: fn, done: make(chan struct{})}
	r.reqs <- req
	<-req.done
	return req.err
}

// stop ends the program goroutine.
func (r *Runner) stop() {
	close(r.quit)
	// The goroutine may be reporting a hold; take it so it can see quit.
	for {
		select {
		case <-r.held:
		case <-r.exited:
			return
		}
	}
}

// Close ends the run and releases its goroutine.
func (r *Runner) Close() {
	if r.closing {
		return
	}
	r.closing = true
	r.stop()
}
