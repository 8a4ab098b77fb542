package sched

import (
	"sync/atomic"
	"time"
)

// Waits that hand the worker over: a kernel's wait on a worker need not
// hold the worker's goroutine.
//
// A worker is a role (its Ctx: index, deques, slot cache, debt, busy
// count), not a goroutine. The goroutine that plays it now is its holder;
// the others that served it (runners) are either parked in a wait made by
// a kernel on their stack, or free, waiting to be handed the role. A
// wait that helps runs tasks on top of the suspended kernel, on the same
// stack, and that kernel cannot return before they do: helping with a
// task that needs the suspended kernel (its completion, or what it does
// after its wait) deadlocks a program that has no cycle. So:
//
//  1. A Wait on a worker runs on its own stack only the awaited task and
//     its descendants (within: the task's parents are walked up to
//     maxWithin). The awaited task needs them, and the waiting kernel
//     needs the awaited task, so each kernel on a runner's stack is needed
//     by every kernel suspended under it: one that needs any of those
//     closes a real cycle, which helping did not make (and the walk
//     reports). Its fast paths are unchanged: a finished target returns
//     at once, and a child popped back from the thread's own deque is the
//     target itself (one compare).
//  2. Any other task it finds is handed, with the role, to a free runner
//     of this worker (or a new one, up to maxRunners per worker), which
//     runs that task first and then the worker's loop: park. Before that
//     the holder pays its debt and saves what belongs to its goroutine
//     (the kernel running, its depth, the suspended kernels waitCycle
//     reads, the RunInPlace stack) in its runner, lists the runner in
//     parked (under idleMu: waitCycle reads it) and counts itself a
//     waiter of the awaited task, so the completion wakes the thread
//     (wakeWaiters wakes a sleeping holder of a thread with parked
//     runners). WaitEvent waits for no task, so every task it finds is
//     handed over.
//  3. The parked runner sleeps on its channel. While it waits for a task
//     from a kernel, it looks for a wait-for cycle through its suspended
//     kernels (waitCycle), at once and then at the sleep's recheck delays:
//     a cycle marks it done with ErrDeadlock and wakes the thread.
//  4. The holder resumes a parked runner whose wait can end (ready: the
//     task finished, the event is set or Close drained, or a cycle was
//     found) only at a safe point: at the top of its loop, where no kernel
//     is on its stack (it then joins the free runners), or in a wait of
//     its own that found nothing to run (it then parks, as in 2, and the
//     two swap). It takes the runner off parked, and sends on its channel;
//     the runner restores what it saved and takes the role (it stores its
//     goroutine in the Ctx for callerCtx). The channel orders every owner
//     field written by the previous holder before the next one reads it.
//  5. Registered threads do not hand over: their goroutine may be locked
//     to its OS thread, and their pinned tasks must run there. A wait on
//     one helps as before (every task it finds), and a deadlock that
//     helping makes there is reported (ErrDeadlock, hang.go). At the
//     limit of runners a worker helps the same way, and so do RunOne (it
//     is asked to run a task here) and Add's back-pressure (helpOne,
//     pool.go: it runs tasks to free slots).
//  6. A runner's goroutine that ends in runtime.Goexit (a kernel's) is
//     replaced by a new runner (runnerMain); the loop exits at Close once
//     nothing is parked, and ends the free runners with it.

// maxRunners is the most goroutines that serve one worker: the holder,
// the parked and the free. At the limit a wait helps instead (5 above):
// deeper nests of waits that each found unrelated work are not expected
// of a real program, and each runner keeps a goroutine and its stack.
const maxRunners = 128

// maxWithin is how many parents within walks up from a found task to
// look for the awaited one; a deeper descendant is handed over, which is
// correct too, only slower.
const maxWithin = 64

// runner is one goroutine that can play a worker.
type runner struct {
	c    *Ctx
	g    uintptr // the goroutine's runtime g (getg), stored in c.g when it takes the role
	goid uint64
	wake chan struct{} // the role is handed to it (buffered: signal never blocks)
	// first is the task a free runner runs when it takes the role (the
	// one its parker found), noItem if none; exit ends it (Close).
	first uint32
	exit  bool
	// What its goroutine owns of the Ctx, saved while it does not hold it.
	current TaskID
	top     int64 // Ctx.top: read by Abandon under idleMu while parked
	waitTop int64 // Ctx.waitTop
	running int
	inline  int
	nouter  int
	outer   [maxOuter]TaskID
	inPlace *inPlaceStack
	// What it waits for while parked: a task, or an event (ev not nil).
	target TaskID
	ev     *Event
	// done: its wait-for cycle check failed the wait (cycleErr, written
	// by the runner itself before done); resume it.
	done     atomic.Bool
	cycleErr error
	timer    *time.Timer
}

