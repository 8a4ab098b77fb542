package sched

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Threads: the worker loop, stealing, splitting, running a kernel.
//
//  1. Every thread (Ctx: a worker goroutine, or a registered thread) has
//     one Chase-Lev deque per priority level (deque.go). It pushes and pops
//     its own work at the bottom, LIFO, and steals the oldest work of
//     others from the top; higher levels are served first (find: its own
//     deque, its pinned queue, the shared queue, other threads' deques).
//  2. Stealing moves work in batches: a thief that finds at least batchMin
//     (8) tasks in a victim's deque takes half of them, up to stealBatch
//     (16), with one compare-and-swap of top (deque.stealBatch), runs the
//     first and pushes the rest onto its own deque, where they can be
//     stolen again (a pop that races with a batch: see deque.go).
//  3. A worker leaves a victim with fewer tasks to its owner until it has
//     found no work lazyMisses (64) times in a row, then it takes one: a
//     thief that answered every push at once moved the producer's deque
//     and slot lines to its core and back for every task. Registered
//     threads, which wait for a result, steal at once. Nothing is left
//     behind: a thread re-checks every deque before it sleeps (wake.go).
//  4. run pays the thread's debt if the task has another parent (debt.go),
//     then runs the task. A streaming task larger than its grain is split
//     when it first runs into one piece per thread (splitRoot; fewer if the
//     grain demands: 7 items over 4 threads give 2,2,2,1), all pushed at
//     once so idle threads can steal them immediately. Each piece splits
//     itself in halves while it is at least two grains long, keeping the
//     lower half and pushing the upper half, so stealing balances whatever
//     the even split got wrong. The arithmetic is done in 64 bits. A task
//     pinned to a registered thread is not split: its one thread would run
//     every piece anyway.
//  5. call runs the kernel. A panic becomes ErrKernelPanic; a
//     runtime.Goexit fails the task as the goroutine unwinds, and
//     runnerMain starts a goroutine to take the thread over.
//  6. A worker that finds nothing spins, then sleeps (wake.go), until Close
//     sets stopping. A worker is a role that goroutines take in turn: a
//     kernel's wait hands it to another goroutine rather than run
//     unrelated work on top of the waiting kernel, and the loop hands it
//     back at its top (handoff.go).

// Ctx is one scheduler thread: a worker goroutine, or a registered thread
// (RegisterThread). Kernels receive the Ctx of the thread running them and
// use it to add children and to wait. A Ctx must only be used by the
// goroutine that owns it: the goroutine running the kernel, or the one
// that registered the thread. Using it from two goroutines at once
// corrupts its deque. A worker's Wait may hand the worker to another
// goroutine while it waits and take it back before it returns
// (handoff.go): the Ctx a kernel holds stays valid across the wait, but
// other kernels may use the same thread (and Index) meanwhile, and may
// still be suspended in waits of their own when it resumes.
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
	// top is the task (a TaskID) whose kernel is innermost on the stack of
	// the goroutine holding this thread: stored by call (storeRelease64)
	// as it starts and ends a task's kernel, and with the role
	// (take/save). Unlike current, a Join's half run here leaves it
	// alone. Read atomically by Abandon (stranded, abandon.go).
	top int64
	// waitTop is the top (a TaskID) when the innermost Wait or WaitEvent
	// now in progress on the holder's goroutine began, NoTask if none
	// (or none made by a kernel): that kernel's wait swaps with a parked
	// one that can go on, unless a kernel it runs (above it) is running.
	// Stored like top (enterSwapWait, take/save); read by Abandon.
	waitTop int64
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
	// read): for a worker, that of the goroutine holding it (handoff.go;
	// cleared before the last exits), a registered thread's as it
	// registered (see callerCtx).
	g          atomic.Uintptr
	inAlloc    atomic.Bool // blocked in Add's back-pressure (Scheduler.alloc)
	allocTimer *time.Timer // wakes it there to look for work (owner only)
	sc         *slotCache  // this thread's entry of Scheduler.caches: how many of cache are free slots (pool.go)
	// busyG is, on a registered thread, the g of the goroutine inside its
	// outermost Wait, WaitEvent, RunPinned or RunOne (0 outside them, or
	// where getg cannot be read): alive, and calling through this Ctx,
	// whichever goroutine registered it (callerCtx, busy.go). Written by
	// that goroutine with storeRelease64 (a plain store on amd64, no
	// locked instruction per Wait), and only that goroutine can match it.
	busyG int64
	// inPlaceG is, on a registered thread, the g of the goroutine inside
	// its outermost RunInPlace, Join or JoinTasks made with no task's
	// kernel running on the thread (1 where getg cannot be read; 0
	// otherwise): the kernels run in place there run with c.running 0,
	// so Close and callerCtx tell them by this (busy.go). Written by that
	// goroutine with storeRelease64, like busyG.
	inPlaceG int64
	// The debt (see deferDec): owed counts every decrement of a parent's
	// open count that this thread ever deferred, paid every one paid; the
	// owed-paid not yet paid are owed to debtParent (index+1). The owner
	// writes owed and debtParent with plain stores (storeRelease), so
	// deferring costs no locked instruction; paid moves only by CAS, by
	// the owner (flushDec) or by Abandon, so no decrement is paid twice.
	owed       int64  // atomic: written by storeRelease64 (owner), read atomically by Abandon
	debtParent uint32 // atomic: written by storeRelease32 (owner), read atomically by Abandon
	paid       atomic.Int64
	cache      [slotCacheSize]uint32 // free slots kept by this thread (the owner's; another thread may take them back, see slotCache)
	_          [cacheLine]byte
	busy       atomic.Int32 // inside Wait, WaitEvent, RunPinned, RunOne: may run tasks
	_          [cacheLine - 4]byte
	dq         [numPriorities]deque
	pinned     [numPriorities]ring // registered threads only
	inPlace    *inPlaceStack       // RunInPlace's task data (owner only; made at first use)
	joinKid    KernelID            // the kernel Join found last (owner only)
	joinK      *Kernel
	// The runners of a worker (handoff.go; none on a registered
	// thread): self holds the role now, spares are free, parked wait in
	// a kernel's wait (written by the owner under idleMu: waitCycle
	// reads it; nparked counts it for wakeWaiters). nrunners counts them
	// all. Owner only, but for those reads.
	self     *runner
	spares   []*runner
	parked   []*runner
	nparked  atomic.Int32
	nrunners int
}

