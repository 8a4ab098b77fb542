package sched

// A child run in place: recursive parallelism keeps one half of its work
// on the calling thread and pays no slot, ID or queue trip for it (the
// half it shares goes through Add, where another thread may take it):
//
//	id, _ := c.Add(&left)        // may be stolen
//	err := c.RunInPlace(&right)  // runs now, on this thread
//	err2 := c.Wait(id)           // left: run here too if nobody took it
//
// This is TBB's task_group::run_and_wait; Wait already pops a child
// nobody stole from this thread's own deque and runs it, so the shared
// half costs a queue trip only when it is worth one. Join (join.go) goes
// further: its shared half is a record on the deque, not a task, so a
// split nobody steals costs a push and a pop.
//
// The same machinery is Add's way out of a full pool (addInPlace): a
// kernel's plain CPU child that finds no free slot runs in place, and Add
// returns an ID of the in-place slot (inPlaceSlot), already finished,
// under which a failure is retained as any task's.

import (
	"fmt"
	"sync/atomic"
)

// RunInPlace runs t's kernel now, on this thread, over all of t's work
// items, and returns its error: a child that completes before the call
// returns, with no slot, ID or queue trip. It is part of the calling task:
// Current is unchanged, so children the kernel adds with Parent:
// c.Current() belong to the caller's task. t is validated as Add validates
// it, and the kernel sees a copy of t.Data over the whole range (Begin 0,
// End Elements), as Add copies it. A Dependency is waited for first (c.Wait,
// which may run other tasks). t must have no Parent (it completes inside
// the call, before any parent could) and an affinity this thread serves:
// AnyWorker, Auto (which runs on the CPU here), or OnThread of this
// registered thread. A panic in the kernel becomes ErrKernelPanic, naming
// the kernel, as for any task. The Observer is not told of in-place runs.
func (c *Ctx) RunInPlace(t *Task) error {
	if c.inPlaceOuter() {
		return c.runInPlaceOuter(t)
	}
	k, err := c.prepareInPlace(t, "run in place")
	if err != nil {
		return err
	}
	return c.runPrepared(t, k)
}

// runInPlaceOuter is RunInPlace as the outermost in-place call on a
// registered thread with no task's kernel running: marked for Close
// (busy.go).
func (c *Ctx) runInPlaceOuter(t *Task) error {
	c.enterInPlace()
	defer c.leaveInPlace()
	return c.RunInPlace(t)
}

// prepareInPlace checks t as RunInPlace (op names the call in errors) and
// Join take it, and waits for its Dependency; it returns t's kernel.
func (c *Ctx) prepareInPlace(t *Task, op string) (*Kernel, error) {
	s := c.s
	k := s.reg.Lookup(t.Kernel)
	if k == nil {
		return nil, fmt.Errorf("sched: %s: kernel %d: %w", op, t.Kernel, ErrUnknownKernel)
	}
	if t.Parent != NoTask {
		return nil, fmt.Errorf("sched: %s: kernel %d %q: a task run in place completes inside the call and has no Parent (got %v)", op, t.Kernel, k.Name, t.Parent)
	}
	switch a := t.Affinity; a {
	case AnyWorker, Auto:
	default:
		if i, ok := a.Thread(); !ok || c.index-s.nwork != i {
			return nil, fmt.Errorf("sched: %s: kernel %d %q: affinity %v is not served by this thread (%d)", op, t.Kernel, k.Name, a, c.index)
		}
	}
	if k.Kind == Simple {
		if !noStreams(&t.Data) {
			return nil, k.Validate(t.Kernel, &t.Data)
		}
	} else if err := k.Validate(t.Kernel, &t.Data); err != nil {
		return nil, err
	}
	if t.Dependency != NoTask {
		if err := c.Wait(t.Dependency); err != nil {
			return nil, fmt.Errorf("sched: %s: kernel %d %q: dependency %v: %w", op, t.Kernel, k.Name, t.Dependency, err)
		}
	}
	return k, nil
}

// runPrepared runs t (checked by prepareInPlace, kernel k) on this thread
// and returns its error.
func (c *Ctx) runPrepared(t *Task, k *Kernel) error {
	if t.Kernel == KernelNone {
		return nil
	}
	if st := c.inPlace; st != nil && st.n == len(st.d) {
		// Nested deeper than the stack: the dynamic path.
		id, err := c.Add(t)
		if err == nil {
			err = c.Wait(id)
		}
		return err
	}
	return c.callInPlace(t, k)
}

