package sched

// Join: two children, one shared, neither paying for a slot.
//
// Ctx.Join(a, b) is Rayon's join: it offers a to other threads, runs b on
// the calling thread, then runs a too unless another thread took it. Where
// RunInPlace with Add pays a slot, an ID, the task copy, completion and
// Wait's bookkeeping for the shared half, Join pays a push and a pop of
// this thread's deque when nobody steals, which is the common case: in a
// recursion only the top levels are stolen, and each steal takes a large
// subtree.
//
//  1. The shared half is a record, not a slot. Each goroutine's
//     in-place stack (inplace.go) holds joinDepth records; a Join fills
//     the next one (a copy of a's data, its kernel, the caller's Current)
//     and pushes an entry that names it onto the thread's deque, at normal
//     priority: joinBit, the stack's index in the scheduler's table of
//     stacks, and the record's depth. Entries are unique while queued: a
//     record is reused only after its Join returned, and a Join returns
//     only after its entry was taken (or its goroutine unwound through
//     it: 5). The deque's push publishes the
//     record (a release store) to whoever takes the entry.
//  2. b runs in place (RunInPlace's path). Then the owner pops its deque.
//     If it gets its own entry, no other thread saw the record: a runs in
//     place too, from the record. That is the fast path: no locked
//     instruction but the pop's fence, nothing allocated, nothing
//     validated twice. Its pop (deque.popOwn) is Chase-Lev's, fence
//     included, less the call and the CAS: it takes the entry only where
//     top is below it and no batch steal is under way, and leaves every
//     other case to the ordinary pop.
//  3. Otherwise a thread took the entry (a thief, or this thread's own
//     worker loop after a wait in b handed the worker to another
//     goroutine), or b left tasks on the deque above it. The owner puts
//     back what it popped and waits for the record with WaitEvent, which
//     on a worker hands the thread over with what it finds (handoff.go):
//     b's tasks or a could need the caller to go on, so they do not run
//     on top of it. Where waits help instead (a registered thread, a
//     worker at its limit of runners, Add's back-pressure, RunOne), a
//     record may run on top of the caller as any task may there. Whoever takes an entry runs the
//     record through runJoin, as part of the owner's task (Current is the
//     owner's), stores its error, sets the record's event and then its
//     done mark (the record's sequence number), and touches it no more.
//  4. A record's event is set only by the thread that ran it, before its
//     done mark: the owner clears it after seeing the mark, so an event
//     never stays set into the next use of the record.
//  5. A goroutine that unwinds through a Join (runtime.Goexit in a
//     kernel) cannot wait for its entry: the Join's deferred call
//     (joinAbort; JoinTasks' own) marks the goroutine's whole stack dead
//     and drops it from the Ctx, and so does the goroutine that replaces
//     a worker's (runnerMain); the next in-place call makes a new stack,
//     and a dead stack's entries are skipped when taken. Close fails
//     entries still queued with ErrClosed (a then never runs).
//  6. Where a cannot be a record (Joins nested deeper than joinDepth, or
//     deeper than the in-place stack, or a full deque), it is added as a
//     task and waited for after b (joinTask), as RunInPlace's deeper calls
//     take the dynamic path: a slot and a Wait, only at such depths. Run
//     in turn after b, a could never run where b waits for it.
//
// Rejected: Calls passed by value (the compiler copies each one at the
// call site with 16-byte loads of what the caller has just stored with 2-
// and 4-byte ones, and such a load waits for the stores to reach the
// cache: a stall per split; Join takes pointers and copies Params an
// element at a time, see copyParams); a deferred call per half rather than
// one per split; the owner's pop without its fence, with thieves paying a
// process-wide fence (membarrier) instead (sound only if every steal from
// the deque paid it, whatever entry it takes: a thief cannot tell from a
// stale read that the entry it races for is a Join's, and tasks are stolen
// far more often than Join records); b's task data in the record rather
// than on the in-place stack (no faster, and a second TaskData per
// record); a pointer to the caller's Task in the deque (deques hold uint32
// slot indices, and a pointer stored for another thread makes the caller's
// Task escape: an allocation per call); records found by a tombstone state
// rather than by the owner's pop (an entry left in a deque after its
// record was reused runs the wrong task); helping in the slow path with
// any task found (the deadlock that handoff.go exists to prevent); and
// publishing records lazily, only when a thread is hungry (heartbeat
// scheduling, lazy binary splitting), which would save the pop's fence on
// a split nobody takes: a half that blocks outside the scheduler (a
// channel, a mutex) for the other half would hide that half from every
// thief for as long as it blocks, since only the owner's next Join could
// publish it.

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
)

