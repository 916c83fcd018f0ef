package adversary

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// The CPUs of the levels (chapter 07): x86-64 keeps stores in order; arm64 lets
// them drain in any order and performs loads early.
var (
	x86   = CPU{Name: "x86-64"}
	arm64 = CPU{Name: "arm64", Weak: true}
)

// descField is a descriptor field's name as the datasheet's layout gives it.
func descField(name string) string {
	f, ok := sacc.DescriptorLayout.Field(name)
	if !ok {
		panic("adversary: the descriptor has no field " + name) // a typo in this file, caught by every test
	}
	return "sq[0]." + f.Name
}

// cplField is a completion field's name as the datasheet's layout gives it.
func cplField(slot int, name string) string {
	f, ok := sacc.CompletionLayout.Field(name)
	if !ok {
		panic("adversary: the completion has no field " + name)
	}
	return fmt.Sprintf("cq[%d].%s", slot, f.Name)
}

// ---------------------------------------------------------------------------
// Submission: descriptor stores, the barrier, the doorbell (§7.4, chapter 07).

// The descriptor's cells: each starts zeroed (the ring memory is allocated
// zeroed, §7.5) and the driver writes the job's value.
const (
	cellSrc = iota
	cellLen
	cellOp
)

func submitCells() []Cell {
	return []Cell{
		{Name: descField("src_addr"), Values: []string{"0", "0x200000"}},
		{Name: descField("length"), Values: []string{"0", "64"}},
		{Name: descField("opcode"), Values: []string{sacc.OpName(sacc.OpNOP), sacc.OpName(sacc.OpMEMCPY)}},
	}
}

// submitLines is the submission path: the three descriptor stores, then the
// level's barrier and doorbell lines.
func submitLines(doorbell ...Line) []Line {
	lines := []Line{
		{Text: "sq[0].src_addr = 0x200000;", Op: OpStore, Cell: cellSrc, Val: 1},
		{Text: "sq[0].length = 64;", Op: OpStore, Cell: cellLen, Val: 1},
		{Text: "sq[0].opcode = " + sacc.OpName(sacc.OpMEMCPY) + ";", Op: OpStore, Cell: cellOp, Val: 1},
	}
	lines = append(lines, doorbell...)
	return append(lines, Line{Text: "/* done: the job is the device's */", Op: OpEnd})
}

var (
	lineWMB           = Line{Text: "wmb();", Op: OpWMB}
	lineDoorbellRelax = Line{Text: "writel_relaxed(1, " + RegisterName(SQTail) + ");", Op: OpWritelRelaxed, Dev: SQTail, Val: 1}
	lineDoorbell      = Line{Text: "writel(1, " + RegisterName(SQTail) + ");", Op: OpWritel, Dev: SQTail, Val: 1}
)

// fetch is the device's fetch of descriptor 0 once the doorbell has landed:
// the invariant breaks if any field it reads is not yet the driver's value.
func fetch(l *Level) Action {
	return Action{
		Text:    "the device fetches descriptor 0 (a DMA read of sq[0])",
		Enabled: func(s *State) bool { return s.Tail > 0 && s.Device[0] == 0 },
		Do: func(s *State) {
			s.Device[0] = 1
			var stale []string
			for c := range l.Cells {
				if s.Mem[c] != 1 {
					stale = append(stale, l.Cells[c].Name+" = "+l.CellText(c, s.Mem[c]))
				}
			}
			if len(stale) > 0 {
				s.Broken = "the device read descriptor 0 with " + strings.Join(stale, " and ") +
					": the doorbell reached it before the descriptor reached memory"
			}
		},
	}
}

func submitProgress(s *State) string {
	switch {
	case s.Device[0] == 1:
		return "fetched descriptor 0"
	case s.Tail > 0:
		return "the doorbell has landed (SQ_TAIL = 1); descriptor 0 not fetched yet"
	}
	return "idle: no doorbell has reached it (SQ_TAIL = 0)"
}

func submitLevel(l *Level, doorbell ...Line) *Level {
	l.Cells = submitCells()
	l.Lines = submitLines(doorbell...)
	l.Device = []Action{fetch(l)}
	l.Progress = submitProgress
	l.Invariant = "the device reads descriptor 0 only after all three of its fields are in memory"
	l.Chapter = "07"
	return l
}

