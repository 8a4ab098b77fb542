package sched

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// The pool: slots, the free list and back-pressure.
//
//  1. Tasks live in a pool of slots allocated by New, each padded to whole
//     cache lines (slot, TestSlotSize). Adding a task allocates nothing.
//  2. Each thread keeps a cache of free slots (getSlot, putSlot; at most
//     slotCacheSize). It takes slots from the shared free list in batches
//     (half its cache) and spills half of a full cache back; a goroutine
//     that is no thread takes and returns single slots, and while an Add
//     waits for a slot freed slots go straight to the shared list.
//     Cached slots must never be lost to the pool, and no thread can be
//     relied on to hand its cache back in time: a registered thread may,
//     between its calls, do other work for as long as it likes, outside
//     the scheduler, and so may a worker's kernel between its calls (it
//     may wait on a channel for a goroutine that is itself blocked in an
//     Add); the scheduler cannot see either leave (Add, Create, Run and a
//     kernel's return are not marked). So an Add that finds the shared
//     list empty takes back the caches of every thread, workers included
//     (reclaimCaches), whether their owners are outside the scheduler or
//     not; owner and taker exclude each other without waiting and, where
//     the OS has a process-wide fence, without a locked instruction on
//     the owner's side (slotCache). An owner that fills its cache while
//     an Add waits (poolWait) hands it over at once: that Add may have
//     counted the cache just before. A worker also flushes its cache as
//     it goes idle (sleep).
//     Rejected: a CAS on the count per Add and per completion (the
//     locked instruction waits for the previous Add's stores to the
//     slot: EmptyTask was markedly slower); no cache on registered
//     threads (a lock per Add and per completion on the main thread,
//     which adds most tasks); flushing the cache as a registered thread
//     leaves each call (Add is a call: every Add would refill under the
//     lock); leaving workers' caches to their owners (plain fields, as
//     first), on the ground that a worker running a kernel holds at most
//     cacheCap slots while its task runs, so the pool is not at a dead
//     end: a kernel blocked outside the scheduler on a goroutine that
//     waits in Add for a slot is such a dead end, the slot it waits for
//     sitting in that worker's cache.
//  3. A thread that refills its cache asks for the lines Add will write for
//     each of those slots (the first slotHotLines) at once, with PREFETCHW
//     (touchSlots; x86 without it and other CPUs write the lines instead).
//     They were written by the threads that completed those tasks, so they
//     sit in other cores' caches; fetched in parallel they cost one round
//     trip per batch. Written one per Add instead, the stores wait in the
//     store buffer, and the next locked instruction (the parent's increment
//     in Add) waits for all of them: that wait was the largest single cost
//     of EmptyTask. For the same reason the Scheduler's fields that threads
//     write (the free list, the queues, the idle list) are padded off the
//     lines of the fields every Add reads (TestSchedulerLayout).
//  4. When the pool is full, a kernel's Add of a plain CPU child runs it
//     in place (addInPlace, inplace.go): in a recursion deeper than the
//     pool, every slot holds a kernel that waits for children, and no
//     slot frees until some child runs without one. Its ID names the
//     in-place slot, one past the pool (poolSlots), which is never on
//     the free list. Any other Add applies back-pressure (alloc): a caller
//     that is a scheduler thread (Scheduler.Add from a kernel included, see
//     caller.go) runs tasks meanwhile; otherwise, or with nothing to run, it
//     sleeps on extCond until a slot frees (notifyFree) or the threads go
//     idle (sleep broadcasts). A thread blocked there looks for work every
//     allocRecheck.
//     A worker blocked there that has a runner parked in a wait whose
//     task finished (handoff.go) hands the worker to it, and looks again
//     when the worker comes back: that kernel may be what frees slots.
//  5. An Add that waits for a free slot while nothing can run (every thread
//     idle or blocked in Add, no queued or executor work, no slot cached:
//     the pool holds held tasks and what waits for them; poolStuckLocked)
//     waits on: slow is not dead. Such a pool drains only when some
//     goroutine calls Run (or Abandon), and any goroutine that holds a
//     held task's ID may be about to, after work of its own outside the
//     scheduler (loading a file, a sleep); the scheduler cannot see the
//     goroutines that are no thread, nor know which of them holds the
//     IDs. So the dead end is reported by time alone: an Add fails with
//     ErrPoolDeadlock once the pool has been stuck, without a break, for
//     Config.PoolStallLimit (half a second unless set; negative: never).
//     The error counts the live and the held tasks.
//     Rejected: failing after a few milliseconds, as the dead end was
//     first reported (a Run that came a little later then found the
//     program already failed); deciding by who made the held tasks (the
//     dead end is sure when every maker is blocked in the scheduler) would
//     need Create to record its caller, a store on the task's path, and
//     still could not see an ID handed to another goroutine.
//  6. The slots hold pointers (the task's Data and its streams' bytes, its
//     kernel, its error), so every garbage-collection cycle scans the whole
//     pool, free slots included: the mark work grows with PoolSize, not
//     with the live tasks, and it follows the pointer words, nil or not.
//     Rejected: moving the pointer fields to a side array (as long as the
//     pool and holding as many pointer words, it costs the scan as much;
//     and a kernel is handed the TaskData in its slot, so Data and the
//     streams could leave the slot only as a copy per run); making the
//     slots in chunks on demand, so that only chunks ever handed out are
//     scanned (every slot access on the hot path first loads a chunk
//     pointer: EmptyTask was slower; and a program that once had many
//     tasks live keeps its chunks).

