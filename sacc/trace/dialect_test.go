package trace_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// testDialect spells two kinds the way a QEMU trace-events file would.
func testDialect(t *testing.T) trace.Dialect {
	t.Helper()
	d, err := trace.NewDialect("test", []trace.Spelling{
		{Kind: trace.RegWrite, Name: "dev_mmio_write", Format: "addr=0x%x val=0x%x size=%u", Args: []string{"reg", "val", "size"}},
		{Kind: trace.CQPostUpstream, Name: "dev_cq_post", Format: "cq_tail=%u req_id=0x%x status 0x%x result_len %u phase 0x%x 100%%",
			Args: []string{"cq_tail", "req_id", "status", "result_len", "phase"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDialectSpellsItsKindsAndLeavesTheRest(t *testing.T) {
	d := testDialect(t)
	cases := []struct {
		ev   trace.Event
		want string
	}{
		{trace.Event{Time: 2000, Kind: trace.RegWrite, Args: [trace.MaxArgs]uint64{0x1000, 4, 0x1f}},
			"     2000 dev_mmio_write addr=0x1000 val=0x1f size=4"},
		{trace.Event{Time: 7, Kind: trace.CQPostUpstream, Args: [trace.MaxArgs]uint64{63, 0x40, 1, 0, 1}},
			"        7 dev_cq_post cq_tail=63 req_id=0x40 status 0x1 result_len 0 phase 0x1 100%"},
		// A kind the dialect does not spell prints as the table has it.
		{trace.Event{Time: 3, Kind: trace.Doorbell, Args: [trace.MaxArgs]uint64{1, 0}},
			"        3 sacc_doorbell sq_tail=1 sq_head=0"},
	}
	for _, c := range cases {
		if got := d.Text(c.ev); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.ev.Kind, got, c.want)
		}
		if got := (trace.Dialect{}).Text(c.ev); got != c.ev.String() {
			t.Errorf("the zero dialect prints %q, the table %q", got, c.ev.String())
		}
	}
	if d.KindName(trace.RegWrite) != "dev_mmio_write" || d.KindName(trace.Doorbell) != "sacc_doorbell" {
		t.Errorf("KindName: %q, %q", d.KindName(trace.RegWrite), d.KindName(trace.Doorbell))
	}
	if !d.Spells(trace.RegWrite) || d.Spells(trace.Doorbell) || (trace.Dialect{}).Spells(trace.RegWrite) {
		t.Error("Spells does not match the spellings given")
	}
}

func TestNewDialectRefusesASpellingThatDoesNotFitItsKind(t *testing.T) {
	cases := []struct {
		s    trace.Spelling
		want string
	}{
		{trace.Spelling{Kind: trace.Doorbell, Name: "db", Format: "tail=%u", Args: []string{"tail"}}, `no argument "tail"`},
		{trace.Spelling{Kind: trace.Doorbell, Name: "db", Format: "tail=%u head=%u", Args: []string{"sq_tail"}}, "more verbs"},
		{trace.Spelling{Kind: trace.Doorbell, Name: "db", Format: "tail=%u", Args: []string{"sq_tail", "sq_head"}}, "1 verbs for 2 arguments"},
		{trace.Spelling{Kind: trace.Doorbell, Name: "db", Format: "tail=%s", Args: []string{"sq_tail"}}, "verb %s"},
		{trace.Spelling{Kind: trace.Doorbell, Name: "db", Format: "tail=%", Args: nil}, "ends in %"},
		{trace.Spelling{Kind: trace.Doorbell, Format: "tail=%u", Args: []string{"sq_tail"}}, "no name"},
		{trace.Spelling{Kind: trace.KindNone, Name: "none"}, "no such kind"},
	}
	for _, c := range cases {
		_, err := trace.NewDialect("bad", []trace.Spelling{c.s})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.s, err, c.want)
		}
	}
	twice := trace.Spelling{Kind: trace.Idle, Name: "idle", Format: "", Args: nil}
	if _, err := trace.NewDialect("bad", []trace.Spelling{twice, twice}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a kind spelled twice: %v", err)
	}
}

// TestTextWriterSpeaksTheTracersDialect: a text sink built with In(tracer's
// dialect) prints the machine's names; one built without prints the table's.
func TestTextWriterSpeaksTheTracersDialect(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	if tr.Dialect().Name() != "" {
		t.Fatalf("a new tracer speaks %q", tr.Dialect().Name())
	}
	tr.SetDialect(testDialect(t))
	var spoken, plain bytes.Buffer
	tr.Attach(trace.NewTextWriter(&spoken).In(tr.Dialect()))
	tr.Attach(trace.NewTextWriter(&plain))
	tr.EmitRegWrite(0x30, 4, 1)
	if got, want := spoken.String(), "        0 dev_mmio_write addr=0x30 val=0x1 size=4\n"; got != want {
		t.Errorf("in the dialect: %q, want %q", got, want)
	}
	if got, want := plain.String(), "        0 sacc_reg_write reg=CQ_HEAD size=4 val=0x1\n"; got != want {
		t.Errorf("in the table's spelling: %q, want %q", got, want)
	}
	var nilTracer *trace.Tracer
	if nilTracer.Dialect().Name() != "" {
		t.Error("a nil tracer has a dialect")
	}
}

// TestWideKindsCarryEveryArgument: a kind with more than four arguments keeps all
// of them, in text and JSON.
func TestWideKindsCarryEveryArgument(t *testing.T) {
	tr := trace.NewTracer(sim.New(1))
	var buf trace.Buffer
	tr.Attach(&buf)
	tr.EmitSQFetch(3, 0x1000, 0x2000, 64, 1, 1, 0x2a)
	ev := buf.Events[0]
	if want := [trace.MaxArgs]uint64{3, 0x1000, 0x2000, 64, 1, 1, 0x2a}; ev.Args != want {
		t.Fatalf("args %x, want %x", ev.Args, want)
	}
	if got, want := ev.String(), "        0 sacc_sq_fetch idx=3 src=0x1000 dst=0x2000 len=64 op=0x1 flags=0x1 req_id=0x2a"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if j := string(ev.AppendJSON(nil)); !strings.Contains(j, `"req_id":42}`) {
		t.Errorf("JSON %s lacks the seventh argument", j)
	}
}
