package sched

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Close: the drain, stuck tasks, and Adds that race with it.
//
//  1. Close from a kernel, or from Config.Observer's TaskRan on the
//     kernel's thread, would wait for that thread for ever: it fails with
//     ErrCloseInKernel and closes nothing (the caller is looked up, see
//     caller.go). So does Close from a kernel run in place on a
//     registered thread outside any task (RunInPlace, Join, JoinTasks:
//     inPlaceG, busy.go), which would otherwise close the scheduler
//     under the running kernel.
//  2. closing is set: Adds from outside fail with ErrClosed; running
//     kernels may still add children until the workers stop
//     (kernelMayAdd).
//  3. Tasks pinned to registered threads and tasks made with Create and
//     never Run fail with ErrClosed; the executors are closed (they finish
//     or fail their jobs).
//  4. Every thread is woken and the workers drain the rest. Close knows the
//     drain is over when every thread sleeps, every queue is empty and no
//     executor holds a job (quiescent), so the hot path keeps no task
//     counter for it. Held tasks made meanwhile are failed, which may
//     release more work.
//  5. Then drained is set: kernels waiting in WaitEvent return, signalled
//     or not, and what they ready runs, before anything is called stuck.
//  6. Tasks that still wait for their dependency can never run (a cycle
//     Add could not see): failStuck fails them with ErrClosed and ErrCycle,
//     until none is left, so every Wait returns.
//  7. stopping is set and the workers exit. An Add from outside that passed
//     the closed check just before Close began may have queued or held a
//     task after the last look: Close and that Add (lateAdd) both take
//     drainMu, and whichever comes second fails what is left
//     (failLeftoversLocked). Nothing is lost.
//  8. The race checker, if any, is dropped from the global table
//     (raceForget, race.go), so nothing global keeps the closed scheduler
//     alive; then the tag is released (ids.go): no generation moves any
//     more.

// kernelMayAdd reports, once Close began, whether an Add on thread c (nil:
// a Scheduler call, whose thread is looked up) may still be accepted: it
// comes from a running kernel (through its Ctx or the Scheduler) and
// Close has not stopped the workers yet.
func (s *Scheduler) kernelMayAdd(c *Ctx) bool {
	if s.stopping.Load() {
		return false
	}
	if c == nil {
		c = s.callerCtx()
	}
	return c != nil && c.running > 0
}

// lateAdd ends an Add, Create or Run from outside the scheduler that
// passed the closed check just before Close began: Close may have found
// the scheduler idle and stopped its workers before the task was queued
// or held, and then nobody would ever run or fail it. Close takes drainMu
// after it stops the workers and fails what it finds left (failLeftoversLocked);
// so does lateAdd if Close is that far. The lock orders the two: either
// this task is visible to Close's look, or lateAdd sees stopping and
// looks itself.
func (s *Scheduler) lateAdd(c *Ctx) {
	s.drainMu.Lock()
	if s.stopping.Load() {
		s.failLeftoversLocked(c)
	}
	s.drainMu.Unlock()
}

// failLeftoversLocked fails with ErrClosed every task left queued or held once
// Close stopped the workers (only Adds that raced with Close leave any).
// c is the calling thread (nil if none): its own deque is popped, the
// others' stolen from. Called with drainMu held.
func (s *Scheduler) failLeftoversLocked(c *Ctx) {
	for lv := range s.inject {
		for x := s.inject[lv].pop(); x != noItem; x = s.inject[lv].pop() {
			if lv != 1 {
				s.queued[lv].Add(-1)
			}
			s.finishLeftover(x)
		}
		for _, t := range s.threads {
			for {
				var x uint32
				if t == c {
					x = t.dq[lv].pop()
				} else {
					x = t.dq[lv].steal()
				}
				if x == noItem {
					break
				}
				if lv != 1 {
					s.queued[lv].Add(-1)
				}
				s.finishLeftover(x)
			}
		}
	}
	for i := range s.slots {
		if s.slots[i].held.CompareAndSwap(true, false) {
			s.finish(uint32(i), ErrClosed, nil)
		}
	}
}

// finishLeftover fails queued item x with ErrClosed: a task, or a Join's
// shared half (join.go).
func (s *Scheduler) finishLeftover(x uint32) {
	if x&joinBit != 0 {
		s.failJoin(x, ErrClosed)
		return
	}
	s.finish(x, ErrClosed, nil)
}