// Scheduler returns the scheduler this thread belongs to.
func (c *Ctx) Scheduler() *Scheduler { return c.s }

// Index returns the thread's index: workers are 0..Workers-1, registered
// threads follow in registration order. No two kernels with the same
// index run at the same instant, but a worker's kernels do not nest (see
// Ctx): per-thread scratch found by Index must not be held across a wait.
func (c *Ctx) Index() int { return c.index }

// Current returns the task whose kernel is running on this thread, or NoTask.
// Use it as the Parent of children added from a kernel.
func (c *Ctx) Current() TaskID { return c.current }

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

// loop is the worker's loop, run by runner r, the holder of c (see
// handoff.go): it runs tasks, spins, then sleeps, until Close stops the
// workers (false), or until a runner parked in a wait on this thread can
// go on: it hands the thread to it at this safe point, where no kernel is
// on r's stack, and r becomes free (true).
func (c *Ctx) loop(r *runner) bool {
	s := c.s
	for spins := 0; ; {
		if len(c.parked) != 0 {
			if next := c.readyParked(); next != nil {
				c.resumeFromLoop(r, next)
				return true
			}
		} else if s.stopping.Load() {
			return false
		}
		if c.runOne() {
			spins = 0
			continue
		}
		if spins++; spins < s.cfg.SpinRounds {
			spinPause(spins)
			continue // no Gosched: see Config.SpinRounds
		}
		spins = 0
		if s.stopping.Load() {
			// Runners still parked at Close: their waits end as Close
			// failed what they wait for; sleep would return at once.
			time.Sleep(recheckSleep)
			continue
		}
		c.sleep(NoTask, nil)
	}
}

// run executes task idx on this thread: splits a large streaming task into
// range pieces, or calls the kernel, then finishes the task's own work. An
// idx with joinBit is a Join's shared half instead (join.go).
func (c *Ctx) run(idx uint32) {
	if idx&joinBit != 0 {
		c.runJoin(idx) // the shared half of a Join (join.go)
		return
	}
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
// (runnerMain). TestKernelGoexit.
func (c *Ctx) call(idx uint32, k *Kernel, d *TaskData) (err error) {
	s := c.s
	sl := &s.slots[idx]
	prev := c.current
	prevTop := c.top
	id := makeID(s.id, sl.genLoad(), idx)
	under := TaskID(prevTop)
	if under == NoTask {
		// No kernel under this one on this goroutine, but maybe a
		// Join's half taken at the top of a loop (runJoin): it is part
		// of the owner's task (current), whose kernel cannot return
		// before the half does, and so before this kernel does.
		under = prev
	}
	storeRelease32(&sl.under, under.index1())
	storeRelease64(&c.top, int64(id))
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
			storeRelease64(&c.top, prevTop)
		}
		if obs != nil {
			c.ev = RunEvent{Thread: c.index, Where: AnyWorker, Task: id, Dependency: sl.task.Dependency,
				Parent: sl.task.Parent, Kernel: sl.task.Kernel, Begin: d.Begin, End: d.End,
				Start: start, Stop: Nanotime(), Err: err}
			if oerr := c.observe(obs, id); oerr != nil {
				err = errors.Join(err, oerr)
			}
		}
		if exiting {
			c.s.finish(id.index(), err, c)
		}
	}()
	err = k.CPU(c, d)
	c.running--
	c.current = prev
	storeRelease64(&c.top, prevTop)
	return err
}

// observe calls Config.Observer's TaskRan for the task id whose kernel
// just ran here, with c.ev filled in, and returns an error wrapping
// ErrObserverPanic if TaskRan panicked (the task fails with it, as a
// Placer's panic fails the task it places: a panic left to unwind would
// kill the process from a scheduler goroutine). The task completes only
// after TaskRan returns, on this thread: so while TaskRan runs, id counts
// as a kernel suspended on this thread (c.outer), and a wait made there
// for id, or for anything that needs it (its parent, a dependent), is a
// wait-for cycle that fails with ErrDeadlock (waitCycle) rather than
// sleeping for ever. Under more nested waits than c.outer holds, id
// takes its last entry for the call (that entry's kernel, the deepest the
// walk sees, is hidden meanwhile): a wait in TaskRan is on id's behalf, so
// id is the seed that must not be lost, where enter drops the innermost.
func (c *Ctx) observe(obs Observer, id TaskID) (err error) {
	c.observing = true
	at := min(c.nouter, maxOuter-1)
	hidden := c.outer[at]
	c.outer[at] = id
	c.nouter++
	defer func() {
		c.nouter--
		c.outer[at] = hidden
		c.observing = false
		if r := recover(); r != nil {
			err = fmt.Errorf("sched: %v (kernel %d): %w: %v", id, c.ev.Kernel, ErrObserverPanic, r)
		}
	}()
	obs.TaskRan(&c.ev)
	return nil
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
