package emitgen

import (
	"slices"
	"strings"
	"testing"
)

func TestParamName(t *testing.T) {
	cases := []struct{ arg, want string }{
		{"addr", "addr"},
		{"cq_tail", "cqTail"},
		{"req_id", "reqID"},
		{"sq_base", "sqBase"},
		{"fault_msi_addr", "faultMSIAddr"},
		{"a0", "a0"},
		{"len", "length"},   // the builtin
		{"type", "typeArg"}, // a keyword
		{"cap", "capArg"},   // another builtin
		{"t", "tArg"},       // the receiver
		{"Val", "val"},
	}
	for _, c := range cases {
		if got := ParamName(c.arg); got != c.want {
			t.Errorf("ParamName(%q) = %q, want %q", c.arg, got, c.want)
		}
	}
}

// table is a kind.go in miniature, with entries written both ways the real one
// writes them: fields in order, and fields by name.
const table = `package trace

const (
	KindNone Kind = iota

	CQPost
	Ready
	Fetch

	numKinds
)

var kinds = [numKinds]KindInfo{
	KindNone: {Name: "none"},

	Fetch:  {"sacc_fetch", SideDevice, "descriptor fetch from the SQ", []Arg{{"sq_head", Dec}, {Name: "addr", Format: Hex}}},
	CQPost: {"sacc_cq_post", SideDevice, "completion written, phase last", []Arg{{"cq_tail", Dec}, {"req_id", Hex}, {"status", Hex}, {"phase", Dec}}},
	Ready:  {Name: "sacc_ready", Side: SideDevice, Doc: "STATUS.READY set"},
}
`

func TestParseReadsTheTableInDeclarationOrder(t *testing.T) {
	kinds, err := Parse([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []Kind{
		{"CQPost", "sacc_cq_post", "completion written, phase last", []string{"cq_tail", "req_id", "status", "phase"}},
		{"Ready", "sacc_ready", "STATUS.READY set", nil},
		{"Fetch", "sacc_fetch", "descriptor fetch from the SQ", []string{"sq_head", "addr"}},
	}
	if !slices.EqualFunc(kinds, want, func(a, b Kind) bool {
		return a.Const == b.Const && a.Name == b.Name && a.Doc == b.Doc && slices.Equal(a.Args, b.Args)
	}) {
		t.Errorf("Parse = %+v\nwant    %+v", kinds, want)
	}
}

func TestGenerateWritesOneEmitterPerKind(t *testing.T) {
	out, err := Generate([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	src := string(out)
	if !strings.HasPrefix(src, Header+"\n") {
		t.Errorf("generated file does not start with %q:\n%s", Header, src)
	}
	for _, want := range []string{
		"// EmitCQPost records sacc_cq_post: completion written, phase last.\n" +
			"func (t *Tracer) EmitCQPost(cqTail, reqID, status, phase uint64) {\n" +
			"\tt.emit(CQPost, cqTail, reqID, status, phase)\n}\n",
		"func (t *Tracer) EmitReady() {\n\tt.emit(Ready, 0, 0, 0, 0)\n}\n",
		"func (t *Tracer) EmitFetch(sqHead, addr uint64) {\n\tt.emit(Fetch, sqHead, addr, 0, 0)\n}\n",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated file lacks\n%s\ngot:\n%s", want, src)
		}
	}
	if n := strings.Count(src, "func (t *Tracer) "); n != 3 {
		t.Errorf("%d emitters generated, want 3 (none for KindNone)", n)
	}
	if strings.Index(src, "EmitCQPost") > strings.Index(src, "EmitReady") ||
		strings.Index(src, "EmitReady") > strings.Index(src, "EmitFetch") {
		t.Errorf("emitters not in declaration order:\n%s", src)
	}
}

func TestParseRejectsATableThatDoesNotMatchTheConstants(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"a kind without an entry",
			"\tReady:  {Name: \"sacc_ready\", Side: SideDevice, Doc: \"STATUS.READY set\"},\n", "",
			"kind Ready has no entry"},
		{"an entry without a kind",
			"\tReady:  {Name:", "\tReady:  {Name: \"x\", Doc: \"y\"},\n\tIdle: {Name:",
			"entry for Idle, which is not a Kind constant"},
		{"an entry twice",
			"\tReady:  {Name:", "\tReady:  {Name: \"x\", Doc: \"y\"},\n\tReady: {Name:",
			"Ready appears twice"},
		{"nine arguments",
			`{"phase", Dec}}`, `{"phase", Dec}, {"a", Dec}, {"b", Dec}, {"c", Dec}, {"d", Dec}, {"e", Dec}}`,
			"9 arguments; an event holds 8"},
		{"a name that is not a literal",
			`"sacc_fetch", SideDevice`, `fetchName, SideDevice`,
			"Fetch: field Name: not a string literal"},
		{"two arguments with one Go name",
			`{"sq_head", Dec}, {Name: "addr"`, `{"sq_head", Dec}, {Name: "sq__head"`,
			"two arguments are both called sqHead"},
		{"no numKinds",
			"\tnumKinds\n", "",
			"do not end with numKinds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(table, c.from, c.to, 1)
			if src == table {
				t.Fatalf("the case does not change the table: %q not found", c.from)
			}
			_, err := Generate([]byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Generate: error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestGenerateEmitsWideKindsWhole: a kind with more than four arguments gets an
// emitter that passes all of them at once.
func TestGenerateEmitsWideKindsWhole(t *testing.T) {
	src := strings.Replace(table, `{"phase", Dec}}`, `{"result_len", Dec}, {"phase", Dec}}`, 1)
	out, err := Generate([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := "func (t *Tracer) EmitCQPost(cqTail, reqID, status, resultLen, phase uint64) {\n" +
		"\tt.emitWide(CQPost, [MaxArgs]uint64{cqTail, reqID, status, resultLen, phase})\n}\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("generated file lacks\n%s\ngot:\n%s", want, out)
	}
}