// slot is one pool entry. Hot fields first; the task copy follows.
type slotFields struct {
	deps    atomic.Uint64 // generation<<32 | dependents list head (index+1) or depsClosed
	open    int32         // own work (1) + unfinished children; atomic once published
	waiters atomic.Int32
	depNext uint32 // link in a dependency's dependents list
	parent  uint32 // parent index+1, 0 for none
	// pgen is the parent's generation when parent is not 0: with it the
	// walks up the parents (addCycle, waitCycle) name the parent exactly,
	// and see it finished once its slot moved on. Stored and read like kid.
	pgen   uint32
	kid    uint32      // task.Kernel, for Abandon: stored with storeUnpublished32, read atomically
	held   atomic.Bool // made by Create, not yet Run
	sub    bool        // a range piece of a split streaming task
	simple bool        // task.Data's streams are zero
	// under is the slot (index+1) of the task whose kernel is suspended
	// directly under this one's on the same goroutine, 0 if none: call
	// stores it (storeRelease32) before the kernel runs, in the first
	// line's padding. Abandon walks it to find the kernels that cannot
	// return before an abandoned one does (stranded, abandon.go).
	under uint32
	err   atomic.Pointer[TaskError]
	kern  *Kernel
	dep   uint64 // task.Dependency: stored with storeUnpublished64, read atomically (Add's cycle check)
	task  Task
	// execID is the ID of the last task of this slot handed to an
	// executor (ready stores it before Enqueue); Wait reads it to sleep
	// at once rather than spin (see Ctx.Wait). Never cleared: a later
	// task of the slot has another ID. In the slot's tail padding, off
	// the lines a CPU task touches.
	execID atomic.Uint64
}

// slot pads slotFields to whole cache lines, so neighbouring slots never
// share a line (TestSlotSize checks it).
type slot struct {
	slotFields
	_ [(cacheLine - unsafe.Sizeof(slotFields{})%cacheLine) % cacheLine]byte
}

// freeOpen is the open count of a free slot: New stores it, complete
// stores it after the generation bump, and Add replaces it with 1. Every
// reader of open treats it as no task (holdParent and Close's scan test
// <= 0, live > 0); checkIDSlow (ids.go) needs it to tell a free slot (-1)
// from a task between its last decrement and its bump (0). freeOpenBits
// is the same value for the stores through *uint32.
const (
	freeOpen     int32  = -1
	freeOpenBits uint32 = 0xffffffff
)

