package sched

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Ctx is one scheduler thread: a worker goroutine, or a registered thread
// (RegisterThread). Kernels receive the Ctx of the thread running them and
// use it to add children and to wait. A Ctx must only be used by the
// goroutine that owns it: the worker running the kernel, or the goroutine
// that registered the thread. Using it from two goroutines at once corrupts
// its deque.
type Ctx struct {
	s       *Scheduler
	index   int
	worker  bool
	name    string
	wake    chan struct{}
	timer   *time.Timer // sleep's recheck (owner only)
	waiting atomic.Bool
	npinned atomic.Int32
	running int    // depth of kernels running on this thread (owner only)
	current TaskID // task whose kernel runs now (owner only)
	rng     uint32
	misses  int      // runOne's misses in a row (owner only)
	spun    uint64   // idle rounds Wait spun, in all (owner only; tests)
	inline  int      // empty tasks being completed inside ready, nested (owner only)
	ev      RunEvent // scratch for the Observer (owner only)
	// observing is true while Config.Observer's TaskRan runs on this
	// thread (owner only): Close refuses to be called from there.
	observing bool
	// outer lists, for each call now running on this thread that waits
	// and was made by a kernel (Wait, WaitFor, WaitEvent, RunPinned,
	// RunOne, Add's back-pressure), the task of that kernel, outermost
	// first: none of those kernels can return before the innermost call
	// does. The first maxOuter of nouter are kept. Owner
	// only; read by waitCycle.
	outer  [maxOuter]TaskID
	nouter int
	// waitTarget is what this thread's innermost Wait waits for; written
	// before it sleeps, read by waitCycle under idleMu while it sleeps.
	waitTarget TaskID
	cycleErr   error         // set by sleep when waitCycle found a cycle (owner only)
	goid       atomic.Uint64 // the goroutine that owns this thread (Scheduler.callerCtx)
	// g is the owner goroutine's runtime g (getg; 0 where it cannot be
	// read): a worker's while its goroutine lives (cleared before it
	// exits), a registered thread's as it registered (see callerCtx).
	g          atomic.Uintptr
	inAlloc    atomic.Bool // blocked in Add's back-pressure (Scheduler.alloc)
	allocTimer *time.Timer // wakes it there to look for work (owner only)
	ncache     int
	// The debt (see deferDec): owed counts every decrement of a parent's
	// open count that this thread ever deferred, paid every one paid; the
	// owed-paid not yet paid are owed to debtParent (index+1). The owner
	// writes owed and debtParent with plain stores (storeRelease), so
	// deferring costs no locked instruction; paid moves only by CAS, by
	// the owner (flushDec) or by Abandon, so no decrement is paid twice.
	owed       int64  // atomic: written by storeRelease64 (owner), read atomically by Abandon
	debtParent uint32 // atomic: written by storeRelease32 (owner), read atomically by Abandon
	paid       atomic.Int64
	cache      [slotCacheSize]uint32 // free slots kept by this thread (owner only)
	_          [cacheLine]byte
	busy       atomic.Int32 // inside Wait, WaitEvent, RunPinned, RunOne: may run tasks
	_          [cacheLine - 4]byte
	dq         [numPriorities]deque
	pinned     [numPriorities]ring // registered threads only
	inPlace    *inPlaceStack       // RunInPlace's task data (owner only; made at first use)
}

// Scheduler returns the scheduler this thread belongs to.
func (c *Ctx) Scheduler() *Scheduler { return c.s }

// Index returns the thread's index: workers are 0..Workers-1, registered
// threads follow in registration order.
func (c *Ctx) Index() int { return c.index }

// Current returns the task whose kernel is running on this thread, or NoTask.
// Use it as the Parent of children added from a kernel.
func (c *Ctx) Current() TaskID { return c.current }

// Add adds a task and returns its ID. The task runs when its dependency
// (if any) completed; it completes when its own work and all its children
// completed. Add returns an error, and adds nothing, for an unknown kernel,
// streams that don't match the kernel's declaration or element count, an
// invalid affinity or priority, a parent or dependency from another
// scheduler or never issued, a dependency on an ancestor, a parent that
// already finished, a dependency that depends on an ancestor (ErrCycle), or
// a closed scheduler. When the pool is full, Add runs other tasks until a
// slot frees (back-pressure); if nothing can run and nothing but the caller
// could free a slot, it fails with ErrPoolDeadlock. A dependency that
// already finished is satisfied (or, if it failed, fails this task at once).
func (c *Ctx) Add(t *Task) (TaskID, error) { return c.s.add(t, c) }

