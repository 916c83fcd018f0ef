package live

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

func helloQuirks(scenario string, opts map[string]string, quirks ...string) map[string]any {
	m := hello(scenario, 1, opts)
	m["quirks"] = quirks
	return m
}

// compared is a run with quirks as a client sees it: the run, the run without
// them, and where they part.
type compared struct {
	run      run
	baseline run
	diverge  msg
}

// readCompared reads a welcome, the run's events and end, the baseline's events
// and end, and the diverge message, in that order.
func (c *client) readCompared(t *testing.T) compared {
	t.Helper()
	var r compared
	r.run.welcome = c.expect(t, "welcome")
	cur := &r.run
	for {
		m := c.read(t)
		want := ""
		if cur == &r.baseline {
			want = "baseline"
		}
		switch {
		case m.Type == "events" && m.Run == want:
			cur.batches = append(cur.batches, m)
		case m.Type == "end" && m.Run == want && cur == &r.run:
			cur.end = m
			cur = &r.baseline
		case m.Type == "end" && m.Run == want:
			cur.end = m
		case m.Type == "diverge" && cur == &r.baseline && cur.end.Type == "end":
			r.diverge = m
			return r
		default:
			t.Fatalf("unexpected %s (run %q) in a compared run: %.300s", m.Type, m.Run, m.Raw)
		}
	}
}

// decoded is every event of a run's batches.
func decoded(t *testing.T, r run) []event {
	t.Helper()
	var out []event
	for _, b := range r.batches {
		for _, raw := range b.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
	}
	return out
}

