package kernel

// Work is a work item (struct work_struct): a function the kernel runs later, in
// process context, where it may sleep, poll a register with a deadline and take
// interrupts, which an interrupt handler may not. A handler that finds work too
// big for interrupt context (resetting a device, say) queues it (queue_work) and
// returns.
type Work struct {
	fn     func()
	queued bool
}

// InitWork is INIT_WORK: w runs fn when it is next run.
func InitWork(w *Work, fn func()) { *w = Work{fn: fn} }

// Pending reports whether w is queued and has not run yet (work_pending).
func (w *Work) Pending() bool { return w.queued }

// QueueWork is queue_work on the system workqueue: w runs once, at the next point
// the kernel runs process context, which on this single CPU is as soon as the
// interrupts being taken now have returned. It reports false if w was already
// queued (the two requests are one run, as in Linux).
func (k *Kernel) QueueWork(w *Work) bool {
	if w.queued || w.fn == nil {
		return false
	}
	w.queued = true
	k.work = append(k.work, w)
	return true
}

// CancelWork is cancel_work: w does not run if it has not started.
func (k *Kernel) CancelWork(w *Work) bool {
	for i, q := range k.work {
		if q == w {
			k.work = append(k.work[:i], k.work[i+1:]...)
			w.queued = false
			return true
		}
	}
	return false
}

// runWork is the kernel worker: it runs every queued item in the order queued,
// items queued meanwhile included. It is called when the CPU returns from
// interrupts to process context; a work item's own operations take interrupts
// too, so it does not run again inside itself.
func (k *Kernel) runWork() {
	if k.inWork {
		return
	}
	k.inWork = true
	defer func() { k.inWork = false }()
	for len(k.work) > 0 {
		w := k.work[0]
		k.work = k.work[1:]
		w.queued = false
		w.fn()
	}
}
