package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/coder/websocket"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// socket is one websocket's session state. Its fields belong to the handler
// goroutine (the reader).
type socket struct {
	h      *Hub
	c      *conn
	stream *stream    // nil on a private session
	cfg    *runConfig // what the last accepted hello asked for; nil before one
	joined bool       // shared: the viewer is in the stream
	run    *privateRun
	insp   *inspector
	hellos int // hellos this socket has sent
}

// readLoop reads client messages until the connection ends.
func (s *socket) readLoop() {
	for {
		typ, data, err := s.c.ws.Read(s.c.ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st == -1 && !errors.Is(err, context.Canceled) {
				s.h.log.Debug("live: read ended", "err", err)
			}
			return
		}
		if s.c.stopping() {
			continue // closing: the peer's last words are not answered
		}
		if typ != websocket.MessageText {
			s.c.send(errorMessage(codeBadRequest, "binary message: the protocol is JSON text messages only", nil))
			continue
		}
		s.handle(data)
	}
}

// handle answers one client message. A panic is answered with session-failed and
// the socket goes on.
func (s *socket) handle(data []byte) {
	var m clientMsg // as far as it was parsed, for the reply's id
	if err := sim.Run(func() error {
		var err error
		if m, err = parseClient(data); err != nil {
			s.c.send(errorMessage(codeBadRequest, err.Error(), m.ID))
			return nil
		}
		s.dispatch(m)
		return nil
	}); err != nil {
		v, stack := caught(err)
		s.h.log.Error("live: panic handling a message", "panic", v, "stack", stack)
		s.c.send(errorMessage(codeFailed, fmt.Sprintf("internal error: %v", v), m.ID))
	}
}

// caught is what sim.Run caught on a goroutine that serves a socket, where no run
// is meant to be stopped: a panic's value and stack, or the stray stop and its.
func caught(err error) (v any, stack string) {
	var p *sim.Panic
	if errors.As(err, &p) {
		return p.Value, p.Stack
	}
	var st *sim.Stopped
	if errors.As(err, &st) {
		return st, st.Stack
	}
	return err, ""
}

// dispatch answers one parsed client message.
func (s *socket) dispatch(m clientMsg) {
	switch m.Type {
	case "hello":
		s.hello(m)
	case "inspect":
		s.inspect(m)
	case "ping":
		s.c.send(encode(pongMsg{Type: "pong", V: protoVersion, ID: m.ID}))
	}
}

func (s *socket) hello(m clientMsg) {
	if !versionOK(m) {
		s.c.shutdown(websocket.StatusPolicyViolation, codeUnsupported,
			errorMessage(codeUnsupported, fmt.Sprintf("this server speaks protocol version %d", protoVersion), m.ID))
		return
	}
	if s.hellos++; s.hellos > s.h.perSocket {
		s.h.log.Warn("live: too many sessions on one socket", "limit", s.h.perSocket)
		s.c.shutdown(websocket.StatusPolicyViolation, codeTooMany,
			errorMessage(codeTooMany, fmt.Sprintf("more than %d sessions on one socket: reconnect to start again", s.h.perSocket), m.ID))
		return
	}
	if s.stream != nil {
		s.joinShared()
		return
	}
	if m.Run == runRecorded {
		s.replay(m)
		return
	}
	seed := uint64(1)
	if m.HasSeed {
		seed = m.Seed
	}
	var cfg *runConfig
	var err error
	if m.HasHunt {
		cfg, err = s.huntConfig(m)
	} else {
		cfg, err = newRunConfig(m.Scenario, seed, m.Options, m.Quirks, m.Profile)
	}
	if err != nil {
		s.c.send(errorMessage(codeBadRequest, err.Error(), m.ID))
		return
	}
	// The old machine goes: its run stops (what it already queued is sent before
	// the new welcome), and its runner closes.
	s.stopRun()
	s.cfg = cfg
	if s.insp != nil {
		s.insp.submit(inspectReq{cfg: cfg, reset: true})
	}
	w := welcomeMsg{
		Type: "welcome", V: protoVersion, Session: newID(),
		Scenario: cfg.sc.Name, Seed: cfg.seed, Options: cfg.options, Profile: cfg.prof.Name,
		Quirks: cfg.quirkList(), Compare: cfg.baseline != nil,
		Shared: false, Kinds: kindsJSON(),
	}
	if cfg.hunt != 0 {
		// The variant's parameters stay in the server, as on the command line.
		w.Hunt, w.Seed, w.Options = cfg.hunt, 0, map[string]string{}
	}
	s.c.send(encode(w))
	s.startRun(cfg)
}

