package trace

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"github.com/saccbook/saccbook/sacc"
)

// AppendArgs appends the event's arguments in QEMU trace style
// ("cq_tail=63 req_id=0x40 status=0x0 phase=1").
func (e Event) AppendArgs(b []byte) []byte {
	for i, a := range e.Kind.Info().Args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, a.Name...)
		b = append(b, '=')
		b = appendValue(b, a.Format, e.Args[i])
	}
	return b
}

// AppendText appends the event as one line of text without the newline:
// virtual time in ns, the event name, the arguments.
func (e Event) AppendText(b []byte) []byte {
	b = appendTime(b, e)
	b = append(b, e.Kind.Info().Name...)
	if len(e.Kind.Info().Args) > 0 {
		b = append(b, ' ')
		b = e.AppendArgs(b)
	}
	return b
}

// appendTime appends the event's virtual time, right-aligned in nine columns, and
// the space after it.
func appendTime(b []byte, e Event) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], uint64(e.Time), 10)
	for i := len(d); i < 9; i++ {
		b = append(b, ' ')
	}
	b = append(b, d...)
	return append(b, ' ')
}

// String is the event's text form.
func (e Event) String() string { return string(e.AppendText(nil)) }

func appendValue(b []byte, f Format, v uint64) []byte {
	switch f {
	case Dec:
		return strconv.AppendUint(b, v, 10)
	case RegName:
		if n, ok := regNames()[uint32(v)]; ok {
			return append(b, n...)
		}
	case IOMMUReg:
		if n, ok := iommuRegNames()[uint32(v)]; ok {
			return append(b, n...)
		}
	case GuestReason:
		return append(b, GuestErrorName(v)...)
	case FaultReason:
		return append(b, sacc.FaultReason(v).String()...)
	case Opcode:
		return append(b, opcodeName(v)...)
	case AccessDir:
		if v == sacc.AccessWrite {
			return append(b, "write"...)
		}
		return append(b, "read"...)
	case BDF:
		// bus:device.function as lspci prints it, "%02x:%02x.%x" without fmt's
		// boxing, so that encoding an event allocates nothing.
		b = appendHex2(b, v>>8&0xFF)
		b = append(b, ':')
		b = appendHex2(b, v>>3&0x1F)
		b = append(b, '.')
		return append(b, hexDigits[v&7])
	case Suppress:
		return append(b, suppressName(v)...)
	case BarrierOp:
		return append(b, tableName(barrierNames[:], v)...)
	case CacheOp:
		return append(b, tableName(cacheNames[:], v)...)
	case SyscallName:
		return append(b, tableName(syscallNames[:], v)...)
	}
	b = append(b, "0x"...)
	return strconv.AppendUint(b, v, 16)
}

// regNames and iommuRegNames are sacc.RegName and sacc.IOMMURegName for every
// offset that has a name, looked up once: the datasheet builds the names of
// 64-bit registers' high halves ("SQ_BASE_HI") on each call, and encoding an
// event must not allocate.
var (
	regNames      = sync.OnceValue(func() map[uint32]string { return namedOffsets(sacc.Registers, sacc.RegName) })
	iommuRegNames = sync.OnceValue(func() map[uint32]string { return namedOffsets(sacc.IOMMURegisters, sacc.IOMMURegName) })
)

func namedOffsets(table []sacc.Register, name func(uint32) string) map[uint32]string {
	names := map[uint32]string{}
	for _, r := range table {
		for _, off := range []uint32{r.Offset, r.Offset + 4} {
			if n := name(off); n != "reserved" {
				names[off] = n
			}
		}
	}
	return names
}

const hexDigits = "0123456789abcdef"

// appendHex2 appends v (< 256) as two lower-case hex digits.
func appendHex2(b []byte, v uint64) []byte { return append(b, hexDigits[v>>4&0xF], hexDigits[v&0xF]) }

// TextWriter is a sink that writes each event as a line of text. It leaves
// detail kinds out (Kind.Detail) unless Details is set.
type TextWriter struct {
	w   io.Writer
	d   Dialect
	buf []byte
	err error
	// Details writes detail kinds too: every store entering the store buffer,
	// every level of a page walk.
	Details bool
}

// NewTextWriter returns a sink writing text lines to w, spelled as the kinds table
// spells them (In chooses a profile's dialect).
func NewTextWriter(w io.Writer) *TextWriter { return &TextWriter{w: w} }

// In makes t spell events in dialect d, typically the machine's:
// NewTextWriter(w).In(m.Tracer().Dialect()).
func (t *TextWriter) In(d Dialect) *TextWriter {
	t.d = d
	return t
}

// Record writes ev as one line.
func (t *TextWriter) Record(ev *Event) {
	if t.err != nil || !t.Details && ev.Kind.Detail() {
		return
	}
	t.buf = append(t.d.AppendText(t.buf[:0], *ev), '\n')
	_, t.err = t.w.Write(t.buf)
}

// Err is the first write error, if any.
func (t *TextWriter) Err() error { return t.err }

// IgnoresPC says text lines carry no source (PCBlind).
func (t *TextWriter) IgnoresPC() {}

// WriteText writes events as text lines, detail kinds included.
func WriteText(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for _, ev := range events {
		b = append(ev.AppendText(b[:0]), '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// AppendJSON appends the event as one JSON object with a fixed key order:
// {"seq":…,"t":…,"kind":"…","side":"…","args":{…},"text":"…"}. Arguments are
// numbers; "text" holds the formatted arguments for display, quoted as
// strconv.Quote quotes it. Appending to a buffer with room allocates nothing.
func (e Event) AppendJSON(b []byte) []byte {
	info := e.Kind.Info()
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendUint(b, uint64(e.Time), 10)
	b = append(b, `,"kind":"`...)
	b = append(b, info.Name...)
	b = append(b, `","side":"`...)
	b = append(b, info.Side.String()...)
	b = append(b, `","args":{`...)
	for i, a := range info.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, a.Name...)
		b = append(b, `":`...)
		b = strconv.AppendUint(b, e.Args[i], 10)
	}
	b = append(b, `},"text":"`...)
	// The text is written in place: its names and numbers are printable ASCII
	// with nothing to escape, so the quotes around it are all strconv.Quote
	// would add. Anything else is quoted the slow way from a copy.
	start := len(b)
	b = e.AppendArgs(b)
	if !plainText(b[start:]) {
		text := string(b[start:])
		b = strconv.AppendQuote(b[:start-1], text)
		return append(b, '}')
	}
	return append(b, `"}`...)
}

// plainText reports whether strconv.Quote would leave text as it is: printable
// ASCII without a quote or a backslash.
func plainText(text []byte) bool {
	for _, c := range text {
		if c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// JSONWriter is a sink that writes one JSON object per line.
type JSONWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// NewJSONWriter returns a sink writing JSON lines to w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Record writes ev as one JSON line.
func (j *JSONWriter) Record(ev *Event) {
	if j.err != nil {
		return
	}
	j.buf = append(ev.AppendJSON(j.buf[:0]), '\n')
	_, j.err = j.w.Write(j.buf)
}

// Err is the first write error, if any.
func (j *JSONWriter) Err() error { return j.err }

// IgnoresPC says JSON lines carry no source (PCBlind).
func (j *JSONWriter) IgnoresPC() {}
