package adversary

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultBound is how many choices the solver looks ahead by default: every
// level's shortest break is well inside it, and every correct level runs out of
// new states before it.
const DefaultBound = 60

// Result is what the solver found.
type Result struct {
	Level    *Level
	Bound    int
	States   int   // distinct states explored
	Schedule []int // the shortest breaking schedule, 1-based choices; nil if none
	Why      string
	// Exhausted: the search ran out of new states before the bound, so no
	// schedule of any length breaks the level.
	Exhausted bool
	Depth     int // the longest schedule the search needed to reach every state it saw
}

// Broken says whether the solver broke the level.
func (r *Result) Broken() bool { return r.Schedule != nil }

// Solve explores every schedule of at most bound choices, breadth first, each
// distinct state once, and returns the shortest that breaks the driver's
// invariant. Breadth first makes the schedule found a shortest one; the state
// set makes the search finish on drivers that poll in a loop.
func (l *Level) Solve(bound int) *Result {
	type node struct {
		s      State
		parent int
		choice int // 1-based, in the parent's choices
		depth  int
	}
	r := &Result{Level: l, Bound: bound}
	start := l.Start()
	nodes := []node{{s: start, parent: -1}}
	seen := map[State]bool{start: true}
	path := func(i int) []int {
		var p []int
		for ; nodes[i].parent >= 0; i = nodes[i].parent {
			p = append(p, nodes[i].choice)
		}
		for a, b := 0, len(p)-1; a < b; a, b = a+1, b-1 {
			p[a], p[b] = p[b], p[a]
		}
		return p
	}
	cut := false // some state at the bound still had choices
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		r.Depth = max(r.Depth, n.depth)
		if over, why := l.Over(&n.s); over {
			if why != "" {
				r.States = len(seen)
				r.Schedule, r.Why = path(i), why
				if r.Schedule == nil {
					r.Schedule = []int{}
				}
				return r
			}
			continue
		}
		if n.depth == bound {
			cut = true
			continue
		}
		for k, c := range l.Choices(&n.s) {
			t := n.s
			l.Apply(&t, c)
			if seen[t] {
				continue
			}
			seen[t] = true
			nodes = append(nodes, node{s: t, parent: i, choice: k + 1, depth: n.depth + 1})
		}
	}
	r.States = len(seen)
	r.Exhausted = !cut
	return r
}

// Summary is the solver's answer in a sentence.
func (r *Result) Summary() string {
	if r.Broken() {
		return fmt.Sprintf("broken in %d choices (%d states explored): %s", len(r.Schedule), r.States, r.Why)
	}
	s := fmt.Sprintf("no schedule of ≤ %d choices breaks it (%d states explored)", r.Bound, r.States)
	if r.Exhausted {
		s += fmt.Sprintf("; every reachable state is within %d choices, so no schedule of any length does", r.Depth)
	}
	return s
}

// Step is one choice of a replayed schedule and the state after it.
type Step struct {
	Choice Choice
	After  State
}

// Replay plays schedule (1-based choices) from the level's start. It stops with
// an error at a choice that is not open, or at one made after the game is over.
func (l *Level) Replay(schedule []int) (State, []Step, error) {
	s := l.Start()
	var steps []Step
	for i, k := range schedule {
		if over, _ := l.Over(&s); over {
			return s, steps, fmt.Errorf("choice %d of the schedule: the game was over after %d choices", i+1, i)
		}
		cs := l.Choices(&s)
		if k < 1 || k > len(cs) {
			return s, steps, fmt.Errorf("choice %d of the schedule is %d, but %s", i+1, k, openText(len(cs)))
		}
		l.Apply(&s, cs[k-1])
		steps = append(steps, Step{Choice: cs[k-1], After: s})
	}
	return s, steps, nil
}

// openText says how many choices are open.
func openText(n int) string {
	if n == 1 {
		return "only choice 1 is open there"
	}
	return fmt.Sprintf("%d choices are open there (1 to %d)", n, n)
}

// MaxSchedule is the longest schedule a learner may send: far beyond any
// level's bound, short enough that a request cannot make the server work long.
const MaxSchedule = 1000

// ErrSchedule marks a schedule that does not parse.
var ErrSchedule = errors.New("malformed schedule")

// ParseSchedule reads a schedule: choice numbers from 1, separated by commas,
// spaces or new lines ("2,1,1" or "2 1 1"). An empty text is the empty schedule.
func ParseSchedule(text string) ([]int, error) {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) > MaxSchedule {
		return nil, fmt.Errorf("%w: %d choices, at most %d", ErrSchedule, len(fields), MaxSchedule)
	}
	out := make([]int, 0, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 99 {
			return nil, fmt.Errorf("%w: choice %d is %.12q, want a number from 1 to 99", ErrSchedule, i+1, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatSchedule writes a schedule as ParseSchedule reads it.
func FormatSchedule(schedule []int) string {
	parts := make([]string, len(schedule))
	for i, k := range schedule {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, ",")
}
