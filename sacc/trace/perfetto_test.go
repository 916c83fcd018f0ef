package trace_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// chromeTrace is the part of the trace-event format the tests look at.
type chromeTrace struct {
	DisplayTimeUnit string           `json:"displayTimeUnit"`
	TraceEvents     []map[string]any `json:"traceEvents"`
}

func decodePerfetto(t *testing.T, events []trace.Event, bw uint64) chromeTrace {
	t.Helper()
	var out bytes.Buffer
	if err := trace.WritePerfetto(&out, events, bw); err != nil {
		t.Fatalf("WritePerfetto: %v", err)
	}
	if !json.Valid(out.Bytes()) {
		t.Fatalf("WritePerfetto output is not valid JSON:\n%s", out.Bytes())
	}
	var ct chromeTrace
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	if err := dec.Decode(&ct); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if ct.TraceEvents == nil {
		t.Fatalf("no traceEvents array")
	}
	return ct
}

// split separates metadata ("M") entries from the entries for events.
func split(ct chromeTrace) (meta, rest []map[string]any) {
	for _, e := range ct.TraceEvents {
		if e["ph"] == "M" {
			meta = append(meta, e)
		} else {
			rest = append(rest, e)
		}
	}
	return meta, rest
}

func perfettoEvents() []trace.Event {
	events := []trace.Event{
		ev(trace.CPUWrite, 0, sacc.MMIOWindowBase+sacc.DoorbellPage, 4, 1),
		ev(trace.ConfigRead, 250, saccBDF, sacc.CfgCommand, 2, 6),
		ev(trace.DMARead, 1500, 0x10000, 0x10000, 4096),
		ev(trace.DMAWrite, 3000, 0x20000, 0x20000, 0), // no bytes: no slice
		ev(trace.CQPost, 4000, 63, 0x40, 0, 1),
		ev(trace.IOMMUFault, 1_234_567, 0x1000, uint64(sacc.FaultWriteDenied), sacc.AccessWrite, saccBDF),
	}
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	return events
}

func TestWritePerfettoHasThreadNamesForEverySide(t *testing.T) {
	ct := decodePerfetto(t, nil, 0)
	if ct.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit = %q", ct.DisplayTimeUnit)
	}
	meta, rest := split(ct)
	if len(rest) != 0 {
		t.Errorf("%d non-metadata entries for no events", len(rest))
	}
	threads := map[string]string{}
	process := false
	for _, m := range meta {
		args, _ := m["args"].(map[string]any)
		switch m["name"] {
		case "thread_name":
			threads[string(m["tid"].(json.Number))] = args["name"].(string)
		case "process_name":
			process = args["name"] != ""
		}
	}
	want := map[string]string{}
	for s := trace.SideCPU; s <= trace.SideKernel; s++ {
		want[strconv.Itoa(int(s)+1)] = s.String()
	}
	if len(threads) != len(want) {
		t.Errorf("thread names %v, want %v", threads, want)
	}
	for tid, name := range want {
		if threads[tid] != name {
			t.Errorf("tid %s named %q, want %q", tid, threads[tid], name)
		}
	}
	if !process {
		t.Error("no process_name metadata")
	}
}