// ---------------------------------------------------------------------------
// Completion: the phase, the barrier, the body (§7.2, chapters 06 and 07).

// The completion slot holds last lap's entry (req_id 7, phase 1); on this lap
// the driver expects phase 0, and the device is about to post req_id 8.
const (
	cellReqID = iota
	cellPhase
)

func completeCells() []Cell {
	return []Cell{
		{Name: cplField(0, "req_id"), Values: []string{"7 (last lap's)", "8"}},
		{Name: cplField(0, "phase"), Values: []string{"0", "1 (last lap's)"}, Init: 1},
	}
}

// Driver locals of the completion levels.
const (
	localP = iota
	localID
)

var (
	lineLoadPhase = Line{Text: "p = cq[0].phase;", Op: OpLoad, Cell: cellPhase, Reg: localP}
	lineLoadID    = Line{Text: "id = cq[0].req_id;", Op: OpLoad, Cell: cellReqID, Reg: localID}
	lineRMB       = Line{Text: "rmb();", Op: OpRMB}
	lineComplete  = Line{Text: "complete(id);", Op: OpDo, Do: func(s *State) {
		if s.Regs[localID] != 1 {
			s.Broken = "the driver completed req_id 7, last lap's completion, as this lap's new one: it had the phase of the new entry and the body of the old"
		}
	}}
	lineEndPoll = Line{Text: "/* done */", Op: OpEnd}
)

// pollUnless is the phase check: back to line target (0-based) until the
// phase is this lap's.
func pollUnless(target int8) Line {
	return Line{Text: fmt.Sprintf("if (p != expected_phase) goto %d;   /* expected_phase is 0 on this lap */", target+1), Op: OpIfNotGoto, Reg: localP, Val: 0, Target: target}
}

// post writes the completion in two DMA writes, body then phase as §7.2 says, or
// phase first for the device with the quirk.
func post(phaseFirst bool) []Action {
	body := func(s *State) { s.Mem[cellReqID] = 1 }
	phase := func(s *State) { s.Mem[cellPhase] = 0 }
	first, second := body, phase
	firstText, secondText := "the device writes the completion body (req_id 8)", "the device writes the phase field (0)"
	if phaseFirst {
		first, second = phase, body
		firstText, secondText = secondText, firstText
	}
	return []Action{
		{Text: firstText, Enabled: func(s *State) bool { return s.Device[0] == 0 }, Do: func(s *State) { first(s); s.Device[0] = 1 }},
		{Text: secondText, Enabled: func(s *State) bool { return s.Device[0] == 1 }, Do: func(s *State) { second(s); s.Device[0] = 2 }},
	}
}

func completeProgress(s *State) string {
	return [...]string{"executing req_id 8: nothing written yet", "half-way through posting the completion", "posted the completion"}[s.Device[0]]
}

func completeLevel(l *Level, phaseFirst bool, lines ...Line) *Level {
	l.Cells = completeCells()
	l.Locals = []string{"p", "id"}
	l.LocalValues = [][]string{{"0", "1"}, {"7", "8"}}
	l.Lines = append(lines, lineEndPoll)
	l.Device = post(phaseFirst)
	l.Progress = completeProgress
	l.Invariant = "the driver completes req_id 8 with this lap's body, never last lap's"
	return l
}

// ---------------------------------------------------------------------------
// Interrupts: acknowledge, read back, drain (§9, chapter 08).

// Two completions, each asking for an interrupt, into a CQ of four slots that
// start zeroed; the driver expects phase 1 on this first lap.
const irqCompletions = 2

func irqCells() []Cell {
	var cs []Cell
	for i := range 4 {
		cs = append(cs, Cell{Name: cplField(i, "phase"), Values: []string{"0", "1"}})
	}
	return cs
}

// Driver locals of the interrupt levels.
const (
	localHead = iota
	localPhase
	localStatus
)

