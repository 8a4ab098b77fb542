package sched

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Hangs refused or reported: cycles and the deadlocks of helping.
//
// A task system hangs where something waits, so what can be seen cheaply is
// refused or reported, with an error that names the tasks. This file has
// the cycles and the wait-for walk; Close from a kernel is in close.go,
// calls without a Ctx in caller.go, back-pressure with no way out in
// pool.go, foreign IDs in ids.go.
//
//  1. Cycles at Add. Add refuses a dependency on an ancestor
//     (ErrSelfDepend) and on a task that itself depends on an ancestor
//     (ErrCycle: X -> child C -> D -> X); both reads are of lines Add
//     reads anyway (addCycle). Longer cycles would need a walk per Add and
//     are not looked for there: Close fails their tasks with ErrClosed and
//     ErrCycle, so every Wait returns (close.go).
//  2. Helping. A waiting thread that runs other tasks on top of the
//     waiting kernel can deadlock what would not deadlock without helping:
//     A waits for its child B, the thread runs C meanwhile, C waits for D,
//     and D depends on A, whose kernel is under C's on the same stack. A
//     worker's wait runs only what cannot need it and hands everything
//     else over (handoff.go), so there only real cycles remain. Three
//     places still run any task on top of a kernel and can still make a
//     helping deadlock: a registered thread's wait, a worker's wait at
//     its limit of goroutines, and a kernel's Add under back-pressure or
//     RunOne (they run what they find to free a slot or make progress). Every wait made by a kernel records the kernel as suspended
//     (enter, leave), and a parked wait keeps that list in its runner.
//  3. A wait in a kernel that finds nothing to run (as it goes to sleep,
//     and then at each recheck of its sleep; WaitFor as it polls) looks for
//     a wait-for cycle (waitCycle) and fails with ErrDeadlock, naming the
//     tasks, if the task it waits for needs, through dependencies,
//     children and kernels suspended on other sleeping threads or in
//     parked waits, a kernel suspended under it. A parked wait looks the
//     same way as it parks and at the sleep's recheck delays
//     (handoff.go). Children are not recorded, so the walk goes backwards
//     from the suspended kernels, along the links that are: parents,
//     dependents lists, and what sleeping threads and parked waits wait
//     for.
//  4. The look is made under idleMu with the thread listed as idle
//     (cycleLocked), so of two threads that close a cycle together the
//     second sees the first. A thread that fails its wait wakes the other
//     waiters, which look again: its kernel returns, but its task may still
//     need a child in the cycle.
//  5. Abandoned tasks are not walked: whatever waited for one (waiters,
//     dependents, parent) no longer does, so the links it keeps are stale,
//     and its parent's slot may already hold another task (a parent is
//     named with its generation, so a reused slot reads as finished).
//  6. Not seen: cycles through a thread in WaitFor (it is not asleep in
//     the scheduler; its time-out is the way out) or through a wait from
//     outside the scheduler's threads.
//
// Rejected: running only tasks that cannot need the waiter (TBB's
// isolation) and nothing else. Only the awaited task's descendants are
// known to be safe, and a thread whose child was stolen would idle beside
// runnable work: a worker's wait runs those itself and hands the rest to
// another goroutine (handoff.go).

// addCycle refuses the cycles a new task with this parent and dependency
// would close that are cheap to see: depending on an ancestor (the
// ancestor waits for the new task), or on a task that itself depends on an
// ancestor (X -> child C -> D -> X: D waits for X, X for C, C for D). Both
// reads are of lines checkID just read. Longer cycles (through deeper
// dependency chains or through other tasks' children) are not looked for
// here; Close fails their tasks with ErrCycle, and a Wait that would sleep
// forever on one returns ErrCycle (Ctx.Wait).
func (s *Scheduler) addCycle(parent, dep TaskID) error {
	// dep's own dependency, if dep has not finished: the value is dep's
	// if dep's generation did not move while it was read.
	var dep2 TaskID
	if ds := &s.slots[dep.index()]; ds.genLoad() == dep.gen() {
		d := TaskID(atomic.LoadUint64(&ds.dep))
		if liveTask(ds.deps.Load(), dep) {
			dep2 = d
		}
	}
	// Up the ancestors: each link is read from a task that was live and
	// not abandoned when it was read (its parent could not have finished),
	// and names the parent with its generation, so a parent whose slot
	// was reused since reads as finished and ends the walk. Each step goes
	// to a task issued before the last, so the walk ends.
	for p := parent; p != NoTask; {
		if p == dep {
			return fmt.Errorf("dependency %v is an ancestor: %w", p, ErrSelfDepend)
		}
		if p == dep2 {
			return fmt.Errorf("dependency %v depends on %v, an ancestor of the new task: %w", dep, p, ErrCycle)
		}
		p = s.parentOf(p)
	}
	return nil
}

// liveTask reports whether h, a slot's deps word, shows task id neither
// finished nor abandoned. An abandoned task is finished for all that
// needed it (Abandon released its parent and dependents), so the links it
// still holds (parent, dependency) are stale: the parent's slot may even
// belong to one of its children by now.
func liveTask(h uint64, id TaskID) bool {
	return uint32(h>>32) == id.gen() && uint32(h) != depsAbandoned
}