// joinDepth is how deep Join calls nest on one goroutine before deeper
// ones run both halves in turn on the calling thread (a recursion that
// deep has shared its upper levels already).
const joinDepth = 64

// Join entries in a deque: joinBit, the stack's index shifted by
// joinShift, and the record's depth. Slot indices stay below 2^20
// (MaxPoolSize), so they never have joinBit; maxJoinStacks keeps every
// entry below noItem.
const (
	joinBit       = uint32(1) << 31
	joinShift     = 6
	joinMask      = uint32(1)<<joinShift - 1
	maxJoinStacks = int(^joinBit>>joinShift) - 1
	noJoinStack   = ^uint32(0) // a stack past maxJoinStacks: no Joins shared
)

// joinRecord is the shared half of a Join in progress (1 above).
type joinRecord struct {
	d    TaskData // a copy of the task's data (Begin 0, End Elements)
	k    *Kernel
	kid  KernelID
	task TaskID // the owner's Current: the half runs as part of it
	// streams: d held streams, cleared before a simple kernel's data.
	streams bool
	seq     uint32 // this use (never 0): written by the owner, read by whoever runs it
	err     error  // the half's error, written by whoever ran it
	done    atomic.Uint32
	ev      Event
}

// newInPlaceStack makes a stack of in-place calls and lists it in the
// table that thieves read (joinStacks: copied on write, so a reader needs
// no lock).
func (s *Scheduler) newInPlaceStack() *inPlaceStack {
	st := new(inPlaceStack)
	s.joinMu.Lock()
	defer s.joinMu.Unlock()
	var old []*inPlaceStack
	if p := s.joinStacks.Load(); p != nil {
		old = *p
	}
	if len(old) >= maxJoinStacks {
		// Never reached in practice (a stack per goroutine that ever
		// served a thread); its Joins run both halves in turn.
		st.id = noJoinStack
		return st
	}
	st.id = uint32(len(old))
	tbl := append(old[:len(old):len(old)], st)
	s.joinStacks.Store(&tbl)
	return st
}

// joinRecordOf returns the stack and record that entry x names.
func (s *Scheduler) joinRecordOf(x uint32) (*inPlaceStack, *joinRecord) {
	st := (*s.joinStacks.Load())[(x&^joinBit)>>joinShift]
	return st, &st.joins[x&joinMask]
}

// Call is one call of a Simple kernel: what Join runs. It is the Params
// and Data of a Task without the rest (a Task with its streams is over
// 400 bytes, and a recursion makes two per split). Join takes pointers
// and reads both Calls before it runs either half, so they may change as
// soon as a kernel runs. Pass composite literals,
// c.Join(&Call{...}, &Call{...}), which the compiler builds in place: a
// Call built in a variable first is copied once more on the way.
type Call struct {
	Kernel KernelID
	Params Params
	Data   any // read-only kernel data; store a pointer to avoid boxing
}

