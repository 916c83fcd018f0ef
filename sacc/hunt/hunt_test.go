package hunt

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/quirk"
)

var testKey = bytes.Repeat([]byte{0x42}, 32)

func sameVariant(a, b Variant) bool {
	return a.Hunt == b.Hunt && a.Index == b.Index && a.Bug == b.Bug && a.Seed == b.Seed &&
		maps.Equal(a.Options, b.Options) && slices.Equal(a.Costs, b.Costs)
}

// TestVariantIsAFunctionOfKeyLearnerAndHunt: the same inputs give the same
// variant, and the variant's fields are those of the index it decodes.
func TestVariantIsAFunctionOfKeyLearnerAndHunt(t *testing.T) {
	for _, h := range Catalogue() {
		for _, learner := range []string{"alice", "bob", "", "a very long learner id with spaces"} {
			a, b := h.For(testKey, learner), h.For(bytes.Clone(testKey), learner)
			if !sameVariant(a, b) {
				t.Errorf("hunt %d, %q: two variants %v and %v", h.Number, learner, a.Describe(), b.Describe())
			}
			if !sameVariant(a, h.At(a.Index)) {
				t.Errorf("hunt %d, %q: For is not At(%d)", h.Number, learner, a.Index)
			}
			if !slices.Contains(h.Candidates, a.Bug) {
				t.Errorf("hunt %d: bug %s is no candidate", h.Number, a.Bug)
			}
		}
	}
}

// TestDigestSeparatesItsInputs: changing the key, the learner or the hunt
// changes the digest, and the fields cannot run into each other.
func TestDigestSeparatesItsInputs(t *testing.T) {
	base := Digest(testKey, "a", 12)
	other := bytes.Repeat([]byte{0x43}, 32)
	for name, d := range map[string][32]byte{
		"key":     Digest(other, "a", 12),
		"learner": Digest(testKey, "b", 12),
		"hunt":    Digest(testKey, "a", 13),
		"shifted": Digest(testKey, "a1", 2),
	} {
		if d == base {
			t.Errorf("changing the %s does not change the digest", name)
		}
	}
}

// TestVariantSpread: over 100 learner ids, each hunt hands out many different
// variants, and every candidate of a hunt is somebody's bug. The figures are
// logged (go test -v -run Spread -answers prints how many distinct answers
// they have as well, which takes half a minute).
func TestVariantSpread(t *testing.T) {
	const learners = 100
	for _, h := range Catalogue() {
		variants, bugs := map[uint64]int{}, map[quirk.Quirk]int{}
		for i := range learners {
			v := h.For(testKey, fmt.Sprintf("learner-%03d", i))
			variants[v.Index]++
			bugs[v.Bug]++
		}
		space := h.Space()
		answers := ""
		if *countAnswers {
			answers = fmt.Sprintf("; %d distinct answers", distinctAnswers(t, h, variants))
		}
		t.Logf("hunt %2d: %3d variants in all; 100 learners got %3d distinct%s, bugs %v", h.Number, space, len(variants), answers, spread(h, bugs))
		if want := min(space, learners) / 2; uint64(len(variants)) < want {
			t.Errorf("hunt %d: %d distinct variants for 100 learners, want at least %d", h.Number, len(variants), want)
		}
		for _, q := range h.Candidates {
			if bugs[q] == 0 {
				t.Errorf("hunt %d: no learner of 100 gets %s", h.Number, q)
			}
		}
	}
}

var countAnswers = flag.Bool("answers", false, "TestVariantSpread: count the distinct answers of the variants too")

// distinctAnswers is how many different answers (bug and event) the variants
// have: two variants that differ only in timing may share one, and then two
// learners could share it too.
func distinctAnswers(t *testing.T, h *Hunt, variants map[uint64]int) int {
	t.Helper()
	seen := map[Submission]bool{}
	for i := range variants {
		a, err := h.At(i).Answer()
		if err != nil {
			t.Fatalf("hunt %d variant %d: %v", h.Number, i, err)
		}
		seen[Submission{Bug: a.Bug, Event: a.Seq}] = true
	}
	return len(seen)
}

func spread(h *Hunt, bugs map[quirk.Quirk]int) string {
	var parts []string
	for _, q := range h.Candidates {
		parts = append(parts, fmt.Sprintf("%s %d", q, bugs[q]))
	}
	return strings.Join(parts, ", ")
}

