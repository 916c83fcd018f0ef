package scenario

import (
	"bufio"
	"io"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

// BenchmarkCapstoneJSON is `saccbook run capstone --format json` without the
// process around it: a fresh machine, every event written as a JSON line.
func BenchmarkCapstoneJSON(b *testing.B) {
	benchCapstone(b, func(m *machine.Machine, w io.Writer) { m.Tracer().Attach(trace.NewJSONWriter(w)) })
}

// BenchmarkCapstoneWithSources is the capstone kept in memory by a sink that
// reads every event's source line, as the live server's sessions do.
func BenchmarkCapstoneWithSources(b *testing.B) {
	benchCapstone(b, func(m *machine.Machine, _ io.Writer) { m.Tracer().Attach(&trace.Buffer{}) })
}

func benchCapstone(b *testing.B, attach func(m *machine.Machine, w io.Writer)) {
	s, ok := Find("capstone")
	if !ok {
		b.Fatal("no scenario capstone")
	}
	b.ReportAllocs()
	events := uint64(0)
	for b.Loop() {
		m, err := machine.New(machine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriter(io.Discard)
		attach(m, bw)
		if err := s.Run(m, &Env{Log: io.Discard}); err != nil {
			b.Fatalf("scenario %s: %v", s.Name, err)
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		events += m.Tracer().Seq()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}