// callInPlace runs t's kernel k (validated) on this thread over all of
// t's work items, with a copy of t.Data on the thread's in-place stack;
// nested deeper than that (only a child run in place because the pool is
// full gets here then: RunInPlace takes the dynamic path instead) the
// copy is allocated.
func (c *Ctx) callInPlace(t *Task, k *Kernel) error {
	if k.Kind == Simple {
		return c.callSimple(t.Kernel, k, &t.Data.Params, t.Data.Data)
	}
	st := c.inPlaceStack()
	if st.n == len(st.d) {
		d := t.Data
		d.Begin, d.End = 0, t.Data.Elements
		return runKernelInPlace(c, t.Kernel, k, &d, nil)
	}
	d := &st.d[st.n]
	*d = t.Data
	d.Begin, d.End = 0, t.Data.Elements
	st.streams[st.n] = true
	st.n++
	return runKernelInPlace(c, t.Kernel, k, d, st)
}

// callSimple runs simple kernel k (ID kid) with params p and data on this
// thread, as callInPlace does a task.
func (c *Ctx) callSimple(kid KernelID, k *Kernel, p *Params, data any) error {
	st := c.inPlaceStack()
	if st.n == len(st.d) {
		var d TaskData
		copyParams(&d.Params, p)
		d.Data = data
		return runKernelInPlace(c, kid, k, &d, nil)
	}
	d := &st.d[st.n]
	if st.streams[st.n] {
		*d = TaskData{}
		st.streams[st.n] = false
	}
	copyParams(&d.Params, p) // p is often a Task the caller just built
	d.Data = data
	st.n++
	return runKernelInPlace(c, kid, k, d, st)
}

// inPlaceSlot is the slot that names the children a full pool made run
// in place (addInPlace): one past the pool (poolSlots), it holds no task
// and is on no free list; each
// such child takes the next of its generations, so its ID reads as
// finished, and a failed one's error is retained under it as any task's.
func (s *Scheduler) inPlaceSlot() uint32 { return uint32(len(s.slots) - 1) }

// addInPlace is Add's way out of a full pool for a kernel's plain CPU
// child: it runs the child at once on the calling thread, as RunInPlace
// does, and returns an ID that reads as finished, with the child's error
// (Wait, Err, IsFinished; as a Dependency it is satisfied, or fails the
// dependent, at once). done is false, and nothing was done, when the
// child does not qualify; Add then applies back-pressure (alloc).
//
// A child qualifies when the caller is a thread with a kernel running
// (Ctx.Add, or Scheduler.Add from a kernel; a kernel run in place by
// RunInPlace or Join on a registered thread outside any task counts:
// inPlaceKernel) and the child
//   - is not made with Create (a held task waits for a Run),
//   - runs on this thread's CPU: AnyWorker, Auto without a Placer, or
//     OnThread of this registered thread (a GPU, SPU or placed task must
//     go where its executor or Placer sends it, another thread's pinned
//     task where that thread runs it),
//   - has no Dependency, or one that finished (running it now would
//     wait for the dependency inside Add, where the caller may be what
//     the dependency waits for: a held gate it Runs after the Add),
//   - names no stream when Config.CheckRaces is on (the checks are made
//     on live tasks, and a child run in place is never one).
//
// Back-pressure alone (alloc) fails such a program: in a deep recursion
// every slot holds a kernel waiting for children that need slots, no
// slot frees, and Add ended in ErrPoolDeadlock. Run in place, the child
// needs no slot, its subtree completes on this thread's stack (bounded by
// the recursion's own depth, as a serial cut-off is) and slots free as
// the waiting kernels return. Tried before helping: helping runs some
// other task on top of the caller, which may need a slot in turn and
// frees none the caller needs.
//
// A child that does not qualify still needs a slot: a program that adds
// one deeper than the pool can hold (every slot a kernel waiting below
// it) meets the true dead end, ErrPoolDeadlock.
//
// What differs from a queued child: the child runs at once, on this
// thread (nobody steals it); Current is still the caller's task, so
// tasks the child's kernel adds with Parent: c.Current() belong to the
// caller's task (which completes after them), and the child's ID reads
// as finished when its kernel returns, not when those complete; the
// Observer is not told. A Parent is held during the run and told of a
// failure (ErrChildFailed) as for a queued child.
func (s *Scheduler) addInPlace(t *Task, k *Kernel, c *Ctx, hold bool) (id TaskID, done bool, err error) {
	if hold {
		return NoTask, false, nil
	}
	if c == nil {
		if c = s.callerCtx(); c == nil {
			return NoTask, false, nil
		}
	}
	if c.running == 0 && !c.inPlaceKernel() {
		return NoTask, false, nil
	}
	switch a := t.Affinity; {
	case a == AnyWorker, a == Auto && s.cfg.Placer == nil:
	default:
		if i, ok := a.Thread(); !ok || c.index-s.nwork != i {
			return NoTask, false, nil
		}
	}
	if s.cfg.CheckRaces && !noStreams(&t.Data) {
		return NoTask, false, nil
	}
	var depErr error
	if t.Dependency != NoTask {
		if !s.IsFinished(t.Dependency) {
			return NoTask, false, nil
		}
		if depErr = s.Err(t.Dependency); depErr != nil {
			depErr = fmt.Errorf("%w: %w", ErrDepFailed, depErr)
		}
	}
	parent, kid := t.Parent, t.Kernel // t is the caller's: read before the kernel runs
	returned := false
	if parent != NoTask {
		if !s.holdParent(parent) {
			return NoTask, true, fmt.Errorf("sched: Add: kernel %q: parent %v: %w", k.Name, parent, ErrParentDone)
		}
		defer func() {
			if !returned {
				// A Goexit in the kernel unwinds the caller too: give
				// the parent its count back, failed, or it never
				// completes.
				s.finish(parent.index(), fmt.Errorf("%w: kernel %q run in place: %w (runtime.Goexit)", ErrChildFailed, k.Name, ErrKernelPanic), c)
			}
		}()
	}
	err = depErr
	if err == nil && kid != KernelNone {
		err = c.callInPlace(t, k)
	}
	sl := &s.slots[s.inPlaceSlot()]
	id = makeID(s.id, uint32(sl.deps.Add(1<<32)>>32)-1, s.inPlaceSlot())
	if err != nil {
		te := &TaskError{Task: id, Kernel: kid, Name: k.Name, Err: err}
		s.recordFailure(te)
		if parent != NoTask && s.slots[parent.index()].err.Load() == nil {
			s.setErr(parent.index(), fmt.Errorf("%w: %w", ErrChildFailed, te))
		}
	}
	if parent != NoTask {
		s.decOpen(parent.index(), c)
	}
	returned = true
	return id, true, nil
}

