package live

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
)

func TestSessionRunsToTheEnd(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("driver", 1, map[string]string{"irq": "on"}))
	r := c.readRun(t)

	w := r.welcome
	if w.Scenario != "driver" || w.Seed != 1 || w.Shared || w.Options["irq"] != "on" || !strings.HasPrefix(w.Session, "s-") {
		t.Fatalf("welcome: %.400s", w.Raw)
	}
	if k := w.Kinds["sacc_cq_post"]; k.Side != "device" || strings.Join(k.Args, ",") != "cq_tail,req_id,status,phase" {
		t.Fatalf("kinds[sacc_cq_post] = %+v", k)
	}
	if k, ok := w.Kinds["sacc_ready"]; !ok || k.Args == nil {
		t.Fatalf("kinds[sacc_ready] = %+v (want an empty args list)", k)
	}
	last := checkContiguous(t, 1, r.batches)
	if last < 100 || r.end.Seq != last || r.end.T == 0 || r.end.Error != "" {
		t.Fatalf("%d events; end %.300s", last, r.end.Raw)
	}
	if len(r.end.Log) == 0 || !strings.Contains(r.end.Log[0], "driver bound to") {
		t.Fatalf("end log %q", r.end.Log)
	}
	for _, b := range r.batches {
		if len(b.Events) > maxBatch || len(b.Events) == 0 {
			t.Fatalf("batch of %d events", len(b.Events))
		}
	}

	// Events are the trace's JSON, with the source line of CPU-side events.
	srcRE := regexp.MustCompile(`^sacc/[a-z/]+\.go:[0-9]+$`)
	var withSrc int
	for _, b := range r.batches {
		for _, raw := range b.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind == "" || ev.Side == "" || ev.Args == nil {
				t.Fatalf("event %s", raw)
			}
			if ev.Src != "" {
				withSrc++
				if !srcRE.MatchString(ev.Src) {
					t.Fatalf("src %q in %s", ev.Src, raw)
				}
			}
		}
	}
	if withSrc == 0 {
		t.Fatalf("no event has a src")
	}
	t.Logf("driver: %d events in %d batches, %d with src", last, len(r.batches), withSrc)
}

// TestHelloChoosesTheProfile: a hello's profile builds the machine; the welcome
// says which, and the events are upstream's engine's. Without one, v1.
func TestHelloChoosesTheProfile(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	h := hello("upstream-bringup", 1, nil)
	h["profile"] = "upstream-v0.1"
	c.send(t, h)
	r := c.readRun(t)
	if r.welcome.Profile != "upstream-v0.1" || r.end.Error != "" {
		t.Fatalf("welcome %.300s; end %.300s", r.welcome.Raw, r.end.Raw)
	}
	kinds := map[string]bool{}
	for _, b := range r.batches {
		for _, raw := range b.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			kinds[ev.Kind] = true
		}
	}
	if !kinds["sacc_sq_fetch"] || !kinds["sacc_cq_post_upstream"] || kinds["sacc_device_error"] {
		t.Fatalf("upstream's run has kinds %v", kinds)
	}
	// Inspection re-runs on a machine of the same profile.
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": r.end.Seq, "line": "info pci"})
	if m := c.expect(t, "inspect"); !strings.Contains(m.Output, "Subsystem: Device 1af4:1100") {
		t.Fatalf("info pci on upstream's machine: %s", m.Output)
	}

	c.send(t, hello("upstream-bringup", 1, nil))
	r = c.readRun(t)
	if r.welcome.Profile != "v1" {
		t.Fatalf("welcome without a profile: %.300s", r.welcome.Raw)
	}
	if !strings.Contains(strings.Join(r.end.Log, "\n"), "v1: the doorbell came while STATUS.READY was 0: device error 4") {
		t.Fatalf("v1's story: %q", r.end.Log)
	}
}