// parentOf returns the parent of task x (NoTask if it has none, or if x
// finished or was abandoned: then its parent no longer waits for it). The
// result may have finished since; its generation says so.
func (s *Scheduler) parentOf(x TaskID) TaskID {
	sl := &s.slots[x.index()]
	pi := atomic.LoadUint32(&sl.parent)
	pg := atomic.LoadUint32(&sl.pgen)
	if pi == 0 || int(pi) > len(s.slots) || !liveTask(sl.deps.Load(), x) {
		return NoTask // read after the links: they were x's
	}
	return makeID(s.id, pg, pi-1)
}

// maxOuter is how many suspended kernels per thread waitCycle sees.
const maxOuter = 64

// enter records that the kernel running on this thread (c.current) is
// suspended under a call that runs other tasks; leave ends it.
func (c *Ctx) enter() {
	if c.nouter < maxOuter {
		c.outer[c.nouter] = c.current
	}
	c.nouter++
}

func (c *Ctx) leave() { c.nouter-- }

// enterSwapWait is enter for a Wait or WaitEvent, which on a worker
// swaps with a parked wait that can go on whenever it finds nothing to
// run: it also publishes the kernel making the wait (the innermost,
// c.top) as waitTop, and returns the waitTop it replaces, for
// leaveSwapWait. Abandon reads it: the kernels above waitTop on the
// holder's stack keep the parked waits from resuming, the ones at or
// under it do not (abandon.go, 5).
func (c *Ctx) enterSwapWait() int64 {
	c.enter()
	prev, top := c.waitTop, c.top
	if top == int64(NoTask) {
		top = int64(c.current) // a Join's half: its owner's task (call's under)
	}
	storeRelease64(&c.waitTop, top)
	return prev
}

// leaveSwapWait ends enterSwapWait.
func (c *Ctx) leaveSwapWait(prev int64) {
	c.nouter--
	storeRelease64(&c.waitTop, prev)
}

// waitCycle returns an error wrapping ErrDeadlock if a wait for id on this
// thread can never return, for a reason it can see: id needs (transitively)
// a task whose kernel is suspended on this thread under this wait, and
// that kernel cannot return before this wait does. That is the deadlock
// helping can make: A waits for its child B, the thread runs C meanwhile,
// C waits for D, and D depends on A.
//
// A task needs its dependency, each of its unfinished children, and, if
// its kernel is suspended on a thread asleep in a wait, what that wait is
// for. Children are not recorded (a list per task would cost every Add),
// so the walk goes backwards, from what cannot finish to what needs it,
// along links that are recorded: a task's parent (the parent needs it),
// its dependents list (each needs it), and the threads asleep and the
// runners parked (handoff.go) waiting for it (their suspended kernels
// need it). It starts from the kernels suspended under this wait, and
// fails the wait if it reaches id. So a cycle
// through children (C waits for P, P's child Q depends on A), through
// chains of dependencies and through kernels suspended on other sleeping
// threads, nested to any depth, is seen (TestDeadlockThroughChildren).
// Every task reached cannot finish while this wait lasts: the seeds
// cannot, and each link read was true when read and stays true until its
// target finishes, which it never does; so a cycle reported is there.
// Abandoned tasks are not walked, seeds included: their waiters,
// dependents and parent no longer wait for them, so the links they still
// hold are stale (the parent's slot may hold one of their children by
// now).
//
// Wait calls it as it goes to sleep (from sleep, under idleMu with this
// thread listed, so that of two threads that close a cycle together the
// second sees the first); WaitFor while it idles. Other threads' frames
// are read under idleMu while they sleep (a listed thread cannot leave
// sleep without that lock, so their frames cannot change meanwhile), and
// so are parked runners' (listed and unlisted under it, and unchanged
// while listed); a parked wait makes the same walk from its own frames
// (cycleFrom). It costs nothing on the hot path; a walk visits each live
// task at most once.
func (c *Ctx) waitCycle(id TaskID, what string) error {
	if c.nouter == 0 || id == NoTask {
		return nil
	}
	c.s.idleMu.Lock()
	defer c.s.idleMu.Unlock()
	return c.waitCycleLocked(id, what)
}

// cycVisit is one task reached by waitCycle: from is the index in the
// walk's log of the task this one needs (-1 for a kernel suspended on the
// waiting thread).
type cycVisit struct {
	id   TaskID
	from int32
}

// waitCycleLocked is waitCycle with idleMu held (by sleep, which has just
// listed this thread as idle, or by waitCycle).
func (c *Ctx) waitCycleLocked(id TaskID, what string) error {
	if c.observing {
		what += " in Config.Observer's TaskRan" // the seed is the observed task (Ctx.observe)
	}
	return c.s.cycleFrom(c.outer[:min(c.nouter, maxOuter)], c.current, id, what, c, nil)
}

