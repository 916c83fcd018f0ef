package qtest

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Machine is what the protocol drives. *machine.Machine implements it.
//
// Every access made through it is a CPU access: it goes through the machine's address
// map and is traced, exactly like the driver's own accesses.
type Machine interface {
	Read(addr uint64, size int) uint64       // guest-physical load, size 1,2,4,8, little-endian
	Write(addr uint64, size int, val uint64) // guest-physical store
	ReadBytes(addr uint64, b []byte)         // bulk read, any length (crosses regions itself)
	WriteBytes(addr uint64, b []byte)        // bulk write
	In(port uint16, size int) uint32         // port input, size 1,2,4
	Out(port uint16, size int, val uint32)   // port output
	Now() sim.Time
	Step() bool          // advance to the next pending event and run everything due then; false (and no change) if nothing is pending
	RunUntil(t sim.Time) // run every event due at or before t; clock ends at t (never moves backwards)
	Tracer() *trace.Tracer
}

const (
	// MaxTransfer is the most bytes one read, b64read, write, b64write or memset
	// request may cover. A read's reply is held in memory whole (2·SIZE bytes for
	// read), so an unbounded SIZE, typed by mistake, could exhaust memory or keep
	// the server busy for hours; 256 MiB is more than the default RAM.
	MaxTransfer = 256 << 20

	// chunk is the most bytes handed to the machine in one ReadBytes or WriteBytes
	// call, so that the working buffers stay small whatever SIZE is.
	chunk = 64 << 10

	// b64chunk is the read chunk for b64read: a multiple of 3, so that the base64
	// of consecutive chunks concatenates into the base64 of the whole without
	// padding in between.
	b64chunk = 3 << 14
)

// Session answers requests for one machine. Not safe for concurrent use (nor is the
// machine).
type Session struct {
	m           Machine
	log         io.Writer
	detach      func() // non-nil while `trace on` is in force
	buf         []byte // chunk buffer, allocated on first bulk request
	maxTransfer uint64 // MaxTransfer; lowered by tests and fuzzing to keep them fast
}

// NewSession returns a session driving m. log is where `trace on` echoes the machine's
// trace events as text (stderr in the CLI, so that they never mix with replies); nil
// discards them.
func NewSession(m Machine, log io.Writer) *Session {
	if log == nil {
		log = io.Discard
	}
	return &Session{m: m, log: log, maxTransfer: MaxTransfer}
}

// Close detaches the trace sink that `trace on` attached, if any, so that a machine
// that outlives the session (Serve on a caller's machine) stops writing to the
// session's log. The session stays usable: Close only turns tracing off.
func (s *Session) Close() {
	if s.detach != nil {
		s.detach()
		s.detach = nil
	}
}

// Exec answers one request line (without its newline) with one reply line (without
// newline). It never panics for any input: a panic inside the machine (a bug) is
// answered "FAIL internal error: ..." so that the server keeps serving.
func (s *Session) Exec(line string) (reply string) {
	if err := sim.Run(func() error {
		reply = s.exec(line)
		return nil
	}); err != nil {
		return oneLine(fmt.Sprintf("FAIL internal error: %v", caught(err)))
	}
	if strings.HasPrefix(reply, "FAIL") {
		reply = oneLine(reply)
	}
	return reply
}

// caught is what to say about a failure sim.Run caught: a panic's value, or the
// stop that reached a session, where no run is meant to be stopped.
func caught(err error) any {
	if p := (*sim.Panic)(nil); errors.As(err, &p) {
		return p.Value
	}
	return err
}

// oneLine makes sure a reply cannot break the one-line-per-request framing, whatever
// text (a panic value, say) ended up in it, and keeps it of a readable length.
func oneLine(s string) string {
	const max = 1024
	if len(s) > max {
		s = s[:max] + "..."
	}
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
	}
	return s
}

// fields splits a request into tokens. Only runs of spaces and tabs separate them, so
// that any other control byte stays inside a token and makes it malformed rather than
// being silently dropped. (Bytes, not runes: both separators are ASCII.)
func fields(line string) []string {
	var f []string
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			f = append(f, line[i:j])
		}
		i = j
	}
	return f
}

