package qtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/sim"
)

// fakeEvents are the event times queued on the fake machine in every test.
var fakeEvents = []sim.Time{100, 250, 250, 1000}

func newTestSession() (*Session, *fakeMachine) {
	f := newFake(fakeEvents...)
	return NewSession(f, nil), f
}

// checkReply fails the test unless reply is a well-formed reply line.
func checkReply(t testing.TB, line, reply string) {
	t.Helper()
	if strings.ContainsAny(reply, "\r\n") {
		t.Fatalf("Exec(%q) = %q: reply contains a line break", line, reply)
	}
	if reply != "OK" && !strings.HasPrefix(reply, "OK ") && !strings.HasPrefix(reply, "FAIL ") {
		t.Fatalf("Exec(%q) = %q: reply starts with neither OK nor FAIL", line, reply)
	}
}

// TestExecFresh runs one request on a fresh machine and compares the reply. A "*" in
// a want stands for any text (for FAIL reasons, whose wording is free).
func TestExecFresh(t *testing.T) {
	tests := []struct{ line, want string }{
		// Framing.
		{"", "FAIL empty request"},
		{" \t  ", "FAIL empty request"},
		{"\r", "FAIL empty request"},
		{"foo", `FAIL unknown command "foo"`},
		{"foo 1 2", `FAIL unknown command "foo"`},
		{"READB 0", `FAIL unknown command "READB"`},
		{"readb\x000", `FAIL unknown command "readb\x000"`},
		{"readb 0", "OK 0x0000000000000000"},
		{"readb 0\r", "OK 0x0000000000000000"},
		{"  readb \t 0 \t ", "OK 0x0000000000000000"},
		{"readb\t0", "OK 0x0000000000000000"},
		{"readb 0\r\r", "FAIL readb: bad ADDR *"},
		{"readb 0\n", "FAIL readb: bad ADDR *"},
		{"readb 0\v", "FAIL readb: bad ADDR *"},
		{"endianness", "OK little"},
		{"endianness big", "FAIL endianness takes 0 arguments (endianness), got 1"},
		{"help readl", "OK readl ADDR: read 1, 2, 4 or 8 bytes of guest-physical memory, little-endian; replies OK 0x%016x"},
		{"help clock_step", "OK clock_step [NS]: *"},
		{"help help", "OK help [REQUEST]: *"},
		{"help frobnicate", `FAIL help: no request "frobnicate" (help lists them)`},
		{"help readl readq", "FAIL help takes 0 or 1 arguments (help [REQUEST]), got 2"},
		{"HELP", `FAIL unknown command "HELP"`},

		// Numbers.
		{"readb 010", "OK 0x0000000000000000"},
		{"readb 0X10", "OK 0x0000000000000000"},
		{"readb", "FAIL readb takes 1 argument (readb ADDR), got 0"},
		{"readb 0 0", "FAIL readb takes 1 argument (readb ADDR), got 2"},
		{"readb -1", "FAIL readb: bad ADDR \"-1\": invalid number: a sign is not allowed"},
		{"readb +1", "FAIL readb: bad ADDR *"},
		{"readb 08", "FAIL readb: bad ADDR \"08\": invalid number: '8' is not an octal digit*"},
		{"readb 0x", "FAIL readb: bad ADDR *"},
		{"readb 0x1g", "FAIL readb: bad ADDR *"},
		{"readb 1k", "FAIL readb: bad ADDR *"},
		{"readb 1_000", "FAIL readb: bad ADDR *"},
		{"readb 0b1", "FAIL readb: bad ADDR *"},
		{"readb 0o7", "FAIL readb: bad ADDR *"},
		{"readb 18446744073709551616", "FAIL readb: bad ADDR \"18446744073709551616\": number does not fit in 64 bits"},
		{"readb 0x10000000000000000", "FAIL readb: bad ADDR *"},
		{"readb 02000000000000000000000", "FAIL readb: bad ADDR *"},
		{"readb " + strings.Repeat("9", 100), "FAIL readb: bad ADDR \"" + strings.Repeat("9", 40) + "\"...: number does not fit in 64 bits"},

		// Memory reads: truncated to the access width, always 16 digits.
		{"readb 0xf000000000000000", "OK 0x00000000000000ff"},
		{"readw 0xf000000000000000", "OK 0x000000000000ffff"},
		{"readl 0xf000000000000000", "OK 0x00000000ffffffff"},
		{"readq 0xf000000000000000", "OK 0xffffffffffffffff"},
		{"readb 18446744073709551615", "OK 0x00000000000000ff"},
		{"readq 0xfffffffffffffff8", "OK 0xffffffffffffffff"},
		{"readq 0xfffffffffffffff9", "FAIL readq: ADDR 0xfffffffffffffff9 + SIZE 0x8 runs past the end of the 64-bit address space"},
		{"readw 0xffffffffffffffff", "FAIL readw: *"},
		{"writeq 0xfffffffffffffffc 1", "FAIL writeq: *"},
		{"writeb 0xffffffffffffffff 1", "OK"},

		// Writes.
		{"writeb 0 1", "OK"},
		{"writew 0 0xffffffffffffffff", "OK"},
		{"writel 0 1", "OK"},
		{"writeq 0 1", "OK"},
		{"writeb 0", "FAIL writeb takes 2 arguments (writeb ADDR VALUE), got 1"},
		{"writeb 0 1 2", "FAIL writeb takes 2 arguments (writeb ADDR VALUE), got 3"},
		{"writeb 0 -1", "FAIL writeb: bad VALUE *"},
		{"writeq 0 0x10000000000000000", "FAIL writeq: bad VALUE *"},

		// Ports.
		{"inb 0x10", "OK 0x0000"},
		{"inw 0xffff", "OK 0x0000"},
		{"inl 0", "OK 0x0000"},
		{"inb 0x10000", "FAIL inb: port 0x10000 is above 0xffff"},
		{"inl 0x10000000000000000", "FAIL inl: bad ADDR *"},
		{"inb", "FAIL inb takes 1 argument (inb ADDR), got 0"},
		{"outb 0x80 1", "OK"},
		{"outw 0xffff 0xffffffffffffffff", "OK"},
		{"outl 0xcf8 0x80001800", "OK"},
		{"outb 0x10000 1", "FAIL outb: port 0x10000 is above 0xffff"},
		{"outb 0x80", "FAIL outb takes 2 arguments (outb ADDR VALUE), got 1"},
		{"outb 0x80 1 2", "FAIL outb takes 2 arguments*"},
		{"outl 0x80 -1", "FAIL outl: bad VALUE *"},

		// read.
		{"read 0 1", "OK 0x00"},
		{"read 0 4", "OK 0x00000000"},
		{"read 0xffffffffffffffff 1", "OK 0xff"},
		{"read 0xfffffffffffffffe 2", "OK 0xffff"},
		{"read 0xffffffffffffffff 2", "FAIL read: ADDR 0xffffffffffffffff + SIZE 0x2 runs past*"},
		{"read 0 0", "FAIL read: SIZE must not be 0"},
		{"read 0 0x10000001", "FAIL read: SIZE 0x10000001 is more than one request may move (268435456 bytes); split it into smaller requests"},
		{"read 0 0xffffffffffffffff", "FAIL read: SIZE * is more than*"},
		{"read 0", "FAIL read takes 2 arguments (read ADDR SIZE), got 1"},
		{"read 0 1 2", "FAIL read takes 2 arguments*"},
		{"read 0 -1", "FAIL read: bad SIZE *"},

		// write.
		{"write 0 0 0x", "OK"},
		{"write 0 1 0x", "OK"},
		{"write 0 1 0xab", "OK"},
		{"write 0 2 0XaB", "OK"},
		{"write 0 4 0x0102", "OK"},
		{"write 0 1 0x1", "FAIL write: DATA has an odd number of hex digits (1)"},
		{"write 0 1 0x1234", "FAIL write: DATA holds 2 bytes, more than SIZE 1"},
		{"write 0 0 0x00", "FAIL write: DATA holds 1 bytes, more than SIZE 0"},
		{"write 0 2 1234", `FAIL write: DATA "1234" must start with 0x`},
		{"write 0 2 x", `FAIL write: DATA "x" must start with 0x`},
		{"write 0 2 0xzz", `FAIL write: DATA has a non-hex character "z" at offset 2`},
		{"write 0 2 0x-1", `FAIL write: DATA has a non-hex character "-" at offset 2`},
		{"write 0 2", "FAIL write takes 3 arguments (write ADDR SIZE 0xDATA), got 2"},
		{"write 0 2 0x00 0", "FAIL write takes 3 arguments*"},
		{"write 0xffffffffffffffff 2 0x", "FAIL write: *runs past*"},
		{"write 0 0x10000001 0x", "FAIL write: SIZE 0x10000001 is more than*"},

		// b64read and b64write.
		{"b64read 0 1", "OK AA=="},
		{"b64read 0 2", "OK AAA="},
		{"b64read 0 3", "OK AAAA"},
		{"b64read 0xffffffffffffffff 1", "OK /w=="},
		{"b64read 0 0", "FAIL b64read: SIZE must not be 0"},
		{"b64read 0 0x10000001", "FAIL b64read: SIZE 0x10000001 is more than*"},
		{"b64read 0", "FAIL b64read takes 2 arguments (b64read ADDR SIZE), got 1"},
		{"b64write 0 1 AA==", "OK"},
		{"b64write 0 1 AA", "OK"},
		{"b64write 0 8 qrs=", "OK"},
		{"b64write 0 8 qrs", "OK"},
		{"b64write 0 3 AAAA", "OK"},
		{"b64write 0 2 AAAA", "FAIL b64write: B64 decodes to 3 bytes, more than SIZE 2"},
		{"b64write 0 0 AA==", "FAIL b64write: B64 decodes to*"},
		{"b64write 0 1 AAA=", "FAIL b64write: B64 decodes to 2 bytes, more than SIZE 1"},
		{"b64write 0 1000 " + strings.Repeat("A", 4000), "FAIL b64write: B64 decodes to more than SIZE 1000 bytes"},
		{"b64write 0 4 A", "FAIL b64write: bad B64: *"},
		{"b64write 0 4 AA=", "FAIL b64write: bad B64: *"},
		{"b64write 0 4 A===", "FAIL b64write: bad B64: *"},
		{"b64write 0 4 =AAA", "FAIL b64write: bad B64: *"},
		{"b64write 0 4 A*==", `FAIL b64write: B64 has a character outside standard base64, "*" at offset 1`},
		{"b64write 0 4 AA\r=", `FAIL b64write: B64 has a character outside standard base64, "\r" at offset 2`},
		{"b64write 0 4 AA-_", "FAIL b64write: B64 has a character outside*"},
		{"b64write 0 4", "FAIL b64write takes 3 arguments (b64write ADDR SIZE B64), got 2"},
		{"b64write 0xffffffffffffffff 2 AA==", "FAIL b64write: *runs past*"},

		// memset.
		{"memset 0 0 0", "OK"},
		{"memset 0xffffffffffffffff 0 0", "OK"},
		{"memset 0 16 0x1ff", "OK"},
		{"memset 0 16 0xffffffffffffffff", "OK"},
		{"memset 0 16 -1", "FAIL memset: bad VALUE *"},
		{"memset 0 16", "FAIL memset takes 3 arguments (memset ADDR SIZE VALUE), got 2"},
		{"memset 0xfffffffffffffff0 17 0", "FAIL memset: *runs past*"},
		{"memset 0 0x10000001 0", "FAIL memset: SIZE 0x10000001 is more than*"},

		// Clock (events queued at 100, 250, 250, 1000).
		{"clock_step", "OK 100"},
		{"clock_step 50", "OK 50"},
		{"clock_step 0", "OK 0"},
		{"clock_step 0xffffffffffffffff", "OK 18446744073709551615"},
		{"clock_step -1", "FAIL clock_step: bad NS *"},
		{"clock_step 1 2", "FAIL clock_step takes 0 or 1 arguments (clock_step [NS]), got 2"},
		{"clock_set 300", "OK 300"},
		{"clock_set 0", "OK 0"},
		{"clock_set", "FAIL clock_set takes 1 argument (clock_set NS), got 0"},
		{"clock_set 1 2", "FAIL clock_set takes 1 argument*"},
		{"clock_set 1.5", "FAIL clock_set: bad NS *"},

		// Tracing.
		{"trace on", "OK"},
		{"trace off", "OK"},
		{"trace", "FAIL trace takes 1 argument (trace on|off), got 0"},
		{"trace on off", "FAIL trace takes 1 argument*"},
		{"trace ON", `FAIL trace: want on or off, got "ON"`},
	}
	for _, tt := range tests {
		s, _ := newTestSession()
		runScript(t, s, []step{{tt.line, tt.want}})
	}
}

