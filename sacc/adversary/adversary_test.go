package adversary

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/quirk"
)

// TestSolverAgreesWithLevels: the solver breaks every level that says it is
// breakable and proves every other one, and a break replayed wins.
func TestSolverAgreesWithLevels(t *testing.T) {
	for _, l := range Levels() {
		t0 := time.Now()
		r := l.Solve(DefaultBound)
		t.Logf("level %2d %-22s %6d states %8s  %s", l.Number, l.Name, r.States, time.Since(t0).Round(time.Microsecond), r.Summary())
		if r.Broken() != l.Breakable {
			t.Errorf("level %d %s says breakable=%v; the solver: %s", l.Number, l.Name, l.Breakable, r.Summary())
			continue
		}
		if !l.Breakable {
			if !r.Exhausted {
				t.Errorf("level %d %s: the search did not run out of states within %d choices", l.Number, l.Name, DefaultBound)
			}
			continue
		}
		s, steps, err := l.Replay(r.Schedule)
		if err != nil {
			t.Fatalf("level %d: replay %v: %v", l.Number, r.Schedule, err)
		}
		over, why := l.Over(&s)
		if !over || why != r.Why || len(steps) != len(r.Schedule) {
			t.Errorf("level %d: replay of %v ends over=%v why=%q, want the solver's %q", l.Number, r.Schedule, over, why, r.Why)
		}
		v := l.ViewOf(&s, len(steps))
		if !v.Won || !v.Over || len(v.Choices) != 0 {
			t.Errorf("level %d: the view after the break: won=%v over=%v choices=%v", l.Number, v.Won, v.Over, v.Choices)
		}
		// One choice short of the break is not yet a win.
		s, _, _ = l.Replay(r.Schedule[:len(r.Schedule)-1])
		if over, _ := l.Over(&s); over {
			t.Errorf("level %d: the game is over before the schedule's last choice", l.Number)
		}
	}
}

func TestLevelsAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	broken, correct := 0, 0
	for i, l := range Levels() {
		if l.Number != i+1 || l.Name == "" || l.Title == "" || l.Story == "" || l.Invariant == "" || l.Lesson == "" || l.Chapter == "" {
			t.Errorf("level %d %q lacks a number, name, title, story, invariant, lesson or chapter", i+1, l.Name)
		}
		if names[l.Name] {
			t.Errorf("two levels named %s", l.Name)
		}
		names[l.Name] = true
		if l.Quirk != "" {
			if _, ok := quirk.Lookup(l.Quirk); !ok {
				t.Errorf("level %s: no quirk %q", l.Name, l.Quirk)
			}
		}
		if len(l.Lines) > maxLines || len(l.Cells) > maxCells || len(l.Locals) > maxRegs || len(l.Device) == 0 {
			t.Errorf("level %s is too big for the model's state", l.Name)
		}
		last := l.Lines[len(l.Lines)-1].Op
		if last != OpEnd && last != OpReturn && last != OpGoto {
			t.Errorf("level %s: the driver runs off its last line", l.Name)
		}
		if got, err := Lookup(l.Name); err != nil || got != l {
			t.Errorf("Lookup(%q) = %v, %v", l.Name, got, err)
		}
		if l.Breakable {
			broken++
		} else {
			correct++
		}
	}
	if len(Levels()) < 8 || correct < 3 || broken < 3 {
		t.Errorf("%d levels, %d correct, %d breakable", len(Levels()), correct, broken)
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"0", "99", "no-such-level", ""} {
		if _, err := Lookup(name); err == nil || !strings.Contains(err.Error(), "no adversary level") {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
	if l, err := Lookup("1"); err != nil || l.Name != "missing-wmb" {
		t.Errorf("Lookup(1) = %v, %v", l, err)
	}
}

func TestParseSchedule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{{"2,1,1", "2,1,1"}, {" 2 1\n1 ", "2,1,1"}, {"", ""}, {"3,,4", "3,4"}} {
		got, err := ParseSchedule(c.in)
		if err != nil || FormatSchedule(got) != c.want {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"1,x", "0", "-1", "1,100", "1.5", strings.Repeat("1,", MaxSchedule+1)} {
		if _, err := ParseSchedule(in); !errors.Is(err, ErrSchedule) {
			t.Errorf("ParseSchedule(%.20q): %v, want a malformed schedule", in, err)
		}
	}
}

func TestReplayRefusesClosedChoices(t *testing.T) {
	l, _ := Lookup("missing-wmb")
	if _, _, err := l.Replay([]int{5}); err == nil || !strings.Contains(err.Error(), "choice 1 of the schedule is 5") {
		t.Errorf("a choice beyond the open ones: %v", err)
	}
	r := l.Solve(DefaultBound)
	if _, _, err := l.Replay(append(r.Schedule, 1)); err == nil || !strings.Contains(err.Error(), "the game was over") {
		t.Errorf("a choice after the break: %v", err)
	}
}

// TestBoundCuts: a bound shorter than the shortest break finds none, and says
// the search was cut rather than exhausted.
func TestBoundCuts(t *testing.T) {
	l, _ := Lookup("missing-wmb")
	full := l.Solve(DefaultBound)
	r := l.Solve(len(full.Schedule) - 1)
	if r.Broken() || r.Exhausted {
		t.Errorf("bound %d: %s", len(full.Schedule)-1, r.Summary())
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"2,1,1", "", "1 2 3", "x", "0,1", "99,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sched, err := ParseSchedule(text)
		if err != nil {
			if !errors.Is(err, ErrSchedule) {
				t.Fatalf("ParseSchedule(%q): an error that is not ErrSchedule: %v", text, err)
			}
			return
		}
		again, err := ParseSchedule(FormatSchedule(sched))
		if err != nil || FormatSchedule(again) != FormatSchedule(sched) {
			t.Fatalf("round trip of %q: %v, %v", text, again, err)
		}
		for _, l := range Levels() {
			s, steps, err := l.Replay(sched) // must not panic, whatever the schedule
			if err == nil && len(steps) != len(sched) {
				t.Fatalf("level %s: %d steps for %d choices", l.Name, len(steps), len(sched))
			}
			l.ViewOf(&s, len(steps))
		}
	})
}

func TestRegisterNamesAreTheDatasheets(t *testing.T) {
	for r, want := range map[Register]string{SQTail: "SQ_TAIL", IRQAck: "IRQ_ACK", IRQStatus: "IRQ_STATUS"} {
		if got := RegisterName(r); got != want {
			t.Errorf("register %d: %q, want %q", r, got, want)
		}
	}
}
