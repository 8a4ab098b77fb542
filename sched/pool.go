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
//     idle, no queued or executor work: the pool holds held tasks and what
//     waits for them; poolStuckLocked) fails with ErrPoolDeadlock after
//     stuckGrace, instead of waiting for a Run that only its blocked caller
//     could make.

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
	err    atomic.Pointer[TaskError]
	kern   *Kernel
	dep    uint64 // task.Dependency: stored with storeUnpublished64, read atomically (Add's cycle check)
	task   Task
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
// registered thread included) runs tasks meanwhile. When nothing can free
// a slot but the caller itself (every thread idle, every queue empty, no
// executor job, and so for stuckGrace) it returns an error wrapping
// ErrPoolDeadlock instead of sleeping for ever.
func (s *Scheduler) alloc(c *Ctx) (uint32, error) {
	resolved := c != nil
	var stuckSince time.Time
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
		s.extMu.Lock()
		s.poolWait.Add(1)
		if s.nfree.Load() == 0 {
			if s.poolStuckLocked(c) {
				if stuckSince.IsZero() {
					stuckSince = time.Now()
				}
				if time.Since(stuckSince) >= stuckGrace {
					s.poolWait.Add(-1)
					s.extMu.Unlock()
					return 0, s.poolDeadlock()
				}
				if c == nil {
					time.AfterFunc(stuckGrace, s.broadcastExt)
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

// stuckGrace is how long a full pool with nothing to run must last before
// Add gives up: another goroutine may be about to Run a held task.
// allocRecheck is how often a thread blocked in Add looks for work to help
// with.
const (
	stuckGrace   = 20 * time.Millisecond
	allocRecheck = time.Millisecond
)

// broadcastExt wakes every goroutine waiting on extCond (timers of alloc).
func (s *Scheduler) broadcastExt() {
	s.extMu.Lock()
	s.extCond.Broadcast()
	s.extMu.Unlock()
}

// poolStuckLocked reports whether no slot can free without an outside call: the
// pool is full and nothing can run (see quiescent), c (the caller, blocked
// in Add; nil if not a thread) aside. Called with extMu held.
func (s *Scheduler) poolStuckLocked(c *Ctx) bool {
	return s.nfree.Load() == 0 && s.quiescentExcept(c, true)
}

// poolDeadlock is the error of an Add that nothing but its caller could
// unblock.
func (s *Scheduler) poolDeadlock() error {
	held := 0
	for i := range s.slots {
		if s.slots[i].held.Load() {
			held++
		}
	}
	return fmt.Errorf("%w: all %d slots hold unfinished tasks and none can run (%d made by Create wait for Run, the others wait for those or for a cycle); only a Run or Abandon could free a slot, and nothing is left to call one but this caller, blocked here: Run held tasks before adding more dependents, or raise Config.PoolSize",
		ErrPoolDeadlock, s.inPlaceSlot(), held)
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
// shared free list in a batch.
func (s *Scheduler) getSlot(c *Ctx) (uint32, bool) {
	if c == nil {
		return s.tryAlloc()
	}
	if c.ncache == 0 {
		c.ncache = s.allocBatch(c.cache[:max(1, s.cacheCap/2)])
		if c.ncache == 0 {
			return 0, false
		}
		c.touchSlots()
	}
	c.ncache--
	return c.cache[c.ncache], true
}

// touchSlots fetches, for writing, the cache lines of the free slots just
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
func (c *Ctx) touchSlots() {
	s := c.s
	if havePrefetchW {
		prefetchSlots(unsafe.Pointer(&s.slots[0]), &c.cache[0], c.ncache, unsafe.Sizeof(s.slots[0]), slotHotLines)
		return
	}
	for _, x := range c.cache[:c.ncache] {
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
// to the shared list.
func (s *Scheduler) putSlot(idx uint32, c *Ctx) {
	if c == nil || s.poolWait.Load() > 0 || s.cacheCap == 0 {
		s.freeSlot(idx)
		if c != nil {
			c.flushSlots()
		}
		return
	}
	if c.ncache == s.cacheCap {
		h := s.cacheCap / 2
		s.freeBatch(c.cache[h:c.ncache])
		c.ncache = h
	}
	c.cache[c.ncache] = idx
	c.ncache++
}

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