// TestBatchesSplit: a run longer than one batch comes in full batches of 512.
func TestBatchesSplit(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("bypass", 1, nil))
	r := c.readRun(t)
	last := checkContiguous(t, 1, r.batches)
	if last <= maxBatch || len(r.batches) != int((last+maxBatch-1)/maxBatch) {
		t.Fatalf("%d events in %d batches", last, len(r.batches))
	}
	for _, b := range r.batches[:len(r.batches)-1] {
		if len(b.Events) != maxBatch {
			t.Fatalf("a batch of %d before the last", len(b.Events))
		}
	}
}

// TestSameHelloSameBytes: the same hello gives byte-identical event batches, on
// another socket and again on the same one.
func TestSameHelloSameBytes(t *testing.T) {
	s := newServer(t, serverOpt{})
	h := hello("driver", 5, map[string]string{"cpu": "arm64", "iommu": "on"})
	var runs []run
	for range 2 {
		c := s.dial(t, "/ws/session", dialOpt{})
		c.send(t, h)
		runs = append(runs, c.readRun(t))
		c.send(t, h)
		runs = append(runs, c.readRun(t))
		c.close()
	}
	for i, r := range runs[1:] {
		if len(r.batches) != len(runs[0].batches) {
			t.Fatalf("run %d: %d batches, want %d", i+1, len(r.batches), len(runs[0].batches))
		}
		for j := range r.batches {
			if !bytes.Equal(r.batches[j].Raw, runs[0].batches[j].Raw) {
				t.Fatalf("run %d batch %d differs", i+1, j)
			}
		}
		if !bytes.Equal(r.end.Raw, runs[0].end.Raw) {
			t.Fatalf("run %d end differs:\n%s\n%s", i+1, r.end.Raw, runs[0].end.Raw)
		}
	}
	if runs[0].welcome.Session == runs[1].welcome.Session {
		t.Fatalf("a new hello kept the session id")
	}
	// A different seed on arm64 changes the store drain order.
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("driver", 6, map[string]string{"cpu": "arm64", "iommu": "on"}))
	other := c.readRun(t)
	if bytes.Equal(other.batches[0].Raw, runs[0].batches[0].Raw) && bytes.Equal(other.end.Raw, runs[0].end.Raw) {
		t.Logf("note: seeds 5 and 6 gave the same first batch and end")
	}
}