func (c *Ctx) newRunner() *runner {
	r := &runner{c: c, wake: make(chan struct{}, 1), first: noItem, current: NoTask, timer: time.NewTimer(time.Hour)}
	r.timer.Stop()
	return r
}

// take makes the calling goroutine, runner r, the holder of c and
// restores what it saved.
func (c *Ctx) take(r *runner) {
	c.self = r
	c.g.Store(r.g)
	c.goid.Store(r.goid)
	c.current, c.running, c.inline, c.nouter = r.current, r.running, r.inline, r.nouter
	storeRelease64(&c.waitTop, r.waitTop)
	storeRelease64(&c.top, r.top)
	copy(c.outer[:min(r.nouter, maxOuter)], r.outer[:])
	c.inPlace = r.inPlace
}

// save stores in r what its goroutine owns of c, before it gives c away.
func (c *Ctx) save(r *runner) {
	c.flushDec() // no debt is held by a thread that changes hands
	r.current, r.running, r.inline, r.nouter = c.current, c.running, c.inline, c.nouter
	r.top, r.waitTop = c.top, c.waitTop
	copy(r.outer[:], c.outer[:min(c.nouter, maxOuter)])
	r.inPlace = c.inPlace
}

// ready reports whether parked runner r's wait can end.
func (r *runner) ready() bool {
	if r.done.Load() {
		return true
	}
	if r.ev != nil {
		return r.ev.IsSet() || r.c.s.drained.Load()
	}
	return r.c.s.IsFinished(r.target)
}

// readyParked returns a parked runner of c whose wait can end, or nil.
// Owner only.
func (c *Ctx) readyParked() *runner {
	for _, r := range c.parked {
		if r.ready() {
			return r
		}
	}
	return nil
}

// readyParkedWait is readyParked without the runners parked in Add's
// back-pressure (alloc parks with NoTask: ready at once): two of those
// would hand the worker to each other for ever, neither reaching its
// pool-deadlock verdict. Owner only.
func (c *Ctx) readyParkedWait() *runner {
	for _, r := range c.parked {
		if (r.target != NoTask || r.ev != nil || r.done.Load()) && r.ready() {
			return r
		}
	}
	return nil
}

// within reports whether task x (a slot this thread just took) is id or
// one of its descendants, so that running it cannot need the kernels
// suspended on this thread (1 above). A parent cannot finish before its
// child, so the links up from x hold, except past an abandoned task
// (Abandon releases its parent early, while the abandoned slot keeps its
// generation until its own subtree ends): an abandoned task on the way, or
// a link whose parent's slot moved to another generation, ends the walk
// with false (handing over is always correct). x the awaited slot itself
// counts only at the awaited generation: the slot may have been reused
// since the wait looked.
func (c *Ctx) within(x uint32, id TaskID) bool {
	if x&joinBit != 0 {
		return false // a Join's shared half: its caller may need this wait
	}
	s := c.s
	if x == id.index() {
		return s.slots[x].genLoad() == id.gen()
	}
	sl := &s.slots[x]
	for range maxWithin {
		if uint32(sl.deps.Load()) == depsAbandoned {
			return false // its parent no longer waits for it
		}
		pi := atomic.LoadUint32(&sl.parent)
		if pi == 0 || int(pi) > len(s.slots) {
			return false
		}
		pg := atomic.LoadUint32(&sl.pgen)
		if pi-1 == id.index() {
			return pg == id.gen()
		}
		sl = &s.slots[pi-1]
		if sl.genLoad() != pg {
			return false
		}
	}
	return false
}

// canPark reports whether a wait on this thread may hand it over (2, 5).
func (c *Ctx) canPark() bool {
	return c.self != nil && (len(c.spares) > 0 || c.nrunners < maxRunners)
}

// park hands the thread to another runner and blocks until this one's
// wait for id (or e, if not nil) can end; it returns the wait's
// ErrDeadlock if its cycle check found one. next is a ready parked runner
// to resume, or nil: then a free runner (a new one if none is free) takes
// the role and runs task x first (the caller checked canPark). With
// neither id nor e, the runner is ready at once: it only lets next run
// until next reaches a safe point (Add's back-pressure, pool.go).
func (c *Ctx) park(x uint32, next *runner, id TaskID, e *Event) error {
	s := c.s
	r := c.self
	c.save(r)
	r.target, r.ev, r.cycleErr = id, e, nil
	r.done.Store(false)
	waits := e == nil && id != NoTask
	if waits {
		s.slots[id.index()].waiters.Add(1)
	}
	s.idleMu.Lock()
	c.parked = append(c.parked, r)
	c.nparked.Add(1)
	if next != nil {
		c.unparkLocked(next)
	}
	s.idleMu.Unlock()
	c.handTo(next, x)
	r.wait(waits && r.nouter > 0)
	c.take(r)
	if waits {
		s.slots[id.index()].waiters.Add(-1)
	}
	return r.cycleErr
}

