package trace

// Comparing runs. A quirk is a deviation of one layer; switched on, it makes a run
// part from the same run without it at one event, and everything after follows from
// there. That event is what a learner is shown ("the runs part here") and what a
// graded bug hunt asks for, so it is defined once, here.

// Same reports whether a and b are the same architectural action: the same kind,
// at the same virtual time, with the same arguments. The program counter is not
// compared: a quirk's helper code runs the same operation from another source
// line, which is no difference the machine can see. Neither is the sequence
// number, which is the event's position in its run, not part of what happened.
func Same(a, b *Event) bool {
	return a.Kind == b.Kind && a.Time == b.Time && a.Args == b.Args
}

// FirstDifference compares two runs' event logs (each from its first event, in
// order) and returns the index of the first event at which they part, and true;
// or 0 and false when they are the same event for event. When one log is a prefix
// of the other, they part at the shorter one's length: one run did something
// more, the other had already ended. The event at the index is the first one
// whose sequence number is index+1.
func FirstDifference(a, b []Event) (int, bool) {
	n := min(len(a), len(b))
	for i := range n {
		if !Same(&a[i], &b[i]) {
			return i, true
		}
	}
	if len(a) != len(b) {
		return n, true
	}
	return 0, false
}