// freshInspect is what a fresh runner shows at seq: the reference for inspect.
func freshInspect(t *testing.T, name string, seed uint64, opts map[string]string, seq uint64, line string) string {
	t.Helper()
	sc, ok := scenario.Find(name)
	if !ok {
		t.Fatal(name)
	}
	r, err := runner.New(func() (*machine.Machine, error) {
		return machine.New(machine.Config{Seed: seed})
	}, func(m *machine.Machine) error {
		return sc.Run(m, &scenario.Env{Log: io.Discard, Options: opts})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.RunTo(seq); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	monitor.New(r, &out).Exec(line)
	return out.String()
}

func TestInspectAtAnyPosition(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	opts := map[string]string{"irq": "on"}
	c.send(t, hello("driver", 1, opts))
	r := c.readRun(t)
	last := r.end.Seq

	// Forward, then back (re-execution), then forward again, then a real access
	// (xp of configuration space adds events) and forward after it.
	steps := []struct {
		seq  uint64
		line string
		want string
	}{
		{last, "info registers", "ENABLE+"},
		{0, "info registers", "CTRL       +0x0008 RW 0x00000000"},
		{last / 2, "info rings", ""},
		{last / 3, "xp /2xw 0xb0018000", "b0018000: 0x10921b36"},
		{last / 3 * 2, "info registers", ""},
		{last, "info irq", ""},
		{last + 100, "info registers", "ENABLE+"}, // past the end: the end
	}
	for i, st := range steps {
		want := st.seq
		if want > last {
			want = last
		}
		c.send(t, map[string]any{"type": "inspect", "id": i, "seq": st.seq, "line": st.line})
		m := c.expect(t, "inspect")
		if string(m.ID) != mustJSON(i) || m.Seq != want {
			t.Fatalf("step %d: reply id %s seq %d, want %d %d", i, m.ID, m.Seq, i, want)
		}
		if ref := freshInspect(t, "driver", 1, opts, want, st.line); m.Output != ref {
			t.Fatalf("step %d: inspect %q at %d:\n%s\nwant (fresh runner):\n%s", i, st.line, want, m.Output, ref)
		}
		if !strings.Contains(m.Output, st.want) {
			t.Fatalf("step %d: %q at %d shows\n%s\nwant %q in it", i, st.line, want, m.Output, st.want)
		}
	}

	// A new hello drops the runner: inspection follows the new configuration.
	c.send(t, hello("job", 1, nil))
	c.readRun(t)
	c.send(t, map[string]any{"type": "inspect", "id": "s", "seq": 0, "line": "info registers"})
	m := c.expect(t, "inspect")
	if ref := freshInspect(t, "job", 1, nil, 0, "info registers"); m.Output != ref || string(m.ID) != `"s"` {
		t.Fatalf("after a new hello: %s", m.Raw)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestBadRequestsKeepTheSocket: malformed or unknown input is answered with
// bad-request and the socket goes on.
func TestBadRequestsKeepTheSocket(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	cases := []struct {
		in   string
		id   string
		want string // in the message
	}{
		{`not json`, "", "not a JSON object"},
		{`[1,2]`, "", "not a JSON object"},
		{`{}`, "", `no "type"`},
		{`{"type":7}`, "", "type"},
		{`{"type":"nosuch","id":1}`, "1", `unknown message type "nosuch"`},
		{`{"type":"inspect","id":2,"seq":0,"line":"info pci"}`, "2", "inspect before hello"},
		{`{"type":"hello","v":1}`, "", "scenario is required"},
		{`{"type":"hello","v":1,"scenario":"nosuch"}`, "", `unknown scenario "nosuch"`},
		{`{"type":"hello","v":1,"scenario":"driver","options":{"cpu":"sparc"}}`, "", `cpu="sparc"`},
		{`{"type":"hello","v":1,"scenario":"driver","options":{"colour":"red"}}`, "", `option "colour"`},
		{`{"type":"hello","v":1,"scenario":"job","options":{"cpu":"x86"}}`, "", "takes no options"},
		{`{"type":"hello","v":1,"scenario":"driver","options":{"cpu":1}}`, "", "options: want an object of strings"},
		{`{"type":"hello","v":1,"scenario":"job","seed":-1}`, "", "seed: want an unsigned integer"},
		{`{"type":"hello","v":1,"scenario":"job","seed":"x"}`, "", "seed"},
		{`{"type":"hello","v":1,"scenario":"job","profile":"v0.2"}`, "", `unknown profile "v0.2" (have: v1, upstream-v0.1)`},
		{`{"type":"hello","v":1,"scenario":"job","profile":1}`, "", "profile: want a string"},
		{`{"type":"ping","id":{"a":1}}`, "", "id: want a number or a string"},
	}
	for _, tc := range cases {
		c.sendRaw(t, tc.in)
		m := c.expect(t, "error")
		if m.Code != "bad-request" || !strings.Contains(m.Message, tc.want) || string(m.ID) != tc.id {
			t.Fatalf("%s: %s", tc.in, m.Raw)
		}
	}
	// A binary message.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if m := c.expect(t, "error"); m.Code != "bad-request" {
		t.Fatalf("binary: %s", m.Raw)
	}

	// Still open: ping, then a good hello, then refused and good inspections.
	c.sendRaw(t, `{"type":"ping","id":3}`)
	if m := c.expect(t, "pong"); string(m.ID) != "3" {
		t.Fatalf("pong %s", m.Raw)
	}
	for _, ping := range []string{`{"type":"ping"}`, `{"type":"ping","id":null}`} {
		c.sendRaw(t, ping)
		if m := c.expect(t, "pong"); m.ID != nil {
			t.Fatalf("pong %s", m.Raw)
		}
	}
	c.sendRaw(t, `{"type":"ping","id":"a\"b"}`)
	if m := c.expect(t, "pong"); string(m.ID) != `"a\"b"` {
		t.Fatalf("pong %s", m.Raw)
	}
	c.send(t, hello("job", 1, nil))
	c.readRun(t)
	for _, line := range []string{"step", "step 5", "back", "c", "cont", "q", "quit"} {
		c.send(t, map[string]any{"type": "inspect", "id": 9, "seq": 1, "line": line})
		if m := c.expect(t, "error"); m.Code != "bad-request" || string(m.ID) != "9" {
			t.Fatalf("inspect %q: %s", line, m.Raw)
		}
	}
	c.sendRaw(t, `{"type":"inspect","id":10,"line":"info pci"}`)
	if m := c.expect(t, "error"); m.Code != "bad-request" || !strings.Contains(m.Message, "seq") {
		t.Fatalf("inspect without seq: %s", m.Raw)
	}
	c.sendRaw(t, `{"type":"inspect","id":11,"seq":3,"line":"info nosuch"}`)
	if m := c.expect(t, "inspect"); !strings.Contains(m.Output, "nosuch") {
		t.Fatalf("a monitor error is output: %s", m.Raw)
	}
	// Unknown fields are ignored (later versions may add them).
	c.sendRaw(t, `{"type":"ping","id":12,"colour":"red"}`)
	c.expect(t, "pong")
}

func TestUnsupportedVersionCloses(t *testing.T) {
	s := newServer(t, serverOpt{})
	for _, in := range []string{
		`{"type":"hello","v":2,"scenario":"job"}`,
		`{"type":"hello","scenario":"job"}`,
		`{"type":"hello","v":2,"scenario":7,"seed":"whatever"}`, // v2 may mean anything by the rest
		`{"type":"hello","v":"one","scenario":"job"}`,
	} {
		c := s.dial(t, "/ws/session", dialOpt{})
		c.sendRaw(t, in)
		if m := c.expect(t, "error"); m.Code != "unsupported-version" {
			t.Fatalf("%s: %s", in, m.Raw)
		}
		if st := c.closeStatus(t); st != websocket.StatusPolicyViolation {
			t.Fatalf("%s: close status %v", in, st)
		}
		c.close()
	}
}

func TestReadLimit(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.sendRaw(t, `{"type":"ping","pad":"`+strings.Repeat("x", 64<<10)+`"}`)
	if st := c.closeStatus(t); st != websocket.StatusMessageTooBig {
		t.Fatalf("close status %v, want 1009", st)
	}
	// The server goes on.
	c2 := s.dial(t, "/ws/session", dialOpt{})
	defer c2.close()
	c2.sendRaw(t, `{"type":"ping","id":1,"pad":"`+strings.Repeat("x", 60<<10)+`"}`)
	c2.expect(t, "pong")
}

// TestPanickingScenario: a scenario that panics gives session-failed; the socket
// and the server go on.
func TestPanickingScenario(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("test-panic", 1, nil))
	c.expect(t, "welcome")
	var batches []msg
	var m msg
	for m = c.read(t); m.Type == "events"; m = c.read(t) {
		batches = append(batches, m)
	}
	if m.Type != "error" || m.Code != "session-failed" || !strings.Contains(m.Message, "deliberate test panic") {
		t.Fatalf("after the events: %s", m.Raw)
	}
	if last := checkContiguous(t, 1, batches); last == 0 {
		t.Fatalf("no events before the panic")
	}
	// Inspecting the failed run works too: the runner reports the panic.
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": 1000, "line": "stop"})
	if m := c.expect(t, "inspect"); !strings.Contains(m.Output, "panicked") {
		t.Fatalf("inspect after a panic: %s", m.Raw)
	}
	c.sendRaw(t, `{"type":"ping","id":1}`)
	c.expect(t, "pong")
	c.send(t, hello("job", 1, nil))
	if r := c.readRun(t); r.end.Error != "" || checkContiguous(t, 1, r.batches) != r.end.Seq {
		t.Fatalf("the next hello: %s", r.end.Raw)
	}
}

// TestSegfaultingScenario: a process fault ends the run as a panic does, with
// session-failed naming the fault, and the inspector's runner says the same.
func TestSegfaultingScenario(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("test-segfault", 1, nil))
	c.expect(t, "welcome")
	var m msg
	for m = c.read(t); m.Type == "events"; m = c.read(t) {
	}
	if want := "scenario test-segfault panicked: segmentation fault at 0x1234"; m.Type != "error" || m.Code != "session-failed" || m.Message != want {
		t.Fatalf("after the events: %s, want session-failed %q", m.Raw, want)
	}
	c.send(t, map[string]any{"type": "inspect", "id": 1, "seq": 100000, "line": "stop"})
	if m := c.expect(t, "inspect"); !strings.Contains(m.Output, "program panicked: segmentation fault at 0x1234") {
		t.Fatalf("inspect after the fault: %s", m.Raw)
	}
}

// TestNewHelloReplacesTheRun: a hello in the middle of a run ends it; after the
// new welcome, the new run's events start at 1.
func TestNewHelloReplacesTheRun(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, hello("irq-race", 1, nil))
	c.send(t, hello("job", 2, nil))
	first := c.expect(t, "welcome")
	if first.Scenario != "irq-race" {
		t.Fatalf("first welcome %s", first.Raw)
	}
	for {
		m := c.read(t)
		if m.Type == "welcome" {
			if m.Scenario != "job" || m.Seed != 2 || m.Session == first.Session {
				t.Fatalf("second welcome %s", m.Raw)
			}
			break
		}
		if m.Type != "events" && m.Type != "end" {
			t.Fatalf("between the welcomes: %s", m.Raw)
		}
	}
	var batches []msg
	m := c.read(t)
	for ; m.Type == "events"; m = c.read(t) {
		batches = append(batches, m)
	}
	if m.Type != "end" || checkContiguous(t, 1, batches) != m.Seq {
		t.Fatalf("the new run: %s", m.Raw)
	}
}

