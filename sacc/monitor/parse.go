package monitor

import (
	"fmt"
	"strings"
)

// Command is one parsed monitor line. Parse fills only what the command takes; the
// monitor supplies defaults (such as the remembered format of x and xp) when it runs
// the command.
type Command struct {
	Name string // canonical name ("cont" for "c", "quit" for "q"); "" for an empty line
	Sub  string // info: the subcommand ("pci", "mtree", …); "" lists them
	Args string // help: the command asked about, "" for all

	// step and back: how many events.
	N    uint64
	HasN bool

	// x and xp: the /fmt part. Count is 1 without it. Format is 0 and Size is 0
	// when not given: the monitor then uses the last ones (QEMU's default_fmt_*).
	Count  int
	Format byte // 'x', 'd', 'u', 'o' or 'c'
	Size   int  // 1, 2, 4 or 8 bytes (b, h, w, g)

	// x, xp and info iommu: the address (an expression).
	Addr    uint64
	HasAddr bool

	// trace: on or off.
	On    bool
	HasOn bool
}

// ParseError is a line the monitor cannot run. Cmd names the command when it was
// recognised, so that the monitor can point at its help.
type ParseError struct {
	Cmd     string
	Msg     string
	Unknown bool // the command name itself is unknown
}

func (e *ParseError) Error() string { return e.Msg }

// maxDump bounds what one x or xp may show: QEMU has no limit, but a monitor that
// can be asked for 2^31 words should not try.
const (
	maxCount   = 1 << 16
	maxDumpLen = 1 << 20
	maxDepth   = 64 // nesting of parentheses and unary operators in an expression
)

// cmdDef is one row of the command table (the HMP table's name, params and help).
type cmdDef struct {
	names  []string // canonical first
	params string
	help   string
	long   string // extra text for "help NAME"
}

var cmdTable = []cmdDef{
	{[]string{"back"}, "[n]", "step back n events (default 1): re-run the program from the start up to that event", ""},
	{[]string{"cont", "c"}, "", "run to the end of the program and say where it stopped", ""},
	{[]string{"help", "?"}, "[cmd]", "show the help", ""},
	{[]string{"info"}, "[subcommand]", "show various information about the machine", ""},
	{[]string{"quit", "q"}, "", "leave the monitor", ""},
	{[]string{"step"}, "[n]", "let n more events happen (default 1), printing each as it passes", ""},
	{[]string{"stop"}, "", "say where the run is held (it always is between commands)", ""},
	{[]string{"trace"}, "on|off", "print every event as it happens while the machine runs", ""},
	{[]string{"x"}, "/fmt addr", "device (IOVA) memory dump starting at 'addr', through the IOMMU page tables",
		"addr is a DMA address: with translation on it goes through the page tables (read\n" +
			"only: no IOTLB fill, no fault), otherwise it is the physical address. Only RAM is\n" +
			"reachable by DMA.\n" + fmtHelp},
	{[]string{"xp"}, "/fmt addr", "physical memory dump starting at 'addr'",
		"RAM is read directly (no trace events); other addresses are read through the\n" +
			"address map like a CPU load, so reading registers is a real access and is traced.\n" + fmtHelp},
}

const fmtHelp = `/fmt is /[count][format][size]: count units; format x (hex, the default), d (signed),
u (unsigned), o (octal) or c (characters); size b (1 byte), h (2), w (4, the default)
or g (8). A format or size left out is the last one used. addr may be an expression:
numbers (0x hex, 0 octal), + - * / % & | ^ ~ and parentheses.`

var infoTable = []cmdDef{
	{[]string{"pci"}, "", "show 00:03.0 the way lspci -vv does", ""},
	{[]string{"mtree"}, "", "show the address spaces: the guest-physical map, I/O ports, device DMA", ""},
	{[]string{"registers"}, "", "show every BAR0 register with its decoded bits, and the device's ring state", ""},
	{[]string{"rings"}, "", "show the submission and completion rings, decoded from memory", ""},
	{[]string{"iommu"}, "[iova]", "show the IOMMU: registers, IOTLB, fault log; with an IOVA, its page walk", ""},
	{[]string{"irq"}, "", "show MSI-X vectors, PBA, IRQ_STATUS and the interrupts the CPU has seen", ""},
}