const (
	depsClosed    = 0xffffffff
	depsAbandoned = 0xfffffffe // Abandon released the dependents early
)

// poolSlots is how many slots New makes for Config.PoolSize n: the pool
// and, after it, the slot that names the children run in place when the
// pool is full (inPlaceSlot); at MaxPoolSize, whose indices the IDs just
// cover, that slot is the pool's last.
func poolSlots(n int) int { return min(n+1, MaxPoolSize) }

// initSlots starts every slot free at generation base (open freeOpen)
// and lists all but the in-place slot on the free list, lowest index on
// top.
func (s *Scheduler) initSlots(base uint32) {
	for i := range s.slots {
		s.slots[i].deps.Store(uint64(base) << 32)
		atomic.StoreInt32(&s.slots[i].open, freeOpen)
	}
	for i := int(s.inPlaceSlot()) - 1; i >= 0; i-- {
		s.freeIdx = append(s.freeIdx, uint32(i))
	}
	s.nfree.Store(int32(len(s.freeIdx)))
}

// genLoad returns the slot's generation (the high half of deps).
func (sl *slot) genLoad() uint32 { return uint32(sl.deps.Load() >> 32) }

// alloc takes a free slot, helping or sleeping while the pool is full.
// A caller that is a scheduler thread (Scheduler.Add from a kernel or a
// registered thread included) runs tasks meanwhile. With the shared list
// empty it first takes back the slots that threads cache
// (reclaimCaches). When nothing can free a slot but a Run or Abandon from
// outside (every thread idle or blocked in Add, every queue empty, no
// executor job, no slot cached) and none has come for
// Config.PoolStallLimit, it returns an error wrapping ErrPoolDeadlock
// instead of sleeping for ever.
func (s *Scheduler) alloc(c *Ctx) (uint32, error) {
	resolved := c != nil
	var stuckSince time.Time
	var stuckAct uint64  // s.activity when stuckSince was taken
	var wake *time.Timer // a caller that is no thread: wakes it when the limit is up
	defer func() {
		if wake != nil {
			wake.Stop()
		}
	}()
	for {
		if idx, ok := s.getSlot(c); ok {
			return idx, nil
		}
		if !resolved {
			// Scheduler.Add from a goroutine that may be one of our
			// threads (a kernel): it must help, or nobody may run.
			resolved = true
			if c = s.callerCtx(); c != nil {
				continue
			}
		}
		if s.reclaimCaches() {
			continue
		}
		if c != nil && c.helpOne() {
			stuckSince = time.Time{}
			continue
		}
		if c != nil && len(c.parked) != 0 {
			if next := c.readyParkedWait(); next != nil {
				// A runner parked on this worker whose wait ended can
				// go on (its kernel may be what frees slots): let it
				// run until it reaches a safe point, then look again
				// (handoff.go; NoTask: this one is ready at once).
				// Runners parked here too are not resumed: two would
				// swap for ever.
				c.park(noItem, next, NoTask, nil)
				stuckSince = time.Time{}
				continue
			}
		}
		// Nothing to run here: sleep until a slot frees, or until the
		// scheduler goes idle (sleep broadcasts) to look for the dead end.
		// A slot cached since reclaimCaches (the owner published it before
		// it saw poolWait) is taken on the next round, not slept beside.
		s.extMu.Lock()
		s.poolWait.Add(1)
		if haveProcessFence {
			processFence() // see getSlotShared: owners' plain stores of their counts
		}
		if s.nfree.Load() == 0 && s.cachedSlots() == 0 {
			if s.poolStuckLocked(c) {
				// A thread woke since the last look (a Run readied a
				// task that ran and freed nothing): that was a break.
				if act := s.activity.Load(); stuckSince.IsZero() || act != stuckAct {
					stuckSince, stuckAct = time.Now(), act
				}
				limit := s.cfg.PoolStallLimit
				stuck := time.Since(stuckSince)
				if limit >= 0 && stuck >= limit {
					s.poolWait.Add(-1)
					s.extMu.Unlock()
					return 0, s.poolDeadlock(stuck)
				}
				if c == nil && limit >= 0 {
					// Threads blocked in Add wake every allocRecheck
					// anyway; a goroutine that is no thread needs its
					// own wake-up when the limit is up. One timer per
					// blocked Add, reset.
					if wake == nil {
						wake = time.AfterFunc(limit-stuck, s.broadcastExt)
					} else {
						wake.Reset(limit - stuck)
					}
				}
			} else {
				stuckSince = time.Time{}
			}
			if c != nil {
				// A thread looks again soon: work it could help with
				// may be queued meanwhile, and a push wakes only idle
				// threads. One timer per thread, reset: no allocation.
				if c.allocTimer == nil {
					c.allocTimer = time.AfterFunc(allocRecheck, s.broadcastExt)
				} else {
					c.allocTimer.Reset(allocRecheck)
				}
				c.inAlloc.Store(true) // see quiescentExcept
			}
			s.extCond.Wait()
			if c != nil {
				c.inAlloc.Store(false)
			}
		}
		s.poolWait.Add(-1)
		s.extMu.Unlock()
	}
}