func TestOriginAndHostChecked(t *testing.T) {
	s := newServer(t, serverOpt{})
	if _, resp, err := s.tryDial("/ws/session", dialOpt{origin: "http://evil.example"}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: err %v resp %v", err, resp)
	}
	// The page's own origin, and no origin at all (not a browser), are let in.
	host := strings.TrimPrefix(s.srv.URL, "http://")
	for _, o := range []string{"http://" + host, ""} {
		c, _, err := s.tryDial("/ws/session", dialOpt{origin: o})
		if err != nil {
			t.Fatalf("origin %q: %v", o, err)
		}
		c.close()
	}
	// By default only the page's own origin: another local page is refused...
	port := host[strings.LastIndex(host, ":"):]
	if _, resp, err := s.tryDial("/ws/session", dialOpt{origin: "http://localhost" + port}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("localhost origin by default: err %v resp %v", err, resp)
	}
	// ...unless allowed.
	s3 := newServer(t, serverOpt{opts: Options{AllowedOrigins: []string{"127.0.0.1:*", "localhost:*"}}})
	c, _, err := s3.tryDial("/ws/session", dialOpt{origin: "http://localhost:1234"})
	if err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	c.close()
	// A Host that is not allowed (a DNS-rebinding page) is refused, even when
	// the Origin is its own.
	s2 := newServer(t, serverOpt{opts: Options{AllowedOrigins: []string{"book.example:*"}}})
	host2 := strings.TrimPrefix(s2.srv.URL, "http://")
	if _, resp, err := s2.tryDial("/ws/session", dialOpt{origin: "http://" + host2}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("host not allowed: err %v resp %v", err, resp)
	}
}

func TestHostPatterns(t *testing.T) {
	h := New(Options{})
	defer h.Close()
	for host, want := range map[string]bool{
		"127.0.0.1:8080":        true,
		"LOCALHOST:80":          true,
		"[::1]:8080":            true,
		"evil.example:80":       false,
		"127.0.0.1.evil.com:80": false,
		"1:80":                  false,
		"localhost":             false, // no port: not what the patterns say
	} {
		if got := h.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}