func lookup(table []cmdDef, name string) (cmdDef, bool) {
	for _, c := range table {
		for _, n := range c.names {
			if n == name {
				return c, true
			}
		}
	}
	return cmdDef{}, false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanner walks one line.
type scanner struct {
	s   string
	p   int
	cmd string
}

func (sc *scanner) skipSpace() {
	for sc.p < len(sc.s) && isSpace(sc.s[sc.p]) {
		sc.p++
	}
}

func (sc *scanner) peek() byte {
	if sc.p < len(sc.s) {
		return sc.s[sc.p]
	}
	return 0
}

func (sc *scanner) atEnd() bool { return sc.p >= len(sc.s) }

func (sc *scanner) fail(format string, a ...any) error {
	return &ParseError{Cmd: sc.cmd, Msg: fmt.Sprintf(format, a...)}
}

// word reads a run of non-space characters.
func (sc *scanner) word() string {
	start := sc.p
	for sc.p < len(sc.s) && !isSpace(sc.s[sc.p]) {
		sc.p++
	}
	return sc.s[start:sc.p]
}

// end checks that nothing but spaces is left (QEMU: "extraneous characters").
func (sc *scanner) end() error {
	sc.skipSpace()
	if !sc.atEnd() {
		return sc.fail("%s: extraneous characters at the end of line", sc.cmd)
	}
	return nil
}

// Parse parses one monitor line in QEMU HMP syntax: a command name, ended by a space
// or by the '/' of a format (so "xp/4xw 0x1000" works), then the command's
// arguments. An empty line parses to a Command with no name.
func Parse(line string) (Command, error) {
	sc := &scanner{s: line}
	sc.skipSpace()
	if sc.atEnd() {
		return Command{}, nil
	}
	start := sc.p
	for sc.p < len(sc.s) && sc.s[sc.p] != '/' && !isSpace(sc.s[sc.p]) {
		sc.p++
	}
	name := sc.s[start:sc.p]
	def, ok := lookup(cmdTable, name)
	if !ok {
		return Command{}, &ParseError{Msg: fmt.Sprintf("unknown command: '%s'", name), Unknown: true}
	}
	c := Command{Name: def.names[0]}
	sc.cmd = c.Name
	sc.skipSpace()
	var err error
	switch c.Name {
	case "cont", "quit", "stop":
		err = sc.end()
	case "step", "back":
		err = parseCount(sc, &c)
	case "trace":
		err = parseOnOff(sc, &c)
	case "help":
		c.Args = strings.Join(strings.Fields(sc.s[sc.p:]), " ")
	case "info":
		err = parseInfo(sc, &c)
	case "x", "xp":
		err = parseDump(sc, &c)
	}
	if err != nil {
		return Command{}, err
	}
	return c, nil
}

func parseCount(sc *scanner, c *Command) error {
	c.N = 1
	if sc.atEnd() {
		return nil
	}
	v, err := parseExpr(sc)
	if err != nil {
		return err
	}
	if v == 0 {
		return sc.fail("%s: the number of events must be at least 1", sc.cmd)
	}
	c.N, c.HasN = v, true
	return sc.end()
}

func parseOnOff(sc *scanner, c *Command) error {
	if sc.atEnd() {
		return nil // "trace" alone reports the setting
	}
	switch sc.word() {
	case "on":
		c.On = true
	case "off":
		c.On = false
	default:
		return sc.fail("Expected 'on' or 'off'")
	}
	c.HasOn = true
	return sc.end()
}

func parseInfo(sc *scanner, c *Command) error {
	if sc.atEnd() {
		return nil
	}
	start := sc.p
	for sc.p < len(sc.s) && sc.s[sc.p] != '/' && !isSpace(sc.s[sc.p]) {
		sc.p++
	}
	name := sc.s[start:sc.p]
	def, ok := lookup(infoTable, name)
	if !ok {
		return &ParseError{Cmd: "info", Msg: fmt.Sprintf("unknown command: 'info %s'", name), Unknown: true}
	}
	c.Sub = def.names[0]
	sc.cmd = "info " + c.Sub
	sc.skipSpace()
	if c.Sub == "iommu" && !sc.atEnd() {
		v, err := parseExpr(sc)
		if err != nil {
			return err
		}
		c.Addr, c.HasAddr = v, true
	}
	return sc.end()
}

// parseDump parses "[/fmt] addr" as QEMU's '/' and 'l' argument types do.
func parseDump(sc *scanner, c *Command) error {
	c.Count = 1
	if sc.peek() == '/' {
		sc.p++
		if isDigit(sc.peek()) {
			n := 0
			for isDigit(sc.peek()) {
				n = n*10 + int(sc.peek()-'0')
				sc.p++
				if n > maxCount {
					for isDigit(sc.peek()) {
						sc.p++
					}
					return sc.fail("%s: count too large (at most %d units)", sc.cmd, maxCount)
				}
			}
			c.Count = n
		}
	loop:
		for {
			switch ch := sc.peek(); ch {
			case 'o', 'd', 'u', 'x', 'c':
				c.Format = ch
			case 'i':
				return sc.fail("%s: format 'i' disassembles, and this machine has no CPU to disassemble for", sc.cmd)
			case 'b':
				c.Size = 1
			case 'h':
				c.Size = 2
			case 'w':
				c.Size = 4
			case 'g', 'L':
				c.Size = 8
			default:
				break loop
			}
			sc.p++
		}
		if !sc.atEnd() && !isSpace(sc.peek()) {
			return sc.fail("invalid char in format: '%c'", sc.peek())
		}
		sc.skipSpace()
	}
	v, err := parseExpr(sc)
	if err != nil {
		return err
	}
	c.Addr, c.HasAddr = v, true
	return sc.end()
}

// ---------------------------------------------------------------------------
// Expressions, as QEMU's monitor evaluates them (get_expr): 64-bit integers with
// + - * / % & | ^, unary + - ~, parentheses and 'c' character constants. Numbers
// follow strtoull with base 0: 0x… hex, 0… octal, otherwise decimal.

type exprParser struct {
	sc    *scanner
	depth int
}

func parseExpr(sc *scanner) (uint64, error) {
	sc.skipSpace()
	e := &exprParser{sc: sc}
	v, err := e.sum()
	return uint64(v), err
}

// next moves past the current character and the spaces after it.
func (e *exprParser) next() {
	if !e.sc.atEnd() {
		e.sc.p++
		e.sc.skipSpace()
	}
}

func (e *exprParser) sum() (int64, error) {
	v, err := e.logic()
	if err != nil {
		return 0, err
	}
	for {
		op := e.sc.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		e.next()
		w, err := e.logic()
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
}

func (e *exprParser) logic() (int64, error) {
	v, err := e.prod()
	if err != nil {
		return 0, err
	}
	for {
		op := e.sc.peek()
		if op != '&' && op != '|' && op != '^' {
			return v, nil
		}
		e.next()
		w, err := e.prod()
		if err != nil {
			return 0, err
		}
		switch op {
		case '&':
			v &= w
		case '|':
			v |= w
		default:
			v ^= w
		}
	}
}

func (e *exprParser) prod() (int64, error) {
	v, err := e.unary()
	if err != nil {
		return 0, err
	}
	for {
		op := e.sc.peek()
		if op != '*' && op != '/' && op != '%' {
			return v, nil
		}
		e.next()
		w, err := e.unary()
		if err != nil {
			return 0, err
		}
		switch op {
		case '*':
			v *= w
		default:
			if w == 0 {
				return 0, e.sc.fail("division by zero")
			}
			if op == '/' {
				v /= w
			} else {
				v %= w
			}
		}
	}
}

func (e *exprParser) unary() (int64, error) {
	if e.depth++; e.depth > maxDepth {
		return 0, e.sc.fail("expression too deeply nested")
	}
	defer func() { e.depth-- }()
	sc := e.sc
	switch ch := sc.peek(); {
	case ch == '+':
		e.next()
		return e.unary()
	case ch == '-':
		e.next()
		v, err := e.unary()
		return -v, err
	case ch == '~':
		e.next()
		v, err := e.unary()
		return ^v, err
	case ch == '(':
		e.next()
		v, err := e.sum()
		if err != nil {
			return 0, err
		}
		if sc.peek() != ')' {
			return 0, sc.fail("')' expected")
		}
		e.next()
		return v, nil
	case ch == '\'':
		sc.p++
		if sc.atEnd() {
			return 0, sc.fail("character constant expected")
		}
		v := int64(sc.s[sc.p])
		sc.p++
		if sc.peek() != '\'' {
			return 0, sc.fail("missing terminating ' character")
		}
		e.next()
		return v, nil
	case ch == '$':
		sc.p++
		start := sc.p
		for sc.p < len(sc.s) && (isAlnum(sc.s[sc.p]) || sc.s[sc.p] == '_' || sc.s[sc.p] == '.') {
			sc.p++
		}
		return 0, sc.fail("unknown register '%s'", sc.s[start:sc.p])
	case sc.atEnd():
		return 0, sc.fail("unexpected end of expression")
	}
	v, n, err := strtoull(sc.s[sc.p:])
	if err != nil {
		return 0, sc.fail("%s", err.Error())
	}
	if n == 0 {
		return 0, sc.fail("invalid char '%c' in expression", sc.peek())
	}
	sc.p += n
	sc.skipSpace()
	return int64(v), nil
}

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// strtoull parses an unsigned number at the start of s with C's base-0 rules and
// reports how many bytes it used (0: no number).
func strtoull(s string) (v uint64, n int, err error) {
	base := uint64(10)
	i := 0
	switch {
	case len(s) >= 3 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digitVal(s[2]) < 16:
		base, i = 16, 2
	case len(s) >= 1 && s[0] == '0':
		base = 8
	}
	start := i
	overflow := false
	for i < len(s) {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if v > (^uint64(0)-d)/base {
			overflow = true
		}
		v = v*base + d
		i++
	}
	if i == start {
		return 0, 0, nil
	}
	if overflow {
		return 0, i, fmt.Errorf("number too large")
	}
	return v, i, nil
}

func digitVal(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 99
}
