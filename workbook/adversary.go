package workbook

import (
	"fmt"
	"time"
)

// The adversary levels' records in the progress file (package sacc/adversary
// has the levels): a level is won when the learner broke its driver in play,
// and proved when they watched the solver search every schedule of it.

// AdversaryStatus is where a learner is with a level.
type AdversaryStatus string

const (
	AdversaryNotTried AdversaryStatus = "not tried"
	AdversaryTried    AdversaryStatus = "tried"  // played, not broken (yet)
	AdversaryWon      AdversaryStatus = "won"    // the learner broke the driver
	AdversaryProved   AdversaryStatus = "proved" // the solver showed no schedule breaks it
)

// AdversaryProgress is one level's record.
type AdversaryProgress struct {
	Status      AdversaryStatus `json:"status"`
	Plays       int             `json:"plays,omitempty"`        // games played to their end
	Choices     int             `json:"choices,omitempty"`      // the shortest winning schedule the learner played
	Won         string          `json:"won,omitempty"`          // when first won, RFC 3339
	SolverShown bool            `json:"solver_shown,omitempty"` // saccbook adversary solve ran on it
}

// AdversaryOf is level name's record without creating one.
func (p *Progress) AdversaryOf(name string) AdversaryProgress {
	if a := p.Adversary[name]; a != nil {
		return *a
	}
	return AdversaryProgress{Status: AdversaryNotTried}
}

func (p *Progress) adversary(name string) *AdversaryProgress {
	a := p.Adversary[name]
	if a == nil {
		a = &AdversaryProgress{Status: AdversaryNotTried}
		if p.Adversary == nil {
			p.Adversary = map[string]*AdversaryProgress{}
		}
		p.Adversary[name] = a
	}
	return a
}

// RecordPlay notes a game of level name played to its end: won when the
// learner broke the driver, in choices choices. A won level stays won.
func (p *Progress) RecordPlay(name string, won bool, choices int, now time.Time) {
	a := p.adversary(name)
	a.Plays++
	if !won {
		if a.Status == AdversaryNotTried {
			a.Status = AdversaryTried
		}
		return
	}
	if a.Status != AdversaryWon {
		a.Status, a.Won = AdversaryWon, now.UTC().Format(time.RFC3339)
	}
	if a.Choices == 0 || choices < a.Choices {
		a.Choices = choices
	}
}

// RecordSolve notes that the solver ran on level name; proved says it found
// no breaking schedule. A level the learner won stays won.
func (p *Progress) RecordSolve(name string, proved bool) {
	a := p.adversary(name)
	a.SolverShown = true
	switch {
	case proved && a.Status != AdversaryWon:
		a.Status = AdversaryProved
	case a.Status == AdversaryNotTried:
		a.Status = AdversaryTried
	}
}

// checkAdversary rejects level records saccbook cannot have written.
func (p *Progress) checkAdversary() error {
	for k, a := range p.Adversary {
		if k == "" || a == nil {
			return fmt.Errorf("adversary: %q is not a level's record", k)
		}
		switch a.Status {
		case AdversaryNotTried, AdversaryTried, AdversaryWon, AdversaryProved:
		default:
			return fmt.Errorf("adversary level %s: status %q", k, a.Status)
		}
		if a.Plays < 0 || a.Choices < 0 {
			return fmt.Errorf("adversary level %s: %d plays, %d choices", k, a.Plays, a.Choices)
		}
	}
	return nil
}
