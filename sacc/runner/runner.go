// Package runner runs CPU-side code (a workload, a driver scenario) against a
// machine so that it can be stopped at any event boundary, stepped event by event,
// inspected while stopped, and taken back to an earlier event.
//
// Going back does not run anything again. The software above the bus is ordinary
// Go code whose state cannot be copied, but what is looked at in a held run is the
// machine below it, and that can be kept: at every event the runner saves the
// machine's state (machine.Saved, which shares whatever did not change) and keeps
// every RAM write in a journal (mem.Journal), with the event itself. A position in
// the past is shown in a view, a second machine whose RAM the journal moves back and
// forth and into which the saved state is loaded; the program stays held where it
// got to (the frontier), and stepping forward to the frontier again only moves the
// view. What can change the future — a request that acts on the machine (Do) at a
// past position — is answered as before, by deterministic re-execution on a fresh
// machine up to that position.
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
	"sort"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/mem"
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

	// The history of the run on this machine, written by the program goroutine
	// while it runs and read by the caller while it is held.
	journal *mem.Journal // every write to the machine's RAM
	hist    history      // position 0 is before the first event, k inside event k
	saved   *machine.Saved

	// Where the caller is looking: at < 0 is the frontier, the program's own
	// machine in state live; otherwise hist[at], shown in the view.
	at       int
	live     State
	view     *machine.Machine
	viewMark int          // the journal point the view's RAM is at
	scratch  *mem.Journal // what a look at the view writes, to take back
}

// history is the positions of a run in order, kept in fixed-size chunks so that a
// long run grows without copying what it has.
type history struct {
	chunks [][]position
	n      int
}

const historyChunk = 4096

func (h *history) add(p position) {
	if h.n%historyChunk == 0 {
		h.chunks = append(h.chunks, make([]position, 0, historyChunk))
	}
	c := &h.chunks[len(h.chunks)-1]
	*c = append(*c, p)
	h.n++
}

func (h *history) at(i int) *position { return &h.chunks[i/historyChunk][i%historyChunk] }

// position is one moment of the run that can be shown again.
type position struct {
	ev    trace.Event // the event the run was held in (Seq 0 before the first)
	saved *machine.Saved
	mark  int // journal point: RAM as it was then
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
	r.journal = new(mem.Journal)
	m.RAM().SetJournal(r.journal)
	r.saved = m.Save(nil)
	r.hist = history{}
	r.hist.add(position{ev: trace.Event{Time: m.Now()}, saved: r.saved})
	r.at, r.view = -1, nil
	m.Tracer().Attach(trace.Func(r.gate))
	go r.run()
	r.wait()
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
	r.saved = r.m.Save(r.saved)
	r.hist.add(position{ev: ev, saved: r.saved, mark: r.journal.Len()})
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
	r.live = <-r.held
	r.at, r.state = -1, r.live
	return r.state
}

// show shows position i of the past.
func (r *Runner) show(i int) State {
	r.at = i
	p := r.hist.at(i)
	r.state = State{Seq: p.ev.Seq, Time: uint64(p.ev.Time), Stopped: true}
	return r.state
}

// frontier is the index of the last position the program has been held at or
// passed; the program is held inside it unless it is done.
func (r *Runner) frontier() int { return r.hist.n - 1 }

// Event returns the event the run was held in at sequence number seq, if the run
// on this machine has passed it.
func (r *Runner) Event(seq uint64) (trace.Event, bool) {
	i := sort.Search(r.hist.n, func(i int) bool { return r.hist.at(i).ev.Seq >= seq })
	if seq == 0 || i == r.hist.n || r.hist.at(i).ev.Seq != seq {
		return trace.Event{}, false
	}
	return r.hist.at(i).ev, true
}