// handTo gives the role to next (a ready parked runner, already taken off
// parked), or to a free runner that runs x first. The caller has saved
// its own state and must not touch c until it takes the role back.
func (c *Ctx) handTo(next *runner, x uint32) {
	if next != nil {
		next.wake <- struct{}{}
		return
	}
	if n := len(c.spares); n > 0 {
		sp := c.spares[n-1]
		c.spares[n-1] = nil
		c.spares = c.spares[:n-1]
		sp.first = x
		sp.wake <- struct{}{}
		return
	}
	sp := c.newRunner()
	sp.first = x
	c.nrunners++
	c.s.workersWG.Add(1)
	go c.runnerMain(sp)
}

// unparkLocked takes r off c's parked list. Called with idleMu held.
func (c *Ctx) unparkLocked(r *runner) {
	for i, p := range c.parked {
		if p == r {
			c.parked = append(c.parked[:i], c.parked[i+1:]...)
			c.nparked.Add(-1)
			return
		}
	}
}

// resumeFromLoop hands the thread to ready parked runner next from the top
// of the loop of runner r, which has no kernel on its stack: r becomes a
// free runner of c (runnerMain then waits to be handed the role again).
func (c *Ctx) resumeFromLoop(r *runner, next *runner) {
	c.save(r)
	c.s.idleMu.Lock()
	c.unparkLocked(next)
	c.s.idleMu.Unlock()
	c.spares = append(c.spares, r)
	next.wake <- struct{}{}
}

// wait blocks parked runner r until it is handed the role back. With
// watch (a wait for a task, made by a kernel) it looks for a wait-for
// cycle through its suspended kernels meanwhile (3 above).
func (r *runner) wait(watch bool) {
	if !watch {
		<-r.wake
		return
	}
	s := r.c.s
	for d := time.Duration(0); ; d = min(max(recheckSleep, 4*d), recheckWatch) {
		if d > 0 {
			r.timer.Reset(d)
			select {
			case <-r.wake:
				r.timer.Stop()
				return
			case <-r.timer.C:
			}
		}
		if r.ready() {
			continue // resumed soon: the thread was woken by what readied it
		}
		s.idleMu.Lock()
		err := s.cycleFrom(r.outer[:min(r.nouter, maxOuter)], r.current, r.target, "Wait", nil, r)
		if err != nil {
			// Under idleMu, so that later walks skip this wait: one
			// cycle fails one wait, as cycleLocked does for a sleeper.
			r.cycleErr = err
			r.done.Store(true)
		}
		s.idleMu.Unlock()
		if err != nil {
			s.wakeThread(r.c) // its holder resumes it
			s.wakeWaiters()   // the others in the cycle look again
			<-r.wake
			return
		}
	}
}

// workerLoop starts worker c (New): its first runner.
func (c *Ctx) workerLoop() {
	c.nrunners = 1
	c.rng = uint32(c.index)*2654435761 + 1
	c.runnerMain(c.newRunner())
}

// runnerMain is the body of every goroutine that serves worker c: the
// first (workerLoop) and those that take it over (a wait's hand-off, a
// Goexit). It starts holding the role: it runs r.first, then the loop;
// between turns it waits, free, to be handed the role again.
func (c *Ctx) runnerMain(r *runner) {
	s := c.s
	exited := true // until the goroutine ends normally: a kernel called runtime.Goexit
	defer func() {
		if exited {
			// The kernel's task has failed (see call); this goroutine
			// ends, and a new runner takes the thread over: its deque,
			// cache and debt are the thread's, not the goroutine's. The
			// kernels that were on this goroutine have unwound (their
			// defers restored the depth and the suspended list).
			c.g.Store(0) // before this goroutine ends and its g can be reused
			c.flushDec()
			nr := c.newRunner()
			if st := c.inPlace; st != nil {
				// Its Join calls unwound: entries of their records
				// still queued are skipped, and the new runner makes a
				// stack of its own (join.go, 5).
				st.dead.Store(true)
				c.inPlace = nil
			}
			s.workersWG.Add(1)
			go c.runnerMain(nr)
		}
		s.workersWG.Done()
	}()
	r.g = getg()
	r.goid = goid()
	c.take(r)
	if f := s.cfg.OnWorkerStart; f != nil {
		f(c.index)
	}
	for {
		if x := r.first; x != noItem {
			r.first = noItem
			c.run(x)
		}
		if !c.loop(r) {
			break // Close: this holder ends the thread
		}
		<-r.wake // free: wait to be handed the role again
		if r.exit {
			exited = false
			return
		}
		c.take(r)
	}
	exited = false
	c.g.Store(0)
	for _, sp := range c.spares { // the free runners end with the thread
		sp.exit = true
		sp.wake <- struct{}{}
	}
	c.spares = c.spares[:0]
}
