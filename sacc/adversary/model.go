// Package adversary is the book's adversary mode: the learner plays the memory
// system against a short driver and wins by breaking the driver's invariant.
//
// A level is a small explicit-state model of the machine the chapters describe:
// the CPU's store buffer (stores not yet visible to the device), loads a weakly
// ordered CPU performs early, the posted writes on their way to the device (the
// doorbell, IRQ_ACK), the device's progress through its work, the completion
// interrupt's pending bit (IRQ_STATUS, §9) and the driver's program counter.
// The driver is a handful of lines as the book writes them. At every step the
// learner picks what happens next from the choices the model allows; the
// solver tries every choice up to a bound, so whether a level can be broken is
// a fact the search proves, not a claim of the level's author.
package adversary

import (
	"fmt"
	"strings"

	"github.com/saccbook/saccbook/sacc"
)

// Limits of a state: small fixed arrays keep State comparable, so the solver's
// set of visited states is an ordinary map.
const (
	maxCells  = 12 // memory cells a level names
	maxRegs   = 4  // the driver's local variables
	maxLines  = 16 // driver lines
	maxBuffer = 6  // store-buffer entries (a full buffer stalls the CPU)
	maxPosted = 3  // posted writes on the way to the device
	maxDevice = 4  // the device's progress counters
)

// Register names the device registers a driver line may access (§5, §5.1).
type Register int8

// The registers the levels use, with the offsets package sacc gives them.
const (
	SQTail Register = iota + 1
	IRQAck
	IRQStatus
)

// entry is a store waiting in the store buffer or a posted write on its way to
// the device. A store names a memory cell; an MMIO write (mmio set) names a
// register.
type entry struct {
	cell int8
	val  int8
	mmio bool
}

// State is one instant of a level's machine. It is a value: the solver copies
// it, compares it and keys a map with it.
type State struct {
	PC   int8           // the driver line that runs next
	Regs [maxRegs]int8  // the driver's locals
	Mem  [maxCells]int8 // memory as the device and the CPU's loads see it

	Buffer    [maxBuffer]entry // the store buffer, oldest first
	BufferLen int8
	Posted    [maxPosted]entry // posted writes, oldest first: they land in order
	PostedLen int8
	// Early holds, per driver line, the value a load read before its line ran
	// (value+1; 0 is none): a weakly ordered CPU may perform a load before the
	// loads ahead of it when no rmb stands between them (chapter 07).
	Early [maxLines]int8

	Tail       int8            // SQ_TAIL as the device has it: doorbells that landed
	Device     [maxDevice]int8 // the level's device progress
	IRQStatus  bool            // IRQ_STATUS bit 0 (§9)
	IRQPending bool            // an MSI reached the CPU and no handler has taken it yet
	Done       bool            // the driver finished its program

	Broken string // why the invariant broke; empty while it holds
}

// Op is what a driver line does.
type Op int8

// The driver's operations, each the book's own.
const (
	OpStore         Op = iota + 1 // cell = value: into the store buffer
	OpLoad                        // reg = cell
	OpWMB                         // wmb(): every buffered store reaches memory first
	OpRMB                         // rmb(): no later load is performed before this point
	OpWritel                      // writel(): a barrier, then the posted write
	OpWritelRelaxed               // writel_relaxed(): the posted write, unordered against stores on a weak CPU
	OpReadl                       // readl(): waits for every posted write to land, then reads
	OpIfNotGoto                   // if (reg != value) goto target
	OpGoto                        // goto target
	OpWait                        // wait for the interrupt
	OpReturn                      // return from the handler: wait again
	OpDo                          // local work: Do changes the driver's locals and may break the invariant
	OpEnd                         // the driver is finished
)

// Line is one line of a driver, as the book writes it.
type Line struct {
	Text   string
	Op     Op
	Cell   int8     // OpStore, OpLoad: the memory cell (before Index)
	Index  int8     // OpLoad: 1+the local that indexes the cell (cq[head]); 0 is none
	Val    int8     // OpStore, OpWritel*, OpIfNotGoto: the value
	Reg    int8     // OpLoad, OpReadl, OpIfNotGoto: the local
	Dev    Register // OpWritel*, OpReadl: the register
	Target int8     // OpIfNotGoto, OpGoto: the line to go to
	Do     func(s *State)
}