// Join runs calls *a and *b, b on the calling thread at once and a wherever
// a thread is free first (here, after b, if no other thread took it), and
// returns when both have run: their errors, joined (errors.Join) if both
// failed. It is Rayon's join and TBB's parallel_invoke of two: a
// recursion that splits its work with Join pays a deque push and pop per
// split where nobody steals, and no slot, ID or Wait at all.
//
// Both kernels must be Simple (JoinTasks takes any task). Each half is
// part of the calling task: Current is the caller's task wherever it
// runs, so children either adds with Parent: c.Current() belong to the
// caller's task. A kernel panic becomes ErrKernelPanic, naming the
// kernel. The Observer is not told of either half. KernelNone is a call
// that does nothing.
//
// When Joins (or RunInPlace calls) nest deeper than 64 on this goroutine
// (a recursion that deep has shared its upper levels already), or the
// thread's deque is full, a is added as a task instead (a slot, and a
// Wait after b; its Current is then its own task, as for RunInPlace's
// deeper calls), so that b may still wait for it; a runs in turn after
// b only if that Add fails.
// A half queued when Close drains the scheduler fails with ErrClosed
// without running. A nil Call is an error.
//
// Like any wait, a Join whose shared half another thread took hands the
// worker over while it waits (see Wait): a kernel must not keep
// per-thread scratch (by Index) across a Join. Nor may it hold a Go
// mutex (or any lock the scheduler cannot see) across a Join: the worker
// handed over may run a kernel that blocks on that lock, and the holder,
// parked, never gets the worker back - a hang, and Join has no time-out
// (Rayon's join has the same hazard). Take such locks inside the halves,
// or use JoinTasks' tasks and WaitFor, which ends with ErrTimeout.
func (c *Ctx) Join(a, b *Call) (err error) {
	if a == nil || b == nil {
		return fmt.Errorf("sched: join: a nil *Call (a %v, b %v)", a == nil, b == nil)
	}
	ka := c.joinK
	if a.Kernel != c.joinKid || ka == nil {
		if ka, err = c.simpleKernel(a.Kernel); err != nil {
			return err
		}
	}
	kb := ka
	if b.Kernel != a.Kernel { // a recursion's halves share their kernel
		if kb, err = c.simpleKernel(b.Kernel); err != nil {
			return err
		}
	}
	st := c.inPlace
	if st == nil || st.joins == nil {
		st = c.joinStack()
	}
	nj, n := st.nj, st.n
	if nj|n == 0 && c.inPlaceOuter() {
		// No call in place on the stack: maybe the outermost, to be
		// marked (busy.go). Nested Joins pay only the test of nj|n.
		return c.joinOuter(a, b)
	}
	if nj >= joinDepth || n >= len(st.d) || st.id == noJoinStack ||
		a.Kernel == KernelNone || b.Kernel == KernelNone {
		return c.joinNoRecord(a, b, ka, kb)
	}

	// The whole common case is in this one frame: a call per step, with
	// its arguments and the values kept across it, was slower. a's record
	// (1 above) is published by the push; d is b's slot of the in-place
	// stack (2).
	r := &st.joins[nj]
	if r.streams {
		r.d = TaskData{}
		r.streams = false
	}
	d := &st.d[n]
	if st.streams[n] {
		*d = TaskData{}
		st.streams[n] = false
	}
	copyParams2(&r.d.Params, &a.Params, &d.Params, &b.Params)
	r.d.Data = a.Data
	r.k, r.kid, r.task = ka, a.Kernel, c.current
	if r.seq++; r.seq == 0 {
		r.seq = 1 // 0 is "not done"
	}
	x := joinBit | st.id<<joinShift | uint32(nj)
	dq := &c.dq[1]
	if !dq.push(x) {
		r.d.Data = nil
		return c.joinNoRecord(a, b, ka, kb)
	}
	st.nj = nj + 1
	if s := c.s; s.nIdle.Load() > 0 {
		s.wakeOne()
	}

	d.Data = b.Data
	st.n = n + 1
	f := joinFrame{st: st, nj: nj, n: n, kid: b.Kernel}
	defer func() {
		if f.phase != joinDone {
			c.joinAbort(&f, recover(), &err)
		}
	}()
	eb := kb.CPU(c, d)
	st.n = n
	d.Data = nil

	// a: here if its entry is still the deque's bottom (2), else wherever
	// it went (3).
	f.eb, f.phase = eb, joinInA
	var ea error
	if dq.popOwn(x) || c.joinPopSlow(x) {
		ea = ka.CPU(c, &r.d)
		r.d.Data = nil
	} else {
		f.phase = joinWaiting
		ea = c.joinWait(r)
	}
	st.nj = nj
	f.phase = joinDone
	return joinErrs(ea, eb)
}

