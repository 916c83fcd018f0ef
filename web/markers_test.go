package web

import (
	"io"
	"testing"

	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
)

// resolve finds a marker's event in a run, as the browser does (static/timeline.js):
// the Nth event of its kind whose arguments have its values, after the event of
// the marker it counts from (found, by seq); 0 if there is none.
func resolve(m Marker, events []trace.Event, found map[string]uint64) uint64 {
	n := 0
	after := uint64(0)
	if m.After != "" {
		if after = found[m.After]; after == 0 {
			return 0
		}
	}
	for _, ev := range events {
		if ev.Seq <= after || ev.Kind.String() != m.Kind {
			continue
		}
		match := true
		for a, want := range m.Args {
			if v, ok := ev.Arg(a); !ok || v != want {
				match = false
			}
		}
		if match {
			if n++; n == m.N {
				return ev.Seq
			}
		}
	}
	return 0
}

// TestChapterMarkersAreInTheirRuns runs every widget of the book as the browser
// would (seed 1, the block's options) and finds each of its markers: a marker
// whose event the run does not have, after a change to the model or the
// scenario, fails here, not on a learner's page.
func TestChapterMarkersAreInTheirRuns(t *testing.T) {
	chs, err := ReadChapters(chapters.FS)
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, c := range chs {
		for _, w := range c.Widgets {
			if len(w.Markers) == 0 {
				continue
			}
			marked++
			sc, _ := scenario.Find(w.Scenario)
			opts, err := scenario.ParseOptions(w.Options)
			if err != nil {
				t.Fatal(err)
			}
			m, err := machine.New(machine.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var buf trace.Buffer
			m.Tracer().Attach(&buf)
			_ = sc.Run(m, &scenario.Env{Log: io.Discard, Options: opts})
			prev := uint64(0)
			found := map[string]uint64{}
			for _, mk := range w.Markers {
				seq := resolve(mk, buf.Events, found)
				found[mk.Name] = seq
				if seq == 0 {
					t.Errorf("%s widget %d (%s %s): marker %s: the run has no %s #%d with %v", c.File, w.Index, w.Scenario, w.Options, mk.Name, mk.Kind, mk.N, mk.Args)
					continue
				}
				// A scrubber's markers read left to right in the order the block gives them.
				if seq < prev {
					t.Errorf("%s widget %d: marker %s at #%d comes before the marker listed ahead of it (#%d)", c.File, w.Index, mk.Name, seq, prev)
				}
				prev = seq
			}
		}
	}
	if marked == 0 {
		t.Fatal("no widget of the book has markers")
	}
}