// inPlaceKernel reports whether a kernel runs in place on this thread's
// goroutine (RunInPlace, or either half of a Join): its task data is on
// the in-place stack, or a Join is in progress. A registered thread that
// runs a kernel so, outside any task, has no kernel running by c.running,
// yet the caller of Add is that kernel.
func (c *Ctx) inPlaceKernel() bool {
	st := c.inPlace
	return st != nil && (st.n > 0 || st.nj > 0)
}

// inPlaceDepth is how deep RunInPlace calls nest on one thread before the
// deeper ones take the dynamic path (Add and Wait).
const inPlaceDepth = 64

// inPlaceStack holds the task data of a thread's RunInPlace calls in
// progress, innermost last: the kernel sees a copy, as with Add, which
// keeps the caller's Task on its own stack (a pointer handed to a kernel
// function escapes, so passing t.Data itself allocated the Task).
//
// It also holds the records of the goroutine's Join calls in progress
// (join.go): a thief finds a record by the stack's id, its index in the
// scheduler's table of stacks.
type inPlaceStack struct {
	n       int
	d       [inPlaceDepth]TaskData
	streams [inPlaceDepth]bool // d[i] held streams: clear it before a simple kernel

	id    uint32                 // index in Scheduler.joinStacks
	nj    int                    // Join calls in progress, innermost last
	joins *[joinDepth]joinRecord // their shared halves, made at the first Join (33 KB)
	// dead: the goroutine that owned the stack unwound (runtime.Goexit)
	// through a Join; entries of its records still queued are skipped.
	dead atomic.Bool
}

// inPlaceStack returns this goroutine's stack of in-place calls, made
// (and listed for thieves) at first use.
func (c *Ctx) inPlaceStack() *inPlaceStack {
	if st := c.inPlace; st != nil {
		return st
	}
	st := c.s.newInPlaceStack()
	c.inPlace = st
	return st
}

// runKernelInPlace calls k.CPU, turning a panic into ErrKernelPanic, and
// pops d off st (nil: d is not on it) however the kernel ends (a Goexit
// too). The normal path calls no recover.
func runKernelInPlace(c *Ctx, id KernelID, k *Kernel, d *TaskData, st *inPlaceStack) (err error) {
	returned := false
	defer func() {
		d.Data = nil // keep nothing of the caller's alive
		if st != nil {
			st.n--
		}
		if !returned {
			if r := recover(); r != nil {
				err = fmt.Errorf("sched: run in place: kernel %d %q: %w: %v", id, k.Name, ErrKernelPanic, r)
			}
		}
	}()
	err = k.CPU(c, d)
	returned = true
	return err
}
