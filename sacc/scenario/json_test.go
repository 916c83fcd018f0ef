package scenario

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

// jsonCorpus is every event of every scenario's golden run (seed 1, default
// options, and arm64 where a scenario takes it), and events of every kind with
// arguments at their edges and drawn from a seeded stream.
func jsonCorpus(t *testing.T) []trace.Event {
	t.Helper()
	var corpus []trace.Event
	for _, s := range All() {
		for _, opts := range []map[string]string{nil, {"cpu": "arm64"}} {
			if opts != nil && s.CheckOptions(opts) != nil {
				continue
			}
			m, err := machine.New(machine.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var buf trace.Buffer
			m.Tracer().Attach(&buf)
			if err := s.Run(m, &Env{Log: io.Discard, Options: opts}); err != nil {
				t.Fatalf("scenario %s %v: %v", s.Name, opts, err)
			}
			corpus = append(corpus, buf.Events...)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range trace.Kinds() {
		for _, v := range []uint64{0, 1, 7, 0xFF, 0x1_0000, 1 << 63, ^uint64(0), rng.Uint64(), rng.Uint64N(300)} {
			ev := trace.Event{Seq: v, Time: 12345, Kind: k}
			for i := range ev.Args {
				ev.Args[i] = v ^ uint64(i)
			}
			corpus = append(corpus, ev)
		}
	}
	return corpus
}

// referenceJSON is an event's JSON object put together by encoding/json, value by
// value, in the encoder's key order.
func referenceJSON(t *testing.T, e trace.Event) []byte {
	t.Helper()
	enc := func(v any) []byte {
		var b bytes.Buffer
		je := json.NewEncoder(&b)
		je.SetEscapeHTML(false)
		if err := je.Encode(v); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	info := e.Kind.Info()
	var b []byte
	b = append(b, `{"seq":`...)
	b = append(b, enc(e.Seq)...)
	b = append(b, `,"t":`...)
	b = append(b, enc(uint64(e.Time))...)
	b = append(b, `,"kind":`...)
	b = append(b, enc(info.Name)...)
	b = append(b, `,"side":`...)
	b = append(b, enc(info.Side.String())...)
	b = append(b, `,"args":{`...)
	for i, a := range info.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, enc(a.Name)...)
		b = append(b, ':')
		b = append(b, enc(e.Args[i])...)
	}
	b = append(b, `},"text":`...)
	b = append(b, enc(string(e.AppendArgs(nil)))...)
	return append(b, '}')
}

// TestEventJSONMatchesEncodingJSON holds the hand-written encoder to
// encoding/json's output, and to strconv.Quote's quoting of the text that the
// encoder has always written, for every event of the corpus; and encoding any of
// them into a buffer with room allocates nothing.
func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	corpus := jsonCorpus(t)
	buf := make([]byte, 0, 4096)
	bad := 0
	for _, e := range corpus {
		got := e.AppendJSON(buf[:0])
		want := referenceJSON(t, e)
		quoted := strconv.Quote(string(e.AppendArgs(nil)))
		if !bytes.Equal(got, want) || !bytes.HasSuffix(got, []byte(`"text":`+quoted+`}`)) {
			if bad++; bad <= 5 {
				t.Errorf("event %d (%s):\n got %s\nwant %s", e.Seq, e.Kind, got, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d events differ", bad, len(corpus))
	}
	for _, e := range corpus {
		if n := testing.AllocsPerRun(10, func() { buf = e.AppendJSON(buf[:0]) }); n != 0 {
			t.Fatalf("encoding %s allocates %.0f times", e.Kind, n)
		}
	}
	t.Logf("%d events", len(corpus))
}