// huntConfig is the run a hello with a hunt asks for: the learner's variant,
// built here from the key; nothing else may come with it.
func (s *socket) huntConfig(m clientMsg) (*runConfig, error) {
	if m.Scenario != "" || m.HasSeed || len(m.Options) > 0 || len(m.Quirks) > 0 || m.Profile != "" {
		return nil, fmt.Errorf("hello: a hunt's run is the learner's variant: no scenario, seed, options, quirks or profile go with hunt (and no comparison without its bug)")
	}
	if s.h.hunts == nil {
		return nil, fmt.Errorf("hello: this server has no bug hunts (saccbook serve finds them in the workspace)")
	}
	v, err := s.h.hunts(m.Hunt)
	if err != nil {
		return nil, fmt.Errorf("hello: %v", err)
	}
	return newHuntConfig(v)
}

// replay answers a hello for a recorded run: the record's events, in batches,
// and an end whose error is the failure message. Nothing runs: the learner's
// code ran in their own go test, which wrote the record.
func (s *socket) replay(m clientMsg) {
	if s.h.recorded == nil {
		s.c.send(errorMessage(codeBadRequest, "hello: this server has no recorded runs (saccbook serve shows them inside a workspace)", m.ID))
		return
	}
	rec, err := s.h.recorded(m.Exercise)
	if err != nil {
		s.c.send(errorMessage(codeBadRequest, "hello: "+err.Error(), m.ID))
		return
	}
	s.stopRun()
	s.cfg = nil // inspection needs a machine; a recorded run has none
	s.c.send(encode(welcomeMsg{
		Type: "welcome", V: protoVersion, Session: newID(), Scenario: runRecorded,
		Options: map[string]string{}, Quirks: []string{}, Run: runRecorded, Exercise: m.Exercise,
		FailSeq: rec.FailSeq, Kinds: kindsJSON(),
	}))
	var last, t uint64
	for i := 0; i < len(rec.Events); i += maxBatch {
		batch := rec.Events[i:min(i+maxBatch, len(rec.Events))]
		var head struct {
			Seq uint64 `json:"seq"`
			T   uint64 `json:"t"`
		}
		_ = json.Unmarshal(batch[0], &head)
		b := appendEventsHeader(nil, "", head.Seq)
		for j, ev := range batch {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, ev...)
		}
		if !s.c.send(closeEvents(b)) {
			return
		}
		_ = json.Unmarshal(batch[len(batch)-1], &head)
		last, t = head.Seq, head.T
	}
	var end error
	if rec.Error != "" {
		end = errors.New(rec.Error)
	}
	s.c.send(endMessage("", last, t, end, rec.Log))
}

func (s *socket) joinShared() {
	st := s.stream
	if s.joined {
		st.leave(s.c) // a second hello resynchronises
	}
	s.cfg = st.cfg
	s.c.send(encode(welcomeMsg{
		Type: "welcome", V: protoVersion, Session: st.id,
		Scenario: st.cfg.sc.Name, Seed: st.cfg.seed, Options: st.cfg.options, Profile: st.cfg.prof.Name,
		Quirks: st.cfg.quirkList(), Shared: true, Kinds: kindsJSON(),
	}))
	st.join(s.c)
	s.joined = true
}

