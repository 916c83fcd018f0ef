package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Dialect is how one profile's trace spells events in text: for some kinds a name
// and a format of their own, written as that profile's source writes its trace
// points; every other kind as the kinds table has it. The kinds table stays the one
// list of kinds: a dialect only renames and reformats some of them. The zero
// Dialect is the kinds table's own spelling.
//
// JSON and Perfetto output keep the table's names, which are the kinds'
// identifiers; only text speaks a dialect.
type Dialect struct {
	name  string
	spell *[numKinds]spelling
}

// Spelling is one kind's line in a dialect, written as a line of QEMU's
// trace-events file is: the event's name, a printf-style format whose verbs are %u
// (decimal) and %x (hexadecimal digits, the format writing any 0x itself), and the
// kind's arguments, by their table names, that the verbs print in order.
type Spelling struct {
	Kind   Kind
	Name   string
	Format string
	Args   []string
}

// spelling is a Spelling compiled against its kind: the format cut into literal
// text, each followed by one argument.
type spelling struct {
	name  string
	parts []part
	tail  string // literal text after the last verb
}

type part struct {
	lit string
	arg int // index into Event.Args
	hex bool
}

// NewDialect compiles a dialect from its spellings, checking each against its
// kind: every argument named must be one of the kind's, and the format must have
// one verb per argument.
func NewDialect(name string, spellings []Spelling) (Dialect, error) {
	d := Dialect{name: name, spell: new([numKinds]spelling)}
	for _, s := range spellings {
		if s.Kind <= KindNone || s.Kind >= numKinds {
			return Dialect{}, fmt.Errorf("dialect %s: %s: no such kind", name, s.Name)
		}
		if d.spell[s.Kind].name != "" {
			return Dialect{}, fmt.Errorf("dialect %s: %s spelled twice", name, s.Kind)
		}
		if s.Name == "" {
			return Dialect{}, fmt.Errorf("dialect %s: %s has no name", name, s.Kind)
		}
		sp, err := compile(s)
		if err != nil {
			return Dialect{}, fmt.Errorf("dialect %s: %s (%s): %w", name, s.Name, s.Kind, err)
		}
		d.spell[s.Kind] = sp
	}
	return d, nil
}

func compile(s Spelling) (spelling, error) {
	info := s.Kind.Info()
	out := spelling{name: s.Name}
	rest, lit := s.Format, ""
	next := 0
	for rest != "" {
		i := strings.IndexByte(rest, '%')
		if i < 0 {
			lit += rest
			break
		}
		lit += rest[:i]
		if i+1 >= len(rest) {
			return out, fmt.Errorf("format %q ends in %%", s.Format)
		}
		verb := rest[i+1]
		rest = rest[i+2:]
		if verb == '%' {
			lit += "%"
			continue
		}
		if verb != 'u' && verb != 'x' {
			return out, fmt.Errorf("format %q: verb %%%c (want %%u or %%x)", s.Format, verb)
		}
		if next >= len(s.Args) {
			return out, fmt.Errorf("format %q has more verbs than its %d arguments", s.Format, len(s.Args))
		}
		idx := slices.IndexFunc(info.Args, func(a Arg) bool { return a.Name == s.Args[next] })
		if idx < 0 {
			return out, fmt.Errorf("%s has no argument %q", info.Name, s.Args[next])
		}
		out.parts = append(out.parts, part{lit: lit, arg: idx, hex: verb == 'x'})
		lit = ""
		next++
	}
	if next != len(s.Args) {
		return out, fmt.Errorf("format %q has %d verbs for %d arguments", s.Format, next, len(s.Args))
	}
	out.tail = lit
	return out, nil
}

// Name is the dialect's name ("" for the kinds table's own).
func (d Dialect) Name() string { return d.name }

// KindName is what the dialect calls kind k.
func (d Dialect) KindName(k Kind) string {
	if sp := d.lookup(k); sp != nil {
		return sp.name
	}
	return k.Info().Name
}

// Spells reports whether the dialect has its own line for kind k.
func (d Dialect) Spells(k Kind) bool { return d.lookup(k) != nil }

func (d Dialect) lookup(k Kind) *spelling {
	if d.spell == nil || k >= numKinds || d.spell[k].name == "" {
		return nil
	}
	return &d.spell[k]
}

// AppendArgs appends the event's arguments as the dialect prints them.
func (d Dialect) AppendArgs(b []byte, e Event) []byte {
	sp := d.lookup(e.Kind)
	if sp == nil {
		return e.AppendArgs(b)
	}
	for _, p := range sp.parts {
		b = append(b, p.lit...)
		if p.hex {
			b = strconv.AppendUint(b, e.Args[p.arg], 16)
		} else {
			b = strconv.AppendUint(b, e.Args[p.arg], 10)
		}
	}
	return append(b, sp.tail...)
}

// AppendText appends the event as one line of text in the dialect, without the
// newline: virtual time in ns, the event's name, its arguments.
func (d Dialect) AppendText(b []byte, e Event) []byte {
	sp := d.lookup(e.Kind)
	if sp == nil {
		return e.AppendText(b)
	}
	b = appendTime(b, e)
	b = append(b, sp.name...)
	if len(sp.parts) > 0 || sp.tail != "" {
		b = append(b, ' ')
		b = d.AppendArgs(b, e)
	}
	return b
}

// Text is the event's line in the dialect.
func (d Dialect) Text(e Event) string { return string(d.AppendText(nil, e)) }
