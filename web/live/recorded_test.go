package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recordedEvents is a learner's run as a record holds it: n events, the CPU's
// with the learner's line.
func recordedEvents(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"seq":%d,"t":%d,"kind":"pci_cfg_read","side":"bus","args":{},"text":"","src":"exercises/01-find-device/exercise.go:%d"}`, i+1, 10*i, 40+i%3))
	}
	return out
}

func TestHelloForARecordedRunReplaysTheRecord(t *testing.T) {
	asked := ""
	s := newServer(t, serverOpt{opts: Options{Recorded: func(id string) (*Recording, error) {
		asked = id
		if id != "01-find-device" {
			return nil, errors.New("no recorded run of " + id)
		}
		return &Recording{Events: recordedEvents(700), FailSeq: 650, Error: "FindSACC returned an error", Log: []string{"FAIL TestFindsTheSACC"}}, nil
	}}})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, map[string]any{"type": "hello", "v": 1, "run": "recorded", "exercise": "01-find-device"})
	r := c.readRun(t)
	if asked != "01-find-device" {
		t.Fatalf("the hub asked for the record of %q", asked)
	}
	var w struct {
		Run      string `json:"run"`
		Exercise string `json:"exercise"`
		FailSeq  uint64 `json:"fail_seq"`
	}
	if err := json.Unmarshal(r.welcome.Raw, &w); err != nil || w.Run != "recorded" || w.Exercise != "01-find-device" || w.FailSeq != 650 {
		t.Errorf("welcome %s: want run recorded, the exercise and fail_seq 650", r.welcome.Raw)
	}
	if last := checkContiguous(t, 1, r.batches); last != 700 || r.end.Seq != 700 {
		t.Errorf("replayed events up to %d, end at %d; want 700", last, r.end.Seq)
	}
	var ev event
	if err := json.Unmarshal(r.batches[0].Events[0], &ev); err != nil || ev.Src != "exercises/01-find-device/exercise.go:40" {
		t.Errorf("first event %s: the learner's line is lost", r.batches[0].Events[0])
	}
	if r.end.Error != "FindSACC returned an error" || len(r.end.Log) != 1 {
		t.Errorf("end %s: want the failure message and the tests", r.end.Raw)
	}

	c.send(t, map[string]any{"type": "hello", "v": 1, "run": "recorded", "exercise": "99-nothing"})
	if m := c.expect(t, "error"); m.Code != codeBadRequest || !strings.Contains(m.Message, "no recorded run of 99-nothing") {
		t.Errorf("hello for an exercise without a record: %s", m.Raw)
	}
	c.send(t, map[string]any{"type": "hello", "v": 1, "run": "elsewhere"})
	if m := c.expect(t, "error"); m.Code != codeBadRequest {
		t.Errorf("hello with an unknown run: %s", m.Raw)
	}
}

func TestHelloForARecordedRunWithoutRecords(t *testing.T) {
	s := newServer(t, serverOpt{})
	c := s.dial(t, "/ws/session", dialOpt{})
	defer c.close()
	c.send(t, map[string]any{"type": "hello", "v": 1, "run": "recorded", "exercise": "01-find-device"})
	if m := c.expect(t, "error"); m.Code != codeBadRequest || !strings.Contains(m.Message, "no recorded runs") {
		t.Errorf("hello for a recorded run on a server without records: %s", m.Raw)
	}
}
