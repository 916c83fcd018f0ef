package live

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/hunt"
	"github.com/saccbook/saccbook/sacc/quirk"
)

var liveKey = bytes.Repeat([]byte{0x5c}, 32)

// huntServer is a hub whose hunts are the variants of learner "ann".
func huntServer(t *testing.T) *server {
	return newServer(t, serverOpt{opts: Options{Hunts: func(n int) (hunt.Variant, error) {
		h, err := hunt.Lookup(n)
		if err != nil {
			return hunt.Variant{}, err
		}
		return h.For(liveKey, "ann"), nil
	}}})
}

// TestHelloHunt: a hello with a hunt runs the learner's variant, with its bug,
// as the grader replays it — the same events, one for one — and the welcome
// names no quirk and no parameter, offers no comparison, and nothing follows
// the end. Inspection works on the run; its baseline does not exist.
func TestHelloHunt(t *testing.T) {
	s := huntServer(t)
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	h, _ := hunt.Find(3)
	v := h.For(liveKey, "ann")
	c.send(t, map[string]any{"type": "hello", "v": 1, "hunt": 3})
	r := c.readRun(t)
	w := r.welcome
	if !strings.Contains(string(w.Raw), `"hunt":3`) || w.Scenario != h.Scenario || w.Compare || len(w.Quirks) != 0 || w.Quirks == nil ||
		w.Seed != 0 || len(w.Options) != 0 {
		t.Fatalf("welcome of a hunt: %.400s", w.Raw)
	}
	for _, q := range quirk.All() {
		if bytes.Contains(w.Raw, []byte(q.Name)) {
			t.Errorf("the welcome names %s", q.Name)
		}
	}
	want, err := v.Run(true)
	if err != nil {
		t.Fatal(err)
	}
	got := decoded(t, r)
	if len(got) != len(want.Events) {
		t.Fatalf("%d events, the variant has %d", len(got), len(want.Events))
	}
	for i, ev := range got {
		e := want.Events[i]
		if ev.Kind != e.Kind.String() || ev.T != uint64(e.Time) || ev.Seq != e.Seq {
			t.Fatalf("event %d: %+v, want %v", i+1, ev, e)
		}
	}
	if strings.Join(r.end.Log, "\n") != strings.TrimSuffix(want.Log, "\n") {
		t.Errorf("narrative differs from the variant's:\n%s\nwant\n%s", strings.Join(r.end.Log, "\n"), want.Log)
	}
	c.send(t, map[string]any{"type": "ping", "id": 1})
	if m := c.read(t); m.Type != "pong" {
		t.Fatalf("after a hunt's end: %s, want the pong (no baseline, no diverge)", m.Raw)
	}
	c.send(t, map[string]any{"type": "inspect", "id": 2, "seq": 100, "line": "info registers"})
	if m := c.expect(t, "inspect"); !strings.Contains(m.Output, "MAGIC") && !strings.Contains(m.Output, "STATUS") {
		t.Errorf("inspect of a hunt: %q", m.Output)
	}
	c.send(t, map[string]any{"type": "inspect", "id": 3, "seq": 100, "line": "info registers", "run": "baseline"})
	if m := c.expect(t, "error"); m.Code != "bad-request" || !strings.Contains(m.Message, "no run without its bug") {
		t.Errorf("inspect of a hunt's baseline: %s", m.Raw)
	}
}

// TestHelloHuntRefusesCompanions: a hunt comes alone — a scenario, a seed,
// options, quirks or a profile with it are refused, as are hunts that do not exist and a
// server that has none; the socket goes on after each.
func TestHelloHuntRefusesCompanions(t *testing.T) {
	s := huntServer(t)
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	for _, tc := range []struct{ in, want string }{
		{`{"type":"hello","v":1,"hunt":3,"quirks":["no-cq-head"]}`, "no scenario, seed, options, quirks or profile"},
		{`{"type":"hello","v":1,"hunt":3,"scenario":"rings"}`, "no scenario, seed, options, quirks or profile"},
		{`{"type":"hello","v":1,"hunt":3,"seed":4}`, "no scenario, seed, options, quirks or profile"},
		{`{"type":"hello","v":1,"hunt":3,"options":{"size":"4"}}`, "no scenario, seed, options, quirks or profile"},
		{`{"type":"hello","v":1,"hunt":3,"profile":"upstream-v0.1"}`, "no scenario, seed, options, quirks or profile"},
		{`{"type":"hello","v":1,"hunt":99}`, "no hunt 99"},
		{`{"type":"hello","v":1,"hunt":0}`, "from 1"},
		{`{"type":"hello","v":1,"hunt":"3"}`, "hunt: want a hunt's number"},
	} {
		c.sendRaw(t, tc.in)
		m := c.expect(t, "error")
		if m.Code != "bad-request" || !strings.Contains(m.Message, tc.want) {
			t.Errorf("%s: %s, want bad-request saying %q", tc.in, m.Raw, tc.want)
		}
	}
	plain := newServer(t, serverOpt{})
	p := plain.dial(t, "/ws/session", dialOpt{})
	defer p.close()
	p.sendRaw(t, `{"type":"hello","v":1,"hunt":3}`)
	if m := p.expect(t, "error"); !strings.Contains(m.Message, "no bug hunts") {
		t.Errorf("a server without hunts: %s", m.Raw)
	}
	// Every hunt starts on the hunt server.
	for _, h := range hunt.Catalogue() {
		c.sendRaw(t, fmt.Sprintf(`{"type":"hello","v":1,"hunt":%d}`, h.Number))
		if r := c.readRun(t); r.welcome.Scenario != h.Scenario || r.end.Seq == 0 {
			t.Errorf("hunt %d: welcome %.200s, end %.200s", h.Number, r.welcome.Raw, r.end.Raw)
		}
	}
}