// matchStar matches s against a pattern in which each "*" stands for any text; a
// pattern without "*" must equal s.
func matchStar(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	if !strings.HasSuffix(s, last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// step is one request of a script and its expected reply.
type step struct{ line, want string }

func runScript(t *testing.T, s *Session, script []step) {
	t.Helper()
	for _, st := range script {
		got := s.Exec(st.line)
		checkReply(t, st.line, got)
		if !matchStar(st.want, got) {
			t.Errorf("Exec(%q) = %q, want %q", st.line, got, st.want)
		}
	}
}

func TestMemory(t *testing.T) {
	s, f := newTestSession()
	runScript(t, s, []step{
		{"writeb 0x100 0x1ff", "OK"},
		{"readb 0x100", "OK 0x00000000000000ff"},
		{"writew 0x100 0x12345", "OK"},
		{"readw 0x100", "OK 0x0000000000002345"},
		{"readb 0x101", "OK 0x0000000000000023"},
		{"writel 0x100 0x1deadbeef", "OK"},
		{"readl 0x100", "OK 0x00000000deadbeef"},
		{"writeq 0x200 0x0102030405060708", "OK"},
		{"readq 0x200", "OK 0x0102030405060708"},
		{"readl 0x204", "OK 0x0000000001020304"},
		{"read 0x200 8", "OK 0x0807060504030201"},
		{"read 0x1ff 3", "OK 0x000807"},
		{"b64read 0x200 8", "OK " + base64.StdEncoding.EncodeToString([]byte{8, 7, 6, 5, 4, 3, 2, 1})},

		// write zero-fills after DATA.
		{"memset 0x300 8 0xff", "OK"},
		{"write 0x300 4 0xAAbb", "OK"},
		{"read 0x300 8", "OK 0xaabb0000ffffffff"},
		{"write 0x300 0 0x", "OK"},
		{"read 0x300 1", "OK 0xaa"},

		// b64write too, padded or not.
		{"memset 0x400 8 0xff", "OK"},
		{"b64write 0x400 4 qrs=", "OK"},
		{"read 0x400 8", "OK 0xaabb0000ffffffff"},
		{"b64write 0x400 3 zA", "OK"},
		{"read 0x400 5", "OK 0xcc000000ff"},

		// memset truncates VALUE to a byte; SIZE 0 does nothing.
		{"memset 0x500 3 0x1a5", "OK"},
		{"read 0x500 4", "OK 0xa5a5a500"},
		{"memset 0x500 0 0", "OK"},
		{"read 0x500 1", "OK 0xa5"},

		// A malformed request changes nothing.
		{"write 0x500 4 0x11223344zz", "FAIL write: *"},
		{"write 0x500 2 0x112233", "FAIL write: *"},
		{"b64write 0x500 2 ESIz", "FAIL b64write: *"},
		{"read 0x500 4", "OK 0xa5a5a500"},
	})
	want := []memWrite{
		{0x100, 1, 0xff},
		{0x100, 2, 0x2345},
		{0x100, 4, 0xdeadbeef},
		{0x200, 8, 0x0102030405060708},
	}
	if fmt.Sprint(f.writes) != fmt.Sprint(want) {
		t.Errorf("machine saw writes %x, want %x", f.writes, want)
	}
}

func TestPorts(t *testing.T) {
	s, f := newTestSession()
	runScript(t, s, []step{
		{"outl 0x80 0x12345678", "OK"},
		{"inb 0x80", "OK 0x0078"},
		{"inw 0x80", "OK 0x5678"},
		{"inl 0x80", "OK 0x12345678"},
		{"outw 0x81 0x1abcd", "OK"},
		{"inl 0x81", "OK 0xabcd"},
		{"outb 0xffff 0x1ff", "OK"},
		{"inb 0xffff", "OK 0x00ff"},
		{"outl 0x82 0xffffffffffffffff", "OK"},
		{"inl 0x82", "OK 0xffffffff"},
		{"inl 0x83", "OK 0x0000"},
	})
	want := []portOut{{0x80, 4, 0x12345678}, {0x81, 2, 0xabcd}, {0xffff, 1, 0xff}, {0x82, 4, 0xffffffff}}
	if fmt.Sprint(f.outs) != fmt.Sprint(want) {
		t.Errorf("machine saw outs %x, want %x", f.outs, want)
	}
}

func TestClock(t *testing.T) {
	s, f := newTestSession()
	runScript(t, s, []step{
		{"clock_step", "OK 100"},
		{"clock_step", "OK 250"}, // both events at 250 run
		{"clock_set 200", "OK 250"},
		{"clock_set 250", "OK 250"},
		{"clock_step 500", "OK 750"},
		{"clock_step 0", "OK 750"},
		{"clock_step", "OK 1000"},
		{"clock_step", "FAIL no pending events"},
		{"clock_step", "FAIL no pending events"},
		{"clock_set 0", "OK 1000"},
		{"clock_step 0xffffffffffffffff", "FAIL clock_step: 18446744073709551615 ns from now (1000) is beyond the end of virtual time"},
		{"clock_step 18446744073709550615", "OK 18446744073709551615"},
		{"clock_step 1", "FAIL clock_step: *"},
		{"clock_step 0", "OK 18446744073709551615"},
	})
	if fmt.Sprint(f.fired) != fmt.Sprint(fakeEvents) {
		t.Errorf("events ran at %v, want %v", f.fired, fakeEvents)
	}

	// clock_step NS and clock_set run every event due on the way.
	s, f = newTestSession()
	runScript(t, s, []step{{"clock_step 250", "OK 250"}})
	if len(f.fired) != 3 {
		t.Errorf("clock_step 250 ran %d events, want 3", len(f.fired))
	}
	runScript(t, s, []step{{"clock_set 1000", "OK 1000"}})
	if len(f.fired) != 4 {
		t.Errorf("clock_set 1000 ran %d events in all, want 4", len(f.fired))
	}
}

// TestBulkChunks checks that big transfers reach the machine in bounded chunks and
// still move every byte.
func TestBulkChunks(t *testing.T) {
	const size = 200<<10 + 7
	s, f := newTestSession()
	runScript(t, s, []step{{fmt.Sprintf("memset 0x1000 %d 0x5a", size), "OK"}})
	got := s.Exec(fmt.Sprintf("read 0x1000 %d", size))
	if want := "OK 0x" + strings.Repeat("5a", size); got != want {
		t.Errorf("read after memset: got %d bytes of reply, want %d", len(got), len(want))
	}
	got = s.Exec(fmt.Sprintf("b64read 0x1000 %d", size))
	if want := "OK " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, size)); got != want {
		t.Errorf("b64read after memset: replies differ (len %d vs %d)", len(got), len(want))
	}

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	runScript(t, s, []step{
		{fmt.Sprintf("write 0x1000 %d 0x%x", size, data[:size-100]), "OK"},
		{fmt.Sprintf("read 0x1000 %d", size), fmt.Sprintf("OK 0x%x%s", data[:size-100], strings.Repeat("00", 100))},
		{fmt.Sprintf("b64write 0x1000 %d %s", size+5, base64.StdEncoding.EncodeToString(data)), "OK"},
		{fmt.Sprintf("read 0x1000 %d", size+6), fmt.Sprintf("OK 0x%x%s", data, strings.Repeat("00", 6))},
		{fmt.Sprintf("b64write 0x1000 %d %s", size, base64.RawStdEncoding.EncodeToString(data)), "OK"},
	})
	if f.maxBulk > chunk {
		t.Errorf("machine was handed %d bytes at once, want at most %d", f.maxBulk, chunk)
	}
}

