package trace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

func ev(k trace.Kind, at sim.Time, args ...uint64) trace.Event {
	e := trace.Event{Kind: k, Time: at}
	copy(e.Args[:], args)
	return e
}

var saccBDF = uint64(sacc.SourceID(sacc.SACCBus, sacc.SACCDevice, sacc.SACCFunction))

func TestEventStringCQPostIsExact(t *testing.T) {
	e := ev(trace.CQPost, 100, 63, 0x40, uint64(sacc.StatusOK), 1)
	const want = "      100 sacc_cq_post cq_tail=63 req_id=0x40 status=0x0 phase=1"
	if got := e.String(); got != want {
		t.Errorf("String() =\n%q\nwant\n%q", got, want)
	}
	if got := string(e.AppendText(nil)); got != want {
		t.Errorf("AppendText(nil) = %q", got)
	}
	if got := string(e.AppendArgs(nil)); got != "cq_tail=63 req_id=0x40 status=0x0 phase=1" {
		t.Errorf("AppendArgs(nil) = %q", got)
	}
}

func TestEventStringFormats(t *testing.T) {
	cases := []struct {
		name string
		ev   trace.Event
		want string
	}{
		// Time column: padded to 9, wider when it has to be.
		{"time zero", ev(trace.Ready, 0), "        0 sacc_ready"},
		{"no args has no trailing space", ev(trace.Ready, 2000), "     2000 sacc_ready"},
		{"nine-digit time", ev(trace.Ready, 123456789), "123456789 sacc_ready"},
		{"ten-digit time widens", ev(trace.Ready, 1234567890), "1234567890 sacc_ready"},
		{"largest time", ev(trace.Ready, ^sim.Time(0)), "18446744073709551615 sacc_ready"},

		// Hex and Dec.
		{"hex and dec", ev(trace.DMARead, 5, 0x1000, 0x2_0000_F000, 64), "        5 sacc_dma_read iova=0x1000 phys=0x20000f000 len=64"},
		{"hex is lower case", ev(trace.CPUWrite, 1, 0xFEE0_0000, 4, 0xABCDEF), "        1 cpu_write addr=0xfee00000 size=4 val=0xabcdef"},
		{"hex of all ones", ev(trace.CPURead, 1, 0, 8, ^uint64(0)), "        1 cpu_read addr=0x0 size=8 val=0xffffffffffffffff"},

		// RegName: BAR0 register names, reserved offsets in hex.
		{"RegName CTRL", ev(trace.RegRead, 7, sacc.RegCTRL, 4, 1), "        7 sacc_reg_read reg=CTRL size=4 val=0x1"},
		{"RegName MAGIC", ev(trace.RegRead, 7, sacc.RegMAGIC, 4, sacc.MagicValue), "        7 sacc_reg_read reg=MAGIC size=4 val=0x4a4e524f"},
		{"RegName high half of SQ_BASE", ev(trace.RegWrite, 7, sacc.RegSQBaseHi, 4, 0), "        7 sacc_reg_write reg=SQ_BASE_HI size=4 val=0x0"},
		{"RegName doorbell", ev(trace.RegWrite, 7, sacc.RegSQTail, 4, 3), "        7 sacc_reg_write reg=SQ_TAIL size=4 val=0x3"},
		{"RegName reserved gap", ev(trace.RegWrite, 7, 0x1C, 4, 0), "        7 sacc_reg_write reg=0x1c size=4 val=0x0"},
		{"RegName first reserved after the file", ev(trace.RegRead, 7, sacc.RegFileEnd, 4, 0), "        7 sacc_reg_read reg=0x44 size=4 val=0x0"},
		{"RegName past the doorbells", ev(trace.RegWrite, 7, sacc.DoorbellEnd, 4, 0), "        7 sacc_reg_write reg=0x1008 size=4 val=0x0"},

		// IOMMUReg.
		{"IOMMUReg CTRL", ev(trace.IOMMURegWrite, 1, sacc.IOMMURegCTRL, 4, sacc.IOMMUCtrlTranslate), "        1 iommu_reg_write reg=CTRL size=4 val=0x1"},
		{"IOMMUReg high half", ev(trace.IOMMURegWrite, 1, sacc.IOMMURegPTRoot+4, 4, 0), "        1 iommu_reg_write reg=PT_ROOT_HI size=4 val=0x0"},
		{"IOMMUReg reserved", ev(trace.IOMMURegRead, 1, 0x7C, 4, 0), "        1 iommu_reg_read reg=0x7c size=4 val=0x0"},

		// GuestReason.
		{"GuestReason unmapped", ev(trace.GuestError, 3, 0xB000_0000-4, 4, trace.ErrUnmapped, 0), "        3 guest_error addr=0xaffffffc size=4 reason=unmapped val=0x0"},
		{"GuestReason interrupt window", ev(trace.GuestError, 3, sacc.IntWindowBase, 4, trace.ErrIntWindowRead, 0), "        3 guest_error addr=0xfee00000 size=4 reason=interrupt-window-read val=0x0"},
		{"GuestReason unknown", ev(trace.GuestError, 3, 0, 1, 0, 0), "        3 guest_error addr=0x0 size=1 reason=unknown val=0x0"},

		// BDF.
		{"BDF of the SACC endpoint", ev(trace.ConfigRead, 9, saccBDF, sacc.CfgCommand, 2, 6), "        9 pci_cfg_read dev=00:03.0 reg=0x4 size=2 val=0x6"},
		{"BDF all fields", ev(trace.ConfigWrite, 9, uint64(sacc.SourceID(0xAB, 0x1F, 7)), sacc.CfgBAR0, 4, 0xFFFFFFFF), "        9 pci_cfg_write dev=ab:1f.7 reg=0x10 size=4 val=0xffffffff"},
		{"BDF bus 1 function 2", ev(trace.ConfigRead, 9, uint64(sacc.SourceID(1, 0, 2)), 0, 4, 0xFFFFFFFF), "        9 pci_cfg_read dev=01:00.2 reg=0x0 size=4 val=0xffffffff"},

		// FaultReason and AccessDir.
		{"FaultReason write-denied", ev(trace.IOMMUFault, 11, 0x7FFF_0000, uint64(sacc.FaultWriteDenied), sacc.AccessWrite, saccBDF),
			"       11 iommu_fault iova=0x7fff0000 reason=write-denied access=write source=00:03.0"},
		{"FaultReason not-present on read", ev(trace.IOMMUFault, 11, 0x1000, uint64(sacc.FaultNotPresent), sacc.AccessRead, saccBDF),
			"       11 iommu_fault iova=0x1000 reason=not-present access=read source=00:03.0"},
		{"FaultReason address-width", ev(trace.IOMMUFaultDropped, 11, sacc.IOVALimit, uint64(sacc.FaultAddressWidth)),
			"       11 iommu_fault_overflow iova=0x1000000000000 reason=address-width"},
		{"FaultReason unknown", ev(trace.IOMMUFaultDropped, 11, 0, 0), "       11 iommu_fault_overflow iova=0x0 reason=unknown"},

		// Opcode and Suppress.
		{"Opcode MEMCPY", ev(trace.Descriptor, 2, 0x40, sacc.OpMEMCPY, 4096, 1), "        2 sacc_desc req_id=0x40 opcode=MEMCPY len=4096 flags=0x1"},
		{"Opcode reserved range", ev(trace.Descriptor, 2, 1, 0x150, 0, 0), "        2 sacc_desc req_id=0x1 opcode=reserved-inference len=0 flags=0x0"},
		{"Opcode invalid", ev(trace.Descriptor, 2, 1, 0x7, 0, 0), "        2 sacc_desc req_id=0x1 opcode=invalid len=0 flags=0x0"},
		{"Suppress bus master", ev(trace.MSIXSuppressed, 4, 0, trace.SuppressBusMaster), "        4 sacc_msix_suppressed vector=0 why=bus-master-off"},
		{"Suppress disabled", ev(trace.MSIXSuppressed, 4, 0, trace.SuppressDisabled), "        4 sacc_msix_suppressed vector=0 why=msix-disabled"},
		{"Suppress fault", ev(trace.MSIXSuppressed, 4, 0, trace.SuppressFault), "        4 sacc_msix_suppressed vector=0 why=address-fault"},
		{"Suppress unknown", ev(trace.MSIXSuppressed, 4, 0, 0), "        4 sacc_msix_suppressed vector=0 why=unknown"},

		// Kinds outside the table.
		{"KindNone", ev(trace.KindNone, 0), "        0 none"},
		{"unknown kind", ev(999, 0, 1, 2, 3, 4), "        0 unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.ev.String(); got != c.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestAppendTextAppendsToExistingBytes(t *testing.T) {
	prefix := []byte("> ")
	got := ev(trace.Idle, 42, 3).AppendText(prefix)
	if string(got) != ">        42 sacc_idle sq_head=3" {
		t.Errorf("AppendText = %q", got)
	}
}

func TestEventArgByName(t *testing.T) {
	e := ev(trace.CQPost, 100, 63, 0x40, 2, 1)
	cases := []struct {
		name string
		want uint64
		ok   bool
	}{
		{"cq_tail", 63, true},
		{"req_id", 0x40, true},
		{"status", 2, true},
		{"phase", 1, true},
		{"vector", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		if got, ok := e.Arg(c.name); got != c.want || ok != c.ok {
			t.Errorf("Arg(%q) = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// objectKeys returns the keys of the JSON object in b, in order.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not an object (%v, %v)", b, tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return keys
}

func TestAppendJSONIsValidWithFixedKeyOrder(t *testing.T) {
	cases := []struct {
		name string
		ev   trace.Event
		text string
	}{
		{"CQPost", ev(trace.CQPost, 100, 63, 0x40, 0, 1), "cq_tail=63 req_id=0x40 status=0x0 phase=1"},
		{"no args", ev(trace.Ready, 2000), ""},
		{"names in text", ev(trace.IOMMUFault, 5, 0x1000, uint64(sacc.FaultReadDenied), sacc.AccessRead, saccBDF),
			"iova=0x1000 reason=read-denied access=read source=00:03.0"},
		{"largest values", ev(trace.CPURead, ^sim.Time(0), ^uint64(0), 8, ^uint64(0)),
			"addr=0xffffffffffffffff size=8 val=0xffffffffffffffff"},
		{"unknown kind", ev(999, 1, 5), ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ev.Seq = uint64(i + 1)
			b := c.ev.AppendJSON(nil)
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
			if got, want := objectKeys(t, b), []string{"seq", "t", "kind", "side", "args", "text"}; !slices.Equal(got, want) {
				t.Errorf("keys %v, want %v", got, want)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("unmarshal %s: %v", b, err)
			}
			info := c.ev.Kind.Info()
			if m["seq"] != json.Number(itoa(c.ev.Seq)) || m["t"] != json.Number(itoa(uint64(c.ev.Time))) ||
				m["kind"] != info.Name || m["side"] != info.Side.String() || m["text"] != c.text {
				t.Errorf("decoded %v", m)
			}
			args, ok := m["args"].(map[string]any)
			if !ok || len(args) != len(info.Args) {
				t.Fatalf("args = %v, want %d entries", m["args"], len(info.Args))
			}
			var wantArgKeys []string
			for j, a := range info.Args {
				wantArgKeys = append(wantArgKeys, a.Name)
				if args[a.Name] != json.Number(itoa(c.ev.Args[j])) {
					t.Errorf("args[%s] = %v, want %d", a.Name, args[a.Name], c.ev.Args[j])
				}
			}
			// A map forgets order: read the argument keys from the bytes.
			start := bytes.Index(b, []byte(`"args":`)) + len(`"args":`)
			end := bytes.Index(b, []byte(`,"text":`))
			if got := objectKeys(t, b[start:end]); !slices.Equal(got, wantArgKeys) {
				t.Errorf("args keys %v, want %v (kind order)", got, wantArgKeys)
			}
		})
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestAppendJSONExact(t *testing.T) {
	e := ev(trace.CQPost, 100, 63, 0x40, 0, 1)
	e.Seq = 7
	const want = `{"seq":7,"t":100,"kind":"sacc_cq_post","side":"device","args":{"cq_tail":63,"req_id":64,"status":0,"phase":1},"text":"cq_tail=63 req_id=0x40 status=0x0 phase=1"}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON =\n%s\nwant\n%s", got, want)
	}
	if got, err := json.Marshal(e); err != nil || string(got) != want {
		t.Errorf("json.Marshal = %s, %v", got, err)
	}
}

func TestMarshalJSONOfASliceIsValid(t *testing.T) {
	events := []trace.Event{ev(trace.Ready, 1), ev(trace.CQPost, 2, 1, 2, 3, 1), ev(trace.IRQAck, 3)}
	b, err := json.Marshal(events)
	if err != nil || !json.Valid(b) {
		t.Fatalf("json.Marshal: %s, %v", b, err)
	}
	var back []map[string]any
	if err := json.Unmarshal(b, &back); err != nil || len(back) != len(events) {
		t.Errorf("unmarshal: %d objects, %v", len(back), err)
	}
}

func TestTextAndJSONWritersWriteOneLinePerEvent(t *testing.T) {
	events := []trace.Event{ev(trace.Ready, 1), ev(trace.CQPost, 100, 63, 0x40, 0, 1), ev(trace.IRQAck, 300)}
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	var text, jsonl, whole bytes.Buffer
	tw, jw := trace.NewTextWriter(&text), trace.NewJSONWriter(&jsonl)
	for i := range events {
		tw.Record(&events[i])
		jw.Record(&events[i])
	}
	if tw.Err() != nil || jw.Err() != nil {
		t.Fatalf("writer errors: %v, %v", tw.Err(), jw.Err())
	}
	if err := trace.WriteText(&whole, events); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, e := range events {
		want.WriteString(e.String() + "\n")
	}
	if text.String() != want.String() || whole.String() != want.String() {
		t.Errorf("text:\n%s\nWriteText:\n%s\nwant:\n%s", text.String(), whole.String(), want.String())
	}
	lines := strings.Split(strings.TrimSuffix(jsonl.String(), "\n"), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d JSON lines, want %d", len(lines), len(events))
	}
	for i, l := range lines {
		if l != string(events[i].AppendJSON(nil)) {
			t.Errorf("JSON line %d = %s", i, l)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestWritersStopAtTheFirstError(t *testing.T) {
	fw, fj := &failWriter{}, &failWriter{}
	tw, jw := trace.NewTextWriter(fw), trace.NewJSONWriter(fj)
	e := ev(trace.Ready, 1)
	for range 3 {
		tw.Record(&e)
		jw.Record(&e)
	}
	if tw.Err() == nil || jw.Err() == nil || fw.n != 1 || fj.n != 1 {
		t.Errorf("errors %v, %v; writes %d, %d; want errors and one write each", tw.Err(), jw.Err(), fw.n, fj.n)
	}
	if err := trace.WriteText(&failWriter{}, []trace.Event{ev(trace.Ready, 1)}); err == nil {
		t.Error("WriteText to a failing writer returned nil")
	}
}

func BenchmarkAppendText(b *testing.B) {
	e := ev(trace.CQPost, 123456, 63, 0x40, 0, 1)
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendText(buf[:0])
	}
}

// TestTextLeavesOutDetails: the text trace skips detail kinds unless asked,
// and numbers them all the same, so the browser's positions and the text agree
// on every other event.
func TestTextLeavesOutDetails(t *testing.T) {
	for _, details := range []bool{false, true} {
		tr := trace.NewTracer(sim.New(1))
		var out bytes.Buffer
		tw := trace.NewTextWriter(&out)
		tw.Details = details
		tr.Attach(tw)
		var buf trace.Buffer
		tr.Attach(&buf)
		tr.EmitCPUStore(0x1000, 8, 7, 1)
		tr.EmitCPUWrite(0x1000, 8, 7)
		tr.EmitIOMMUWalk(0, 0x5000, 3, 0x6003)
		lines := strings.Count(out.String(), "\n")
		if want := map[bool]int{false: 1, true: 3}[details]; lines != want || len(buf.Events) != 3 || buf.Events[1].Seq != 2 {
			t.Errorf("details %v: %d text lines (want %d), %d events:\n%s", details, lines, want, len(buf.Events), out.String())
		}
	}
	for _, k := range trace.Kinds() {
		if k.Detail() != (k == trace.CPUStore || k == trace.CPUStoreCached || k == trace.CPUMMIOWrite || k == trace.IOMMUWalk) {
			t.Errorf("%s: Detail() = %v", k, k.Detail())
		}
	}
}
