package live

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/sim"
)

// An inspector answers a socket's inspect requests, one at a time, on its own
// goroutine (running forward to a position takes a while), with a runner
// built on the first request after each hello.
type inspector struct {
	h    *Hub
	c    *conn
	reqs chan inspectReq
	done chan struct{}

	// Owned by the inspector's goroutine.
	cfg   *runConfig
	r     *runner.Runner
	mon   *monitor.Monitor
	out   bytes.Buffer
	dirty bool // a command changed the machine (xp of a register): rebuild
}

type inspectReq struct {
	cfg   *runConfig
	reset bool // a new hello: drop the runner
	id    json.RawMessage
	run   string // echoed: "baseline" when cfg is the run without the quirks
	seq   uint64
	line  string
}

// inspectBacklog is how many requests may wait; beyond it the socket's reader
// waits too (the client is only slowing itself).
const inspectBacklog = 16

func newInspector(h *Hub, c *conn) *inspector {
	in := &inspector{h: h, c: c, reqs: make(chan inspectReq, inspectBacklog), done: make(chan struct{})}
	h.goTracked(in.loop)
	return in
}

// submit hands a request over (called by the socket's reader).
func (in *inspector) submit(req inspectReq) {
	select {
	case in.reqs <- req:
	case <-in.c.ctx.Done():
	}
}

// stop ends the inspector and waits for it (called by the socket's reader).
func (in *inspector) stop() {
	close(in.reqs)
	<-in.done
}

func (in *inspector) loop() {
	defer close(in.done)
	defer in.drop()
	for req := range in.reqs {
		if in.c.ctx.Err() != nil {
			continue
		}
		in.handle(req)
	}
}

// drop closes the runner.
func (in *inspector) drop() {
	if in.r != nil {
		in.r.Close()
	}
	in.r, in.mon, in.dirty = nil, nil, false
}

// handle answers one request. A panic is answered with session-failed and the
// runner is dropped.
func (in *inspector) handle(req inspectReq) {
	err := sim.Run(func() error {
		in.answer(req)
		return nil
	})
	if err == nil {
		return
	}
	v, stack := caught(err)
	in.h.log.Error("live: inspection panicked", "panic", v, "stack", stack)
	if r := in.r; r != nil {
		in.r = nil
		// Its state is unknown: a second failure while closing it is not news.
		_ = sim.Run(func() error {
			r.Close()
			return nil
		})
	}
	in.mon, in.dirty = nil, false
	in.c.send(errorMessage(codeFailed, fmt.Sprintf("inspection failed: %v", v), req.id))
}

func (in *inspector) answer(req inspectReq) {
	if req.cfg != in.cfg {
		in.drop()
		in.cfg = req.cfg
	}
	if req.reset {
		return
	}
	if in.r == nil || in.dirty {
		in.drop()
		r, err := in.cfg.runner()
		if err != nil {
			in.c.send(errorMessage(codeFailed, fmt.Sprintf("inspection: %v", err), req.id))
			return
		}
		in.r, in.mon = r, monitor.New(r, &in.out)
	}
	st, err := in.r.RunTo(req.seq)
	if err != nil {
		in.drop()
		in.c.send(errorMessage(codeFailed, fmt.Sprintf("inspection: %v", err), req.id))
		return
	}
	in.out.Reset()
	in.mon.Exec(req.line)
	// A command that touched the machine (xp of a register is a real read, with
	// its own events) has made this run differ from the one the page shows: the
	// next request starts from a fresh one.
	// In the past the command looked at the runner's view, which changes no run.
	var now uint64
	if in.r.Past() {
		now = st.Seq
	} else if err := in.r.View(func(m *machine.Machine) { now = m.Tracer().Seq() }); err != nil {
		in.dirty = true
	}
	if now != st.Seq {
		in.dirty = true
	}
	in.c.send(encode(inspectMsg{Type: "inspect", V: protoVersion, ID: req.id, Run: req.run, Seq: st.Seq, Output: in.out.String()}))
}
