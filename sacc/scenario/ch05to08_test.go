package scenario

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/quirk"
)

// The stories of chapters 05–08: each case runs a scenario (seed 1, as `saccbook
// run` does by default) with the options a chapter tells the reader to try, and
// looks for the lines the chapter quotes. What their "Break it" boxes promise is
// checked with every other chapter's, in package chapters (TestBreakItBoxes).

// ch05to08Run runs a scenario by name with options, and returns its narrative.
func ch05to08Run(t *testing.T, name, opts string) string {
	t.Helper()
	s, ok := Find(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	o, err := ParseOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.New(machine.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := s.Run(m, &Env{Log: &log, Options: o}); err != nil {
		t.Fatalf("%s --set %q: %v\n%s", name, opts, err, log.String())
	}
	return log.String()
}

func TestChapters05to08Stories(t *testing.T) {
	cases := []struct {
		name, scenario, opts string
		want, notWant        []string
	}{
		// 05: the ring wraps three times; the full ring keeps a slot empty.
		{"rings", "05", "", []string{
			"doorbell 1: SQ_TAIL 0 -> 7, 7 descriptors in slots 0-6 (ring full)",
			"doorbell 2: SQ_TAIL 7 -> 6, 7 descriptors in slots 7, 0-5 (ring full)",
			"24 jobs in", "the SQ tail went round 3 times"}, []string{"never completed"}},
		{"rings size 4", "rings", "size=4", []string{"at most 3 jobs in flight", "12 jobs in"}, nil},
		{"rings size 16", "rings", "size=16", []string{"at most 15 jobs in flight", "48 jobs in"}, nil},
		{"cq-stall", "cq-stall", "", []string{
			"7 jobs done", "(CQ tail 7 + 1) mod 8 = CQ head 0", "stalled true",
			"the device resumes by itself, no new doorbell; the 3 waiting jobs completed"}, []string{"never completed"}},

		// 06: phases flip on every wrap; a stale entry is left alone.
		{"phases", "06", "", []string{
			"before any job, slot 0 holds req_id 0x0 phase 0",
			"lap 1: slot 0 phase 1, slot 1 phase 1, slot 2 phase 1, slot 3 phase 1, wrap: the device now writes phase 0",
			"slot 0 still holds lap 1's entry (req_id 0x0, status 0, phase 1)",
			"lap 3: slot 0 phase 1"}, []string{"reported done before"}},

		// 07: the barrier matters on arm64 only; syncs matter without coherency.
		{"barriers", "07", "", []string{"arm64, wmb on: 8 of 8 copies arrived",
			"x86 wmb on 8/8, x86 wmb off 8/8, arm64 wmb on 8/8, arm64 wmb off 0/8"}, []string{"overtook"}},
		{"barriers wmb=off", "barriers", "wmb=off", []string{"arm64, wmb off: 0 of 8 copies arrived",
			"copy 1 (MEMCPY req_id 0x0): the device read NOP req_id 0x0 length 0: the doorbell overtook the descriptor"}, nil},
		{"barriers x86 wmb=off", "barriers", "cpu=x86,wmb=off", []string{"x86, wmb off: 8 of 8 copies arrived"}, nil},
		{"dma-sync", "dma-sync", "", []string{
			"copy 1: sync for device off, sync for CPU on: the device wrote 0x00, the CPU reads 0x00, want 0xa0: wrong: the device read memory",
			"copy 2: sync for device on, sync for CPU off: the device wrote 0xa1, the CPU reads 0x00, want 0xa1: wrong: memory is right",
			"copy 3: sync for device on, sync for CPU on: the device wrote 0xa2, the CPU reads 0xa2, want 0xa2: right"}, nil},
		{"dma-sync coherent", "dma-sync", "coherent=yes", []string{"copy 1: sync for device off, sync for CPU on: the device wrote 0xa0, the CPU reads 0xa0, want 0xa0: right"}, []string{"wrong"}},

		// 08: interrupts against polling, the PBA, and the handler's order.
		{"interrupts", "08", "", []string{
			"MSI-X entry 0 (BAR1 0xc0002000): address 0xfee00000, data 0x30, control 0x0",
			"polling: the device posted 4896 ns after the doorbell",
			"interrupt: the device posted 4896 ns after the doorbell, the handler reaped it 4122 ns later (1 interrupt)",
			"PBA 0x1, IRQ_STATUS 0x1, the driver still waiting: true",
			"PBA now 0x0",
			"the read-back waited for the ack to land and the drain found the copy; 1 interrupts, 0 of them with nothing left to do"}, []string{"never completed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := ch05to08Run(t, tc.scenario, tc.opts)
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("the narrative lacks %q:\n%s", w, log)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(log, w) {
					t.Errorf("the narrative has %q:\n%s", w, log)
				}
			}
		})
	}
}

// TestChapters05to08Options: bad option values are refused with a sentence.
func TestChapters05to08Options(t *testing.T) {
	for _, c := range []struct{ scenario, opts string }{
		{"rings", "size=5"}, {"barriers", "wmb=maybe"}, {"barriers", "cpu=sparc"}, {"dma-sync", "coherent=perhaps"},
	} {
		s, _ := Find(c.scenario)
		o, _ := ParseOptions(c.opts)
		m, _ := machine.New(machine.Config{Seed: 1})
		if err := s.Run(m, &Env{Log: &bytes.Buffer{}, Options: o}); err == nil {
			t.Errorf("%s --set %s accepted", c.scenario, c.opts)
		}
	}
}

// TestChapter07SeedsAllFail: chapter 07 says that with the barrier missing on
// arm64 not one copy arrives for seeds 2 to 5 either.
func TestChapter07SeedsAllFail(t *testing.T) {
	s, _ := Find("07")
	for seed := uint64(2); seed <= 5; seed++ {
		m, err := machine.New(machine.Config{Seed: seed, Quirks: quirk.Set(0).With(quirk.MissingWMB)})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := s.Run(m, &Env{Log: &log}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "arm64, wmb on: 0 of 8 copies arrived") {
			t.Errorf("seed %d: %s", seed, log.String())
		}
	}
}

// resultLine is the shape of a measured result, as the browser's Results view
// (static/views/results.js) parses it from the run's narrative.
var resultLine = regexp.MustCompile(`^\s*(.+?)\s*:\s*(\d+) ns total,\s*(\d+) MB/s, latency mean\s*(\d+) ns max\s*(\d+) ns,\s*(\d+) doorbells,\s*(\d+) interrupts(?:,\s*(\d+) system calls)?\s*$`)

// TestResultLinesHaveTheChartedShape: every line of the capstone's and the
// sweep's narrative but the first (what was measured) is a result line the
// chart can read, so a change of wording cannot silently empty the chart.
func TestResultLinesHaveTheChartedShape(t *testing.T) {
	for _, name := range []string{"capstone", "capstone-sweep"} {
		s, _ := Find(name)
		m, err := machine.New(machine.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := s.Run(m, &Env{Log: &log}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(log.String(), "\n"), "\n")
		if len(lines) < 3 {
			t.Fatalf("%s: %d lines", name, len(lines))
		}
		for _, l := range lines[1:] {
			if !resultLine.MatchString(l) {
				t.Errorf("%s: %q is not a result line the chart can read", name, l)
			}
		}
	}
}