func (s *Session) exec(line string) string {
	line = strings.TrimSuffix(line, "\r")
	f := fields(line)
	if len(f) == 0 {
		return "FAIL empty request"
	}
	cmd, args := f[0], f[1:]
	switch cmd {
	case "outb":
		return s.out(cmd, args, 1)
	case "outw":
		return s.out(cmd, args, 2)
	case "outl":
		return s.out(cmd, args, 4)
	case "inb":
		return s.in(cmd, args, 1)
	case "inw":
		return s.in(cmd, args, 2)
	case "inl":
		return s.in(cmd, args, 4)
	case "writeb":
		return s.write(cmd, args, 1)
	case "writew":
		return s.write(cmd, args, 2)
	case "writel":
		return s.write(cmd, args, 4)
	case "writeq":
		return s.write(cmd, args, 8)
	case "readb":
		return s.read(cmd, args, 1)
	case "readw":
		return s.read(cmd, args, 2)
	case "readl":
		return s.read(cmd, args, 4)
	case "readq":
		return s.read(cmd, args, 8)
	case "read":
		return s.readHex(args)
	case "write":
		return s.writeHex(args)
	case "b64read":
		return s.b64read(args)
	case "b64write":
		return s.b64write(args)
	case "memset":
		return s.memset(args)
	case "clock_step":
		return s.clockStep(args)
	case "clock_set":
		return s.clockSet(args)
	case "endianness":
		if r := arity(cmd, args, ""); r != "" {
			return r
		}
		// The SACC platform is little-endian throughout (SACC.md).
		return "OK little"
	case "trace":
		return s.trace(args)
	case "help":
		return help(args)
	}
	return "FAIL unknown command " + quote(cmd)
}

// requests is every request the session answers, for help: the names that
// share a form, their arguments, and what they do. The reply formats are those
// of shared/spec/QTEST.md and of doc.go.
var requests = []struct{ names, args, what string }{
	{"outb|outw|outl", "ADDR VALUE", "write 1, 2 or 4 bytes to I/O port ADDR (at most 0xffff); replies OK"},
	{"inb|inw|inl", "ADDR", "read 1, 2 or 4 bytes from I/O port ADDR; replies OK 0x%04x"},
	{"writeb|writew|writel|writeq", "ADDR VALUE", "write 1, 2, 4 or 8 bytes of guest-physical memory, little-endian; replies OK"},
	{"readb|readw|readl|readq", "ADDR", "read 1, 2, 4 or 8 bytes of guest-physical memory, little-endian; replies OK 0x%016x"},
	{"read", "ADDR SIZE", "read SIZE bytes; replies OK 0x and their hex digits, in address order"},
	{"write", "ADDR SIZE 0xDATA", "write SIZE bytes given in hex, zero-filled at the end if DATA is shorter; replies OK"},
	{"b64read", "ADDR SIZE", "read SIZE bytes; replies OK and their base64"},
	{"b64write", "ADDR SIZE B64", "write SIZE bytes given in base64; replies OK"},
	{"memset", "ADDR SIZE VALUE", "fill SIZE bytes with the byte VALUE; replies OK"},
	{"clock_step", "[NS]", "run to the next pending event, or NS nanoseconds on; replies OK and the virtual time in ns"},
	{"clock_set", "NS", "run every event up to virtual time NS; replies OK and the virtual time in ns"},
	{"endianness", "", "replies OK little: the platform is little-endian"},
	{"trace", "on|off", "echo every trace event on the server's log (standard error), or stop; replies OK"},
	{"help", "[REQUEST]", "replies OK and every request with its arguments, or what REQUEST does"},
}

// help answers "help" with every request and its arguments, and "help NAME"
// with what one request does. Every request gets exactly one reply line
// (QTEST.md), so the list is one line too, its requests separated by "; ".
// help is an extension, as trace is: it changes no other reply.
func help(args []string) string {
	if len(args) > 1 {
		return fmt.Sprintf("FAIL help takes 0 or 1 arguments (help [REQUEST]), got %d", len(args))
	}
	if len(args) == 0 {
		var forms []string
		for _, r := range requests {
			forms = append(forms, strings.TrimSpace(r.names+" "+r.args))
		}
		return "OK " + strings.Join(forms, "; ")
	}
	for _, r := range requests {
		for _, name := range strings.Split(r.names, "|") {
			if name == args[0] {
				return fmt.Sprintf("OK %s: %s", strings.TrimSpace(name+" "+r.args), r.what)
			}
		}
	}
	return fmt.Sprintf("FAIL help: no request %s (help lists them)", quote(args[0]))
}