// joinOuter is Join as the outermost in-place call on a registered
// thread with no task's kernel running: marked for Close (busy.go).
func (c *Ctx) joinOuter(a, b *Call) error {
	c.enterInPlace()
	defer c.leaveInPlace()
	return c.Join(a, b)
}

// joinFrame is what Join's deferred call needs to end a Join whose
// kernel did not return (joinAbort). One deferred call covers both
// kernels (a defer per kernel, through runKernelInPlace, costs more), and
// it closes over this frame, the result and c only: a closure over each
// variable it reads is built, a word at a time, on every split.
type joinFrame struct {
	st    *inPlaceStack
	eb    error    // b's error, once b returned
	nj, n int      // the record's depth and b's slot of the in-place stack
	kid   KernelID // b's kernel
	phase uint8    // where a panic or runtime.Goexit came from
}

// Join's phases (joinFrame.phase): which kernel a panic or
// runtime.Goexit came from.
const (
	joinInB = iota
	joinInA
	joinWaiting
	joinDone
)

// joinStack returns this goroutine's in-place stack with its Join records
// made. Most goroutines that serve a thread never Join (a worker's spare
// runners): the records cost nothing until one does. The deque's push
// publishes them to thieves with the first entry.
func (c *Ctx) joinStack() *inPlaceStack {
	st := c.inPlaceStack()
	if st.joins == nil && st.id != noJoinStack {
		st.joins = new([joinDepth]joinRecord)
		for i := range st.joins {
			st.joins[i].ev.s = c.s
		}
	}
	return st
}

// joinNoRecord ends a Join whose a half cannot be a record (6 above), or
// whose half is KernelNone: a is added as a task, b runs here and a is
// waited for (joinTask); where that Add fails, or a half is KernelNone, b
// and then a run in turn on this thread. It copies a first: b's kernel may
// change the caller's Call.
func (c *Ctx) joinNoRecord(ap, b *Call, ka, kb *Kernel) error {
	a := *ap
	if a.Kernel != KernelNone && b.Kernel != KernelNone {
		var t Task
		t.Kernel, t.Data.Params, t.Data.Data = a.Kernel, a.Params, a.Data
		if id, err := c.Add(&t); err == nil {
			return c.joinTask(id, &t, kb, b.Kernel, &b.Params, b.Data)
		}
	}
	var eb, ea error
	if b.Kernel != KernelNone {
		eb = c.callSimple(b.Kernel, kb, &b.Params, b.Data)
	}
	if a.Kernel != KernelNone {
		ea = c.callSimple(a.Kernel, ka, &a.Params, a.Data)
	}
	return joinErrs(ea, eb)
}

// joinTask ends a Join whose a half could not be a record (nested deeper
// than the in-place stack, or the deque was full) and was added as task
// id instead (6 above): b runs here, then a is waited for, which runs it
// here if nobody took it. t is a's task, cleared once added (nothing of
// the caller's is kept alive by it). A Join that ran both halves in turn
// there would hang where b waits for a (a signal a sends, or a channel).
func (c *Ctx) joinTask(id TaskID, t *Task, kb *Kernel, kid KernelID, p *Params, data any) error {
	t.Data.Data = nil
	eb := c.callSimple(kid, kb, p, data)
	return joinErrs(c.Wait(id), eb)
}

// joinPopSlow pops c's deque when Join's popOwn did not find entry x
// there for sure: it reports whether it got x (the one entry left, won
// from a thief with a CAS), and puts back anything else it popped (b's
// tasks left above x; x itself was taken).
func (c *Ctx) joinPopSlow(x uint32) bool {
	y := c.dq[1].pop()
	if y == x {
		return true
	}
	if y != noItem {
		c.dq[1].push(y) // it was just popped: there is room
	}
	return false
}