// defaultPoolStall is Config.PoolStallLimit's default: long enough that
// a goroutine that Runs a held task after other work of its own is not
// taken for dead, short enough that a true dead end is reported while
// its cause is still obvious. allocRecheck is how often a thread blocked
// in Add looks for work to help with.
const (
	defaultPoolStall = 500 * time.Millisecond
	allocRecheck     = time.Millisecond
)

// broadcastExt wakes every goroutine waiting on extCond (timers of alloc).
func (s *Scheduler) broadcastExt() {
	s.extMu.Lock()
	s.extCond.Broadcast()
	s.extMu.Unlock()
}

// poolStuckLocked reports whether no slot can free without an outside
// call: the shared list is empty, no thread caches a slot, and
// nothing can run (see quiescent), c (the caller, blocked in Add; nil if
// not a thread) aside. Called with extMu held.
func (s *Scheduler) poolStuckLocked(c *Ctx) bool {
	return s.nfree.Load() == 0 && s.cachedSlots() == 0 && s.quiescentExcept(c, true)
}

// poolDeadlock is the error of an Add that found the pool stuck for the
// whole of Config.PoolStallLimit. It counts the live tasks (those the
// pool's slots hold, cached free slots excluded) and the held ones.
func (s *Scheduler) poolDeadlock(stuck time.Duration) error {
	live, held := 0, 0
	pool := int(s.inPlaceSlot())
	for i := range s.slots[:pool] {
		if atomic.LoadInt32(&s.slots[i].open) > 0 {
			live++
		}
		if s.slots[i].held.Load() {
			held++
		}
	}
	return fmt.Errorf("%w: %d of the pool's %d slots hold unfinished tasks and none has run for %v (%d made by Create wait for Run, the others wait for those or for a cycle); only a Run or Abandon could free a slot, and none came within Config.PoolStallLimit: Run held tasks before adding more dependents, raise Config.PoolSize, or raise Config.PoolStallLimit if the Run comes later",
		ErrPoolDeadlock, live, pool, stuck.Round(time.Millisecond), held)
}

func (s *Scheduler) tryAlloc() (uint32, bool) {
	s.freeMu.Lock()
	n := len(s.freeIdx)
	if n == 0 {
		s.freeMu.Unlock()
		return 0, false
	}
	x := s.freeIdx[n-1]
	s.freeIdx = s.freeIdx[:n-1]
	s.nfree.Store(int32(n - 1))
	s.freeMu.Unlock()
	return x, true
}

