package static_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/saccbook/saccbook/sacc/adversary"
	"github.com/saccbook/saccbook/web"
)

// TestAdversaryFixture writes what /api/v1/adversary answers along the solver's
// breaking schedule of missing-wmb (every prefix, the start and the win among
// them) and at the end of a game of wmb that the driver survives, for
// static/test/adversary.test.js.
func TestAdversaryFixture(t *testing.T) {
	var games []web.AdversaryGame
	l, _ := adversary.Lookup("missing-wmb")
	r := l.Solve(adversary.DefaultBound)
	for i := 0; i <= len(r.Schedule); i++ {
		g, err := web.AdversaryGameOf(l, adversary.FormatSchedule(r.Schedule[:i]))
		if err != nil {
			t.Fatal(err)
		}
		games = append(games, g)
	}
	held, _ := adversary.Lookup("wmb")
	var sched []int
	for {
		g, err := web.AdversaryGameOf(held, adversary.FormatSchedule(sched))
		if err != nil {
			t.Fatal(err)
		}
		if g.State.Over {
			games = append(games, g)
			break
		}
		sched = append(sched, len(g.State.Choices)) // the last choice: the device as late as it can be
	}
	data, err := json.MarshalIndent(games, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	checkFixture(t, "adversary.json", append(bytes.TrimSpace(data), '\n'))
}
