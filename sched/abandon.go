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
//  5. What cannot return before the abandoned kernel does is abandoned
//     with it (stranded): the kernels suspended under it on its goroutine
//     (a wait that ran it on top of them, a child run in place, the owner
//     of a Join's half it runs on top of), and, when it runs on the
//     goroutine that holds a worker above that goroutine's innermost Wait
//     or WaitEvent (or with none), every kernel parked in a wait of that
//     worker (handoff.go): a parked wait resumes only when the holder
//     reaches the top of its loop or a Wait or WaitEvent of its own that
//     finds nothing to run, which a kernel hung above them never lets it
//     do. A kernel hung in such a wait (an event nobody signals) strands
//     nothing on its worker: its wait swaps with the parked waits that can
//     go on (Ctx.waitTop records where the innermost one began). Without
//     this, Abandon freed the hung task's waiters but a kernel that had
//     waited for it, or for anything, on the same worker hung with it,
//     and so did everything that waited for that kernel. Abandon sees the
//     moment it is called: it takes the kernel for hung, so a kernel that
//     was only slow takes those with it all the same (their kernels run
//     on, their results discarded), and one that waited in the scheduler
//     then and hangs in its own code later strands the parked waits
//     unseen (Abandon them in turn). A kernel in Add's back-pressure or
//     RunOne counts as outside any wait: it strands the parked waits
//     (back-pressure swaps with some of them too, but only while slots
//     are short; it is not told apart). A graph's runner found stranded
//     is not abandoned itself but its run's join is: an abandoned runner
//     would release the join, and so the graph's next run, while it still
//     runs nodes and counts down their successors; an abandoned join
//     keeps its slot, and the graph running, until its runners return
//     (Graph.settled).
//     Each kernel run by call records the slot of the kernel under it
//     (slot.under; with none, the Join half's owner the goroutine runs,
//     Ctx.current) and publishes itself as the goroutine's innermost
//     (Ctx.top); Abandon walks those links down from each thread's holder
//     and each parked runner. A link read is true while the kernel it
//     starts from runs (the ones under it are suspended, their slots
//     reserved; a Join's owner cannot return before its half), and the
//     holder's walk is kept only if Ctx.top and Ctx.waitTop did not move
//     meanwhile (a kernel's ID runs once). Not seen: the kernels of a
//     goroutine caught between parking and handing over, and those under
//     a kernel abandoned between run's look at the mark and call's store
//     of top (windows of a few instructions), and a registered thread's
//     own code outside any task (a Wait that helped and ran the kernel):
//     nothing can fail it.

// Abandon fails a task that has not finished, at once: its waiters,
// dependents and parent see a *TaskError wrapping err and ErrAbandoned. If
// its kernel has not started it never runs; if it is running (a kernel that
// hangs, a GPU job that never completes), it runs on, its result is
// discarded, and its pool slot is reused only once it returns. Abandon is the
// way out of a kernel that never finishes: WaitFor a task with a time-out,
// then Abandon it. It returns an error if id finished or was abandoned.
// Children of an abandoned task still run; the parent no longer waits.
//
// A running kernel is taken for hung: the tasks whose kernels cannot go on
// before it returns are abandoned with it, with an error that names it
// (ErrAbandoned): kernels suspended under it on its goroutine (a Wait
// that ran it there, a child run in place, the kernel whose Join half it
// is), and, where it runs on a worker's goroutine outside a Wait or
// WaitEvent of its own, the kernels parked in waits of that worker (a
// worker's Wait hands the worker to another goroutine and resumes only
// when that goroutine gets back to the scheduler). Their kernels run on,
// their results discarded, as the abandoned one's: so abandon a kernel
// that is only slow knowing that it takes those too. A frame graph's
// runner so stranded is not failed: its run is (Graph.Run returns the
// error), and until its runners have returned the next Run or Start
// fails with ErrGraphRunning.
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
	s.abandonStranded(id)
	return nil
}

// maxStrandWalk bounds a walk down the kernels suspended on one goroutine
// (each a frame of at least one kernel call on that goroutine's stack).
const maxStrandWalk = 1 << 12