// The monitor commands that are the browser's own controls.
var refused = map[string]bool{"step": true, "back": true, "cont": true, "quit": true}

func (s *socket) inspect(m clientMsg) {
	if s.cfg == nil {
		s.c.send(errorMessage(codeBadRequest, "inspect before hello", m.ID))
		return
	}
	if c, err := monitor.Parse(m.Line); err == nil && refused[c.Name] {
		s.c.send(errorMessage(codeBadRequest,
			fmt.Sprintf("inspect: %q is not available here: the page steps, goes back and plays by itself", c.Name), m.ID))
		return
	}
	cfg := s.cfg
	if m.Run == runBaseline {
		if cfg.hunt != 0 {
			s.c.send(errorMessage(codeBadRequest, "inspect: run baseline: a hunt has no run without its bug to compare", m.ID))
			return
		}
		if cfg.baseline == nil {
			s.c.send(errorMessage(codeBadRequest, "inspect: run baseline: the hello asked for no quirks, so there is no run without them", m.ID))
			return
		}
		cfg = cfg.baseline
	}
	if s.insp == nil {
		s.insp = newInspector(s.h, s.c)
	}
	s.insp.submit(inspectReq{cfg: cfg, id: m.ID, seq: m.Seq, line: m.Line, run: m.Run})
}

// finish releases everything the socket started and waits for it.
func (s *socket) finish() {
	s.c.kill()
	s.stopRun()
	if s.joined {
		s.stream.leave(s.c)
	}
	if s.insp != nil {
		s.insp.stop()
	}
	<-s.c.done
	s.c.ws.CloseNow()
}

// ---------------------------------------------------------------------------
// A private run

type privateRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *socket) startRun(cfg *runConfig) {
	ctx, cancel := context.WithCancel(s.h.ctx)
	r := &privateRun{cancel: cancel, done: make(chan struct{})}
	s.run = r
	h, c := s.h, s.c
	h.goTracked(func() {
		defer close(r.done)
		defer cancel()
		runPrivate(ctx, h, c, cfg)
	})
}

// stopRun stops the current run, if any, and waits for it: a run stops at its
// next event.
func (s *socket) stopRun() {
	if s.run == nil {
		return
	}
	s.run.cancel()
	<-s.run.done
	s.run = nil
}

// runPrivate runs a scenario to its end on a fresh machine, streaming its events
// to c in batches, then sends end (or session-failed). A run with quirks is
// followed by the same run without them (its events and end marked "baseline")
// and by a diverge message saying where the two part.
func runPrivate(ctx context.Context, h *Hub, c *conn, cfg *runConfig) {
	base := cfg.baseline
	with, ok := runStreamed(ctx, h, c, cfg, "", base != nil)
	if !ok || base == nil {
		return
	}
	without, ok := runStreamed(ctx, h, c, base, runBaseline, true)
	if !ok {
		return
	}
	c.send(divergeMessage(with, without))
}

// runStreamed runs cfg and streams it as run ("" or "baseline"), keeping its
// events when keep is set. ok is false when the run did not reach its end: its
// viewer went, a new hello stopped it, or it failed (then session-failed has been
// sent).
func runStreamed(ctx context.Context, h *Hub, c *conn, cfg *runConfig, run string, keep bool) (events []trace.Event, ok bool) {
	b := &batcher{ctx: ctx, c: c, run: run, keep: keep}
	var narrative bytes.Buffer
	res := runScenario(cfg, b, &narrative)
	if res.stopped || b.stopped || !b.flush() {
		return nil, false
	}
	if res.failure != "" {
		h.log.Error("live: scenario failed", "scenario", cfg.sc.Name, "seed", cfg.seed, "quirks", cfg.quirksForLog(),
			"failure", res.failure, "stack", res.stack)
		msg := errorMsg{Type: "error", V: protoVersion, Code: codeFailed, Message: res.failure, Run: run}
		c.send(encode(msg))
		return nil, false
	}
	c.send(endMessage(run, res.seq, res.t, res.err, logLines(narrative.Bytes())))
	return b.events, true
}

