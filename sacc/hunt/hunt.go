// Package hunt is the break-it bug hunts: a catalogue of symptoms, each with the
// scenario it runs, the catalog bugs (quirks) that produce it and the parameters
// its run may take; one variant per learner, derived from a keyed hash; the
// hunt's run built from the variant; and the grader, which replays the run with
// and without its bug and checks a learner's answer against both.
//
// A hunt is a symptom, not a bug name. "The queue stops after a while" can be
// several bugs of the catalog; which one a learner gets, with which ring size,
// job sizes, seed and costs, is a pure function of HMAC-SHA256(course key,
// learner id, hunt number), as a bomb lab derives one bomb per student. The
// answer is the bug's catalog name and the first event at which the run with the
// bug differs from the same run without it (trace.FirstDifference, the same
// definition the browser's with/without comparison uses).
//
// Nothing here is secret from someone who has the key and this source: they can
// compute any variant. The hunts teach; they are not an exam that resists a
// determined learner.
//
// A grader, local or a course's server, needs four calls, and keeps the key
// and the learners' records itself:
//
//	h, err := hunt.Lookup(n)                  // an *InputError for a hunt that does not exist
//	v := h.For(key, learner)                  // the learner's variant
//	s, err := hunt.ParseSubmission(bug, ev)   // what the learner typed; an *InputError costs nothing
//	vd, err := v.Grade(s)                     // replays both runs; vd.Solved(), vd.Message(s)
//
// and v.Answer() is the expected answer, for instructors (Answer.Judge grades
// against one worked out before). Scoring — what a hunt is worth, what a wrong
// answer costs — belongs to the workbook, not to this package.
package hunt

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

// Hunt is one symptom to track down.
type Hunt struct {
	Number int
	Title  string // the symptom in a few words: "The queue stops after a while"
	// Story is the report the learner starts from: who noticed what, and what
	// they did when it happened. It names no bug.
	Story string
	// Symptom is what every variant's run shows, in one sentence; Shows checks it.
	Symptom string
	// Scenario is the scenario the hunt runs; Options are the options every
	// variant gives it.
	Scenario string
	Options  map[string]string
	// Candidates are the catalog bugs that produce the symptom in this
	// scenario: a variant has exactly one of them switched on.
	Candidates []quirk.Quirk
	// Params are what varies from learner to learner besides the bug: scenario
	// options, the seed, cost-model parameters.
	Params []Param
	// Shows is the symptom check, on a run's outcome.
	Shows func(o *Outcome) bool
}

// ParamKind is what a parameter sets.
type ParamKind uint8

const (
	OptionParam ParamKind = iota // a scenario option
	SeedParam                    // the machine's seed
	CostParam                    // one parameter of the cost model
)

// Param is one dimension of a hunt's variants: a name and the values it takes.
type Param struct {
	Kind   ParamKind
	Name   string // the option or cost parameter; "seed" for the seed
	Values []string
}

// option is a scenario option's values, as a hunt parameter.
func option(name string, values ...string) Param {
	return Param{Kind: OptionParam, Name: name, Values: values}
}

// seeds is every seed from first to last.
func seeds(first, last uint64) Param {
	p := Param{Kind: SeedParam, Name: "seed"}
	for s := first; s <= last; s++ {
		p.Values = append(p.Values, strconv.FormatUint(s, 10))
	}
	return p
}

// cost is a cost-model parameter's values, as `--cost name=value` takes them.
func cost(name string, values ...uint64) Param {
	p := Param{Kind: CostParam, Name: name}
	for _, v := range values {
		p.Values = append(p.Values, strconv.FormatUint(v, 10))
	}
	return p
}

// Space is how many variants the hunt has: every candidate with every
// combination of parameter values.
func (h *Hunt) Space() uint64 {
	n := uint64(len(h.Candidates))
	for _, p := range h.Params {
		n *= uint64(len(p.Values))
	}
	return n
}