// The handler's lines; each level puts them in its own order.
var (
	lineWait      = Line{Text: "/* wait for the interrupt; the handler starts below */", Op: OpWait}
	lineAck       = Line{Text: "writel(1, " + RegisterName(IRQAck) + ");", Op: OpWritel, Dev: IRQAck, Val: 1}
	lineReadBack  = Line{Text: "status = readl(" + RegisterName(IRQStatus) + ");   /* waits for the posted " + RegisterName(IRQAck) + " */", Op: OpReadl, Dev: IRQStatus, Reg: localStatus}
	lineDrainLoad = Line{Text: "p = cq[head].phase;", Op: OpLoad, Cell: 0, Index: localHead + 1, Reg: localPhase}
	lineReap      = Line{Text: "complete(cq[head]); head++;", Op: OpDo, Do: func(s *State) { s.Regs[localHead]++ }}
	lineReturn    = Line{Text: "return IRQ_HANDLED;", Op: OpReturn}
)

// drain is the drain loop starting at line first (0-based), leaving it for
// line exit.
func drain(first, exit int8) []Line {
	return []Line{
		lineDrainLoad,
		{Text: fmt.Sprintf("if (p != 1) goto %d;   /* nothing new */", exit+1), Op: OpIfNotGoto, Reg: localPhase, Val: 1, Target: exit},
		lineReap,
		{Text: fmt.Sprintf("goto %d;", first+1), Op: OpGoto, Target: first},
	}
}

// completions is the device posting its completions: each written whole (the
// phase protocol is not this level's question), then the interrupt rule of §9.
// With msiFirst the message goes before the entry is written.
func completions(msiFirst bool) []Action {
	var as []Action
	for k := range irqCompletions {
		write := func(s *State) { s.Mem[k] = 1 }
		if !msiFirst {
			as = append(as, Action{
				Text:    fmt.Sprintf("the device posts completion %d into cq[%d], then applies the interrupt rule", k+1, k),
				Enabled: func(s *State) bool { return s.Device[0] == int8(k) },
				Do:      func(s *State) { write(s); Interrupt(s); s.Device[0]++ },
			})
			continue
		}
		as = append(as,
			Action{
				Text:    fmt.Sprintf("the device applies the interrupt rule for completion %d, before writing it", k+1),
				Enabled: func(s *State) bool { return s.Device[0] == int8(2*k) },
				Do:      func(s *State) { Interrupt(s); s.Device[0]++ },
			},
			Action{
				Text:    fmt.Sprintf("the device writes completion %d into cq[%d]", k+1, k),
				Enabled: func(s *State) bool { return s.Device[0] == int8(2*k+1) },
				Do:      func(s *State) { write(s); s.Device[0]++ },
			})
	}
	return as
}