// divergeMessage says where the run with quirks (with) parts from the run
// without them (without): trace.FirstDifference, the definition bug hunts share.
func divergeMessage(with, without []trace.Event) []byte {
	m := divergeMsg{Type: "diverge", V: protoVersion, Event: json.RawMessage("null"), Baseline: json.RawMessage("null")}
	if i, ok := trace.FirstDifference(with, without); ok {
		m.Seq = uint64(i) + 1
		if i < len(with) {
			m.Event = appendEvent(nil, &with[i])
		}
		if i < len(without) {
			m.Baseline = appendEvent(nil, &without[i])
		}
	}
	return encode(m)
}

// errStopped is the reason a run's trace sink stops it with (sim.Stop): its
// viewer has gone, or a new hello or the hub's closing has cancelled it.
var errStopped = errors.New("live: run stopped")

type runResult struct {
	seq, t  uint64
	err     error  // what the scenario returned
	failure string // why the run could not finish: a panic, no machine
	stack   string
	stopped bool // stopped by its sink
}

// runScenario runs cfg's scenario on a fresh machine with sink attached, under
// sim.Run: a stop with errStopped is the sink's, and any other stop (a process's
// segmentation fault) or a panic is a failure, reported as a panic.
func runScenario(cfg *runConfig, sink trace.Sink, narrative io.Writer) (res runResult) {
	noMachine := false
	err := sim.Run(func() error {
		m, err := cfg.newMachine()
		if err != nil {
			noMachine = true
			return err
		}
		m.Tracer().Attach(sink)
		err = cfg.sc.Run(m, cfg.env(narrative))
		res.seq, res.t = m.Tracer().Seq(), uint64(m.Now())
		return err
	})
	var stopped *sim.Stopped
	var p *sim.Panic
	switch {
	case noMachine:
		res.failure = fmt.Sprintf("no machine: %v", err)
	case errors.As(err, &stopped) && stopped.Reason == errStopped:
		res.stopped = true
	case errors.As(err, &stopped):
		res.failure = fmt.Sprintf("scenario %s panicked: %v", cfg.sc.Name, stopped)
		res.stack = stopped.Stack
	case errors.As(err, &p):
		res.failure = fmt.Sprintf("scenario %s panicked: %v", cfg.sc.Name, p.Value)
		res.stack = p.Stack
	default:
		res.err = err
	}
	return res
}

// batcher is a private run's trace sink: it packs events into events messages of
// up to maxBatch and queues each one as it fills. Batch boundaries depend only on
// the run, so the same hello gives the same messages.
type batcher struct {
	ctx     context.Context
	c       *conn
	run     string // "" or "baseline", in every events message
	keep    bool   // keep every event in events, for the comparison of runs
	events  []trace.Event
	buf     []byte
	n       int
	stopped bool
}

func (b *batcher) Record(ev *trace.Event) {
	if b.ctx.Err() != nil || b.c.stopping() {
		b.stopped = true
		sim.Stop(errStopped)
	}
	if b.n == 0 {
		b.buf = appendEventsHeader(make([]byte, 0, 16<<10), b.run, ev.Seq)
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = appendEvent(b.buf, ev)
	b.n++
	if b.keep {
		b.events = append(b.events, *ev)
	}
	if b.n == maxBatch && !b.flush() {
		b.stopped = true
		sim.Stop(errStopped)
	}
}

// flush queues the batch under way; false if the viewer is gone.
func (b *batcher) flush() bool {
	if b.n == 0 {
		return true
	}
	msg := closeEvents(b.buf)
	b.buf, b.n = nil, 0
	return b.c.send(msg)
}