// TestTransferLimit checks the boundary of the transfer limit, lowered so that the
// test does not need 256 MiB.
func TestTransferLimit(t *testing.T) {
	s, _ := newTestSession()
	s.maxTransfer = 1000
	runScript(t, s, []step{
		{"read 0 1000", "OK 0x" + strings.Repeat("00", 1000)},
		{"read 0 1001", "FAIL read: SIZE 0x3e9 is more than one request may move (1000 bytes); split it into smaller requests"},
		{"b64read 0 1000", "OK *"},
		{"b64read 0 1001", "FAIL b64read: *"},
		{"memset 0 1000 0", "OK"},
		{"memset 0 1001 0", "FAIL memset: *"},
		{"write 0 1000 0x", "OK"},
		{"write 0 1001 0x", "FAIL write: *"},
		{"b64write 0 1000 AA==", "OK"},
		{"b64write 0 1001 AA==", "FAIL b64write: *"},
	})
}

func TestTrace(t *testing.T) {
	var log bytes.Buffer
	f := newFake()
	s := NewSession(f, &log)
	runScript(t, s, []step{{"writeb 0x10 1", "OK"}})
	if log.Len() != 0 {
		t.Fatalf("trace output before trace on: %q", log.String())
	}
	runScript(t, s, []step{
		{"trace on", "OK"},
		{"trace on", "OK"}, // idempotent: events must not print twice
		{"writeb 0x10 2", "OK"},
		{"outb 0x80 3", "OK"},
	})
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "cpu_write addr=0x10 size=1 val=0x2") || !strings.Contains(lines[1], "pio_write port=0x80") {
		t.Errorf("trace output = %q, want one cpu_write and one pio_write line", log.String())
	}
	log.Reset()
	runScript(t, s, []step{
		{"trace off", "OK"},
		{"trace off", "OK"},
		{"writeb 0x10 4", "OK"},
	})
	if log.Len() != 0 {
		t.Errorf("trace output after trace off: %q", log.String())
	}

	// Close turns tracing off, so that a machine that outlives the session stops
	// writing to the session's log.
	runScript(t, s, []step{{"trace on", "OK"}})
	s.Close()
	f.Write(0x10, 1, 5)
	if log.Len() != 0 {
		t.Errorf("trace output after Close: %q", log.String())
	}

	// A nil log discards.
	s = NewSession(newFake(), nil)
	runScript(t, s, []step{{"trace on", "OK"}, {"writeb 0 1", "OK"}})
}