// abandonStranded abandons the kernels that cannot return before the
// kernel of x, just abandoned, does (5 above).
func (s *Scheduler) abandonStranded(x TaskID) {
	type stranded struct {
		id     TaskID
		worker int // the worker whose parked wait it is in; -1: under x
	}
	var found []stranded
	var chain []TaskID
	for _, c := range s.threads {
		// The holder's goroutine: its walk counts only if Ctx.top did
		// not move during it (then every kernel on the walk ran
		// throughout and its link was true), nor Ctx.waitTop. The
		// parked waits are stranded only if x runs above the innermost
		// Wait or WaitEvent on the holder's stack (waitTop): that wait
		// swaps with a parked one that can go on whenever it finds
		// nothing to run, unless a kernel it runs (above it) is
		// running.
		holder := false
		for range 8 {
			top := TaskID(atomic.LoadInt64(&c.top))
			wt := TaskID(atomic.LoadInt64(&c.waitTop))
			chain = s.suspendedFrom(top, chain[:0])
			if TaskID(atomic.LoadInt64(&c.top)) != top || TaskID(atomic.LoadInt64(&c.waitTop)) != wt {
				chain = chain[:0]
				continue
			}
			above := true // x, if found, runs above waitTop
			for i, t := range chain {
				if t == wt {
					above = false // x is the waiting kernel or under it
				}
				if t == x {
					holder = above
					for _, u := range chain[i+1:] {
						found = append(found, stranded{u, -1})
					}
					break
				}
			}
			break
		}
		if !c.worker {
			continue
		}
		// The parked runners' stacks: stable while they are listed
		// (unparking takes idleMu).
		s.idleMu.Lock()
		for _, r := range c.parked {
			top := TaskID(r.top)
			if top == NoTask {
				top = r.current // a Join's half parked at the top of a loop
			}
			chain = s.suspendedFrom(top, chain[:0])
			for i, t := range chain {
				if holder {
					found = append(found, stranded{t, c.index})
				} else if t == x {
					for _, u := range chain[i+1:] {
						found = append(found, stranded{u, -1})
					}
					break
				}
			}
		}
		s.idleMu.Unlock()
	}
	for _, f := range found {
		var err error
		if f.worker < 0 {
			err = fmt.Errorf("%w: its kernel is suspended under the kernel of %v on the same goroutine, and %v was abandoned: it cannot return before that kernel does", ErrAbandoned, x, x)
		} else {
			err = fmt.Errorf("%w: its kernel waits to resume on worker %d, whose goroutine runs the kernel of %v, abandoned: it cannot resume before that kernel returns", ErrAbandoned, f.worker, x)
		}
		id := f.id
		if KernelID(atomic.LoadUint32(&s.slots[id.index()].kid)) == KernelGraph {
			// A graph's runner: abandon its run's join instead. An
			// abandoned runner would release the join before the
			// runner returns, and the graph would start its next run
			// while this one still runs its nodes and counts down
			// their successors; an abandoned join keeps its slot until
			// its runners are done, which keeps the graph running
			// (Graph.settled). parentOf reads the link after the kind:
			// NoTask if id finished meanwhile.
			p := s.parentOf(id)
			if p == NoTask {
				continue
			}
			id, err = p, fmt.Errorf("%w: graph runner %v: %w", ErrChildFailed, f.id, err)
		}
		s.abandon(id, err)
	}
}

// suspendedFrom appends to chain task top and the tasks whose kernels are
// suspended under its kernel on the same goroutine, innermost first, by
// the slots' under links. The caller makes sure top's kernel runs
// throughout (see abandonStranded): then each kernel under it is
// suspended, its slot reserved, and its generation the one read.
func (s *Scheduler) suspendedFrom(top TaskID, chain []TaskID) []TaskID {
	for t := top; t != NoTask && len(chain) < maxStrandWalk; {
		chain = append(chain, t)
		u := atomic.LoadUint32(&s.slots[t.index()].under)
		if u == 0 || int(u) > len(s.slots) {
			break
		}
		t = makeID(s.id, s.slots[u-1].genLoad(), u-1)
	}
	return chain
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
		// The CAS and the record under failMu, with nFailed raised
		// before the CAS: a waiter that sees the task finished must find
		// its error (Err takes failMu; its no-failure fast path reads
		// nFailed), as complete records before its generation bump.
		s.failMu.Lock()
		s.nFailed.Store(int64(len(s.failed)) + 1)
		ok := sl.deps.CompareAndSwap(h, want|depsAbandoned)
		if ok {
			s.recordFailureLocked(te)
		} else {
			s.nFailed.Store(int64(len(s.failed)))
		}
		s.failMu.Unlock()
		if ok {
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