// quote shows a piece of the request in a reply: quoted, so that control bytes and
// invalid UTF-8 cannot break the line, and shortened, so that a 64 MiB token does not
// come back as a 64 MiB error message.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// arity checks the argument count against usage (the argument names separated by
// spaces) and returns a FAIL reply, or "" when the count is right.
func arity(cmd string, args []string, usage string) string {
	want := len(strings.Fields(usage))
	if len(args) == want {
		return ""
	}
	return fmt.Sprintf("FAIL %s takes %d argument%s (%s), got %d",
		cmd, want, plural(want), strings.TrimSpace(cmd+" "+usage), len(args))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// number parses one argument, or returns the FAIL reply naming it.
func number(cmd, name, arg string) (uint64, string) {
	v, err := ParseNumber(arg)
	if err != nil {
		return 0, fmt.Sprintf("FAIL %s: bad %s %s: %v", cmd, name, quote(arg), err)
	}
	return v, ""
}

// mask truncates v to an access of size bytes, like a C cast to the access type.
func mask(v uint64, size int) uint64 {
	if size >= 8 {
		return v
	}
	return v & (1<<(8*size) - 1)
}

// port parses a port address. Unlike a value, an address is not truncated: wrapping
// 0x10cf8 to 0xcf8 would silently reach a different device.
func port(cmd, arg string) (uint16, string) {
	p, fail := number(cmd, "ADDR", arg)
	if fail != "" {
		return 0, fail
	}
	if p > math.MaxUint16 {
		return 0, fmt.Sprintf("FAIL %s: port %#x is above 0xffff", cmd, p)
	}
	return uint16(p), ""
}

// span checks that size bytes starting at addr stay inside the 64-bit address space
// (the last byte, addr+size-1, is at most 2^64-1): an access is not wrapped around to
// address 0, which would touch memory the client did not name.
func span(cmd string, addr, size uint64) string {
	if size > 0 && addr+(size-1) < addr {
		return fmt.Sprintf("FAIL %s: ADDR %#x + SIZE %#x runs past the end of the 64-bit address space", cmd, addr, size)
	}
	return ""
}

func (s *Session) out(cmd string, args []string, size int) string {
	if r := arity(cmd, args, "ADDR VALUE"); r != "" {
		return r
	}
	p, fail := port(cmd, args[0])
	if fail != "" {
		return fail
	}
	v, fail := number(cmd, "VALUE", args[1])
	if fail != "" {
		return fail
	}
	s.m.Out(p, size, uint32(mask(v, size)))
	return "OK"
}

func (s *Session) in(cmd string, args []string, size int) string {
	if r := arity(cmd, args, "ADDR"); r != "" {
		return r
	}
	p, fail := port(cmd, args[0])
	if fail != "" {
		return fail
	}
	v := mask(uint64(s.m.In(p, size)), size)
	return fmt.Sprintf("OK 0x%04x", v)
}

func (s *Session) write(cmd string, args []string, size int) string {
	if r := arity(cmd, args, "ADDR VALUE"); r != "" {
		return r
	}
	addr, fail := number(cmd, "ADDR", args[0])
	if fail != "" {
		return fail
	}
	v, fail := number(cmd, "VALUE", args[1])
	if fail != "" {
		return fail
	}
	if fail := span(cmd, addr, uint64(size)); fail != "" {
		return fail
	}
	s.m.Write(addr, size, mask(v, size))
	return "OK"
}

func (s *Session) read(cmd string, args []string, size int) string {
	if r := arity(cmd, args, "ADDR"); r != "" {
		return r
	}
	addr, fail := number(cmd, "ADDR", args[0])
	if fail != "" {
		return fail
	}
	if fail := span(cmd, addr, uint64(size)); fail != "" {
		return fail
	}
	v := mask(s.m.Read(addr, size), size)
	return fmt.Sprintf("OK 0x%016x", v)
}

// addrSize parses the ADDR SIZE pair of a bulk request and checks SIZE against the
// transfer limit and the address space. zeroOK says whether SIZE 0 is a valid
// request (it is for write and memset, which then do nothing; QEMU aborts on a read
// of size 0, and saccbook refuses it).
func (s *Session) addrSize(cmd string, args []string, zeroOK bool) (addr, size uint64, fail string) {
	if addr, fail = number(cmd, "ADDR", args[0]); fail != "" {
		return
	}
	if size, fail = number(cmd, "SIZE", args[1]); fail != "" {
		return
	}
	if size == 0 && !zeroOK {
		return 0, 0, fmt.Sprintf("FAIL %s: SIZE must not be 0", cmd)
	}
	if size > s.maxTransfer {
		return 0, 0, fmt.Sprintf("FAIL %s: SIZE %#x is more than one request may move (%d bytes); split it into smaller requests",
			cmd, size, s.maxTransfer)
	}
	return addr, size, span(cmd, addr, size)
}

// chunkBuf returns the session's chunk buffer, allocating it on first use so that a
// session that never does bulk transfers costs nothing.
func (s *Session) chunkBuf() []byte {
	if s.buf == nil {
		s.buf = make([]byte, chunk)
	}
	return s.buf
}

func (s *Session) readHex(args []string) string {
	const cmd = "read"
	if r := arity(cmd, args, "ADDR SIZE"); r != "" {
		return r
	}
	addr, size, fail := s.addrSize(cmd, args, false)
	if fail != "" {
		return fail
	}
	var out strings.Builder
	out.Grow(len("OK 0x") + 2*int(size))
	out.WriteString("OK 0x")
	buf := s.chunkBuf()
	var hx [2 * chunk]byte
	for done := uint64(0); done < size; {
		b := buf[:min(uint64(len(buf)), size-done)]
		s.m.ReadBytes(addr+done, b)
		n := hex.Encode(hx[:], b)
		out.Write(hx[:n])
		done += uint64(len(b))
	}
	return out.String()
}

func (s *Session) b64read(args []string) string {
	const cmd = "b64read"
	if r := arity(cmd, args, "ADDR SIZE"); r != "" {
		return r
	}
	addr, size, fail := s.addrSize(cmd, args, false)
	if fail != "" {
		return fail
	}
	enc := base64.StdEncoding
	var out strings.Builder
	out.Grow(len("OK ") + enc.EncodedLen(int(size)))
	out.WriteString("OK ")
	buf := s.chunkBuf()[:b64chunk]
	var b64 [b64chunk / 3 * 4]byte
	for done := uint64(0); done < size; {
		b := buf[:min(uint64(len(buf)), size-done)]
		s.m.ReadBytes(addr+done, b)
		n := enc.EncodedLen(len(b))
		enc.Encode(b64[:n], b)
		out.Write(b64[:n])
		done += uint64(len(b))
	}
	return out.String()
}

// fill writes size bytes of value c starting at addr, a chunk at a time.
func (s *Session) fill(addr, size uint64, c byte) {
	if size == 0 {
		return
	}
	buf := s.chunkBuf()
	for i := range buf {
		buf[i] = c
	}
	for done := uint64(0); done < size; {
		b := buf[:min(uint64(len(buf)), size-done)]
		s.m.WriteBytes(addr+done, b)
		done += uint64(len(b))
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *Session) writeHex(args []string) string {
	const cmd = "write"
	if r := arity(cmd, args, "ADDR SIZE 0xDATA"); r != "" {
		return r
	}
	addr, size, fail := s.addrSize(cmd, args, true)
	if fail != "" {
		return fail
	}
	data := args[2]
	if len(data) < 2 || data[0] != '0' || (data[1] != 'x' && data[1] != 'X') {
		return fmt.Sprintf("FAIL write: DATA %s must start with 0x", quote(data))
	}
	digits := data[2:]
	// Check all of DATA before writing any of it, so that a malformed request
	// changes nothing.
	for i := 0; i < len(digits); i++ {
		if !isHex(digits[i]) {
			return fmt.Sprintf("FAIL write: DATA has a non-hex character %s at offset %d", quote(digits[i:i+1]), i+2)
		}
	}
	if len(digits)%2 != 0 {
		return fmt.Sprintf("FAIL write: DATA has an odd number of hex digits (%d)", len(digits))
	}
	n := uint64(len(digits) / 2)
	if n > size {
		return fmt.Sprintf("FAIL write: DATA holds %d bytes, more than SIZE %d", n, size)
	}
	buf := s.chunkBuf()
	for done := uint64(0); done < n; {
		k := min(uint64(len(buf)), n-done)
		hex.Decode(buf[:k], []byte(digits[2*done:2*(done+k)])) // checked above
		s.m.WriteBytes(addr+done, buf[:k])
		done += k
	}
	s.fill(addr+n, size-n, 0)
	return "OK"
}

func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '='
}

func (s *Session) b64write(args []string) string {
	const cmd = "b64write"
	if r := arity(cmd, args, "ADDR SIZE B64"); r != "" {
		return r
	}
	addr, size, fail := s.addrSize(cmd, args, true)
	if fail != "" {
		return fail
	}
	text := args[2]
	// encoding/base64 skips '\r' and '\n' inside its input; refuse them (and
	// anything else outside the alphabet) so that only standard base64 is accepted.
	for i := 0; i < len(text); i++ {
		if !isBase64(text[i]) {
			return fmt.Sprintf("FAIL b64write: B64 has a character outside standard base64, %s at offset %d", quote(text[i:i+1]), i)
		}
	}
	// Padded standard base64 has a length that is a multiple of 4; anything else
	// is taken as unpadded (raw) base64, which then must not contain '='.
	enc := base64.StdEncoding
	if len(text)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	if uint64(enc.DecodedLen(len(text))) > size+2 {
		// Certainly longer than SIZE: say so without decoding a huge token.
		return fmt.Sprintf("FAIL b64write: B64 decodes to more than SIZE %d bytes", size)
	}
	data, err := enc.DecodeString(text)
	if err != nil {
		return fmt.Sprintf("FAIL b64write: bad B64: %v", err)
	}
	if uint64(len(data)) > size {
		return fmt.Sprintf("FAIL b64write: B64 decodes to %d bytes, more than SIZE %d", len(data), size)
	}
	for done := 0; done < len(data); done += chunk {
		s.m.WriteBytes(addr+uint64(done), data[done:min(len(data), done+chunk)])
	}
	s.fill(addr+uint64(len(data)), size-uint64(len(data)), 0)
	return "OK"
}

func (s *Session) memset(args []string) string {
	const cmd = "memset"
	if r := arity(cmd, args, "ADDR SIZE VALUE"); r != "" {
		return r
	}
	addr, size, fail := s.addrSize(cmd, args, true)
	if fail != "" {
		return fail
	}
	v, fail := number(cmd, "VALUE", args[2])
	if fail != "" {
		return fail
	}
	s.fill(addr, size, byte(v))
	return "OK"
}

func (s *Session) now() string {
	return "OK " + strconv.FormatUint(uint64(s.m.Now()), 10)
}

func (s *Session) clockStep(args []string) string {
	const cmd = "clock_step"
	switch len(args) {
	case 0:
		if !s.m.Step() {
			return "FAIL no pending events"
		}
		return s.now()
	case 1:
		ns, fail := number(cmd, "NS", args[0])
		if fail != "" {
			return fail
		}
		now := uint64(s.m.Now())
		if now+ns < now {
			return fmt.Sprintf("FAIL clock_step: %d ns from now (%d) is beyond the end of virtual time", ns, now)
		}
		s.m.RunUntil(sim.Time(now + ns))
		return s.now()
	}
	return fmt.Sprintf("FAIL clock_step takes 0 or 1 arguments (clock_step [NS]), got %d", len(args))
}

func (s *Session) clockSet(args []string) string {
	const cmd = "clock_set"
	if r := arity(cmd, args, "NS"); r != "" {
		return r
	}
	ns, fail := number(cmd, "NS", args[0])
	if fail != "" {
		return fail
	}
	// The clock never moves backwards: a time in the past runs only what is due
	// now, as QEMU's clock_set does.
	s.m.RunUntil(max(sim.Time(ns), s.m.Now()))
	return s.now()
}

func (s *Session) trace(args []string) string {
	const cmd = "trace"
	if r := arity(cmd, args, "on|off"); r != "" {
		return r
	}
	switch args[0] {
	case "on":
		if s.detach != nil {
			return "OK" // already on: a second sink would print every event twice
		}
		t := s.m.Tracer()
		if t == nil {
			return "FAIL trace: this machine has no tracer"
		}
		s.detach = t.Attach(trace.NewTextWriter(s.log).In(t.Dialect())) // the machine's profile's names
		return "OK"
	case "off":
		s.Close()
		return "OK"
	}
	return fmt.Sprintf("FAIL trace: want on or off, got %s", quote(args[0]))
}