func TestInternalError(t *testing.T) {
	f := newFake()
	f.panics = "bad\nthing"
	s := NewSession(f, nil)
	got := s.Exec("readb 0")
	checkReply(t, "readb 0", got)
	if got != `FAIL internal error: bad\nthing` {
		t.Errorf("Exec after a panic = %q", got)
	}
	f.panics = errors.New(strings.Repeat("x", 5000))
	got = s.Exec("readb 0")
	checkReply(t, "readb 0", got)
	if len(got) > 1100 {
		t.Errorf("internal error reply is %d bytes long", len(got))
	}
	f.panics = nil
	runScript(t, s, []step{{"readb 0", "OK 0x0000000000000000"}})
}

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  error
	}{
		{"0", 0, nil},
		{"00", 0, nil},
		{"1", 1, nil},
		{"42", 42, nil},
		{"010", 8, nil},
		{"0777", 0777, nil},
		{"0x10", 16, nil},
		{"0X10", 16, nil},
		{"0xAbCdEf", 0xabcdef, nil},
		{"0x0000000000000000000001", 1, nil},
		{"18446744073709551615", math.MaxUint64, nil},
		{"0xffffffffffffffff", math.MaxUint64, nil},
		{"01777777777777777777777", math.MaxUint64, nil},
		{"18446744073709551616", 0, ErrRange},
		{"99999999999999999999", 0, ErrRange},
		{"0x10000000000000000", 0, ErrRange},
		{"02000000000000000000000", 0, ErrRange},
		{"", 0, ErrSyntax},
		{"-1", 0, ErrSyntax},
		{"+1", 0, ErrSyntax},
		{"-0", 0, ErrSyntax},
		{"0x", 0, ErrSyntax},
		{"0X", 0, ErrSyntax},
		{"0x-1", 0, ErrSyntax},
		{"0x+1", 0, ErrSyntax},
		{"08", 0, ErrSyntax},
		{"09", 0, ErrSyntax},
		{"0a", 0, ErrSyntax},
		{"1a", 0, ErrSyntax},
		{"0x1g", 0, ErrSyntax},
		{"1 ", 0, ErrSyntax},
		{" 1", 0, ErrSyntax},
		{"1_000", 0, ErrSyntax},
		{"0b1", 0, ErrSyntax},
		{"0o7", 0, ErrSyntax},
		{"0xx1", 0, ErrSyntax},
		{"1e3", 0, ErrSyntax},
		{"1.0", 0, ErrSyntax},
		{"١", 0, ErrSyntax}, // a non-ASCII digit
	}
	for _, tt := range tests {
		got, err := ParseNumber(tt.in)
		if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("ParseNumber(%q) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseNumber(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
}

// FuzzParseNumber checks ParseNumber against strconv.ParseUint with base 0 wherever
// the two grammars agree (no '_', no 0b or 0o prefix), and that it never panics.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "1", "010", "08", "0x1f", "0X1F", "0x", "-1", "+1", "1_0", "0b1", "0o7",
		"18446744073709551615", "18446744073709551616", "0xffffffffffffffff", "0x10000000000000000", "01777777777777777777777"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseNumber(s)
		if err != nil && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrRange) {
			t.Fatalf("ParseNumber(%q) error %v wraps neither ErrSyntax nor ErrRange", s, err)
		}
		lower := strings.ToLower(s)
		if strings.Contains(s, "_") || strings.HasPrefix(lower, "0b") || strings.HasPrefix(lower, "0o") {
			if err == nil {
				t.Fatalf("ParseNumber(%q) = %d, want an error", s, got)
			}
			return
		}
		want, werr := strconv.ParseUint(s, 0, 64)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseNumber(%q) = %d, %v; strconv.ParseUint = %d, %v", s, got, err, want, werr)
		}
		if err == nil && got != want {
			t.Fatalf("ParseNumber(%q) = %d, strconv.ParseUint = %d", s, got, want)
		}
		if errors.Is(werr, strconv.ErrRange) != errors.Is(err, ErrRange) {
			t.Fatalf("ParseNumber(%q) error %v, strconv.ParseUint error %v: disagree on overflow", s, err, werr)
		}
	})
}