// Variant is one learner's version of a hunt: its bug and its parameters.
type Variant struct {
	Hunt    *Hunt
	Index   uint64 // its place among the hunt's Space() variants
	Bug     quirk.Quirk
	Options map[string]string // the scenario's options: the hunt's, then the chosen ones
	Seed    uint64
	Costs   []string // cost-model assignments, name=value, in parameter order
}

// At is the hunt's variant number i (mixed radix: the candidate, then each
// parameter in order), for i below Space().
func (h *Hunt) At(i uint64) Variant {
	v := Variant{Hunt: h, Index: i, Options: maps.Clone(h.Options), Seed: 1}
	if v.Options == nil {
		v.Options = map[string]string{}
	}
	n := uint64(len(h.Candidates))
	v.Bug = h.Candidates[i%n]
	i /= n
	for _, p := range h.Params {
		n := uint64(len(p.Values))
		val := p.Values[i%n]
		i /= n
		switch p.Kind {
		case OptionParam:
			v.Options[p.Name] = val
		case SeedParam:
			v.Seed, _ = strconv.ParseUint(val, 10, 64)
		case CostParam:
			v.Costs = append(v.Costs, p.Name+"="+val)
		}
	}
	return v
}

// Digest is HMAC-SHA256 keyed with the course key over the learner id and the
// hunt number: the only input of a learner's variant.
func Digest(key []byte, learner string, hunt int) [sha256.Size]byte {
	mac := hmac.New(sha256.New, key)
	// Length-prefixed fields: no learner id can be read as another one
	// followed by a hunt number.
	fmt.Fprintf(mac, "saccbook hunt v1\x00%d:%s\x00%d", len(learner), learner, hunt)
	var d [sha256.Size]byte
	copy(d[:], mac.Sum(nil))
	return d
}

// For is the learner's variant of the hunt. The same key, learner and hunt
// always give the same variant.
func (h *Hunt) For(key []byte, learner string) Variant {
	d := Digest(key, learner, h.Number)
	// 64 bits of the digest over a space of a few hundred variants: the bias
	// of the modulus is far below anything a class of learners could notice.
	return h.At(binary.BigEndian.Uint64(d[:8]) % h.Space())
}

// Describe is the variant's parameters in words, for instructors and tests
// (never shown to the learner by the commands that run a hunt).
func (v Variant) Describe() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v.Options)) {
		parts = append(parts, k+"="+v.Options[k])
	}
	parts = append(parts, "seed="+strconv.FormatUint(v.Seed, 10))
	for _, c := range v.Costs {
		parts = append(parts, "cost "+c)
	}
	return strings.Join(parts, " ")
}

// Scenario is the scenario the variant runs.
func (v Variant) Scenario() (scenario.Scenario, error) {
	s, ok := scenario.Find(v.Hunt.Scenario)
	if !ok {
		return s, fmt.Errorf("hunt %d: no scenario %q", v.Hunt.Number, v.Hunt.Scenario)
	}
	return s, nil
}

// Cost is the variant's cost model.
func (v Variant) Cost() (sim.Cost, error) {
	c := sim.DefaultCost()
	for _, a := range v.Costs {
		if err := c.ParseAssignment(a); err != nil {
			return c, fmt.Errorf("hunt %d: %w", v.Hunt.Number, err)
		}
	}
	return c, nil
}

// Machine is the configuration of the variant's machine, with its bug or
// without it (the baseline the answer is measured against).
func (v Variant) Machine(withBug bool) (machine.Config, error) {
	c, err := v.Cost()
	if err != nil {
		return machine.Config{}, err
	}
	cfg := machine.Config{Seed: v.Seed, Cost: &c}
	if withBug {
		cfg.Quirks = quirk.Set(0).With(v.Bug)
	}
	return cfg, nil
}

// Outcome is what one run of a variant did.
type Outcome struct {
	Events []trace.Event
	Log    string   // the scenario's narrative
	Err    error    // what the scenario returned (part of the outcome, not a failure)
	Dmesg  []string // the kernel log, for scenarios that boot a kernel
}

