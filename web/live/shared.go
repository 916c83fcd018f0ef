package live

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// stream is a shared stream: one machine, its event log, and the viewers following
// it. The machine runs on the producer goroutine, which appends each batch to the
// log and offers it to every viewer's queue under the lock, never waiting: the log
// and the set of viewers change together, so a joining viewer's snapshot and the
// batches after it are contiguous.
type stream struct {
	h    *Hub
	name string
	cfg  *runConfig
	pace time.Duration
	id   string

	startOnce sync.Once

	mu      sync.Mutex
	log     []byte // the events so far: JSON objects separated by commas
	seq     uint64 // the last event in the log
	snap    []byte // the snapshot message for the log as it is, or nil
	viewers map[*conn]struct{}
	ended   bool
	tail    [][]byte // once ended: what follows the snapshot (end, or an error)
}

func newStream(h *Hub, name string, cfg *runConfig, pace time.Duration) *stream {
	return &stream{h: h, name: name, cfg: cfg, pace: pace, id: newID(), viewers: map[*conn]struct{}{}}
}

// join sends c the snapshot of the log so far and adds it to the viewers; the
// first viewer starts the machine.
func (st *stream) join(c *conn) {
	st.startOnce.Do(func() { st.h.goTracked(st.produce) })
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.snap == nil {
		b := make([]byte, 0, len(st.log)+64)
		b = append(b, `{"type":"snapshot","v":1,"events":[`...)
		b = append(b, st.log...)
		b = append(b, `],"ended":`...)
		b = strconv.AppendBool(b, st.ended)
		st.snap = append(b, '}')
	}
	if !c.send(st.snap) {
		return
	}
	for _, msg := range st.tail {
		c.send(msg)
	}
	if !st.ended {
		st.viewers[c] = struct{}{}
	}
}

func (st *stream) leave(c *conn) {
	st.mu.Lock()
	delete(st.viewers, c)
	st.mu.Unlock()
}

// publish appends a batch (events from..to, encoded and comma-separated) to the
// log and offers it to every viewer. A viewer whose queue is full is dropped
// (conn.send closes it with too-slow); nobody is waited for.
func (st *stream) publish(from, to uint64, events []byte) {
	at := time.Now()
	msg := make([]byte, 0, len(events)+64)
	msg = closeEvents(append(appendEventsHeader(msg, "", from), events...))
	st.mu.Lock()
	if len(st.log) > 0 {
		st.log = append(st.log, ',')
	}
	st.log = append(st.log, events...)
	st.seq, st.snap = to, nil
	for c := range st.viewers {
		if !c.send(msg) {
			delete(st.viewers, c)
		}
	}
	st.mu.Unlock()
	if hook := st.h.hooks.published; hook != nil {
		hook(st.name, from, to, at)
	}
}

// finish records the run's last word and sends it to every viewer.
func (st *stream) finish(msgs ...[]byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended, st.tail, st.snap = true, msgs, nil
	for c := range st.viewers {
		for _, msg := range msgs {
			c.send(msg)
		}
	}
	clear(st.viewers)
}

// produce is the stream's machine goroutine.
func (st *stream) produce() {
	sink := &streamSink{st: st, ctx: st.h.ctx}
	var narrative bytes.Buffer
	res := runScenario(st.cfg, sink, &narrative)
	if res.stopped || sink.stopped {
		return
	}
	sink.flush()
	if res.failure != "" {
		st.h.log.Error("live: shared stream failed", "stream", st.name, "failure", res.failure, "stack", res.stack)
		st.finish(errorMessage(codeFailed, res.failure, nil))
		return
	}
	st.finish(endMessage("", res.seq, res.t, res.err, logLines(narrative.Bytes())))
}

// streamSink is a shared stream's trace sink: it packs events into batches of
// sharedBatch, publishes each, and waits the stream's pace after it — on the
// machine's goroutine, which is what paces the machine.
type streamSink struct {
	st      *stream
	ctx     context.Context
	buf     []byte
	from    uint64
	to      uint64
	n       int
	timer   *time.Timer
	stopped bool
}

func (s *streamSink) Record(ev *trace.Event) {
	if s.ctx.Err() != nil {
		s.stop()
	}
	if s.n == 0 {
		s.from, s.buf = ev.Seq, s.buf[:0]
	} else {
		s.buf = append(s.buf, ',')
	}
	s.buf = appendEvent(s.buf, ev)
	s.to = ev.Seq
	if s.n++; s.n == sharedBatch {
		s.flush()
		s.pause()
	}
}

func (s *streamSink) flush() {
	if s.n == 0 {
		return
	}
	s.st.publish(s.from, s.to, s.buf)
	s.n = 0
}

func (s *streamSink) pause() {
	if s.st.pace <= 0 {
		return
	}
	if s.timer == nil {
		s.timer = time.NewTimer(s.st.pace)
	} else {
		s.timer.Reset(s.st.pace)
	}
	select {
	case <-s.timer.C:
	case <-s.ctx.Done():
		s.timer.Stop()
		s.stop()
	}
}

// stop ends the run: the hub is closing.
func (s *streamSink) stop() {
	s.stopped = true
	sim.Stop(errStopped)
}
