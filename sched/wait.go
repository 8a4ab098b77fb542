package sched

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Waiting: Wait, WaitFor, WaitEvent, RunPinned, RunOne and Event.
//
//  1. Wait works meanwhile: a waiting thread takes tasks (find, worker.go)
//     until the awaited one completes, pays what any thread owes it when it
//     finds nothing to run (debt.go), spins, and sleeps only when there is
//     nothing to run (wake.go). On a worker it runs a task it found only if
//     that is the awaited task or one of its descendants; any other goes,
//     with the worker, to another goroutine while this one parks until the
//     awaited task completes (handoff.go). A registered thread runs
//     whatever it finds (it helps). A wait for a task an executor holds sleeps
//     as soon as it finds nothing to run: the executor completes it on a
//     goroutine of its own after tens of microseconds at least, and a
//     spinning waiter would only take a CPU that the executor's threads
//     (the device driver's) need.
//  2. WaitEvent does the same until an Event is signalled (frame
//     synchronisation), or until Close has run everything that can run;
//     no task is known not to need its kernel, so on a worker every task
//     it finds is handed over.
//  3. WaitFor does not help: a kernel it picked up could outlast its
//     deadline, and the time-out is the reason to call it. It does not
//     sleep in the scheduler either: it polls, sleeping at most 50 µs
//     between looks, since it must also watch its deadline.
//  4. RunPinned runs only the tasks pinned to its registered thread;
//     RunOne runs one task. Every entry point that runs tasks marks the
//     thread busy (busy.go) and pays the debt before it returns.
//  5. A wait made by a kernel records that kernel as suspended under it
//     (enter, leave), and a Wait that goes to sleep records what it waits
//     for (waitTarget), as a parked one does in its runner: the wait-for
//     cycle walk reads them (hang.go).
//  6. Scheduler.Wait from a goroutine that is no thread sleeps on extCond,
//     woken by the completion; from a scheduler thread it is Ctx.Wait
//     (caller.go).

// Wait blocks until id finished and returns its error. Called from a
// goroutine that is not a scheduler thread, it runs no tasks. Called from
// a scheduler thread (a kernel that has no Ctx at hand, or a registered
// thread), it is Ctx.Wait on that thread, which runs tasks meanwhile:
// blocking there could leave nobody to run the awaited task (one worker).
// Telling the two apart costs a look-up of the calling goroutine (see
// callerCtx: nanoseconds from a worker's kernel or a goroutine that is no
// thread, microseconds from a registered thread), only when id has not
// finished yet; Ctx.Wait is the direct way.
func (s *Scheduler) Wait(id TaskID) error {
	if err := s.checkID(id, "Wait"); err != nil {
		return err
	}
	if !s.IsFinished(id) {
		if c := s.callerCtx(); c != nil {
			return c.Wait(id)
		}
		s.payDebtsTo(id, nil)
		sl := &s.slots[id.index()]
		s.extMu.Lock()
		s.extWait.Add(1)
		sl.waiters.Add(1)
		for !s.IsFinished(id) {
			s.extCond.Wait()
		}
		sl.waiters.Add(-1)
		s.extWait.Add(-1)
		s.extMu.Unlock()
	}
	return s.Err(id)
}