// Says reports whether the narrative or the scenario's error contains s.
func (o *Outcome) Says(s string) bool {
	return strings.Contains(o.Log, s) || (o.Err != nil && strings.Contains(o.Err.Error(), s))
}

// Count is how many events of kind k the run had.
func (o *Outcome) Count(k trace.Kind) int {
	n := 0
	for i := range o.Events {
		if o.Events[i].Kind == k {
			n++
		}
	}
	return n
}

// Logged reports whether a kernel log line contains s.
func (o *Outcome) Logged(s string) bool {
	return slices.ContainsFunc(o.Dmesg, func(l string) bool { return strings.Contains(l, s) })
}

// Run runs the variant, with its bug or without it, on a fresh machine, with
// sinks attached (a trace printer, a runner's tap) besides the recording of
// every event. An error means the run could not be made or failed (a panic);
// what the scenario returned is the outcome's Err.
func (v Variant) Run(withBug bool, sinks ...trace.Sink) (*Outcome, error) {
	s, err := v.Scenario()
	if err != nil {
		return nil, err
	}
	cfg, err := v.Machine(withBug)
	if err != nil {
		return nil, err
	}
	o := &Outcome{}
	var log bytes.Buffer
	var built bool
	err = sim.Run(func() error {
		m, err := machine.New(cfg)
		if err != nil {
			return err
		}
		built = true
		m.Tracer().Attach(trace.Func(func(ev trace.Event) { o.Events = append(o.Events, ev) }))
		for _, sk := range sinks {
			m.Tracer().Attach(sk)
		}
		env := v.Env(&log)
		o.Err = s.Run(m, env)
		if env.Host != nil {
			for _, l := range env.Host.K.Log() {
				o.Dmesg = append(o.Dmesg, l.Text)
			}
		}
		return nil
	})
	o.Log = log.String()
	if err != nil {
		if !built {
			return nil, fmt.Errorf("hunt %d: no machine: %w", v.Hunt.Number, err)
		}
		return nil, fmt.Errorf("hunt %d: the run failed: %w", v.Hunt.Number, err)
	}
	return o, nil
}

// Env is a fresh scenario environment for the variant, writing its narrative
// to log.
func (v Variant) Env(log interface{ Write([]byte) (int, error) }) *scenario.Env {
	return &scenario.Env{Log: log, Options: maps.Clone(v.Options)}
}

// Answer is what a hunt asks for: the bug, and the first event of the run with
// it that differs from the run without it.
type Answer struct {
	Bug   quirk.Quirk
	Seq   uint64      // that event's sequence number in the run with the bug, from 1
	Event trace.Event // the event itself
}

// ErrNoDifference is a variant whose bug changes nothing in its run: a broken
// hunt, which the catalogue's tests rule out.
var ErrNoDifference = errors.New("the run with the bug is the same as the run without it")

// Answer replays the variant with and without its bug and finds where they
// part.
func (v Variant) Answer() (Answer, error) {
	with, err := v.Run(true)
	if err != nil {
		return Answer{}, err
	}
	without, err := v.Run(false)
	if err != nil {
		return Answer{}, err
	}
	return answerOf(v, with, without)
}

func answerOf(v Variant, with, without *Outcome) (Answer, error) {
	i, ok := trace.FirstDifference(with.Events, without.Events)
	if !ok {
		return Answer{}, fmt.Errorf("hunt %d: %w", v.Hunt.Number, ErrNoDifference)
	}
	if i >= len(with.Events) {
		// The run with the bug ended where the other went on: there is no event
		// of the learner's run to point at.
		return Answer{}, fmt.Errorf("hunt %d: the run with the bug ends where the run without it goes on (after event %d)", v.Hunt.Number, i)
	}
	return Answer{Bug: v.Bug, Seq: uint64(i) + 1, Event: with.Events[i]}, nil
}

// Submission is a learner's answer as given: a bug name and an event number.
type Submission struct {
	Bug   quirk.Quirk
	Event uint64
}