// joinAbort ends a Join whose kernel in f.phase did not return: v is
// what recover gave (nil: runtime.Goexit, which goes on unwinding; the
// stack is then dropped, 5 above). After a panic in b, a's half is still
// run or waited for, as if b had returned the error.
func (c *Ctx) joinAbort(f *joinFrame, v any, err *error) {
	st := f.st
	r := &st.joins[f.nj]
	switch f.phase {
	case joinInB:
		st.n = f.n
		st.d[f.n].Data = nil
		if v == nil {
			c.dropInPlaceStack(st)
			return
		}
		eb := fmt.Errorf("sched: join: kernel %d %q: %w: %v", f.kid, c.s.reg.Lookup(f.kid).Name, ErrKernelPanic, v)
		x := joinBit | st.id<<joinShift | uint32(f.nj)
		*err = joinErrs(c.joinRest(st, r, x), eb)
	case joinInA:
		r.d.Data = nil
		if v == nil {
			c.dropInPlaceStack(st)
			return
		}
		ea := fmt.Errorf("sched: join: kernel %d %q: %w: %v", r.kid, r.k.Name, ErrKernelPanic, v)
		st.nj = f.nj
		*err = joinErrs(ea, f.eb)
	default:
		c.dropInPlaceStack(st)
		if v != nil {
			panic(v) // the scheduler's own wait: not a kernel's panic to hide
		}
	}
}

// dropInPlaceStack marks st dead (its goroutine unwinds through a Join
// whose entry may still be queued: 5 above) on any thread, registered
// ones included, and has the next user of c make a new stack.
func (c *Ctx) dropInPlaceStack(st *inPlaceStack) {
	st.dead.Store(true)
	if c.inPlace == st {
		c.inPlace = nil
	}
}

// JoinTasks is Join for tasks of any kind: streaming halves run over all
// their work items (Begin 0, End Elements) as RunInPlace runs them.
// Both are checked as RunInPlace checks its task: no Parent, an affinity
// this thread serves, streams valid for the kernel; each Dependency is
// waited for first.
//
// a runs in turn on this thread, after b, when it cannot be shared: it
// is pinned (OnThread), or Config.CheckRaces is on and a or b names a
// stream (halves that never become tasks are not checked against each
// other or against live tasks). Where Joins nest deeper than Join
// allows, a is added as a task, as Join does.
func (c *Ctx) JoinTasks(a, b *Task) error {
	if c.inPlaceOuter() {
		c.enterInPlace()
		defer c.leaveInPlace()
	}
	ka, err := c.prepareInPlace(a, "join")
	if err != nil {
		return err
	}
	kb, err := c.prepareInPlace(b, "join")
	if err != nil {
		return err
	}
	var r *joinRecord
	var x uint32
	st := c.joinStack()
	if a.Kernel != KernelNone && a.Affinity&threadAffinity == 0 &&
		!(c.s.cfg.CheckRaces && !(noStreams(&a.Data) && noStreams(&b.Data))) {
		if st.canJoin() {
			if ka.Kind == Simple {
				r, x = st.pushJoin(c, ka, a.Kernel, &a.Data.Params, a.Data.Data, nil)
			} else {
				r, x = st.pushJoin(c, ka, a.Kernel, nil, nil, &a.Data)
			}
		}
		if r == nil && b.Kernel != KernelNone {
			// Too deep for a record, or the deque is full: a as a
			// task (6 above). On the CPU, as in place: an Auto task
			// added would go where the Placer sends it.
			t := *a
			t.Affinity, t.Dependency = AnyWorker, NoTask // the dependency was waited for
			if id, err := c.Add(&t); err == nil {
				t.Data = TaskData{}
				eb := c.runPrepared(b, kb)
				return joinErrs(c.Wait(id), eb)
			}
		}
	}
	if r != nil {
		returned := false
		defer func() {
			if !returned {
				c.dropInPlaceStack(st) // a Goexit in b: see joinAbort
			}
		}()
		eb := c.runPrepared(b, kb)
		ea := c.joinRest(st, r, x)
		returned = true
		return joinErrs(ea, eb)
	}
	eb := c.runPrepared(b, kb)
	var ea error
	if r != nil {
		ea = c.joinRest(st, r, x)
	} else {
		ea = c.runPrepared(a, ka)
	}
	return joinErrs(ea, eb)
}