// FuzzExec checks that any line gets exactly one well-formed reply line, and that the
// session still answers afterwards.
func FuzzExec(f *testing.F) {
	for _, s := range []string{
		"", "readb 0", "readq 0xfffffffffffffff8", "writel 0x10 0x1234", "inb 0x80", "outw 0xcf8 1",
		"read 0 16", "write 0 4 0x0102", "b64read 0 5", "b64write 0 4 AQID", "memset 0 8 0xff",
		"clock_step", "clock_step 10", "clock_set 300", "endianness", "trace on", "trace off",
		"help", "help memset", "read 0 0", "outb 0x10000 1", "readb 08", "b64write 0 1 AA=", "write 0 1 0x123",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, _ := newTestSession()
		s.maxTransfer = 4096 // keep each input fast
		checkReply(t, line, s.Exec(line))
		if got := s.Exec("readb 0xf000000000000000"); got != "OK 0x00000000000000ff" {
			t.Fatalf("after Exec(%q), readb = %q", line, got)
		}
	})
}

// TestHelpListsEveryRequest: help's one reply line names every request exec
// answers, with the arguments it takes, and each of them has a help of its
// own; a request exec does not know is in neither.
func TestHelpListsEveryRequest(t *testing.T) {
	s, _ := newTestSession()
	list := s.Exec("help")
	checkReply(t, "help", list)
	if !strings.HasPrefix(list, "OK outb|outw|outl ADDR VALUE; inb|inw|inl ADDR; ") || !strings.HasSuffix(list, "; help [REQUEST]") {
		t.Errorf("help = %q", list)
	}
	for _, name := range []string{"outb", "outw", "outl", "inb", "inw", "inl", "writeb", "writew", "writel", "writeq",
		"readb", "readw", "readl", "readq", "read", "write", "b64read", "b64write", "memset",
		"clock_step", "clock_set", "endianness", "trace", "help"} {
		if !strings.Contains(" "+strings.NewReplacer("|", " ", ";", " ").Replace(list)+" ", " "+name+" ") {
			t.Errorf("help does not list %s: %q", name, list)
		}
		if got := s.Exec("help " + name); !strings.HasPrefix(got, "OK "+name) {
			t.Errorf("help %s = %q", name, got)
		}
		// exec knows every request help names: none of them is unknown.
		if got := s.Exec(name); strings.Contains(got, "unknown command") {
			t.Errorf("help lists %s, which exec does not know: %q", name, got)
		}
	}
}