// allocBatch moves up to len(dst) free slots into dst; it returns how many.
func (s *Scheduler) allocBatch(dst []uint32) int {
	s.freeMu.Lock()
	n := len(s.freeIdx)
	k := min(n, len(dst))
	copy(dst, s.freeIdx[n-k:])
	s.freeIdx = s.freeIdx[:n-k]
	s.nfree.Store(int32(n - k))
	s.freeMu.Unlock()
	return k
}

// freeBatch returns slots to the shared free list.
func (s *Scheduler) freeBatch(src []uint32) {
	s.freeMu.Lock()
	s.freeIdx = append(s.freeIdx, src...) // capacity is PoolSize: never grows
	s.nfree.Store(int32(len(s.freeIdx)))
	s.freeMu.Unlock()
	s.notifyFree()
}

func (s *Scheduler) freeSlot(idx uint32) {
	s.freeMu.Lock()
	s.freeIdx = append(s.freeIdx, idx)
	s.nfree.Store(int32(len(s.freeIdx)))
	s.freeMu.Unlock()
	s.notifyFree()
}

func (s *Scheduler) notifyFree() {
	if s.poolWait.Load() > 0 {
		s.extMu.Lock()
		s.extCond.Broadcast()
		s.extMu.Unlock()
		s.wakeAll()
	}
}

// Pending returns how many tasks are allocated (queued, running, waiting
// for a dependency or for children).
func (s *Scheduler) Pending() int { return int(s.live()) }

// live counts the tasks in the pool (slots whose open count is positive).
// It scans the whole pool: a diagnostic, not for hot paths.
func (s *Scheduler) live() int64 {
	var n int64
	for i := range s.slots {
		if atomic.LoadInt32(&s.slots[i].open) > 0 {
			n++
		}
	}
	return n
}

// getSlot takes a free slot from the thread's cache, refilling it from the
// shared free list in a batch. The common case is here, the rest in
// getSlotShared; another thread may take the cache back meanwhile (see
// slotCache). Without processFence every section goes the slow way.
func (s *Scheduler) getSlot(c *Ctx) (uint32, bool) {
	if c == nil {
		return s.tryAlloc()
	}
	if haveProcessFence {
		// enter and leave, inline, with haveProcessFence tested once:
		// this runs for every Add, on workers too (testing it in each
		// of enter and leave made a get and put of a slot markedly
		// slower).
		sc := c.sc
		storeRelease32(&sc.in, 1)
		if !sc.stop.Load() {
			if n := sc.count(); n > 0 {
				sc.setCount(n - 1)
				x := c.cache[n-1]
				storeRelease32(&sc.in, 0)
				return x, true
			}
		}
		storeRelease32(&sc.in, 0)
	}
	return s.getSlotShared(c)
}

// slotCache is the shared state of a thread's slot cache (the slots
// themselves are in Ctx.cache): n, how many of the first entries are
// free slots kept; in, set by the owner while it uses the cache (a
// section: getSlot, putSlot and their slow paths, flushSlots); stop, set
// by a thread that takes the cache back (reclaimCaches). Alone on its
// cache line: the owner writes it on every Add and every completion,
// other threads read it only on slow paths.
//
// The owner and a taker exclude each other as in Dekker's algorithm: the
// owner stores in, then reads stop; the taker sets stop, then reads in;
// each backs off if it sees the other (the owner to the shared list, the
// taker to try again later), so neither ever waits. That needs the owner's
// store ordered before its load, which x86 does not do for a plain store;
// a locked store orders it, at the cost of a wait for the store buffer
// to drain (the previous Add's stores to its slot): with a CAS per Add
// and per completion, EmptyTask was markedly slower. Where the OS has a
// process-wide fence (processFence) the owner's stores stay plain and the
// taker makes that fence between setting stop and reading in: either the
// owner's store of in is visible then, or its read of stop comes after the
// fence and sees stop set. Without it (amd64 outside Linux, or a sandbox
// that refuses the system call) every section, a worker's included, costs
// two locked stores.
type slotCache struct {
	slotCacheFields
	_ [cacheLine - unsafe.Sizeof(slotCacheFields{})]byte
}