// sameAction compares two protocol events as trace.Same does: kind, time and
// arguments.
func sameAction(a, b event) bool {
	if a.Kind != b.Kind || a.T != b.T || len(a.Args) != len(b.Args) {
		return false
	}
	for k, v := range a.Args {
		if w, ok := b.Args[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestHelloQuirksAreChecked(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	cases := []struct {
		in   string
		want string
	}{
		{`{"type":"hello","v":1,"scenario":"rings","quirks":["no-such-bug"]}`, `unknown quirk "no-such-bug"`},
		{`{"type":"hello","v":1,"scenario":"rings","quirks":["missing-wmb"]}`, "missing-wmb: scenario rings takes full-is-tail-eq-head, no-cq-head"},
		{`{"type":"hello","v":1,"scenario":"job","quirks":["no-cq-head"]}`, "scenario job takes no quirks"},
		{`{"type":"hello","v":1,"scenario":"rings","quirks":["no-cq-head","no-cq-head"]}`, "no-cq-head given twice"},
		{`{"type":"hello","v":1,"scenario":"rings","quirks":"no-cq-head"}`, "quirks: want an array of quirk names"},
		{`{"type":"hello","v":1,"scenario":"rings","quirks":[5]}`, "quirks: want an array of quirk names"},
	}
	for _, tc := range cases {
		c.sendRaw(t, tc.in)
		m := c.expect(t, "error")
		if m.Code != "bad-request" || !strings.Contains(m.Message, tc.want) {
			t.Fatalf("%s: %s, want bad-request saying %q", tc.in, m.Raw, tc.want)
		}
	}
	// The socket goes on, and an empty list is no quirk at all.
	c.send(t, helloQuirks("rings", nil))
	r := c.readRun(t)
	if len(r.welcome.Quirks) != 0 || r.welcome.Quirks == nil || r.welcome.Compare {
		t.Fatalf("welcome of a run without quirks: %.300s", r.welcome.Raw)
	}
	// No baseline and no diverge follow a run without quirks: the next message
	// is the answer to a ping sent after the end.
	c.send(t, map[string]any{"type": "ping", "id": 1})
	if m := c.read(t); m.Type != "pong" {
		t.Fatalf("after the end of a run without quirks: %.300s", m.Raw)
	}
	// Inspecting a baseline that does not exist.
	c.send(t, map[string]any{"type": "inspect", "id": 2, "seq": 1, "line": "info rings", "run": "baseline"})
	if m := c.expect(t, "error"); m.Code != "bad-request" || !strings.Contains(m.Message, "no quirks") {
		t.Fatalf("inspect of a baseline without quirks: %s", m.Raw)
	}
	c.send(t, map[string]any{"type": "inspect", "id": 3, "seq": 1, "line": "info rings", "run": "other"})
	if m := c.expect(t, "error"); m.Code != "bad-request" || !strings.Contains(m.Message, `run "other"`) {
		t.Fatalf("inspect of run other: %s", m.Raw)
	}
}

// TestQuirkRunIsComparedWithoutIt: a hello with a quirk runs the scenario with
// it, then without it, and says where the two runs part; the events before are
// the same actions, the one there is not, and it is where the trace package's
// FirstDifference puts it for the same runs made here.
func TestQuirkRunIsComparedWithoutIt(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, helloQuirks("rings", nil, "no-cq-head"))
	r := c.readCompared(t)

	w := r.run.welcome
	if !slices.Equal(w.Quirks, []string{"no-cq-head"}) || !w.Compare {
		t.Fatalf("welcome: %.300s", w.Raw)
	}
	last := checkContiguous(t, 1, r.run.batches)
	lastBase := checkContiguous(t, 1, r.baseline.batches)
	if r.run.end.Seq != last || r.baseline.end.Seq != lastBase || r.run.end.Run != "" || r.baseline.end.Run != "baseline" {
		t.Fatalf("ends: %s / %s", r.run.end.Raw, r.baseline.end.Raw)
	}
	// The bug shows in what the runs report: the broken driver times out.
	if !strings.Contains(r.run.end.Error+strings.Join(r.run.end.Log, "\n"), "never completed") || r.baseline.end.Error != "" {
		t.Fatalf("with no-cq-head: %q %q; without: %q", r.run.end.Error, r.run.end.Log, r.baseline.end.Error)
	}

	with, without := decoded(t, r.run), decoded(t, r.baseline)
	d := r.diverge
	if d.Seq == 0 || d.Seq > uint64(min(len(with), len(without))) {
		t.Fatalf("diverge at %d of %d and %d events: %s", d.Seq, len(with), len(without), d.Raw)
	}
	for i := range d.Seq - 1 {
		if !sameAction(with[i], without[i]) {
			t.Fatalf("the runs differ at #%d, before the divergence at #%d", i+1, d.Seq)
		}
	}
	at := d.Seq - 1
	if sameAction(with[at], without[at]) {
		t.Fatalf("#%d is the same in both runs", d.Seq)
	}
	var ev, base event
	if err := json.Unmarshal(d.Event, &ev); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(d.Baseline, &base); err != nil {
		t.Fatal(err)
	}
	if !sameAction(ev, with[at]) || !sameAction(base, without[at]) || ev.Seq != d.Seq || base.Seq != d.Seq {
		t.Fatalf("diverge names %s and %s, the runs have %+v and %+v", d.Event, d.Baseline, with[at], without[at])
	}

	// The same runs, made here.
	sc, _ := scenario.Find("rings")
	local := func(qs quirk.Set) []trace.Event {
		m, err := machine.New(machine.Config{Seed: 1, Quirks: qs})
		if err != nil {
			t.Fatal(err)
		}
		var buf trace.Buffer
		m.Tracer().Attach(&buf)
		_ = sc.Run(m, &scenario.Env{Log: io.Discard})
		return buf.Events
	}
	i, ok := trace.FirstDifference(local(quirk.Set(0).With(quirk.NoCQHead)), local(0))
	if !ok || uint64(i)+1 != d.Seq {
		t.Fatalf("FirstDifference of the runs made here: %d, %v; the server says #%d", i, ok, d.Seq)
	}

	// Inspection of either run at the end shows its own rings.
	for _, tc := range []struct {
		run string
		seq uint64
	}{{"", last}, {"baseline", lastBase}} {
		c.send(t, map[string]any{"type": "inspect", "id": tc.run, "seq": tc.seq, "line": "info registers", "run": tc.run})
		m := c.expect(t, "inspect")
		if m.Run != tc.run || m.Seq != tc.seq {
			t.Fatalf("inspect of run %q: %.300s", tc.run, m.Raw)
		}
	}
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": last, "line": "info rings"})
	withRings := c.expect(t, "inspect").Output
	c.send(t, map[string]any{"type": "inspect", "id": 2, "seq": last, "line": "info rings", "run": "baseline"})
	withoutRings := c.expect(t, "inspect").Output
	if withRings == withoutRings {
		t.Fatalf("info rings at #%d is the same with and without the quirk:\n%s", last, withRings)
	}
}

// TestQuirkedHelloIsStopped: a new hello during a compared run throws both runs
// away; what follows its welcome is the new run only.
func TestQuirkedHelloIsStopped(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, helloQuirks("capstone", nil, "no-cq-head"))
	c.expect(t, "welcome")
	c.send(t, hello("job", 1, nil))
	for {
		m := c.read(t)
		if m.Type == "welcome" {
			break
		}
		if m.Type == "diverge" || m.Type == "error" {
			t.Fatalf("before the second welcome: %.300s", m.Raw)
		}
	}
	// The new run as usual, then nothing of the old one.
	for {
		m := c.read(t)
		if m.Run != "" || m.Type == "diverge" {
			t.Fatalf("after the new welcome: %.300s", m.Raw)
		}
		if m.Type == "end" {
			break
		}
	}
	c.send(t, map[string]any{"type": "ping", "id": 1})
	if m := c.read(t); m.Type != "pong" {
		t.Fatalf("after the end: %.300s", m.Raw)
	}
}