// Events calls fn with each event with a sequence number in (after, upTo] that the
// run on this machine has passed, in order. Events caused by requests are not
// among them.
func (r *Runner) Events(after, upTo uint64, fn func(ev *trace.Event)) {
	i := sort.Search(r.hist.n, func(i int) bool { return r.hist.at(i).ev.Seq > after })
	for ; i < r.hist.n && r.hist.at(i).ev.Seq <= upTo; i++ {
		fn(&r.hist.at(i).ev)
	}
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
	if r.at >= 0 {
		// In the past: the saved positions up to the frontier need no running.
		last := r.frontier()
		target := uint64(r.at) + n
		if target < uint64(r.at) {
			target = math.MaxUint64
		}
		if target < uint64(last) || target == uint64(last) && r.live.Done {
			return r.show(int(target)), nil
		}
		r.at, r.state = -1, r.live
		if target == uint64(last) {
			return r.state, nil
		}
		n = target - uint64(last)
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
// past shows the machine as it was then (see the package documentation): nothing
// runs again, and the program stays where it is.
func (r *Runner) RunTo(seq uint64) (State, error) {
	if r.closing {
		return State{}, ErrClosed
	}
	switch {
	case seq == r.state.Seq:
		return r.state, nil
	case seq > r.live.Seq:
		r.at, r.state = -1, r.live
		return r.Step(seq - r.live.Seq)
	}
	// The last position at or before seq (requests' events have numbers of their
	// own, so a seq may fall between two positions).
	i := sort.Search(r.hist.n, func(i int) bool { return r.hist.at(i).ev.Seq > seq }) - 1
	if i == r.frontier() && !r.live.Done {
		r.at, r.state = -1, r.live
		return r.state, nil
	}
	return r.show(max(i, 0)), nil
}

// Do runs fn on the machine's goroutine while the run is held. fn may inspect
// anything; what it changes becomes part of the run (and is not replayed). At a
// position in the past, the run is first re-executed up to there on a fresh
// machine, since fn may change what happens next. fn runs under a sim.Run of its
// own: if it panics, or something in it stops the run (a user access to an
// unmapped page), Do returns that *sim.Panic or *sim.Stopped and the run stays held
// where it was.
func (r *Runner) Do(fn func(m *machine.Machine)) error {
	if r.closing {
		return ErrClosed
	}
	if r.at >= 0 {
		seq := r.state.Seq
		r.stop()
		if err := r.start(seq); err != nil {
			return err
		}
	}
	return r.do(fn)
}

func (r *Runner) do(fn func(m *machine.Machine)) error {
	req := &request{fn: fn, done: make(chan struct{})}
	r.reqs <- req
	<-req.done
	return req.err
}

// View runs fn on the machine as it is at the position shown, for a look that is
// not part of the run: at the frontier on the machine's goroutine, as Do does; in
// the past on the view, after which whatever fn wrote to the view's RAM is taken
// back and the next look loads the saved state again. The view's clock does not
// run. Errors are as Do's.
func (r *Runner) View(fn func(m *machine.Machine)) error {
	if r.closing {
		return ErrClosed
	}
	if r.at < 0 {
		return r.do(fn)
	}
	if r.view == nil {
		var err error
		if derr := r.do(func(m *machine.Machine) { r.view, err = m.View() }); derr != nil {
			return derr
		}
		if err != nil {
			return fmt.Errorf("runner: a view of the machine: %w", err)
		}
		r.viewMark = r.journal.Len()
		r.scratch = new(mem.Journal)
	}
	p := r.hist.at(r.at)
	ram := r.view.RAM()
	if r.viewMark > p.mark {
		r.journal.Undo(ram, p.mark, r.viewMark)
	} else {
		r.journal.Redo(ram, r.viewMark, p.mark)
	}
	r.viewMark = p.mark
	r.view.Load(p.saved)
	ram.SetJournal(r.scratch)
	err := sim.Run(func() error {
		fn(r.view)
		return nil
	})
	ram.SetJournal(nil)
	r.scratch.Undo(ram, 0, r.scratch.Len())
	r.scratch.Reset()
	return err
}

// Past reports whether the position shown is in the past, behind the program.
func (r *Runner) Past() bool { return r.at >= 0 }

// Stats is what the runner keeps to go back: positions, RAM journal bytes.
func (r *Runner) Stats() (positions, journalBytes int) { return r.hist.n, r.journal.Bytes() }

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