type slotCacheFields struct {
	n    int32  // written by setCount (owner) or atomically (taker, with stop set)
	in   uint32 // written by the owner (enter, leave), read atomically
	stop atomic.Bool
}

// enter marks the owner inside its cache and reports whether the cache is
// its own now; if not (a taker is emptying it), it has left again.
func (sc *slotCache) enter() bool {
	if haveProcessFence {
		storeRelease32(&sc.in, 1)
	} else {
		atomic.StoreUint32(&sc.in, 1)
	}
	if sc.stop.Load() {
		sc.leave()
		return false
	}
	return true
}

// leave ends the owner's section: what it wrote is published with in.
// Without processFence the store is locked, as enter's is, so that the
// owner's later read of poolWait (getSlotShared) follows its store of the
// count, which alloc reads after it publishes poolWait.
func (sc *slotCache) leave() {
	if haveProcessFence {
		storeRelease32(&sc.in, 0)
	} else {
		atomic.StoreUint32(&sc.in, 0)
	}
}

// count is n, read atomically.
func (sc *slotCache) count() int32 { return atomic.LoadInt32(&sc.n) }

// setCount stores n with a plain store where that orders it (the owner's
// store, read atomically by others).
func (sc *slotCache) setCount(n int32) { storeRelease32((*uint32)(unsafe.Pointer(&sc.n)), uint32(n)) }

// getSlotShared is getSlot's slow path: the cache is empty, or a taker is
// emptying it (the owner never waits: it uses the shared list instead).
func (s *Scheduler) getSlotShared(c *Ctx) (uint32, bool) {
	sc := c.sc
	if !sc.enter() {
		return s.tryAlloc()
	}
	if n := sc.count(); n > 0 {
		sc.setCount(n - 1)
		x := c.cache[n-1]
		sc.leave()
		return x, true
	}
	k := s.allocBatch(c.cache[:max(1, s.cacheCap/2)])
	if k == 0 {
		sc.leave()
		return 0, false
	}
	c.touchSlots(k)
	sc.setCount(int32(k - 1))
	x := c.cache[k-1]
	sc.leave()
	if s.poolWait.Load() > 0 {
		// An Add waits for a slot and may have counted this cache
		// before the refill (alloc publishes poolWait, then reads the
		// counts; here the order is the reverse, so one of the two sees
		// the other): hand the rest over.
		c.flushSlots()
	}
	return x, true
}

// putSlotShared is putSlot's slow path: the cache is full, or a taker is
// emptying it (see getSlotShared).
func (s *Scheduler) putSlotShared(idx uint32, c *Ctx) {
	sc := c.sc
	if !sc.enter() {
		s.freeSlot(idx)
		return
	}
	n := sc.count()
	if int(n) >= s.cacheCap {
		h := int32(s.cacheCap / 2)
		s.freeBatch(c.cache[h:n]) // inside: a taker backs off meanwhile
		n = h
	}
	c.cache[n] = idx
	sc.setCount(n + 1)
	sc.leave()
	if s.poolWait.Load() > 0 {
		// An Add began to wait since putSlot looked, and may have
		// counted this cache before the slot was in it.
		c.flushSlots()
	}
}

