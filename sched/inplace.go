package sched

// A child run in place: recursive parallelism keeps one half of its work
// on the calling thread and pays no slot, ID or queue trip for it (the
// half it shares goes through Add, where another thread may take it):
//
//	id, _ := c.Add(&left)        // may be stolen
//	err := c.RunInPlace(&right)  // runs now, on this thread
//	err2 := c.Wait(id)           // left: run here too if nobody took it
//
// This is Rayon's join and TBB's task_group::run_and_wait; Wait already
// pops a child nobody stole from this thread's own deque and runs it, so
// the shared half costs a queue trip only when it is worth one.

import "fmt"

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
	s := c.s
	k := s.reg.Lookup(t.Kernel)
	if k == nil {
		return fmt.Errorf("sched: run in place: kernel %d: %w", t.Kernel, ErrUnknownKernel)
	}
	if t.Parent != NoTask {
		return fmt.Errorf("sched: run in place: kernel %d %q: a task run in place completes inside the call and has no Parent (got %v)", t.Kernel, k.Name, t.Parent)
	}
	switch a := t.Affinity; a {
	case AnyWorker, Auto:
	default:
		if i, ok := a.Thread(); !ok || c.index-s.nwork != i {
			return fmt.Errorf("sched: run in place: kernel %d %q: affinity %v is not served by this thread (%d)", t.Kernel, k.Name, a, c.index)
		}
	}
	if k.Kind == Simple {
		if !noStreams(&t.Data) {
			return k.Validate(t.Kernel, &t.Data)
		}
	} else if err := k.Validate(t.Kernel, &t.Data); err != nil {
		return err
	}
	if t.Dependency != NoTask {
		if err := c.Wait(t.Dependency); err != nil {
			return fmt.Errorf("sched: run in place: kernel %d %q: dependency %v: %w", t.Kernel, k.Name, t.Dependency, err)
		}
	}
	if t.Kernel == KernelNone {
		return nil
	}
	st := c.inPlace
	if st == nil {
		st = new(inPlaceStack)
		c.inPlace = st
	}
	if st.n == len(st.d) {
		// Nested deeper than the stack: the dynamic path.
		id, err := c.Add(t)
		if err == nil {
			err = c.Wait(id)
		}
		return err
	}
	d := &st.d[st.n]
	if k.Kind == Simple {
		if st.streams[st.n] {
			*d = TaskData{}
			st.streams[st.n] = false
		}
		d.Params, d.Data = t.Data.Params, t.Data.Data
	} else {
		*d = t.Data
		d.Begin, d.End = 0, t.Data.Elements
		st.streams[st.n] = true
	}
	st.n++
	return runKernelInPlace(c, t.Kernel, k, d, st)
}

// inPlaceDepth is how deep RunInPlace calls nest on one thread before the
// deeper ones take the dynamic path (Add and Wait).
const inPlaceDepth = 64

// inPlaceStack holds the task data of a thread's RunInPlace calls in
// progress, innermost last: the kernel sees a copy, as with Add, which
// keeps the caller's Task on its own stack (a pointer handed to a kernel
// function escapes, so passing t.Data itself allocated the Task).
type inPlaceStack struct {
	n       int
	d       [inPlaceDepth]TaskData
	streams [inPlaceDepth]bool // d[i] held streams: clear it before a simple kernel
}

// runKernelInPlace calls k.CPU, turning a panic into ErrKernelPanic, and
// pops d off st however the kernel ends (a Goexit too).
func runKernelInPlace(c *Ctx, id KernelID, k *Kernel, d *TaskData, st *inPlaceStack) (err error) {
	defer func() {
		d.Data = nil // keep nothing of the caller's alive
		st.n--
		if r := recover(); r != nil {
			err = fmt.Errorf("sched: run in place: kernel %d %q: %w: %v", id, k.Name, ErrKernelPanic, r)
		}
	}()
	return k.CPU(c, d)
}