// Wait runs other tasks until id has finished, then returns its error
// (a *TaskError) or nil. On a worker it runs only id and id's
// descendants itself; it hands any other task, with the worker, to
// another goroutine and parks until id has finished (handoff.go), so a
// task it finds can never wait behind this kernel. When there is nothing to run it keeps looking for
// Config.SpinRounds rounds (spinning, without yielding its P), then
// sleeps until woken; but while id itself is with an executor (GPU or SPU
// affinity) it sleeps at once. An executor completes its jobs on a
// goroutine of its own, which wakes the sleeper, and takes at least tens
// of microseconds to; meanwhile a spinning waiter only takes a CPU that
// the executor's threads (the device driver's, lavapipe's) need: on two
// shared cores a lone GPU task's round trip was several times that of
// the bare dispatch (BENCHMARKS.md, section gpu). A wait for a CPU task,
// or for a parent whose children run on an executor, spins as before:
// those finish on scheduler threads, often within the spin, and a sleep
// costs a wake-up of microseconds. Waiting for the task whose kernel is running on this
// thread is an error (it could never finish), and so is a wait that can
// be seen to deadlock: see waitCycle and ErrDeadlock.
func (c *Ctx) Wait(id TaskID) error {
	s := c.s
	c.enterBusy()
	defer c.leaveBusy()
	defer c.flushDec() // before busy drops: no debt outlives the call
	if err := s.checkID(id, "Wait"); err != nil {
		return err
	}
	if id != NoTask && id == c.current {
		return fmt.Errorf("sched: Wait %v from its own kernel: %w", id, ErrSelfDepend)
	}
	if c.running > 0 {
		// A worker's Wait swaps with a parked wait that can go on
		// (handoff.go): Abandon reads waitTop (abandon.go, 5).
		defer c.leaveSwapWait(c.enterSwapWait())
	}
	// The loop leaves with an error by break, not return: this
	// function's returns times its defers must stay within the
	// compiler's limit for open-coded defers, or every Wait, the
	// finished case too, pays for defer records.
	var err error
	for spins := 0; !s.IsFinished(id); {
		if x := c.find(); x != noItem {
			c.misses = 0
			spins = 0
			if c.self != nil && !c.within(x, id) && c.canPark() {
				// x could need the kernels suspended here: hand the
				// thread, with x, to another runner (handoff.go).
				if err = c.park(x, nil, id, nil); err != nil {
					break
				}
				continue
			}
			c.run(x)
			if p, n := c.debt(); n != 0 && p == id.index()+1 &&
				atomic.LoadInt32(&s.slots[id.index()].open) == int32(n) {
				// Only this thread's debt keeps the awaited task
				// open: pay it. (Paying it after every child would
				// cost a locked add per task; runOne pays it anyway
				// when it finds no work.)
				c.flushDec()
			}
			continue
		}
		c.misses++
		c.flushDec()
		if len(c.parked) != 0 {
			if next := c.readyParked(); next != nil {
				// A runner parked here can go on, and this one has
				// nothing to run: the two swap.
				if err = c.park(noItem, next, id, nil); err != nil {
					break
				}
				continue
			}
		}
		// No work (this thread's debt is paid): pay what the other
		// threads owe the awaited task.
		s.payDebtsTo(id, c)
		if s.IsFinished(id) {
			break
		}
		sl := &s.slots[id.index()]
		if spins++; spins < s.cfg.SpinRounds && sl.execID.Load() != uint64(id) {
			c.spun++
			spinPause(spins)
			continue // no Gosched: see Config.SpinRounds
		}
		spins = 0
		sl.waiters.Add(1)
		c.waitTarget = id // read by other threads' waitCycle while this one sleeps
		c.waiting.Store(true)
		c.sleep(id, nil) // looks for a wait-for cycle first (waitCycle)
		c.waiting.Store(false)
		sl.waiters.Add(-1)
		if err = c.cycleErr; err != nil {
			c.cycleErr = nil
			break
		}
	}
	if err != nil {
		return err
	}
	if s.nFailed.Load() == 0 {
		return nil // finished, and no task ever failed (Err's test, without its IsFinished)
	}
	return s.Err(id)
}