// Cell is one named memory cell, with the meaning of each value it can hold.
type Cell struct {
	Name   string
	Values []string // Values[v] is what value v means; the cell starts at Init
	Init   int8
}

// Action is one thing the device (or the platform) can do next.
type Action struct {
	Text    string // what happens, as a learner reads it
	Enabled func(s *State) bool
	Do      func(s *State)
}

// CPU is the memory model of a level's CPU (chapter 07).
type CPU struct {
	Name string // "x86-64" or "arm64"
	// Weak: buffered stores drain in any order, an MMIO write does not wait
	// behind them, and loads may be performed early. Otherwise stores and MMIO
	// writes leave the store buffer in program order and loads are in order.
	Weak bool
}

// Level is one game: a driver, a device and the invariant the learner tries to
// break.
type Level struct {
	Number    int
	Name      string // short, for the command line and the page's address
	Title     string
	Story     string
	Invariant string // what the driver promises
	Breakable bool   // the level's claim; the solver's tests hold it to it
	Quirk     string // the catalog quirk (saccbook quirks) this level is, if any
	Lesson    string // what the level shows, once it is over
	Chapter   string // the chapter that explains it

	CPU    CPU
	Cells  []Cell
	Locals []string // the driver's local variables, by index
	// LocalValues, if set, names a local's values as Cell.Values does (a
	// local loaded from a cell holds that cell's value numbers).
	LocalValues [][]string
	Lines       []Line
	Device      []Action
	// Final judges a state where nothing more can happen: an empty string when
	// the invariant held to the end.
	Final func(s *State) string
	// Progress says where the device is, in a line, for the state view.
	Progress func(s *State) string
}

// Start is the level's first state.
func (l *Level) Start() State {
	var s State
	for i, c := range l.Cells {
		s.Mem[i] = c.Init
	}
	return s
}

// ChoiceKind says who acts in a choice.
type ChoiceKind string

// The kinds of choice, in the order they are offered.
const (
	KindDriver ChoiceKind = "driver" // the driver runs its next line
	KindDrain  ChoiceKind = "drain"  // a buffered store reaches memory
	KindLand   ChoiceKind = "land"   // the oldest posted write reaches the device
	KindEarly  ChoiceKind = "early"  // the CPU performs a later load now
	KindDevice ChoiceKind = "device" // the device acts
)

// Choice is one thing that may happen next.
type Choice struct {
	Kind  ChoiceKind
	Text  string
	index int // store-buffer slot, line or action, by kind
}

// Choices lists what may happen next in s, in a fixed order: the driver's next
// line, each buffered store that may drain, the posted write that may land, each
// load that may be performed early, each device action. None once the invariant
// is broken or the machine has nothing left to do.
func (l *Level) Choices(s *State) []Choice {
	if s.Broken != "" {
		return nil
	}
	var cs []Choice
	if l.driverCanRun(s) {
		cs = append(cs, Choice{Kind: KindDriver, Text: "the driver runs line " + fmt.Sprint(s.PC+1) + ": " + l.Lines[s.PC].Text, index: int(s.PC)})
	}
	for i := 0; i < int(s.BufferLen); i++ {
		if !l.CPU.Weak && i > 0 {
			break // a strongly ordered CPU drains its oldest store only
		}
		cs = append(cs, Choice{Kind: KindDrain, Text: "the store buffer drains " + l.entryText(s.Buffer[i]), index: i})
	}
	if s.PostedLen > 0 {
		cs = append(cs, Choice{Kind: KindLand, Text: "the posted write " + l.entryText(s.Posted[0]) + " reaches the device", index: 0})
	}
	for _, j := range l.hoistable(s) {
		cs = append(cs, Choice{Kind: KindEarly, Text: fmt.Sprintf("the CPU performs line %d's load early: %s", j+1, l.Lines[j].Text), index: j})
	}
	for i, a := range l.Device {
		if a.Enabled(s) {
			cs = append(cs, Choice{Kind: KindDevice, Text: a.Text, index: i})
		}
	}
	return cs
}

// Apply makes choice c happen in s.
func (l *Level) Apply(s *State, c Choice) {
	switch c.Kind {
	case KindDriver:
		l.step(s)
	case KindDrain:
		l.drain(s, c.index)
	case KindLand:
		l.land(s)
	case KindEarly:
		s.Early[c.index] = l.read(s, l.Lines[c.index]) + 1
	case KindDevice:
		l.Device[c.index].Do(s)
	}
}