// Create adds a task like Add but holds it until Run: children added to a
// held task cannot race its completion. Run must be called exactly once.
func (c *Ctx) Create(t *Task) (TaskID, error) { return c.s.create(t, c, true) }

// Run starts a task made with Create.
func (c *Ctx) Run(id TaskID) error { return c.s.run(id, c) }

// Wait runs other tasks until id has finished, then returns its error
// (a *TaskError) or nil. When there is nothing to run it keeps looking for
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
		c.enter()
		defer c.leave()
	}
	for spins := 0; !s.IsFinished(id); {
		if c.runOne() {
			spins = 0
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
		// No work (runOne paid this thread's debt): pay what the other
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
		if err := c.cycleErr; err != nil {
			c.cycleErr = nil
			return err
		}
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
// while waiting for vsync, a GPU fence or another system). It also returns
// once Close has run everything else that can run, signalled or not: check
// e.IsSet. Close then runs what the returning kernels ready before it
// calls anything stuck. A kernel waiting for an event nobody
// signals used to keep Close from returning, and its thread spun.
func (c *Ctx) WaitEvent(e *Event) {
	s := c.s
	c.enterBusy()
	defer c.leaveBusy()
	defer c.flushDec() // before busy drops: no debt outlives the call
	if c.running > 0 {
		c.enter()
		defer c.leave()
	}
	for spins := 0; !e.IsSet(); {
		if c.runOne() {
			spins = 0
			continue
		}
		if s.drained.Load() {
			return // Close found nothing left to run: e would be all
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
// its dependents list (each needs it) and the threads asleep waiting for
// it (their suspended kernels need it). It starts from this thread's
// suspended kernels, and fails the wait if it reaches id. So a cycle
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
// sleep without that lock, so their frames cannot change meanwhile). It
// costs nothing on the hot path; a walk visits each live task at most once.
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
	n := min(c.nouter, maxOuter)
	if n == 0 || id == NoTask {
		return nil
	}
	s := c.s
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
	for _, f := range c.outer[:n] {
		visit(f, -1)
	}
	for q := 0; q < len(log); q++ {
		x := log[q].id
		if x == id {
			return c.deadlock(what, log, q)
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
		// The kernels suspended on a thread asleep waiting for x need x.
		for _, t := range s.idle {
			if t != c && t.waiting.Load() && t.waitTarget == x && t.nouter > 0 {
				for _, f := range t.outer[:min(t.nouter, maxOuter)] {
					visit(f, int32(q))
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
func (c *Ctx) deadlock(what string, log []cycVisit, q int) error {
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
		what, id, c.current, ErrDeadlock, b.String(), last)
}

func (c *Ctx) runOne() bool {
	x := c.find()
	if x == noItem {
		c.misses++
		c.flushDec()
		return false
	}
	c.misses = 0
	c.run(x)
	return true
}

func (c *Ctx) find() uint32 {
	s := c.s
	pinned := !c.worker && c.npinned.Load() > 0
	for lv := 0; lv < numPriorities; lv++ {
		if lv != 1 && s.queued[lv].Load() == 0 && !pinned {
			continue
		}
		if x := c.dq[lv].pop(); x != noItem {
			c.took(lv)
			return x
		}
		if pinned {
			if x := c.pinned[lv].pop(); x != noItem {
				c.npinned.Add(-1)
				return x
			}
		}
		if x := s.inject[lv].pop(); x != noItem {
			c.took(lv)
			return x
		}
		if n := len(s.threads); n > 1 {
			c.rng = c.rng*1664525 + 1013904223
			start := int(c.rng>>16) % n
			for i := 0; i < n; i++ {
				t := s.threads[(start+i)%n]
				if t == c {
					continue
				}
				d := &t.dq[lv]
				size := atomic.LoadInt64(&d.bottom) - d.top.Load()
				if size <= 0 || (c.worker && size < batchMin && c.misses < lazyMisses) {
					continue
				}
				if x := c.stealFrom(t, lv, size); x != noItem {
					c.took(lv)
					return x
				}
			}
		}
	}
	return noItem
}

// stealBatch is the most tasks a thief takes in one visit.
const stealBatch = 16

// batchMin: a thief takes a batch (half, up to stealBatch) only from a
// victim with at least this many tasks, and one task from a shallower one.
// lazyMisses: a worker leaves a victim with fewer than batchMin tasks to
// their owner until it has found no work that many times in a row (it
// then takes one; sleep's re-check sees any task, so nothing is left
// behind). A producer whose every push a thief answers at once moves its
// deque's lines, and the slot's, to the thief's core and back for every
// task; left a few rounds, the tasks pile up and go in batches. 64 misses
// are a small part of the idle spin (see Config.SpinRounds); fewer, chosen
// while the spin still yielded, made empty tasks slower again
// (BENCHMARKS.md, section sched-design). Registered threads steal at
// once: they are waiting for a result.
const (
	batchMin   = 8
	lazyMisses = 64
)

// stealFrom takes work from victim's deque at level lv, which held size
// tasks: half of it, up to stealBatch tasks, with one CAS
// (deque.stealBatch), or a single task. It returns the first and pushes
// the rest onto this thread's own deque, where others may steal them in
// turn. Taking a batch at once, the thief reads the victim's bottom and
// top lines once per batch instead of once per task.
func (c *Ctx) stealFrom(victim *Ctx, lv int, size int64) uint32 {
	if size < batchMin {
		return victim.dq[lv].steal()
	}
	var got [stealBatch]uint32
	n := victim.dq[lv].stealBatch(got[:])
	if n == 0 {
		return victim.dq[lv].steal()
	}
	for _, x := range got[1:n] {
		c.pushOwn(x, lv)
	}
	return got[0]
}

// pushOwn puts a stolen task on this thread's deque, or the shared queue
// if the deque is full.
func (c *Ctx) pushOwn(x uint32, lv int) {
	if !c.dq[lv].push(x) {
		c.s.inject[lv].push(x)
	}
}

func (c *Ctx) took(lv int) {
	if lv != 1 {
		c.s.queued[lv].Add(-1)
	}
}

// hasWork reports whether any queue this thread may serve holds work.
func (c *Ctx) hasWork() bool {
	s := c.s
	if !c.worker && c.npinned.Load() > 0 {
		return true
	}
	for lv := range s.inject {
		if s.inject[lv].n.Load() > 0 {
			return true
		}
		for _, t := range s.threads {
			if !t.dq[lv].empty() {
				return true
			}
		}
	}
	return false
}

// sleep parks the thread until woken. It registers as idle first and then
// re-checks for work and for the wait condition, so a push or completion
// that raced with it is never missed.
func (c *Ctx) sleep(id TaskID, e *Event) {
	s := c.s
	c.flushDec() // no debt is held asleep
	c.flushSlots()
	s.idleMu.Lock()
	s.idle = append(s.idle, c)
	s.nIdle.Add(1)
	// A Wait in a kernel looks for a wait-for cycle now, listed and under
	// the lock, so that of two threads that close one and go to sleep
	// together the second sees the first; and again at each recheck
	// below, for as long as it sleeps: a link of the cycle may be made
	// after every thread in it went to sleep (an Add from elsewhere), or
	// a thread that saw the cycle and failed its wait may not have
	// broken it (its kernel returned, but its task still needs a child).
	watch := id != NoTask && c.nouter > 0
	if watch && c.cycleLocked(id) {
		s.idleMu.Unlock()
		s.wakeWaiters() // the others in the cycle look again
		return
	}
	s.idleMu.Unlock()
	if s.poolWait.Load() > 0 {
		// An Add blocked on a full pool looks for a dead end when the
		// threads go idle (see alloc).
		s.extMu.Lock()
		s.extCond.Broadcast()
		s.extMu.Unlock()
	}
	if c.hasWork() || (id != NoTask && s.IsFinished(id)) || (e != nil && (e.IsSet() || s.drained.Load())) || (c.worker && s.stopping.Load()) {
		s.removeIdle(c)
		select { // drop a token a waker may have sent meanwhile
		case <-c.wake:
		default:
		}
		return
	}
	// Wait for a token, looking for work once more at each recheck. A
	// push publishes its item with a plain store and then reads nIdle
	// without a fence (a fence per push doubled the cost of a task shared
	// between two cores), so on x86 its read can pass its own store and
	// miss a thread that registers as idle at that instant, while that
	// thread's re-check misses the store still in the pusher's buffer. The
	// next push wakes it anyway; the recheck bounds the wait when no push
	// comes (the pusher then blocked outside the scheduler). The race can
	// only happen as the thread goes to sleep (a push after that reads the
	// increment), so the rechecks back off (waits of 1, 4, 16 and 64 ms:
	// 1, 5, 21 and 85 ms after falling asleep), and then the thread waits
	// for a token alone: an idle thread costs no periodic wake-ups. A Wait
	// in a kernel (watch) goes on looking for a cycle every recheckWatch.
	for d := recheckSleep; ; d = min(4*d, recheckWatch) {
		if d > recheckLast && !watch {
			<-c.wake
			s.removeIdle(c)
			return
		}
		c.timer.Reset(d)
		select {
		case <-c.wake:
			c.timer.Stop()
			// A token can be stale (a waker took us off the list while we
			// were re-checking, and signalled after we left): then we are
			// still listed.
			s.removeIdle(c)
			return
		case <-c.timer.C:
			if c.hasWork() {
				s.removeIdle(c)
				select { // drop a token a waker may have sent meanwhile
				case <-c.wake:
				default:
				}
				return
			}
			if watch {
				s.idleMu.Lock()
				found := c.cycleLocked(id)
				s.idleMu.Unlock()
				if found {
					select { // drop a token a waker may have sent meanwhile
					case <-c.wake:
					default:
					}
					s.wakeWaiters()
					return
				}
			}
		}
	}
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

// spinPause is called on every idle round before the thread sleeps: every
// yieldEvery rounds (about 0.5 µs of looking) it lets the OS run another
// thread on this CPU (osYield). On a quiet machine nobody else is
// runnable and the call returns at once. When the cores are shared with
// other programs, a spinning thread otherwise holds a CPU that the thread
// with the work (often the one it waits for) is queued for; the
// measurement is in BENCHMARKS.md (section sched-peers). It is not
// Gosched, which moves the goroutine to the global run queue
// (Config.SpinRounds).
func spinPause(spins int) {
	if spins%yieldEvery == 0 {
		osYield()
	}
}

// yieldEvery is how many idle rounds pass between two osYields.
const yieldEvery = 16

// recheckSleep and recheckLast: the first and last delay after which a
// sleeping thread looks for work that a push racing with its sleep left
// unannounced (see sleep); each delay is four times the previous.
const (
	recheckSleep = time.Millisecond
	recheckLast  = 64 * time.Millisecond
	// recheckWatch is how often a Wait in a kernel that sleeps looks for
	// a wait-for cycle once the rechecks have backed off (see sleep).
	recheckWatch = 256 * time.Millisecond
)

// slotCacheSize is the most free slots one thread keeps.
const slotCacheSize = 64

// flushSlots returns the thread's cached free slots to the shared list
// (before sleeping, or when someone waits for a slot).
func (c *Ctx) flushSlots() {
	if c.ncache > 0 {
		c.s.freeBatch(c.cache[:c.ncache])
		c.ncache = 0
	}
}

func (c *Ctx) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Ctx) workerLoop() {
	s := c.s
	exited := true // until the loop ends normally: a kernel called runtime.Goexit
	defer func() {
		c.g.Store(0) // before this goroutine ends and its g can be reused
		if exited {
			// The kernel's task has failed (see call); this goroutine
			// ends, and a new one serves the thread: its deque, cache
			// and debt are the thread's, not the goroutine's.
			c.flushDec()
			s.workersWG.Add(1)
			go c.workerLoop()
		}
		s.workersWG.Done()
	}()
	c.g.Store(getg())
	c.goid.Store(goid())
	if f := s.cfg.OnWorkerStart; f != nil {
		f(c.index)
	}
	c.rng = uint32(c.index)*2654435761 + 1
	for spins := 0; !s.stopping.Load(); {
		if c.runOne() {
			spins = 0
			continue
		}
		if spins++; spins < s.cfg.SpinRounds {
			spinPause(spins)
			continue // no Gosched: see Config.SpinRounds
		}
		spins = 0
		c.sleep(NoTask, nil)
	}
	exited = false
}

// run executes task idx on this thread: splits a large streaming task into
// range pieces, or calls the kernel, then finishes the task's own work.
func (c *Ctx) run(idx uint32) {
	s := c.s
	sl := &s.slots[idx]
	if sl.parent != c.debtParent {
		c.flushDec()
	}
	k := sl.kern
	if sl.task.Kernel == KernelNone {
		s.finishRun(idx, nil, c)
		return
	}
	if uint32(sl.deps.Load()) == depsAbandoned {
		s.finishRun(idx, nil, c) // abandoned before it ran: never run it
		return
	}
	d := &sl.task.Data
	if k.Kind != Simple {
		g := d.Grain
		if g == 0 {
			g = k.Grain
		}
		if !sl.sub {
			// A task pinned to a registered thread is not split: every
			// piece would have to run on this thread anyway, so it runs
			// as one range (pieces pushed here were stolen by workers).
			if d.End-d.Begin > g && sl.task.Affinity&threadAffinity == 0 && c.splitRoot(idx, g) {
				return
			}
		} else {
			// Binary splitting: hand the upper half to the deque (a thief
			// may take it) and keep the lower half, while pieces stay at
			// least one grain.
			for uint64(d.End-d.Begin) >= 2*uint64(g) { // 64-bit: 2*g may not fit
				x, ok := s.getSlot(c)
				if !ok {
					break
				}
				mid := d.Begin + (d.End-d.Begin)/2
				p := sl.parent - 1
				atomic.AddInt32(&s.slots[p].open, 1)
				s.initSub(x, p, mid, d.End, AnyWorker, c)
				d.End = mid
				s.pushCPU(x, sl.task.Priority.level(), c)
			}
		}
	}
	s.finishRun(idx, c.call(idx, k, d), c)
}

// deferDec records that a task this thread ran completed and owes its
// parent (index+1) a decrement of its open count. Consecutive children of
// one parent then cost one atomic add on the parent's line instead of one
// each, and the line does not move between threads per task. The debt is
// paid (flushDec) before this thread runs a task with another parent,
// whenever it finds no work (so before it sleeps), before any entry point
// (Wait, WaitEvent, RunPinned, RunOne) returns, when WaitFor begins, and
// when Wait waits for that parent. So it is only held while this thread keeps
// running children of the same parent, which cannot complete before those
// children anyway: no completion is delayed beyond that.
//
// Abandon must be able to pay the debt of a thread stuck in a kernel, so
// the debt is readable by other threads, yet deferring must not cost a
// locked instruction per task (a locked instruction waits for the
// thread's earlier stores to drain: a compare-and-swap here made a task
// handed between two cores measurably slower). So the owner only ever adds, with
// plain stores, to the counter owed, and whoever pays (flushDec, Abandon)
// advances paid to the owed it read with a CAS and pays the difference
// to debtParent. debtParent changes only when nothing is owed (after a
// flush); it is stored before owed, and Abandon loads paid, then owed,
// then debtParent: if its CAS from that paid succeeds, no flush came
// between, so every decrement it pays was deferred for that parent.
func (c *Ctx) deferDec(parent uint32) {
	o := c.owed
	if c.debtParent != parent {
		if o != c.paid.Load() {
			c.flushDec()
		}
		storeRelease32(&c.debtParent, parent)
	}
	storeRelease64(&c.owed, o+1)
}

// debt returns the parent (index+1) this thread owes decrements and how
// many (0 if none). Owner only.
func (c *Ctx) debt() (uint32, int64) {
	n := c.owed - c.paid.Load()
	if n == 0 {
		return 0, 0
	}
	return c.debtParent, n
}

// flushDec pays the pending parent decrements (see deferDec). Owner only.
func (c *Ctx) flushDec() {
	o := c.owed
	p := c.paid.Load()
	for p != o {
		if c.paid.CompareAndSwap(p, o) {
			c.s.payDebt(c.debtParent, o-p, c)
			return
		}
		p = c.paid.Load() // Abandon paid some of it
	}
}

// takeDebt pays, from another thread (by, nil if none), what c owes (see
// deferDec).
func (c *Ctx) takeDebt(by *Ctx) {
	p := c.paid.Load()
	o := atomic.LoadInt64(&c.owed)
	if o == p {
		return
	}
	parent := atomic.LoadUint32(&c.debtParent)
	if c.paid.CompareAndSwap(p, o) {
		c.s.payDebt(parent, o-p, by)
	}
}

// splitRoot splits streaming task idx evenly into one piece per thread (or
// fewer, at least a grain each): 7 items over 4 threads give 2,2,2,1.
func (c *Ctx) splitRoot(idx uint32, g uint32) bool {
	s := c.s
	sl := &s.slots[idx]
	d := &sl.task.Data
	n := d.End - d.Begin
	// In 64 bits: n+g-1 overflows for n > 2^32-g.
	p := uint32(min((uint64(n)+uint64(g)-1)/uint64(g), uint64(len(s.threads))))
	if p <= 1 {
		return false
	}
	base, rem := n/p, n%p
	begin := d.Begin
	lv := sl.task.Priority.level()
	for i := uint32(0); i < p; i++ {
		size := base
		if i < rem {
			size++
		}
		x, ok := s.getSlot(c)
		if !ok {
			// Pool exhausted: run what is left here, inside this task.
			d.Begin = begin
			s.finish(idx, c.call(idx, sl.kern, d), c)
			return true
		}
		atomic.AddInt32(&sl.open, 1)
		s.initSub(x, idx, begin, begin+size, AnyWorker, c)
		begin += size
		s.pushCPU(x, lv, c)
	}
	s.finish(idx, nil, c)
	return true
}

// call runs the kernel, turning a panic into an error.
//
// A kernel that calls runtime.Goexit (testing's FailNow and Fatal do, on
// whatever goroutine calls them) unwinds its thread's goroutine, which
// nothing can stop: the caller would never finish the task, and its
// waiters, dependents and Close would wait for ever. So the deferred
// function, seeing neither a return nor a panic, fails the task itself
// (ErrKernelPanic, saying Goexit) before the goroutine goes on unwinding;
// kernels suspended under it on the same goroutine fail the same way, and
// a worker's loop starts a goroutine to take the thread over
// (workerLoop). TestKernelGoexit.
func (c *Ctx) call(idx uint32, k *Kernel, d *TaskData) (err error) {
	s := c.s
	sl := &s.slots[idx]
	prev := c.current
	id := makeID(s.id, sl.genLoad(), idx)
	c.current = id
	c.running++
	obs := s.cfg.Observer
	var start int64
	if obs != nil {
		start = Nanotime()
	}
	defer func() {
		// The body restores current when the kernel returns; if it
		// did not, the kernel panicked or called runtime.Goexit (and
		// kernels nested above it restored current in their own
		// defers). The normal path costs no call to recover.
		exiting := false
		if c.current != prev {
			exiting = c.endAbnormal(recover(), &err, prev)
		}
		if obs != nil {
			c.ev = RunEvent{Thread: c.index, Where: AnyWorker, Task: id, Dependency: sl.task.Dependency,
				Parent: sl.task.Parent, Kernel: sl.task.Kernel, Begin: d.Begin, End: d.End,
				Start: start, Stop: Nanotime(), Err: err}
			c.observing = true
			obs.TaskRan(&c.ev)
			c.observing = false
		}
		if exiting {
			c.s.finish(id.index(), err, c)
		}
	}()
	err = k.CPU(c, d)
	c.running--
	c.current = prev
	return err
}

// endAbnormal ends a kernel call that did not return: r is what recover
// gave (nil for runtime.Goexit). It sets the call's error and reports
// whether the goroutine is exiting, so the caller must fail the task.
func (c *Ctx) endAbnormal(r any, err *error, prev TaskID) bool {
	c.running--
	c.current = prev
	if r != nil {
		*err = fmt.Errorf("%w: %v", ErrKernelPanic, r)
		return false
	}
	*err = fmt.Errorf("%w: runtime.Goexit on the kernel's goroutine (testing's FailNow or Fatal called in a kernel?): the goroutine exited before the kernel returned", ErrKernelPanic)
	return true
}

// Event is a flag that threads can work while waiting for (WaitEvent). The
// zero value is not usable: use Scheduler.NewEvent.
type Event struct {
	s   *Scheduler
	set atomic.Bool
}

// NewEvent returns an unset event.
func (s *Scheduler) NewEvent() *Event { return &Event{s: s} }

// Signal sets the event and wakes threads waiting for it. Any goroutine.
func (e *Event) Signal() {
	e.set.Store(true)
	e.s.wakeWaiters()
}

// Reset clears the event.
func (e *Event) Reset() { e.set.Store(false) }

// IsSet reports whether the event is set.
func (e *Event) IsSet() bool { return e.set.Load() }