// simpleKernel returns the kernel a Call names. The last one found is
// kept on the thread (a kernel's ID never names another kernel later).
func (c *Ctx) simpleKernel(id KernelID) (*Kernel, error) {
	if id == c.joinKid && c.joinK != nil {
		return c.joinK, nil
	}
	k := c.s.reg.Lookup(id)
	if k == nil {
		return nil, fmt.Errorf("sched: join: kernel %d: %w", id, ErrUnknownKernel)
	}
	if k.Kind != Simple {
		return nil, fmt.Errorf("sched: join: kernel %d %q is %v: a Call takes Simple kernels (use JoinTasks for streams)", id, k.Name, k.Kind)
	}
	c.joinKid, c.joinK = id, k
	return k, nil
}

// canJoin reports whether a Join may push a record: one is free, and b,
// run in place above it, gets a slot of the in-place stack, so that a
// runtime.Goexit in it unwinds through runKernelInPlace (5 above).
func (st *inPlaceStack) canJoin() bool {
	return st.nj < joinDepth && st.n < len(st.d) && st.id != noJoinStack
}

// pushJoin fills the next record with a's half (simple: params p and
// data; otherwise the task data full) and pushes its entry onto c's deque
// (1 above). It returns nil when the deque is full: a then runs in turn.
func (st *inPlaceStack) pushJoin(c *Ctx, k *Kernel, kid KernelID, p *Params, data any, full *TaskData) (*joinRecord, uint32) {
	r := &st.joins[st.nj]
	if full == nil {
		if r.streams {
			r.d = TaskData{}
			r.streams = false
		}
		copyParams(&r.d.Params, p)
		r.d.Data = data
	} else {
		r.d = *full
		r.d.Begin, r.d.End = 0, full.Elements
		r.streams = true
	}
	r.k, r.kid, r.task = k, kid, c.current
	if r.seq++; r.seq == 0 {
		r.seq = 1 // 0 is "not done"
	}
	x := joinBit | st.id<<joinShift | uint32(st.nj)
	if !c.dq[1].push(x) {
		r.d.Data = nil
		return nil, 0
	}
	st.nj++
	if s := c.s; s.nIdle.Load() > 0 {
		s.wakeOne()
	}
	return r, x
}

// joinRest ends a Join after its b half (2 and 3 above): it runs record
// r (the innermost of st) here if the deque's bottom is still its entry
// x, or waits for whoever took it, and returns the half's error.
func (c *Ctx) joinRest(st *inPlaceStack, r *joinRecord, x uint32) error {
	var err error
	if y := c.dq[1].pop(); y == x {
		err = runKernelInPlace(c, r.kid, r.k, &r.d, nil)
	} else {
		if y != noItem {
			c.dq[1].push(y) // it was just popped: there is room
		}
		err = c.joinWait(r)
	}
	st.nj--
	return err
}

// joinErrs is Join's error from its halves' errors.
func joinErrs(ea, eb error) error {
	switch {
	case ea == nil:
		return eb
	case eb == nil:
		return ea
	}
	return errors.Join(ea, eb)
}

// joinWait waits until record r, whose entry another thread (or another
// goroutine of this one) took, has run (3 above), and returns its error.
func (c *Ctx) joinWait(r *joinRecord) error {
	for r.done.Load() != r.seq {
		c.WaitEvent(&r.ev)
		if r.done.Load() != r.seq && c.s.drained.Load() {
			// Close ran everything it could and WaitEvent returns at
			// once now, before it resumes parked runners: the record
			// may be running on one of this worker's (parked in a
			// wait that drained ended). Let it go on.
			if c.self != nil && len(c.parked) != 0 {
				if next := c.readyParked(); next != nil {
					c.park(noItem, next, NoTask, &r.ev)
					continue
				}
			}
			runtime.Gosched()
		}
	}
	r.ev.Reset()    // set before done (4 above)
	r.done.Store(0) // the mark never outlives this use: seq may wrap
	return r.err
}