// Over says whether nothing more can happen in s, and if so, whether the
// driver's invariant broke (why is the reason).
func (l *Level) Over(s *State) (over bool, why string) {
	if s.Broken != "" {
		return true, s.Broken
	}
	if len(l.Choices(s)) > 0 {
		return false, ""
	}
	if l.Final != nil {
		return true, l.Final(s)
	}
	return true, ""
}

// driverCanRun says whether the driver's next line can run now.
func (l *Level) driverCanRun(s *State) bool {
	if s.Done {
		return false
	}
	ln := l.Lines[s.PC]
	switch ln.Op {
	case OpWait:
		return s.IRQPending
	case OpStore:
		return s.BufferLen < maxBuffer // a full store buffer stalls the CPU
	case OpWritel, OpWritelRelaxed:
		if !l.CPU.Weak && ln.Op == OpWritelRelaxed {
			return s.BufferLen < maxBuffer
		}
		return s.PostedLen < maxPosted
	case OpEnd:
		return false
	}
	return true
}

// step runs the driver's next line.
func (l *Level) step(s *State) {
	pc := s.PC
	ln := l.Lines[pc]
	next := pc + 1
	switch ln.Op {
	case OpStore:
		s.Buffer[s.BufferLen] = entry{cell: ln.Cell, val: ln.Val}
		s.BufferLen++
	case OpLoad:
		v := s.Early[pc] - 1
		if s.Early[pc] == 0 {
			v = l.read(s, ln)
		}
		s.Early[pc] = 0
		s.Regs[ln.Reg] = v
	case OpWMB:
		l.drainAll(s)
	case OpRMB:
		// Nothing to do when it runs: it is the loads after it that may not
		// pass it (hoistable stops at it).
	case OpWritel:
		l.drainAll(s) // writel orders every earlier store before the MMIO write
		l.post(s, entry{cell: int8(ln.Dev), val: ln.Val, mmio: true})
	case OpWritelRelaxed:
		e := entry{cell: int8(ln.Dev), val: ln.Val, mmio: true}
		if l.CPU.Weak {
			l.post(s, e)
		} else {
			// On x86-64 an MMIO write leaves the store buffer behind every
			// earlier store: the order writel_relaxed leaves out is kept anyway.
			s.Buffer[s.BufferLen] = e
			s.BufferLen++
		}
	case OpReadl:
		// A read cannot pass the posted writes before it (§9): when it returns,
		// every one of them has landed.
		for s.PostedLen > 0 {
			l.land(s)
		}
		s.Regs[ln.Reg] = l.readReg(s, ln.Dev)
	case OpIfNotGoto:
		if s.Regs[ln.Reg] != ln.Val {
			next = ln.Target
		}
	case OpGoto:
		next = ln.Target
	case OpWait:
		s.IRQPending = false
	case OpReturn:
		next = l.waitLine()
	case OpDo:
		ln.Do(s)
	}
	if next != pc+1 {
		// A jump taken (a loop, a return) discards what the CPU performed early
		// on the path it did not take.
		s.Early = [maxLines]int8{}
	}
	s.PC = next
	if int(s.PC) >= len(l.Lines) || l.Lines[s.PC].Op == OpEnd {
		s.Done = true
	}
}

// waitLine is the line that waits for the interrupt, or -1.
func (l *Level) waitLine() int8 {
	for i, ln := range l.Lines {
		if ln.Op == OpWait {
			return int8(i)
		}
	}
	return -1
}

// cellOf is the cell a load reads in s.
func (l *Level) cellOf(s *State, ln Line) int8 {
	c := ln.Cell
	if ln.Index > 0 {
		c += s.Regs[ln.Index-1]
	}
	return c
}

// read is what a load on line ln reads now: the CPU's own youngest buffered
// store to the cell, else memory.
func (l *Level) read(s *State, ln Line) int8 {
	c := l.cellOf(s, ln)
	for i := int(s.BufferLen) - 1; i >= 0; i-- {
		if e := s.Buffer[i]; !e.mmio && e.cell == c {
			return e.val
		}
	}
	return s.Mem[c]
}