// Close stops accepting tasks from outside (Add from a Thread or a foreign
// goroutine returns ErrClosed; running kernels may still add children,
// through their Ctx or the Scheduler, until Close stops the workers),
// fails every task queued for a registered thread with ErrClosed, closes the
// executors (which finish or fail their jobs), lets the workers drain every
// other task, then stops the workers. No task is lost: each one either ran
// or failed with an error its waiters see (tasks made with Create and never
// Run fail with ErrClosed). It knows the drain is over when every thread
// sleeps, every queue is empty and no executor holds a job, so the hot
// path keeps no task counter for it. Then kernels waiting in WaitEvent
// return, signalled or not (nothing else can run to signal them), and
// what they ready runs. Tasks that can still never run after that (a
// cycle through their dependencies and parents, which Add could not see)
// fail with ErrClosed and ErrCycle, so that every Wait returns, and the
// error counts them.
// Close returns when no goroutine of the scheduler is left. A kernel that
// never returns blocks Close (Abandon fails its task, but its goroutine
// cannot be stopped). Call Close after the last Add: an Add racing with
// Close may be refused (ErrClosed), or accepted and its task then failed
// with ErrClosed, never lost (see lateAdd). Calling Close again returns the
// first call's result.
//
// Close called from a kernel (on a scheduler thread, with a kernel
// running, or run in place by RunInPlace, Join or JoinTasks on a
// registered thread, whichever goroutine holds its Ctx), from
// Config.Observer's TaskRan on a scheduler thread (it
// runs as part of the kernel's task), or from Config.OnWorkerStart (on a
// worker's goroutine), fails with ErrCloseInKernel and closes nothing: it
// would wait for that thread, for ever. Telling costs
// a look-up of the calling goroutine (see callerCtx).
func (s *Scheduler) Close() error {
	if c := s.callerCtx(); c != nil {
		if c.running > 0 {
			return fmt.Errorf("sched: Close from the kernel of %v: %w", c.current, ErrCloseInKernel)
		}
		if c.inPlaceBy(getg()) {
			return fmt.Errorf("sched: Close from a kernel run in place (RunInPlace, Join or JoinTasks) on registered thread %d %q: %w", c.index-s.nwork, c.name, ErrCloseInKernel)
		}
		if c.observing {
			return fmt.Errorf("sched: Close from Config.Observer's TaskRan for %v, on the thread that ran its kernel (Close would wait for that thread): %w", c.ev.Task, ErrCloseInKernel)
		}
		if c.worker {
			// Outside any kernel a worker's goroutine runs only
			// Config.OnWorkerStart: Close waits for every worker
			// goroutine to exit, this one included.
			return fmt.Errorf("sched: Close from the goroutine of worker %d (Config.OnWorkerStart?), which Close would wait for: %w", c.index, ErrCloseInKernel)
		}
	}
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		var errs []error
		for _, t := range s.threads[s.nwork:] {
			for lv := range t.pinned {
				for x := t.pinned[lv].pop(); x != noItem; x = t.pinned[lv].pop() {
					t.npinned.Add(-1)
					s.finish(x, ErrClosed, nil)
				}
			}
		}
		// Tasks made by Create and never Run would wait forever.
		for i := range s.slots {
			if s.slots[i].held.CompareAndSwap(true, false) {
				s.finish(uint32(i), ErrClosed, nil)
			}
		}
		for _, e := range s.execs {
			if e != nil {
				if err := e.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		// Registered threads may hold deque work nobody else would run
		// once they stop helping: workers steal it. Then wait until
		// nothing can run any more; tasks that kernels made with Create
		// during the drain and never Run are failed, which may release
		// more work, until none is left.
		s.wakeAll()
		cycles := 0
		for d := 20 * time.Microsecond; ; d = min(2*d, 5*time.Millisecond) {
			if !s.quiescent() {
				time.Sleep(d)
				continue
			}
			held := 0
			for i := range s.slots {
				if s.slots[i].held.CompareAndSwap(true, false) {
					s.finish(uint32(i), ErrClosed, nil)
					held++
				}
			}
			if held == 0 && !s.drained.Load() {
				// Nothing else can run, so kernels parked in WaitEvent
				// return now (signalled or not), and what they ready
				// runs, before anything is called stuck: a task that
				// waits for such a kernel is not in a cycle.
				s.drained.Store(true)
				s.wakeAll()
				continue
			}
			if held == 0 {
				// Tasks still open now can never run: only a cycle
				// through dependencies and parents leaves them (a
				// kernel waiting in one sleeps, and counts as idle).
				// Fail them, so that every Wait returns; that can wake
				// such kernels, so look again until none is left.
				n := s.failStuck()
				if n == 0 {
					break
				}
				cycles += n
			}
			s.wakeAll()
		}
		if cycles > 0 {
			errs = append(errs, fmt.Errorf("sched: Close: %d tasks could never run (a cycle through their dependencies and parents): they failed with %w", cycles, ErrCycle))
		}
		s.stopping.Store(true)
		s.wakeAll()
		s.workersWG.Wait()
		s.drainMu.Lock()
		s.failLeftoversLocked(nil) // Adds that raced with Close (see lateAdd)
		s.drainMu.Unlock()
		s.raceForget() // race.go: the global table must not keep s alive
		s.releaseTag() // no generation moves any more
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// failStuck fails, with ErrClosed and ErrCycle, every task that still
// waits for its dependency once Close found that nothing can run (see
// Close), and returns how many it failed. A cycle has at least one such
// task (parents and children alone form a tree), and failing one releases
// the rest (its dependents fail, its parent loses a child). Tasks without
// a dependency are left alone: an Add from outside that raced with Close
// may hold one that is not queued yet (see lateAdd).
func (s *Scheduler) failStuck() int {
	n := 0
	for i := range s.slots {
		sl := &s.slots[i]
		h := sl.deps.Load()
		if atomic.LoadInt32(&sl.open) <= 0 || sl.sub || uint32(h) == depsAbandoned {
			continue
		}
		if d := TaskID(atomic.LoadUint64(&sl.dep)); d == NoTask || s.IsFinished(d) {
			continue
		}
		id := makeID(s.id, uint32(h>>32), uint32(i))
		if s.abandon(id, fmt.Errorf("%w: %w: the task waits, through dependencies and children, for itself", ErrClosed, ErrCycle)) {
			n++
		}
	}
	return n
}

// quiescent reports whether nothing can run any more: every worker is
// asleep, every registered thread is outside the scheduler or asleep in it,
// every queue is empty and no executor holds a job, and no thread woke up
// while this was being checked. Once closing, no task can then appear
// except by a task running, so the state is final. Close only.
func (s *Scheduler) quiescent() bool { return s.quiescentExcept(nil, false) }

// quiescentExcept is quiescent with thread c (if not nil) counted as idle:
// it is the caller, blocked; with inAlloc, so are the threads blocked in
// Add's back-pressure (poolStuckLocked holds extMu, so they cannot wake while it
// looks).
func (s *Scheduler) quiescentExcept(c *Ctx, inAlloc bool) bool {
	a0 := s.activity.Load()
	if s.execJobs.Load() != 0 {
		return false
	}
	s.idleMu.Lock()
	workers := 0
	for _, t := range s.idle {
		if t.worker && t != c && !(inAlloc && t.inAlloc.Load()) {
			workers++
		}
	}
	for _, t := range s.threads[:s.nwork] {
		if t == c || inAlloc && t.inAlloc.Load() {
			workers++
		}
	}
	ok := workers == s.nwork
	for _, r := range s.threads[s.nwork:] {
		if !ok {
			break
		}
		if r != c && !(inAlloc && r.inAlloc.Load()) && r.busy.Load() != 0 {
			ok = false
			for _, t := range s.idle {
				if t == r {
					ok = true
					break
				}
			}
		}
	}
	s.idleMu.Unlock()
	if !ok {
		return false
	}
	for lv := range s.inject {
		if s.inject[lv].n.Load() != 0 {
			return false
		}
		for _, t := range s.threads {
			if !t.dq[lv].empty() || (!t.worker && t.npinned.Load() != 0) {
				return false
			}
		}
	}
	return s.execJobs.Load() == 0 && s.activity.Load() == a0
}
