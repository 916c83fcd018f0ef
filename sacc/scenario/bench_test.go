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
		m.Tracer().Attach(trace.NewJSONWriter(bw))
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