func TestWritePerfettoWritesOneEntryPerEvent(t *testing.T) {
	events := perfettoEvents()
	const bw = 3400
	_, rest := split(decodePerfetto(t, events, bw))
	if len(rest) != len(events) {
		t.Fatalf("%d entries for %d events", len(rest), len(events))
	}
	cases := []struct {
		ph, ts, dur string // dur "" for instants
		args        map[string]string
	}{
		{"i", "0.000", "", map[string]string{"addr": "0xc0001000", "size": "4", "val": "0x1"}},
		{"i", "0.250", "", map[string]string{"dev": "00:03.0", "reg": "0x4", "size": "2", "val": "0x6"}},
		{"X", "1.500", "1.205", map[string]string{"iova": "0x10000", "phys": "0x10000", "len": "4096"}}, // 4096 B at 3400 B/µs: 1204.7 ns, rounded up
		{"i", "3.000", "", map[string]string{"len": "0"}},
		{"i", "4.000", "", map[string]string{"cq_tail": "63", "req_id": "0x40", "status": "0x0", "phase": "1"}},
		{"i", "1234.567", "", map[string]string{"reason": "write-denied", "access": "write", "source": "00:03.0"}},
	}
	for i, c := range cases {
		e, want := rest[i], events[i]
		info := want.Kind.Info()
		if e["name"] != info.Name || e["cat"] != info.Side.String() || e["ph"] != c.ph {
			t.Errorf("entry %d: name %v cat %v ph %v; want %s %s %s", i, e["name"], e["cat"], e["ph"], info.Name, info.Side, c.ph)
		}
		if e["ts"] != json.Number(c.ts) {
			t.Errorf("entry %d: ts %v, want %s µs", i, e["ts"], c.ts)
		}
		if e["pid"] != json.Number("1") || e["tid"] != json.Number(strconv.Itoa(int(info.Side)+1)) {
			t.Errorf("entry %d: pid %v tid %v", i, e["pid"], e["tid"])
		}
		if c.dur != "" {
			if e["dur"] != json.Number(c.dur) {
				t.Errorf("entry %d (%s): dur %v, want %s", i, info.Name, e["dur"], c.dur)
			}
		} else if _, has := e["dur"]; has {
			t.Errorf("entry %d (%s): instant has a dur", i, info.Name)
		}
		if c.ph == "i" && e["s"] != "t" {
			t.Errorf("entry %d: instant scope %v, want t", i, e["s"])
		}
		args, _ := e["args"].(map[string]any)
		if args["seq"] != json.Number(strconv.FormatUint(want.Seq, 10)) {
			t.Errorf("entry %d: args.seq %v, want %d", i, args["seq"], want.Seq)
		}
		if len(args) != len(info.Args)+1 {
			t.Errorf("entry %d: %d args, want seq and %d", i, len(args), len(info.Args))
		}
		for k, v := range c.args {
			if args[k] != v {
				t.Errorf("entry %d: args.%s = %v, want %q", i, k, args[k], v)
			}
		}
	}
}

func TestWritePerfettoDMAEvents(t *testing.T) {
	cases := []struct {
		name string
		ev   trace.Event
		bw   uint64
		ph   string
		dur  string
	}{
		{"read at default bandwidth", ev(trace.DMARead, 0, 0, 0, 3400), 3400, "X", "1.000"},
		{"write at default bandwidth", ev(trace.DMAWrite, 0, 0, 0, 64), 3400, "X", "0.019"}, // 18.8 ns → 19
		{"one byte rounds up to 1 ns", ev(trace.DMAWrite, 0, 0, 0, 1), 3400, "X", "0.001"},
		{"64 KiB", ev(trace.DMARead, 0, 0, 0, 64<<10), 3400, "X", "19.276"},
		{"bandwidth 0 leaves an instant", ev(trace.DMARead, 0, 0, 0, 4096), 0, "i", ""},
		{"zero length is an instant", ev(trace.DMAWrite, 0, 0, 0, 0), 3400, "i", ""},
		{"other kinds never get a duration", ev(trace.Fetch, 0, 0, 4096), 3400, "i", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, rest := split(decodePerfetto(t, []trace.Event{c.ev}, c.bw))
			if len(rest) != 1 {
				t.Fatalf("%d entries", len(rest))
			}
			e := rest[0]
			if e["ph"] != c.ph {
				t.Errorf("ph %v, want %s", e["ph"], c.ph)
			}
			if c.dur != "" && e["dur"] != json.Number(c.dur) {
				t.Errorf("dur %v, want %s", e["dur"], c.dur)
			}
			if c.dur == "" && e["dur"] != nil {
				t.Errorf("unexpected dur %v", e["dur"])
			}
			// The slice must agree with the cost model's link time.
			if c.ph == "X" {
				cost := sim.DefaultCost()
				cost.LinkBytesPerUs = c.bw
				want := cost.Transfer(c.ev.Args[2])
				if got := e["dur"].(json.Number).String(); got != micros(uint64(want)) {
					t.Errorf("dur %s µs, cost model says %d ns", got, want)
				}
			}
		})
	}
}

func micros(ns uint64) string {
	return strconv.FormatUint(ns/1000, 10) + "." + strconv.FormatUint(1000+ns%1000, 10)[1:]
}

func TestWritePerfettoLargeTimesAreExact(t *testing.T) {
	const at = sim.Time(987_654_321_012)
	_, rest := split(decodePerfetto(t, []trace.Event{ev(trace.Ready, at)}, 0))
	if len(rest) != 1 || rest[0]["ts"] != json.Number("987654321.012") {
		t.Errorf("ts = %v, want 987654321.012", rest)
	}
}

func TestWritePerfettoReportsWriteErrors(t *testing.T) {
	if err := trace.WritePerfetto(&failWriter{}, perfettoEvents(), 3400); err == nil {
		t.Error("WritePerfetto to a failing writer returned nil")
	}
}