// reclaimCaches moves the slots cached by every thread to the shared list
// for an Add that found the list empty (a thread that added some tasks may
// have gone off to other work, keeping its cache: see the design comment,
// point 2); it reports whether it moved any. A cache whose owner is using
// it now, or that another thread is taking, is left alone. It stops the
// caches that hold slots, up to 64 at a time, and makes one process-wide
// fence for them all (see slotCache): the fence costs about a system
// call, the stops a CAS each.
func (s *Scheduler) reclaimCaches() bool {
	moved := false
	for base := 0; base < len(s.threads); base += 64 {
		end := min(base+64, len(s.threads))
		var stopped uint64
		for i := base; i < end; i++ {
			sc := &s.caches[i]
			if sc.count() > 0 && sc.stop.CompareAndSwap(false, true) {
				stopped |= 1 << (i - base)
			}
		}
		if stopped == 0 {
			continue
		}
		if haveProcessFence {
			processFence()
		}
		for i := base; i < end; i++ {
			if stopped&(1<<(i-base)) == 0 {
				continue
			}
			sc := &s.caches[i]
			if atomic.LoadUint32(&sc.in) == 0 {
				if n := sc.count(); n > 0 {
					s.freeBatch(s.threads[i].cache[:n])
					atomic.StoreInt32(&sc.n, 0)
					moved = true
				}
			}
			sc.stop.Store(false)
		}
	}
	return moved
}

// cachedSlots counts the slots threads cache now.
func (s *Scheduler) cachedSlots() int {
	n := 0
	for i := range s.caches {
		n += int(s.caches[i].count())
	}
	return n
}

// touchSlots fetches, for writing, the cache lines of the n free slots just
// moved into c's cache that Add writes for a simple task (the first
// slotHotLines lines). Slots come back to the shared list from the threads
// that completed them, so their lines usually sit in another core's cache:
// asking for them all at once lets the core fetch them in parallel instead
// of one miss per Add later.
//
// With PREFETCHW the fetches occupy no store-buffer entries and no later
// instruction waits for them. Without it (other CPUs) the lines are
// written, and the stores wait in the store buffer; the next locked
// instruction (the parent's increment in Add) then waits for all of them
// to reach the cache. That wait was the largest single cost of a task
// shared between two cores (BENCHMARKS.md, section sched-design). The
// slots are free and now owned by c: nobody reads these fields.
func (c *Ctx) touchSlots(n int) {
	s := c.s
	if havePrefetchW {
		prefetchSlots(unsafe.Pointer(&s.slots[0]), &c.cache[0], n, unsafe.Sizeof(s.slots[0]), slotHotLines)
		return
	}
	for _, x := range c.cache[:n] {
		sl := &s.slots[x]
		storeUnpublished32(&sl.depNext, 0) // line 0
		sl.task.Data.Params[0] = 0         // line 1
		sl.task.Data.Begin = 0             // line 2
	}
}

// slotHotLines is how many leading cache lines of a slot Add writes for a
// simple task (slotFields, Kernel to Data.End; TestSlotSize checks it).
const slotHotLines = 3

// putSlot returns a slot to the thread's cache, spilling half of a full
// cache to the shared list. When someone waits for a slot it goes straight
// to the shared list. The common case is here, the rest in putSlotShared
// (see slotCache).
func (s *Scheduler) putSlot(idx uint32, c *Ctx) {
	if c == nil || s.poolWait.Load() > 0 || s.cacheCap == 0 {
		s.freeSlot(idx)
		if c != nil {
			c.flushSlots()
		}
		return
	}
	if haveProcessFence {
		// As in getSlot: this runs for every completion.
		sc := c.sc
		storeRelease32(&sc.in, 1)
		if !sc.stop.Load() {
			if n := sc.count(); int(n) < s.cacheCap {
				c.cache[n] = idx
				sc.setCount(n + 1)
				storeRelease32(&sc.in, 0)
				if s.poolWait.Load() > 0 {
					c.flushSlots() // see putSlotShared
				}
				return
			}
		}
		storeRelease32(&sc.in, 0)
	}
	s.putSlotShared(idx, c)
}

// slotCacheSize is the most free slots one thread keeps.
const slotCacheSize = 64

// flushSlots returns the thread's cached free slots to the shared list
// (before sleeping, or when someone waits for a slot). If a taker is
// emptying the cache now, that is left to it.
func (c *Ctx) flushSlots() {
	sc := c.sc
	if sc.enter() {
		if n := sc.count(); n > 0 {
			c.s.freeBatch(c.cache[:n])
			sc.setCount(0)
		}
		sc.leave()
	}
}