// runJoin runs the record that entry x names, taken from a queue by this
// thread (3 above).
func (c *Ctx) runJoin(x uint32) {
	st, r := c.s.joinRecordOf(x)
	if st.dead.Load() {
		return
	}
	c.flushDec()
	prev := c.current
	c.current = r.task
	c.running++
	returned := false
	defer func() {
		if !returned {
			// A panic (recovered here) or runtime.Goexit (the goroutine
			// goes on unwinding, and its worker gets a new one): the
			// owner still learns how its half ended.
			var err error
			c.endAbnormal(recover(), &err, prev)
			r.err = fmt.Errorf("sched: join: kernel %d %q: %w", r.kid, r.k.Name, err)
			r.end()
		}
	}()
	err := r.k.CPU(c, &r.d)
	c.running--
	c.current = prev
	returned = true
	r.err = err
	r.end()
}

// end publishes the record's result: its event, then its done mark (4
// above); the record is the owner's again after that.
func (r *joinRecord) end() {
	r.d.Data = nil // keep nothing of the caller's alive
	s := r.ev.s
	r.ev.set.Store(true)
	r.done.Store(r.seq)
	s.wakeWaiters()
}

// failJoin fails the record that queued entry x names without running it
// (Close's leftovers).
func (s *Scheduler) failJoin(x uint32, err error) {
	st, r := s.joinRecordOf(x)
	if st.dead.Load() {
		return
	}
	r.err = fmt.Errorf("sched: join: kernel %d %q: %w", r.kid, r.k.Name, err)
	r.end()
}

// copyParams copies *src to *dst one element at a time, with loads the
// width of a Params element. A caller builds its Call with 4-byte stores
// of the elements it sets (and 16-byte ones that zero the rest), and a
// wider load of memory just stored by more than one store cannot be
// forwarded from the store buffer: it waits until those stores reach the
// cache, which cost Join more than the rest of a split's copying (passing
// Calls by value had the compiler make such a copy at every call site).
// atomic.LoadUint32 is a plain 4-byte load on amd64 that the compiler
// does not merge with its neighbours, as it merges plain element copies
// into 8-byte ones; it orders nothing here.
func copyParams(dst, src *Params) {
	dst[0] = atomic.LoadUint32(&src[0])
	dst[1] = atomic.LoadUint32(&src[1])
	dst[2] = atomic.LoadUint32(&src[2])
	dst[3] = atomic.LoadUint32(&src[3])
	dst[4] = atomic.LoadUint32(&src[4])
	dst[5] = atomic.LoadUint32(&src[5])
	dst[6] = atomic.LoadUint32(&src[6])
	dst[7] = atomic.LoadUint32(&src[7])
}

// copyParams2 is copyParams of a's Params to da and of b's to db: Join's
// two copies in one call (copyParams is too large to inline).
func copyParams2(da, a, db, b *Params) {
	da[0] = atomic.LoadUint32(&a[0])
	da[1] = atomic.LoadUint32(&a[1])
	da[2] = atomic.LoadUint32(&a[2])
	da[3] = atomic.LoadUint32(&a[3])
	da[4] = atomic.LoadUint32(&a[4])
	da[5] = atomic.LoadUint32(&a[5])
	da[6] = atomic.LoadUint32(&a[6])
	da[7] = atomic.LoadUint32(&a[7])
	db[0] = atomic.LoadUint32(&b[0])
	db[1] = atomic.LoadUint32(&b[1])
	db[2] = atomic.LoadUint32(&b[2])
	db[3] = atomic.LoadUint32(&b[3])
	db[4] = atomic.LoadUint32(&b[4])
	db[5] = atomic.LoadUint32(&b[5])
	db[6] = atomic.LoadUint32(&b[6])
	db[7] = atomic.LoadUint32(&b[7])
}
