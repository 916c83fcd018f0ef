package scenario

import (
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

// ch14Run runs a scenario (seed 1) and returns its narrative and its events.
func ch14Run(t *testing.T, name string, opts map[string]string) (string, []trace.Event) {
	t.Helper()
	s, ok := Find(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	m, err := machine.New(machine.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf trace.Buffer
	m.Tracer().Attach(&buf)
	var log strings.Builder
	if err := s.Run(m, &Env{Log: &log, Options: opts}); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, opts, err, log.String())
	}
	return log.String(), buf.Events
}

// TestChapter14FencesSpeakOnlyForFinishedWork: with a slot per point, no wait
// returns before its jobs are in place, and CQ_HEAD_DB never hands back a slot
// whose completion the device has not posted yet; with one shared slot the
// fences run ahead.
func TestChapter14FencesSpeakOnlyForFinishedWork(t *testing.T) {
	log, evs := ch14Run(t, "gpu-fences", nil)
	if strings.Contains(log, "ran ahead") || !strings.Contains(log, "jobs 1 to 8 are in place") ||
		!strings.Contains(log, "CQ slot 13 (job 9) says status 2") || !strings.Contains(log, "0 system calls") {
		t.Errorf("gpu-fences told another story:\n%s", log)
	}
	posted := 0
	for _, ev := range evs {
		switch ev.Kind {
		case trace.CQPost:
			posted++
		case trace.CQHeadWrite:
			// Slots handed back so far, on this first lap of a 16-entry CQ.
			if freed := int(ev.Args[0]); freed > posted {
				t.Errorf("t=%d: CQ_HEAD_DB handed back %d slots, but only %d completions were posted", ev.Time, freed, posted)
			}
		}
	}
	log, _ = ch14Run(t, "gpu-fences", map[string]string{"slots": "shared"})
	if !strings.Contains(log, "wait(1): the fence page says 4") || !strings.Contains(log, "the fence ran ahead of the work") {
		t.Errorf("with one shared slot the fences did not run ahead:\n%s", log)
	}
}

// TestChapter14OneDomain: chat reaches train's weights only when it tries IOVAs
// it was never given, and then through the device, with a status OK.
func TestChapter14OneDomain(t *testing.T) {
	log, evs := ch14Run(t, "gpu-contexts", nil)
	if strings.Contains(log, "peek:") || len(ch14Find(evs, trace.IOMMUFault)) != 0 {
		t.Errorf("without peek, chat tried addresses it was not given:\n%s", log)
	}
	if !strings.Contains(log, "the same user address as train's weights, is another page") {
		t.Errorf("the two processes' pages are not told apart:\n%s", log)
	}
	log, evs = ch14Run(t, "gpu-contexts", map[string]string{"peek": "on"})
	if !strings.Contains(log, `chat read "weights of train`) {
		t.Errorf("with peek=on chat did not find train's weights:\n%s", log)
	}
	if n := len(ch14Find(evs, trace.IOMMUFault)); n == 0 || !strings.Contains(log, "failed with status 2") {
		t.Errorf("with peek=on, %d IOMMU faults:\n%s", n, log)
	}
}

func ch14Find(evs []trace.Event, k trace.Kind) []trace.Event {
	var out []trace.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}