// cycleFrom is the walk of waitCycle, with idleMu held: seeds are the
// kernels suspended under the wait for id, cur the task whose kernel
// waits, and self the thread (a holder asleep in the wait) or selfR the
// parked runner (handoff.go) that waits, whose own seeds are not read
// again from the lists.
func (s *Scheduler) cycleFrom(seeds []TaskID, cur, id TaskID, what string, self *Ctx, selfR *runner) error {
	if len(seeds) == 0 || id == NoTask {
		return nil
	}
	// The walk's scratch, kept under idleMu: one bit per slot (visited,
	// all clear between walks: each walk clears the bits it set, so its
	// cost follows what it visits, not the pool's size) and the log of
	// tasks reached, which is also the walk's queue.
	if s.cycSeen == nil {
		s.cycSeen = make([]uint64, (len(s.slots)+63)/64)
	}
	log := s.cycLog[:0]
	defer func() {
		for _, v := range log {
			i := v.id.index()
			s.cycSeen[i/64] &^= 1 << (i % 64)
		}
		s.cycLog = log[:0]
	}()
	visit := func(x TaskID, from int32) {
		i := x.index()
		if x == NoTask || int(i) >= len(s.slots) || s.cycSeen[i/64]&(1<<(i%64)) != 0 {
			return
		}
		if !liveTask(s.slots[i].deps.Load(), x) {
			return // finished or abandoned: a stale link (nothing waits for it)
		}
		s.cycSeen[i/64] |= 1 << (i % 64)
		log = append(log, cycVisit{x, from})
	}
	for _, f := range seeds {
		visit(f, -1)
	}
	for q := 0; q < len(log); q++ {
		x := log[q].id
		if x == id {
			return deadlock(what, cur, log, q)
		}
		xs := &s.slots[x.index()]
		// The parent needs x (unless x was abandoned: parentOf).
		if p := s.parentOf(x); p != NoTask {
			visit(p, int32(q))
		}
		// Each dependent needs x. The list is intact while x has not
		// finished or been abandoned (its dependents wait, their slots
		// stay theirs); checked again after the walk, and the walk is
		// bounded in case it was not.
		if h := xs.deps.Load(); uint32(h>>32) == x.gen() && uint32(h) != 0 && uint32(h) < depsAbandoned {
			mark := len(log)
			for d, k := uint32(h), 0; d != 0 && int(d) <= len(s.slots) && k < len(s.slots); k++ {
				visit(makeID(s.id, s.slots[d-1].genLoad(), d-1), int32(q))
				d = atomic.LoadUint32(&s.slots[d-1].depNext)
			}
			if h2 := xs.deps.Load(); uint32(h2>>32) != x.gen() || uint32(h2) >= depsAbandoned {
				for _, v := range log[mark:] { // x finished meanwhile: drop what the list gave
					i := v.id.index()
					s.cycSeen[i/64] &^= 1 << (i % 64)
				}
				log = log[:mark]
			}
		}
		// The kernels suspended on a thread asleep waiting for x, or on
		// a runner parked waiting for x, need x.
		for _, t := range s.idle {
			if t != self && t.waiting.Load() && t.waitTarget == x && t.nouter > 0 {
				for _, f := range t.outer[:min(t.nouter, maxOuter)] {
					visit(f, int32(q))
				}
			}
		}
		for _, t := range s.threads {
			for _, r := range t.parked {
				if r != selfR && r.ev == nil && r.target == x && !r.done.Load() {
					for _, f := range r.outer[:min(r.nouter, maxOuter)] {
						visit(f, int32(q))
					}
				}
			}
		}
	}
	return nil
}

// deadlock is waitCycle's error: log[q] is the awaited task; following
// from, each task needs the next (its dependency, a child, or what the
// thread its kernel is suspended on waits for), and the last one's kernel
// is suspended on this thread under this wait.
func deadlock(what string, cur TaskID, log []cycVisit, q int) error {
	var b strings.Builder
	last := log[q].id
	for j := q; j >= 0; j = int(log[j].from) {
		if j != q {
			b.WriteString(" -> ")
		}
		last = log[j].id
		b.WriteString(last.String())
	}
	id := log[q].id
	return fmt.Errorf("sched: %s %v from the kernel of %v: %w: %s (each needs the next: its dependency, a child, or what the thread its kernel is suspended on waits for); the kernel of %v is suspended on this thread under this wait, so none of them can finish",
		what, id, cur, ErrDeadlock, b.String(), last)
}

// cycleLocked looks for a wait-for cycle through this thread's wait for
// id (waitCycleLocked) while it is listed as idle; if it finds one it sets
// cycleErr and takes the thread off the list (under the lock: no thread
// that looks later can then go through its frames, so one cycle fails
// one wait at a time). Called with idleMu held; a thread a waker already
// took off the list looks no further (its token is coming).
func (c *Ctx) cycleLocked(id TaskID) bool {
	s := c.s
	at := -1
	for i, t := range s.idle {
		if t == c {
			at = i
		}
	}
	if at < 0 {
		return false
	}
	err := c.waitCycleLocked(id, "Wait")
	if err == nil {
		return false
	}
	c.cycleErr = err
	s.idle = append(s.idle[:at], s.idle[at+1:]...)
	s.nIdle.Add(-1)
	s.activity.Add(1)
	return true
}
