package classroom

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/saccbook/saccbook/web/live"
	"github.com/saccbook/saccbook/workbook"
)

// maxSharedEvents is the most events a shared run may hold: what a record
// holds at most (exercises/internal/check keeps the 20 000 ending at the
// failure).
const maxSharedEvents = 20000

// recordingOf reads a shared run record as the live hub replays it, checking
// that it is one: the exercise it names, events that are JSON objects.
func recordingOf(exercise string, data []byte) (*live.Recording, error) {
	if exercise == "" || len(exercise) > maxField {
		return nil, errors.New("a shared run names its exercise")
	}
	var r workbook.RunRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the shared run of %s: %w", exercise, err)
	}
	if r.Exercise != exercise {
		return nil, fmt.Errorf("the shared run of %s is a record of %q", exercise, r.Exercise)
	}
	if len(r.Events) > maxSharedEvents {
		return nil, fmt.Errorf("the shared run of %s has %d events, over %d", exercise, len(r.Events), maxSharedEvents)
	}
	for i, ev := range r.Events {
		if len(ev) == 0 || ev[0] != '{' {
			return nil, fmt.Errorf("the shared run of %s: event %d is not an object", exercise, i)
		}
	}
	rec := &live.Recording{Events: r.Events}
	if r.Failed {
		rec.FailSeq, rec.Error = r.FailSeq, r.Test+": "+r.Message
	}
	for _, t := range r.Tests {
		verdict := "ok  "
		if t.Failed {
			verdict = "FAIL"
		}
		rec.Log = append(rec.Log, verdict+" "+t.Name)
	}
	return rec, nil
}
