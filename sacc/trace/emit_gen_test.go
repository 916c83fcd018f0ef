package trace_test

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/sacc/trace/internal/emitgen"
)

// TestEmitGenMatchesTheKindsTable regenerates the emitters the way go generate
// does and compares them with the file on disk.
func TestEmitGenMatchesTheKindsTable(t *testing.T) {
	src, err := os.ReadFile("kind.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := emitgen.Generate(src)
	if err != nil {
		t.Fatalf("generate from kind.go: %v", err)
	}
	got, err := os.ReadFile("emit_gen.go")
	if err != nil {
		t.Fatalf("%v: run go generate ./sacc/trace", err)
	}
	if !bytes.Equal(got, want) {
		line, have, should := firstDifference(got, want)
		t.Errorf("emit_gen.go is stale: it no longer matches the kinds table in kind.go; "+
			"run go generate ./sacc/trace\nfirst difference at line %d:\n  on disk:   %q\n  generated: %q",
			line, have, should)
	}
}

func firstDifference(a, b []byte) (line int, la, lb string) {
	as, bs := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < max(len(as), len(bs)); i++ {
		la, lb = "", ""
		if i < len(as) {
			la = as[i]
		}
		if i < len(bs) {
			lb = bs[i]
		}
		if la != lb || i >= len(as) || i >= len(bs) {
			return i + 1, la, lb
		}
	}
	return 0, "", ""
}

// TestEveryKindHasAnEmitterThatPassesItsArgumentsInOrder calls each kind's
// emitter with distinct values and checks the event it records: its kind, each
// value in the slot of the argument it was passed for, and zero in the slots the
// kind does not use.
func TestEveryKindHasAnEmitterThatPassesItsArgumentsInOrder(t *testing.T) {
	src, err := os.ReadFile("kind.go")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := emitgen.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	tr := trace.NewTracer(sim.New(1))
	var buf trace.Buffer
	tr.Attach(&buf)
	emitters := reflect.ValueOf(tr)
	covered := map[trace.Kind]string{}
	for _, k := range parsed {
		m := emitters.MethodByName(k.Method())
		if !m.IsValid() {
			t.Errorf("%s (%s) has no emitter %s: run go generate ./sacc/trace", k.Const, k.Name, k.Method())
			continue
		}
		if m.Type().NumIn() != len(k.Args) {
			t.Errorf("%s takes %d arguments; %s has %d (%v)", k.Method(), m.Type().NumIn(), k.Name, len(k.Args), k.Args)
			continue
		}
		in := make([]reflect.Value, len(k.Args))
		var want [trace.MaxArgs]uint64
		for i := range in {
			want[i] = 0x1111 * uint64(i+1)
			in[i] = reflect.ValueOf(want[i]).Convert(m.Type().In(i))
		}
		buf.Reset()
		m.Call(in)
		if len(buf.Events) != 1 {
			t.Errorf("%s recorded %d events, want 1", k.Method(), len(buf.Events))
			continue
		}
		ev := buf.Events[0]
		if ev.Kind.String() != k.Name || ev.Args != want {
			t.Errorf("%s recorded %s %x, want %s %x", k.Method(), ev.Kind, ev.Args, k.Name, want)
		}
		if len(ev.Kind.Info().Args) != len(k.Args) {
			t.Errorf("%s: the table gives %s %d arguments, its emitter %d", k.Method(), ev.Kind, len(ev.Kind.Info().Args), len(k.Args))
		}
		if prev, dup := covered[ev.Kind]; dup {
			t.Errorf("%s and %s both emit %s", prev, k.Method(), ev.Kind)
		}
		covered[ev.Kind] = k.Method()
	}
	for _, k := range trace.Kinds() {
		if _, ok := covered[k]; !ok {
			t.Errorf("kind %s has no emitter", k)
		}
	}
	// Every exported method that starts with Emit is the emitter of a kind.
	typ := emitters.Type()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if !strings.HasPrefix(name, "Emit") {
			continue
		}
		found := false
		for _, k := range parsed {
			found = found || k.Method() == name
		}
		if !found {
			t.Errorf("Tracer.%s emits no kind of the table: run go generate ./sacc/trace", name)
		}
	}
}

func TestANilTracerRecordsNothing(t *testing.T) {
	var tr *trace.Tracer
	tr.EmitCQPost(1, 0x40, 0, 1) // must not panic
	tr.EmitReady()
}