func irqLevel(l *Level, msiFirst bool, lines ...Line) *Level {
	l.CPU = arm64
	l.Cells = irqCells()
	l.Locals = []string{"head", "p", "status"}
	l.Lines = lines
	l.Device = completions(msiFirst)
	written := func(s *State) int8 {
		if msiFirst {
			return s.Device[0] / 2
		}
		return s.Device[0]
	}
	l.Progress = func(s *State) string {
		return fmt.Sprintf("%d of %d completions posted", written(s), irqCompletions)
	}
	l.Final = func(s *State) string {
		if n := written(s); s.Regs[localHead] < n {
			return fmt.Sprintf("completion %d is in the CQ and will never be reaped: the device is done, no interrupt is pending (IRQ_STATUS = %d), and the driver waits for one", s.Regs[localHead]+1, btoi(s.IRQStatus))
		}
		return ""
	}
	l.Invariant = "every completion the device posts is reaped: none is left in the CQ with no interrupt to come"
	l.Chapter = "08"
	return l
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------
// The levels.

var levels = buildLevels()

func buildLevels() []*Level {
	ls := []*Level{
		submitLevel(&Level{
			Name:  "missing-wmb",
			Title: "The doorbell without a barrier",
			Story: "An arm64 driver writes a descriptor's three fields and rings the doorbell with writel_relaxed, " +
				"with no wmb() in between. Its stores wait in the CPU's store buffer, and on arm64 they leave it in " +
				"any order; the doorbell is a posted write that does not wait for them. You are the store buffer, " +
				"the bus and the device's timing.",
			Breakable: true, Quirk: quirk.MissingWMB.String(), CPU: arm64,
			Lesson: "Nothing orders the descriptor's stores before the doorbell: §7.4 asks for a write barrier before SQ_TAIL.",
		}, lineDoorbellRelax),
		submitLevel(&Level{
			Name:  "wmb",
			Title: "The doorbell after wmb()",
			Story: "The same arm64 driver with wmb() before writel_relaxed: the barrier waits until every buffered store " +
				"is in memory. Drain the stores in any order and delay the doorbell as long as you like.",
			CPU:    arm64,
			Lesson: "wmb() empties the store buffer before the doorbell leaves the CPU, so whatever the device fetches is complete.",
		}, lineWMB, lineDoorbellRelax),
		submitLevel(&Level{
			Name:  "writel",
			Title: "The doorbell with writel()",
			Story: "The arm64 driver writes the doorbell with a plain writel() and no wmb(): writel orders every earlier " +
				"store to memory before the register write, as Linux defines it.",
			CPU:    arm64,
			Lesson: "writel() has the barrier built in; only writel_relaxed() after descriptor stores needs one in front of it.",
		}, lineDoorbell),
		submitLevel(&Level{
			Name:  "x86-relaxed",
			Title: "No barrier on x86-64",
			Story: "The driver that broke on arm64 — writel_relaxed and no wmb() — on x86-64, where stores leave the " +
				"store buffer in program order and an MMIO write leaves it behind them.",
			CPU:    x86,
			Lesson: "x86-64 keeps the order the driver forgot to ask for; the same code is a bug on arm64. The book's machine shows it: missing-wmb copies 8 of 8 on x86 and fewer on arm64.",
		}, lineDoorbellRelax),
		completeLevel(&Level{
			Name:  "body-before-phase",
			Title: "The body before the phase",
			Story: "An x86-64 driver polls a completion slot that still holds last lap's entry. It reads the body first " +
				"and the phase second, and completes the request once the phase is this lap's. Loads run in program " +
				"order here; you choose when the device writes.",
			Breakable: true, Quirk: quirk.BodyBeforePhase.String(), CPU: x86, Chapter: "06",
			Lesson: "The phase says the entry is new only for what is read after it: read the phase first, then the body.",
		}, false, lineLoadID, lineLoadPhase, pollUnless(0), lineComplete),
		completeLevel(&Level{
			Name:  "missing-rmb",
			Title: "The phase, then the body, without rmb()",
			Story: "An arm64 driver reads the phase first and the body after it, as it should, but with no rmb() between " +
				"them. An arm64 CPU may perform the body's load before the phase's. You are the CPU's load unit and " +
				"the device's timing.",
			Breakable: true, Quirk: quirk.MissingRMB.String(), CPU: arm64, Chapter: "07",
			Lesson: "Reading in the right order in the source is not enough on a weak CPU: rmb() keeps the body's load after the phase's.",
		}, false, lineLoadPhase, pollUnless(0), lineLoadID, lineComplete),
		completeLevel(&Level{
			Name:  "rmb",
			Title: "The phase, rmb(), the body",
			Story: "The arm64 driver with rmb() between the phase check and the body: no load after the barrier is " +
				"performed before it.",
			CPU: arm64, Chapter: "07",
			Lesson: "With the device writing the body first (§7.2) and rmb() on the reader's side, a new phase means a new body.",
		}, false, lineLoadPhase, pollUnless(0), lineRMB, lineLoadID, lineComplete),
		completeLevel(&Level{
			Name:  "phase-first",
			Title: "A device that writes the phase first",
			Story: "The correct arm64 driver — phase, rmb(), body — against a device that writes the phase field before " +
				"the body, against §7.2.",
			Breakable: true, Quirk: quirk.PhaseFirst.String(), CPU: arm64, Chapter: "06",
			Lesson: "The reader's barrier only helps if the writer writes in the order the protocol says: phase last.",
		}, true, lineLoadPhase, pollUnless(0), lineRMB, lineLoadID, lineComplete),
	}
	// The interrupt levels: line numbers are 0-based in the builders.
	ls = append(ls,
		irqLevel(&Level{
			Name:  "drain-then-ack",
			Title: "Drain, then acknowledge",
			Story: "The interrupt handler drains the CQ and then acknowledges the interrupt. The device posts two " +
				"completions, each asking for an interrupt, and sends a message only when IRQ_STATUS is clear (§9). " +
				"You choose when the device posts, when the message is taken and when the IRQ_ACK lands.",
			Breakable: true, Quirk: quirk.DrainThenAck.String(),
			Lesson: "A completion posted after the drain's last look and before the acknowledgement sends no message, and the acknowledgement wipes the only trace of it.",
		}, false, append(append([]Line{lineWait}, drain(1, 5)...), lineAck, lineReturn)...),
		irqLevel(&Level{
			Name:  "ack-then-drain",
			Title: "Acknowledge, then drain",
			Story: "The handler acknowledges first and drains after. But IRQ_ACK is a posted write: it reaches the device " +
				"some time after the CPU issues it, and the drain does not wait for it.",
			Breakable: true, Quirk: quirk.AckWithoutReadback.String(),
			Lesson: "A completion posted while the acknowledgement is still on the wire finds IRQ_STATUS set and sends nothing; the drain had already looked.",
		}, false, append([]Line{lineWait, lineAck}, append(drain(2, 6), lineReturn)...)...),
		irqLevel(&Level{
			Name:  "ack-readback-drain",
			Title: "Acknowledge, read back, then drain",
			Story: "The handler acknowledges, reads IRQ_STATUS back, and only then drains. The read cannot pass the " +
				"posted IRQ_ACK, so when it returns the acknowledgement has landed.",
			Lesson: "Every completion is either in memory before the read-back returns, where the drain finds it, or posted after the acknowledgement landed, and then it raises a new interrupt.",
		}, false, append([]Line{lineWait, lineAck, lineReadBack}, append(drain(3, 7), lineReturn)...)...),
		irqLevel(&Level{
			Name:  "drain-ack-readback-drain",
			Title: "Drain, acknowledge, read back, drain again",
			Story: "The handler drains first, then acknowledges, reads IRQ_STATUS back, and drains once more. " +
				"The first drain is the one that broke drain-then-ack; the second comes after the acknowledgement has landed.",
			Lesson: "Any completion the first drain missed is in memory by the time the read-back returns, or raised a new interrupt after it: what no order can do without is the read-back.",
		}, false, append(append(append([]Line{lineWait}, drain(1, 5)...), lineAck, lineReadBack), append(drain(7, 11), lineReturn)...)...),
		irqLevel(&Level{
			Name:  "msi-before-completion",
			Title: "A device that signals before it writes",
			Story: "The correct handler — acknowledge, read back, drain — against a device that sends the completion's " +
				"message before it writes the completion entry.",
			Breakable: true, Quirk: quirk.MSIBeforeCompletion.String(),
			Lesson: "The handler can only find what is in memory when it looks: a device must write the entry before it signals it.",
		}, true, append([]Line{lineWait, lineAck, lineReadBack}, append(drain(3, 7), lineReturn)...)...),
	)
	for i, l := range ls {
		l.Number = i + 1
	}
	return ls
}

// Claim is what the level says of itself: whether some schedule breaks its
// driver. The solver's tests hold every level to it.
func (l *Level) Claim() string {
	if l.Breakable {
		return "Some schedule breaks this driver: find one."
	}
	return "This driver is correct: no schedule breaks it, and the solver proves it. Try anyway, and see what holds it."
}

// Levels lists every level, in the order the book plays them.
func Levels() []*Level { return levels }

// Lookup finds a level by number or name.
func Lookup(name string) (*Level, error) {
	if n, err := strconv.Atoi(name); err == nil {
		if n >= 1 && n <= len(levels) {
			return levels[n-1], nil
		}
		return nil, fmt.Errorf("no adversary level %d: there are %d (saccbook adversary list)", n, len(levels))
	}
	for _, l := range levels {
		if l.Name == name {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no adversary level %q: saccbook adversary list names them", name)
}