// TestGrading, for every hunt and one learner's variant: the answer is
// accepted; a wrong bug, an early and a late event are each refused for what
// they got wrong; and no refusal states the expected event.
func TestGrading(t *testing.T) {
	for _, h := range Catalogue() {
		t.Run(strconv.Itoa(h.Number), func(t *testing.T) {
			t.Parallel()
			v := h.For(testKey, "grader")
			a, err := v.Answer()
			if err != nil {
				t.Fatal(err)
			}
			if a.Bug != v.Bug || a.Seq == 0 || a.Event.Seq != a.Seq {
				t.Fatalf("answer %+v for bug %s", a, v.Bug)
			}
			right := Submission{Bug: a.Bug, Event: a.Seq}
			if vd := a.Judge(right); !vd.Solved() || !strings.HasPrefix(vd.Message(right), "Right") {
				t.Errorf("the answer is refused: %+v %q", vd, vd.Message(right))
			}
			wrongBug := quirk.PhaseFirst
			if a.Bug == wrongBug {
				wrongBug = quirk.NoCQHead
			}
			seqWord := regexp.MustCompile(`\b` + strconv.FormatUint(a.Seq, 10) + `\b`)
			for _, c := range []struct {
				s        Submission
				bugRight bool
				event    EventVerdict
				says     string
			}{
				{Submission{wrongBug, a.Seq}, false, EventRight, "the bug is not"},
				{Submission{a.Bug, a.Seq - 1}, true, EventTooEarly, "too early"},
				{Submission{a.Bug, a.Seq + 1}, true, EventTooLate, "too late"},
				{Submission{wrongBug, a.Seq + 100}, false, EventTooLate, "Neither"},
			} {
				if c.s.Event == 0 {
					continue // the answer is event 1: nothing is earlier
				}
				vd := a.Judge(c.s)
				msg := vd.Message(c.s)
				if vd.Solved() || vd.BugRight != c.bugRight || vd.Event != c.event || !strings.Contains(msg, c.says) {
					t.Errorf("%+v: verdict %+v, %q", c.s, vd, msg)
				}
				if c.event != EventRight && seqWord.MatchString(msg) {
					t.Errorf("%+v: the message gives the event away: %q", c.s, msg)
				}
			}
		})
	}
}

// TestGradeReplays grades by replaying both runs: the same verdict as judging
// the answer, every time; and it says how long a grading takes.
func TestGradeReplays(t *testing.T) {
	h, _ := Find(1)
	v := h.For(testKey, "replay")
	a, err := v.Answer()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 3 {
		vd, err := v.Grade(Submission{Bug: a.Bug, Event: a.Seq})
		if err != nil || !vd.Solved() || vd.Answer.Seq != a.Seq {
			t.Fatalf("grade: %+v %v", vd, err)
		}
	}
	t.Logf("grading hunt 1 (two runs): %v each", time.Since(start)/3)
}

func TestParseSubmission(t *testing.T) {
	for _, c := range []struct {
		bug, event string
		want       Submission
		err        string
	}{
		{"missing-wmb", "150", Submission{quirk.MissingWMB, 150}, ""},
		{" Missing-WMB ", " #150 ", Submission{quirk.MissingWMB, 150}, ""},
		{"missing-wmb", "abc", Submission{}, "want an event's sequence number"},
		{"missing-wmb", "-3", Submission{}, "numbered from 1"},
		{"missing-wmb", "0", Submission{}, "numbered from 1"},
		{"missing-wmb", "1.5", Submission{}, "want an event's sequence number"},
		{"missing-wmb", "99999999999999999999999", Submission{}, "too large"},
		{"missing-wmb", "", Submission{}, "which event"},
		{"", "150", Submission{}, "which bug"},
		{"no-such-bug", "150", Submission{}, "not in the catalog"},
	} {
		got, err := ParseSubmission(c.bug, c.event)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("%q %q: %+v, %v", c.bug, c.event, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q %q: error %v, want one with %q", c.bug, c.event, err, c.err)
		}
	}
}

// FuzzParseSubmission: whatever a learner types, the parser answers with a
// submission or an error, never a panic; an accepted one names a catalog bug
// and an event from 1.
func FuzzParseSubmission(f *testing.F) {
	for _, s := range [][2]string{{"missing-wmb", "150"}, {"x", "-1"}, {"", ""}, {"no-cq-head", "#7"}, {"NO-CQ-HEAD", "18446744073709551615"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, bug, event string) {
		s, err := ParseSubmission(bug, event)
		if err != nil {
			if s.Event != 0 {
				t.Fatalf("error %v with event %d", err, s.Event)
			}
			return
		}
		if s.Event == 0 || s.Bug.Info().Name == "unknown" {
			t.Fatalf("accepted %+v", s)
		}
	})
}