// hoistable lists the later loads the CPU may perform now: on a weak CPU, a
// load of a fixed cell reachable from the current line in straight order with
// no rmb, readl, wait or return in between.
func (l *Level) hoistable(s *State) []int {
	if !l.CPU.Weak || s.Done {
		return nil
	}
	var out []int
	for j := int(s.PC) + 1; j < len(l.Lines); j++ {
		switch ln := l.Lines[j-1]; ln.Op {
		case OpRMB, OpReadl, OpWait, OpReturn, OpGoto, OpEnd:
			return out
		}
		if ln := l.Lines[j]; ln.Op == OpLoad && ln.Index == 0 && s.Early[j] == 0 {
			out = append(out, j)
		}
	}
	return out
}

// drain moves buffered entry i to memory (a store) or onto the bus (an MMIO
// write, on a strongly ordered CPU).
func (l *Level) drain(s *State, i int) {
	e := s.Buffer[i]
	copy(s.Buffer[i:], s.Buffer[i+1:s.BufferLen])
	s.BufferLen--
	s.Buffer[s.BufferLen] = entry{}
	if e.mmio {
		l.post(s, e)
		return
	}
	s.Mem[e.cell] = e.val
}

// drainAll empties the store buffer in program order.
func (l *Level) drainAll(s *State) {
	for s.BufferLen > 0 {
		l.drain(s, 0)
	}
}

func (l *Level) post(s *State, e entry) {
	if s.PostedLen == maxPosted {
		s.Broken = "model error: more posted writes than the model holds"
		return
	}
	s.Posted[s.PostedLen] = e
	s.PostedLen++
}

// land delivers the oldest posted write to the device.
func (l *Level) land(s *State) {
	e := s.Posted[0]
	copy(s.Posted[:], s.Posted[1:s.PostedLen])
	s.PostedLen--
	s.Posted[s.PostedLen] = entry{}
	switch Register(e.cell) {
	case SQTail:
		s.Tail = e.val
	case IRQAck:
		if e.val&1 != 0 {
			s.IRQStatus = false // §9: writing 1 clears IRQ_STATUS bit 0
		}
	}
}

func (l *Level) readReg(s *State, r Register) int8 {
	if r == IRQStatus && s.IRQStatus {
		return 1
	}
	return 0
}

// Interrupt is the completion interrupt rule of §9, for a completion with the
// interrupt flag: if IRQ_STATUS is set already nothing more is sent; otherwise
// the device sets it and sends the message, which reaches the CPU.
func Interrupt(s *State) {
	if s.IRQStatus {
		return
	}
	s.IRQStatus = true
	s.IRQPending = true
}

// Offset is the register's offset in BAR0, from the datasheet.
func (r Register) Offset() uint32 {
	switch r {
	case SQTail:
		return sacc.RegSQTail
	case IRQAck:
		return sacc.RegIRQAck
	case IRQStatus:
		return sacc.RegIRQStatus
	}
	return sacc.RegFileEnd // reserved: named "reserved"
}

// RegisterName is a register's name as the datasheet gives it.
func RegisterName(r Register) string { return sacc.RegName(r.Offset()) }

// CellText is a cell's value as the level names it.
func (l *Level) CellText(cell int, v int8) string {
	c := l.Cells[cell]
	if int(v) < len(c.Values) {
		return c.Values[v]
	}
	return fmt.Sprint(v)
}

func (l *Level) entryText(e entry) string {
	if e.mmio {
		return fmt.Sprintf("%s = %d", RegisterName(Register(e.cell)), e.val)
	}
	return fmt.Sprintf("%s = %s", l.Cells[e.cell].Name, l.CellText(int(e.cell), e.val))
}

// View is a state as a learner reads it.
type View struct {
	PC       int      `json:"pc"` // 0-based; -1 once the driver is finished
	Lines    []string `json:"lines"`
	Locals   []string `json:"locals"`   // "p = 1"
	Memory   []string `json:"memory"`   // "desc.len = 64"
	Buffer   []string `json:"buffer"`   // stores not yet visible, oldest first
	Posted   []string `json:"posted"`   // posted writes on their way, oldest first
	Early    []string `json:"early"`    // loads performed early
	Device   string   `json:"device"`   // the device's progress
	IRQ      string   `json:"irq"`      // IRQ_STATUS and the pending message
	Finished bool     `json:"finished"` // the driver has no more lines to run
	Waiting  bool     `json:"waiting"`  // the driver waits for an interrupt
	Driver   string   `json:"driver"`   // what the driver is doing, in words
	Broken   string   `json:"broken"`   // why the invariant broke
	Choices  []string `json:"choices"`  // what may happen next, numbered from 1
	Over     bool     `json:"over"`     // nothing more can happen
	Won      bool     `json:"won"`      // the learner broke the invariant
	Verdict  string   `json:"verdict"`  // the outcome, once over
	Played   int      `json:"played"`   // choices made so far
	Kinds    []string `json:"kinds"`    // each choice's kind
	Warnings []string `json:"warnings,omitempty"`
}