// WaitFor waits until id has finished, like Wait, but returns an error
// wrapping ErrTimeout if it has not finished within d (the task goes on;
// Abandon it to fail it and release its dependents). The time-out is a
// guarantee: WaitFor runs no tasks while it waits, since a kernel it
// picked up could run past the deadline or never return (Go cannot stop
// it), and WaitFor would return only when the kernel did. It looks at the
// task for Config.SpinRounds rounds, then polls, sleeping at most 50 µs
// at a time.
//
// So the awaited task must be run by other threads: tasks pinned to this
// thread wait for its next Wait, WaitEvent or RunPinned, and a kernel
// that calls WaitFor on the only worker, for a child nobody else runs,
// times out. Like Wait, a wait that can be seen to deadlock fails with
// ErrDeadlock (see waitCycle).
func (c *Ctx) WaitFor(id TaskID, d time.Duration) error {
	s := c.s
	if err := s.checkID(id, "WaitFor"); err != nil {
		return err
	}
	if id != NoTask && id == c.current {
		return fmt.Errorf("sched: WaitFor %v from its own kernel: %w", id, ErrSelfDepend)
	}
	deadline := time.Now().Add(d)
	c.flushDec() // no debt is held while waiting: it may be owed to id
	if s.IsFinished(id) {
		return s.Err(id)
	}
	if c.running > 0 {
		c.enter() // waitCycle's seed: this kernel cannot return before id
		defer c.leave()
	}
	for idle := 0; !s.IsFinished(id); idle++ {
		s.payDebtsTo(id, c)
		if s.IsFinished(id) {
			break
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("sched: WaitFor %v: %w after %v", id, ErrTimeout, d)
		}
		if idle < s.cfg.SpinRounds {
			spinPause(idle + 1)
			continue
		}
		if n := idle - s.cfg.SpinRounds; n%64 == 0 { // about every 3 ms of polling
			if err := c.waitCycle(id, "WaitFor"); err != nil {
				s.wakeWaiters() // the others in the cycle look again
				return err
			}
		}
		time.Sleep(min(50*time.Microsecond, time.Until(deadline)))
	}
	return s.Err(id)
}

// WaitEvent runs tasks until e is signalled (frame synchronisation: work
// while waiting for vsync, a GPU fence or another system); on a worker, by
// handing the worker to another goroutine with the first task it finds
// (see Wait), since any task could need this kernel. It also returns
// once Close has run everything else that can run, signalled or not: check
// e.IsSet. Close then runs what the returning kernels ready before it
// calls anything stuck. A kernel waiting for an event nobody
// signals used to keep Close from returning, and its thread spun.
func (c *Ctx) WaitEvent(e *Event) {
	s := c.s
	if e.s != s {
		e.waitedOn(s) // another scheduler's event: its Signal must wake s's threads
	}
	c.enterBusy()
	defer c.leaveBusy()
	defer c.flushDec() // before busy drops: no debt outlives the call
	if c.running > 0 {
		defer c.leaveSwapWait(c.enterSwapWait()) // as Wait's
	}
	for spins := 0; !e.IsSet(); {
		if x := c.find(); x != noItem {
			c.misses = 0
			spins = 0
			if c.canPark() {
				// No task is known not to need this kernel: hand the
				// thread, with x, to another runner (handoff.go).
				c.park(x, nil, NoTask, e)
				continue
			}
			c.run(x)
			continue
		}
		c.misses++
		c.flushDec()
		if s.drained.Load() {
			return // Close found nothing left to run: e would be all
		}
		if len(c.parked) != 0 {
			if next := c.readyParked(); next != nil {
				c.park(noItem, next, NoTask, e)
				continue
			}
		}
		if spins++; spins < s.cfg.SpinRounds {
			spinPause(spins)
			continue // no Gosched: see Config.SpinRounds
		}
		spins = 0
		c.waitTarget = NoTask // no task: waitCycle does not follow this wait
		c.waiting.Store(true)
		c.sleep(NoTask, e)
		c.waiting.Store(false)
	}
}

