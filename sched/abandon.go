package sched

import (
	"fmt"
	"sync/atomic"
)

// Abandon: failing a task that has not finished, at once.
//
//  1. Abandon stores the task's error and marks its deps word abandoned
//     (depsAbandoned) with one CAS on the task's generation: a task that
//     completed, was abandoned or whose slot was reused meanwhile is left
//     alone.
//  2. It records the error and fails the dependents listed so far
//     (ErrDepFailed); a dependent that links later reads the stored error.
//  3. It fails the parent (ErrChildFailed), pays every thread's debt (the
//     thread stuck in the kernel may owe the parent decrements, debt.go),
//     and decrements the parent's open count; then wakes the waiters.
//  4. A kernel that is running runs on and its result is discarded; one
//     that has not started never runs (run sees the mark). The slot stays
//     reserved until the kernel returns: complete then finds the mark and
//     releases nothing twice, so no ID is reused under a running kernel.

// Abandon fails a task that has not finished, at once: its waiters,
// dependents and parent see a *TaskError wrapping err and ErrAbandoned. If
// its kernel has not started it never runs; if it is running (a kernel that
// hangs, a GPU job that never completes), it runs on, its result is
// discarded, and its pool slot is reused only once it returns. Abandon is the
// way out of a kernel that never finishes: WaitFor a task with a time-out,
// then Abandon it. It returns an error if id finished or was abandoned.
// Children of an abandoned task still run; the parent no longer waits.
func (s *Scheduler) Abandon(id TaskID, err error) error {
	if err := s.checkID(id, "Abandon"); err != nil {
		return err
	}
	if id == NoTask {
		return fmt.Errorf("sched: Abandon: no task")
	}
	if err == nil {
		err = ErrAbandoned
	} else {
		err = fmt.Errorf("%w: %w", ErrAbandoned, err)
	}
	if !s.abandon(id, err) {
		return fmt.Errorf("sched: Abandon %v: task already finished or abandoned", id)
	}
	return nil
}

// abandon is Abandon with the task's error given whole; it reports whether
// it failed the task (false: it had finished or was abandoned).
func (s *Scheduler) abandon(id TaskID, err error) bool {
	idx := id.index()
	sl := &s.slots[idx]
	want := uint64(id.gen()) << 32
	for {
		h := sl.deps.Load()
		if h&^0xffffffff != want || uint32(h) >= depsAbandoned {
			return false
		}
		// Read before the CAS: once it succeeds the kernel may return and
		// the slot be reused at once. If the slot was reused before these
		// loads, the CAS fails (the generation moved) and they are dropped.
		p := atomic.LoadUint32(&sl.parent)
		kid := KernelID(atomic.LoadUint32(&sl.kid))
		te := &TaskError{Task: id, Err: err, Kernel: kid}
		if k := s.reg.Lookup(kid); k != nil {
			te.Name = k.Name
		}
		sl.err.Store(te) // before the CAS: late dependents read it
		if sl.deps.CompareAndSwap(h, want|depsAbandoned) {
			s.recordFailure(te)
			for d := uint32(h); d != 0; {
				next := s.slots[d-1].depNext
				s.depReady(d-1, te, nil)
				d = next
			}
			if p != 0 {
				s.setErr(p-1, fmt.Errorf("%w: %w", ErrChildFailed, te))
				// The thread stuck in the kernel may owe P decrements
				// for siblings it ran before (Ctx.deferDec) and cannot
				// pay them while stuck: pay every thread's debt now
				// (paying early is always correct).
				for _, c := range s.threads {
					c.takeDebt(nil)
				}
				s.decOpen(p-1, nil)
			}
			s.wakeWaiters()
			return true
		}
		sl.err.CompareAndSwap(te, nil) // not ours after all (a dependent came, the task completed, or the slot was reused)
	}
}