// ViewOf describes s, with the choices open in it.
func (l *Level) ViewOf(s *State, played int) View {
	// Empty lists, not nil ones: the JSON answer has [] where nothing is.
	v := View{PC: int(s.PC), Played: played, Finished: s.Done, Broken: s.Broken,
		Lines: []string{}, Locals: []string{}, Memory: []string{}, Buffer: []string{}, Posted: []string{},
		Early: []string{}, Choices: []string{}, Kinds: []string{}}
	if s.Done {
		v.PC = -1
	}
	for _, ln := range l.Lines {
		v.Lines = append(v.Lines, ln.Text)
	}
	for i, name := range l.Locals {
		val := fmt.Sprint(s.Regs[i])
		if i < len(l.LocalValues) && int(s.Regs[i]) < len(l.LocalValues[i]) {
			val = l.LocalValues[i][s.Regs[i]]
		}
		v.Locals = append(v.Locals, name+" = "+val)
	}
	for i, c := range l.Cells {
		v.Memory = append(v.Memory, fmt.Sprintf("%s = %s", c.Name, l.CellText(i, s.Mem[i])))
	}
	for i := 0; i < int(s.BufferLen); i++ {
		v.Buffer = append(v.Buffer, l.entryText(s.Buffer[i]))
	}
	for i := 0; i < int(s.PostedLen); i++ {
		v.Posted = append(v.Posted, l.entryText(s.Posted[i]))
	}
	for j, e := range s.Early {
		if e != 0 {
			ln := l.Lines[j]
			c := l.cellOf(s, ln)
			v.Early = append(v.Early, fmt.Sprintf("line %d read %s = %s", j+1, l.Cells[c].Name, l.CellText(int(c), e-1)))
		}
	}
	if l.Progress != nil {
		v.Device = l.Progress(s)
	}
	v.IRQ = "IRQ_STATUS = 0"
	if s.IRQStatus {
		v.IRQ = "IRQ_STATUS = 1"
	}
	if s.IRQPending {
		v.IRQ += "; an MSI waits for the CPU"
	}
	switch {
	case s.Done:
		v.Driver = "finished"
	case l.Lines[s.PC].Op == OpWait:
		v.Waiting = true
		v.Driver = "waiting for an interrupt"
	default:
		v.Driver = fmt.Sprintf("at line %d", s.PC+1)
	}
	for _, c := range l.Choices(s) {
		v.Choices = append(v.Choices, c.Text)
		v.Kinds = append(v.Kinds, string(c.Kind))
	}
	over, why := l.Over(s)
	v.Over = over
	if over {
		v.Won = why != ""
		if v.Won {
			v.Broken = why
			v.Verdict = "You broke it: " + why
		} else {
			v.Verdict = "The driver held: " + l.Invariant
		}
	}
	return v
}

// Text is the view as the terminal prints it.
func (v View) Text() string {
	var b strings.Builder
	b.WriteString("driver:\n")
	for i, ln := range v.Lines {
		mark := "   "
		if i == v.PC {
			mark = "-> "
		}
		fmt.Fprintf(&b, "  %s%2d  %s\n", mark, i+1, ln)
	}
	if len(v.Locals) > 0 {
		fmt.Fprintf(&b, "  locals: %s\n", strings.Join(v.Locals, ", "))
	}
	fmt.Fprintf(&b, "  %s\n", v.Driver)
	list := func(name string, items []string) {
		if len(items) == 0 {
			fmt.Fprintf(&b, "%s: (empty)\n", name)
			return
		}
		fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(items, "; "))
	}
	list("memory", v.Memory)
	list("store buffer", v.Buffer)
	list("posted writes", v.Posted)
	if len(v.Early) > 0 {
		list("loads performed early", v.Early)
	}
	if v.Device != "" {
		fmt.Fprintf(&b, "device: %s\n", v.Device)
	}
	fmt.Fprintf(&b, "interrupt: %s\n", v.IRQ)
	return b.String()
}