// RunPinned runs the tasks queued for this registered thread (and nothing
// else) and returns how many it ran. Call it once per frame on a main or
// render thread that does not otherwise Wait.
func (c *Ctx) RunPinned() int {
	c.enterBusy()
	defer c.leaveBusy()
	defer c.flushDec() // before busy drops: no debt outlives the call
	if c.running > 0 {
		c.enter()
		defer c.leave()
	}
	n := 0
	for {
		for lv := range c.pinned {
			for x := c.pinned[lv].pop(); x != noItem; x = c.pinned[lv].pop() {
				c.npinned.Add(-1)
				c.run(x)
				n++
			}
		}
		// Paying the debt may complete a parent whose dependents are
		// pinned here too: run them in this call, as without the debt.
		if _, n := c.debt(); n == 0 {
			break
		}
		c.flushDec()
		if c.npinned.Load() == 0 {
			break
		}
	}
	return n
}

// RunOne runs one runnable task if there is one and reports whether it did.
func (c *Ctx) RunOne() bool { return c.helpOne() }

// helpOne is runOne for the entry points that are not already busy.
func (c *Ctx) helpOne() bool {
	c.enterBusy()
	defer c.leaveBusy()
	defer c.flushDec() // before busy drops: no debt outlives the call
	if c.running > 0 {
		c.enter()
		defer c.leave()
	}
	return c.runOne()
}

// Event is a flag that threads can work while waiting for (WaitEvent). The
// zero value is not usable: use Scheduler.NewEvent. Threads of other
// schedulers may wait for it too (a program with a scheduler per
// subsystem): Signal wakes theirs as well.
type Event struct {
	s   *Scheduler
	set atomic.Bool
	// others lists the other schedulers whose threads waited for the
	// event (copy on write under mu; at most one entry per scheduler).
	// A sleeping thread is woken only by its own scheduler's
	// wakeWaiters, so without it a wait on another scheduler's thread
	// slept for ever once its rechecks backed off. WaitEvent stores it
	// before it reads set, Signal stores set before it reads it: one of
	// the two sees the other. Schedulers that Close drained are dropped
	// (by waitedOn and Signal): their threads no longer need the wake.
	mu     sync.Mutex
	others atomic.Pointer[[]*Scheduler]
}

// NewEvent returns an unset event.
func (s *Scheduler) NewEvent() *Event { return &Event{s: s} }

// Signal sets the event and wakes threads waiting for it. Any goroutine.
func (e *Event) Signal() {
	e.set.Store(true)
	e.s.wakeWaiters()
	if o := e.others.Load(); o != nil {
		stale := false
		for _, s := range *o {
			s.wakeWaiters()
			stale = stale || s.drained.Load()
		}
		if stale {
			e.dropDrained()
		}
	}
}

// waitedOn records that a thread of s, which did not make e, waits for
// it, so that Signal wakes s's waiters too.
func (e *Event) waitedOn(s *Scheduler) {
	if o := e.others.Load(); o != nil {
		for _, x := range *o {
			if x == s {
				return
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var l []*Scheduler
	if o := e.others.Load(); o != nil {
		for _, x := range *o {
			if x == s {
				return
			}
			if !x.drained.Load() {
				l = append(l, x)
			}
		}
	}
	l = append(l, s)
	e.others.Store(&l)
}

// dropDrained removes from others the schedulers that Close drained: a
// thread of theirs returns from WaitEvent without being woken (it looks
// at drained), and an event that outlives many short-lived schedulers
// (a frame fence) must neither keep them alive nor make every Signal
// walk them.
func (e *Event) dropDrained() {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.others.Load()
	if o == nil {
		return
	}
	var l []*Scheduler
	for _, x := range *o {
		if !x.drained.Load() {
			l = append(l, x)
		}
	}
	if len(l) == 0 {
		e.others.Store(nil)
		return
	}
	e.others.Store(&l)
}

// Reset clears the event.
func (e *Event) Reset() { e.set.Store(false) }

// IsSet reports whether the event is set.
func (e *Event) IsSet() bool { return e.set.Load() }