// eventPattern is an event number as a learner writes it: decimal digits, an
// optional leading '#' (the trace and the widget print "#150").
var eventPattern = regexp.MustCompile(`^#?[0-9]+$`)

// InputError is a mistake in what a learner gave — an unknown hunt or bug, an
// event that is not an event number. It is answered, and costs nothing.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErr(format string, a ...any) error { return &InputError{Msg: fmt.Sprintf(format, a...)} }

// ParseSubmission reads a bug name and an event number as a learner typed them.
// An unknown bug or a malformed event is an *InputError.
func ParseSubmission(bug, event string) (Submission, error) {
	bug, event = strings.TrimSpace(bug), strings.TrimSpace(event)
	var s Submission
	if bug == "" {
		return s, inputErr("which bug? give its catalog name (saccbook quirks lists them)")
	}
	q, ok := quirk.Lookup(strings.ToLower(bug))
	if !ok {
		return s, inputErr("bug %q is not in the catalog (saccbook quirks lists every name)", clip(bug))
	}
	if event == "" {
		return s, inputErr("which event? give the sequence number of the first event where the bug shows")
	}
	if strings.HasPrefix(event, "-") {
		return s, inputErr("event %q: events are numbered from 1", clip(event))
	}
	if !eventPattern.MatchString(event) {
		return s, inputErr("event %q: want an event's sequence number, such as 150", clip(event))
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(event, "#"), 10, 64)
	if err != nil {
		return s, inputErr("event %q: too large for any run", clip(event))
	}
	if n == 0 {
		return s, inputErr("event 0: events are numbered from 1")
	}
	return Submission{Bug: q, Event: n}, nil
}

// clip shortens what a learner typed for a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// EventVerdict is how a submitted event compares with the answer.
type EventVerdict int

const (
	EventRight EventVerdict = iota
	EventTooEarly
	EventTooLate
)

// Verdict is a graded submission.
type Verdict struct {
	BugRight bool
	Event    EventVerdict
	Answer   Answer // what was expected; shown to the learner only once solved
}

// Solved reports whether both parts are right.
func (v Verdict) Solved() bool { return v.BugRight && v.Event == EventRight }

// Message says which parts were right, without giving the answer away: for a
// wrong event, only whether it is too early or too late.
func (v Verdict) Message(s Submission) string {
	where := func() string {
		switch v.Event {
		case EventTooEarly:
			return fmt.Sprintf("event %d is too early: up to it, and at it, the run is the same as it would be without the bug", s.Event)
		default:
			return fmt.Sprintf("event %d is too late: the run has already parted from the run without the bug before it", s.Event)
		}
	}
	switch {
	case v.Solved():
		return fmt.Sprintf("Right: the bug is %s, and it first shows at event %d.", s.Bug, s.Event)
	case v.BugRight:
		return fmt.Sprintf("The bug is right (%s), the event is not: %s.", s.Bug, where())
	case v.Event == EventRight:
		return fmt.Sprintf("The event is right (%d), the bug is not: it is not %s.", s.Event, s.Bug)
	default:
		return fmt.Sprintf("Neither part is right: the bug is not %s, and %s.", s.Bug, where())
	}
}

// Grade replays the variant with and without its bug, deterministically, and
// checks both parts of a submission.
func (v Variant) Grade(s Submission) (Verdict, error) {
	a, err := v.Answer()
	if err != nil {
		return Verdict{}, err
	}
	return a.Judge(s), nil
}

// Judge checks both parts of a submission against the answer, without running
// anything: for a grader that has worked out a variant's answer once (with
// Variant.Answer) and grades many submissions against it.
func (a Answer) Judge(s Submission) Verdict {
	vd := Verdict{BugRight: s.Bug == a.Bug, Answer: a}
	switch {
	case s.Event < a.Seq:
		vd.Event = EventTooEarly
	case s.Event > a.Seq:
		vd.Event = EventTooLate
	}
	return vd
}
