package sched

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The lifecycle of a task: from Add to the reuse of its slot.
//
//  1. Add (create) checks the kernel, the streams, the priority, the
//     affinity, the parent and the dependency (checkID, ids.go; the cheap
//     cycles, addCycle, hang.go) and takes a slot (pool.go); with the
//     pool full, a kernel's plain CPU child runs in place instead
//     (addInPlace, inplace.go) and its ID names the in-place slot.
//  2. It increments the parent's open count (holdParent) before it writes
//     the slot, so the one locked instruction of an Add does not wait for
//     the slot's lines. It copies the whole Task for streaming kinds, but
//     only the header, Params and Data for Simple kernels, and stores the
//     slot's own fields without locked instructions: the deque push, a
//     queue's lock or the dependency's CAS publishes them.
//  3. Create holds the task (held) until Run. Otherwise start links it into
//     its dependency's dependents list (linkDependency: a CAS on the deps
//     word) or readies it; a dependency that already finished is satisfied
//     at once, or fails the task (ErrDepFailed).
//  4. ready queues a runnable task where its affinity says: an Auto task
//     asks the Placer (executor.go); a CPU task goes to the thread's deque,
//     or the shared queue from outside (pushCPU), and wakes a sleeper
//     (wake.go); an empty task on a thread completes in place, up to
//     maxInline deep; GPU and SPU tasks go to their executor; OnThread
//     tasks to the registered thread's pinned queue.
//  5. finish ends a task's own work by decrementing its open count (its own
//     work, 1, plus its unfinished children), recording its error first;
//     for a task a thread just ran (finishRun) the parent's decrement may
//     be deferred (debt.go).
//  6. At zero, complete records the error, swaps the deps word (closing the
//     dependents list and bumping the generation: the ID now reads as
//     finished), returns the slot (pool.go), readies or fails the
//     dependents (releaseMany; releaseBurst from the first that may go to
//     an executor), fails the parent with ErrChildFailed if the task
//     failed, decrements it, and wakes the task's waiters.

// Add adds a task from a goroutine that is not a scheduler thread. The task
// goes to the shared queue (FIFO): kernels that spawn recursively should
// use their Ctx's Add, which queues on the thread's deque and runs the
// tree depth first; through the shared queue it runs breadth first. When
// the pool is full the caller sleeps until a slot frees (back-pressure);
// called on a scheduler thread after all (a kernel), it does what Ctx.Add
// does: a plain CPU child runs in place, other tasks wait while the
// thread runs tasks. Once Close began it fails with ErrClosed,
// except from a running kernel (its thread is looked up then, see
// callerCtx), which may still add children, as through Ctx.Add. See
// Ctx.Add for the rules, and Config.PoolSize for the dead end
// (ErrPoolDeadlock).
func (s *Scheduler) Add(t *Task) (TaskID, error) { return s.add(t, nil) }

func (s *Scheduler) add(t *Task, c *Ctx) (TaskID, error) { return s.create(t, c, false) }

func (s *Scheduler) create(t *Task, c *Ctx, hold bool) (TaskID, error) {
	if s.closing.Load() && !s.kernelMayAdd(c) {
		return NoTask, fmt.Errorf("sched: Add: %w (once Close began only running kernels may add tasks)", ErrClosed)
	}
	k := s.reg.Lookup(t.Kernel)
	if k == nil {
		return NoTask, fmt.Errorf("sched: Add: kernel %d: %w", t.Kernel, ErrUnknownKernel)
	}
	// A simple task naming no stream needs no Validate: the streams'
	// words ORed inline, one branch, where the call and its field-by-field
	// loop cost 3-4% of a task (BENCHMARKS.md, section sched-peers).
	if k.Kind != Simple || !noStreams(&t.Data) {
		if err := k.Validate(t.Kernel, &t.Data); err != nil {
			return NoTask, err
		}
	}
	if uint8(t.Priority-PriorityLow) > uint8(PriorityHigh-PriorityLow) { // one compare
		return NoTask, fmt.Errorf("sched: Add: kernel %q: %w %d", k.Name, ErrBadPriority, t.Priority)
	}
	switch a := t.Affinity; a {
	case AnyWorker, Auto:
	case GPU:
		if s.execs[ExecGPU] == nil {
			return NoTask, fmt.Errorf("sched: Add: kernel %q: %w %v", k.Name, ErrNoExecutor, a)
		}
	case SPU:
		if s.execs[ExecSPU] == nil {
			return NoTask, fmt.Errorf("sched: Add: kernel %q: %w %v", k.Name, ErrNoExecutor, a)
		}
	default:
		i, ok := a.Thread()
		if !ok || i >= s.cfg.MainThreads {
			return NoTask, fmt.Errorf("sched: Add: kernel %q: %w %v (MainThreads %d)", k.Name, ErrBadAffinity, a, s.cfg.MainThreads)
		}
	}
	if err := s.checkID(t.Parent, "Add: parent"); err != nil {
		return NoTask, err
	}
	if err := s.checkID(t.Dependency, "Add: dependency"); err != nil {
		return NoTask, err
	}
	if t.Dependency != NoTask && t.Parent != NoTask {
		if err := s.addCycle(t.Parent, t.Dependency); err != nil {
			return NoTask, fmt.Errorf("sched: Add: kernel %q: %w", k.Name, err)
		}
	}

	idx, ok := s.getSlot(c)
	if !ok {
		var id TaskID
		var err error
		if idx, id, err = s.fullPool(t, k, c, hold); err != nil || id != NoTask {
			return id, err
		}
	}
	// Hold the parent before touching the slot: the locked add waits for
	// the stores before it to reach the cache, and the slot's lines may
	// still be in the core that last completed a task in it.
	if t.Parent != NoTask && !s.holdParent(t.Parent) {
		s.putSlot(idx, c)
		return NoTask, fmt.Errorf("sched: Add: kernel %q: parent %v: %w", k.Name, t.Parent, ErrParentDone)
	}
	if s.cfg.CheckRaces { // race.go
		if err := s.raceAdd(idx, t, k, hold, c); err != nil {
			return NoTask, err
		}
	}
	sl := &s.slots[idx]
	gen := sl.genLoad()
	id := makeID(s.id, gen, idx)
	if k.Kind == Simple {
		// Copy only what a simple kernel reads: the slot's hot lines
		// move between cores, the unused streams need not.
		sl.task.Kernel, sl.task.Affinity, sl.task.Priority = t.Kernel, t.Affinity, t.Priority
		sl.task.Parent, sl.task.Dependency = t.Parent, t.Dependency
		sl.task.Data.Params, sl.task.Data.Data = t.Data.Params, t.Data.Data
		sl.task.Data.Elements, sl.task.Data.Grain = t.Data.Elements, t.Data.Grain
		if !sl.simple {
			sl.task.Data.In, sl.task.Data.Out = [MaxStreams]Stream{}, [MaxStreams]Stream{}
			sl.simple = true
		}
	} else {
		sl.task = *t
		sl.simple = false
	}
	sl.task.Data.Begin, sl.task.Data.End = 0, t.Data.Elements
	sl.kern = k
	sl.sub = false
	if sl.err.Load() != nil {
		sl.err.Store(nil)
	}
	// Not yet published (a deque push, a queue's lock or the dependency's
	// CAS does that), so a plain store: no locked instruction.
	storeUnpublished32((*uint32)(unsafe.Pointer(&sl.open)), 1)
	// parent and kid are read by Abandon, which may race with the slot's
	// reuse (it then discards them): loaded atomically, so stored through
	// storeUnpublished32 (a plain store, atomic under the race detector).
	var parent uint32
	if t.Parent != NoTask {
		parent = t.Parent.index() + 1
		storeUnpublished32(&sl.pgen, t.Parent.gen())
	}
	storeUnpublished32(&sl.parent, parent)
	storeUnpublished32(&sl.kid, uint32(t.Kernel))
	storeUnpublished64(&sl.dep, uint64(t.Dependency))
	if hold {
		sl.held.Store(true)
	} else {
		s.start(idx, c)
	}
	if s.closing.Load() && (c == nil || c.running == 0) {
		s.lateAdd(c) // raced with Close (one load of a line read above)
	}
	return id, nil
}

// start makes a created task wait for its dependency or run.
func (s *Scheduler) start(idx uint32, c *Ctx) {
	sl := &s.slots[idx]
	t := &sl.task
	if t.Dependency != NoTask {
		s.linkDependency(idx, t.Dependency, c)
	} else {
		s.ready(idx, c)
	}
}

// run starts a task made with Create. It returns an error if id is not a
// held task of this scheduler (already started, finished or foreign).
func (s *Scheduler) run(id TaskID, c *Ctx) error {
	if err := s.checkID(id, "Run"); err != nil {
		return err
	}
	if id == NoTask {
		return fmt.Errorf("sched: Run %v: task is not held (finished)", id)
	}
	sl := &s.slots[id.index()]
	if s.IsFinished(id) {
		// Abandoned while held (Abandon of a gate, or of a graph run's
		// join that an Observer saw as a node's Parent): it never runs,
		// but its own work must still end, or its slot stays reserved
		// for ever (a graph whose join it is stays busy). Start it: run
		// (or ready, for a task with no kernel) sees the mark and
		// finishes it unrun.
		if h := sl.deps.Load(); uint32(h>>32) == id.gen() && uint32(h) == depsAbandoned && sl.held.CompareAndSwap(true, false) {
			s.start(id.index(), c)
			return nil
		}
		return fmt.Errorf("sched: Run %v: task is not held (finished)", id)
	}
	if !sl.held.CompareAndSwap(true, false) {
		return fmt.Errorf("sched: Run %v: task is not held (already started or made by Add)", id)
	}
	if s.cfg.CheckRaces { // race.go
		if err := s.raceRun(id, c); err != nil {
			return err
		}
	}
	s.start(id.index(), c)
	if s.closing.Load() && (c == nil || c.running == 0) {
		s.lateAdd(c)
	}
	return nil
}

// Create adds a task like Add but does not start it: it waits, held, until
// Run(id). Children can be added to a held task without racing its
// completion (an empty parent would otherwise complete at once).
func (s *Scheduler) Create(t *Task) (TaskID, error) { return s.create(t, nil, true) }

// Run starts a task made with Create. Call it exactly once per Create,
// also after Abandon of the held task: it then never runs, and Run frees
// its slot (without Run it stays reserved until Close).
func (s *Scheduler) Run(id TaskID) error { return s.run(id, nil) }

// holdParent increments a live parent's open count.
func (s *Scheduler) holdParent(p TaskID) bool {
	ps := &s.slots[p.index()]
	for {
		if ps.genLoad() != p.gen() {
			return false
		}
		o := atomic.LoadInt32(&ps.open)
		if o <= 0 {
			return false
		}
		if atomic.CompareAndSwapInt32(&ps.open, o, o+1) {
			break
		}
	}
	if ps.genLoad() != p.gen() {
		// The parent finished and its slot was reused between our check
		// and the increment: give the new owner its count back.
		s.decOpen(p.index(), nil)
		return false
	}
	return true
}

// linkDependency makes idx run after dep completes.
func (s *Scheduler) linkDependency(idx uint32, dep TaskID, c *Ctx) {
	ds := &s.slots[dep.index()]
	want := uint64(dep.gen()) << 32
	for {
		h := ds.deps.Load()
		if h&^0xffffffff != want || uint32(h) == depsClosed {
			break // dependency already finished
		}
		if uint32(h) == depsAbandoned {
			if te := ds.err.Load(); te != nil && ds.genLoad() == dep.gen() {
				s.depReady(idx, te, c)
				return
			}
			break
		}
		// Read atomically by waitCycle's walk of the list.
		storeUnpublished32(&s.slots[idx].depNext, uint32(h))
		if ds.deps.CompareAndSwap(h, want|uint64(idx+1)) {
			return
		}
	}
	s.depReady(idx, s.Err(dep), c)
}

// depReady is called when idx's dependency finished with depErr.
func (s *Scheduler) depReady(idx uint32, depErr error, c *Ctx) {
	if depErr != nil {
		if t := &s.slots[idx].task; t.Kernel == KernelGraph {
			depErr = releaseDepErr(t, depErr) // a graph's dynamic node failed: name it
		}
		s.finish(idx, fmt.Errorf("%w: %w", ErrDepFailed, depErr), c)
		return
	}
	s.ready(idx, c)
}

// ready queues a runnable task where its affinity says.
func (s *Scheduler) ready(idx uint32, c *Ctx) {
	sl := &s.slots[idx]
	a := sl.task.Affinity
	if a == Auto {
		a = AnyWorker
		if s.cfg.Placer != nil && sl.task.Kernel != KernelNone {
			where, split, err := s.place(sl)
			if err != nil {
				s.finish(idx, err, c)
				return
			}
			d := &sl.task.Data
			if split > 0 && split < d.End-d.Begin && where != AnyWorker && sl.kern.Kind != Simple {
				if s.coExecute(idx, where, d.Begin+split, c) {
					return
				}
			}
			if (where == GPU && s.execs[ExecGPU] != nil) || (where == SPU && s.execs[ExecSPU] != nil) {
				a = where
			}
		}
		sl.task.Affinity = a
	}
	switch a {
	case AnyWorker:
		if sl.task.Kernel == KernelNone && c != nil && c.inline < maxInline {
			// An empty task (a join) has no work to run: complete its
			// own part here rather than queue it for a thread that
			// would only do this. Its completion may ready more empty
			// tasks, completed here in turn up to maxInline deep.
			c.inline++
			s.finish(idx, nil, c)
			c.inline--
			return
		}
		s.pushCPU(idx, sl.task.Priority.level(), c)
	case GPU, SPU:
		s.execJobs.Add(1)
		id := makeID(s.id, sl.genLoad(), idx)
		sl.execID.Store(uint64(id)) // before Enqueue: Done may come at once
		k := ExecGPU
		if a == SPU {
			k = ExecSPU
		}
		s.execs[k].Enqueue(Job{s: s, idx: idx, id: id})
	default:
		i, _ := a.Thread()
		t := s.threads[s.nwork+i]
		if s.closing.Load() {
			s.finish(idx, ErrClosed, c)
			return
		}
		lv := sl.task.Priority.level()
		t.pinned[lv].push(idx)
		t.npinned.Add(1)
		s.wakeThread(t)
	}
}

// maxInline bounds how deeply ready completes empty tasks in place (a
// chain of joins each readied by the previous one's completion); deeper
// ones are queued, so the stack stays small.
const maxInline = 8

// initSub fills slot x as a range piece of task p.
func (s *Scheduler) initSub(x, p uint32, begin, end uint32, a Affinity, c *Ctx) {
	ps := &s.slots[p]
	xs := &s.slots[x]
	xs.task = ps.task
	xs.simple = false
	xs.task.Parent, xs.task.Dependency = makeID(s.id, ps.genLoad(), p), NoTask
	xs.task.Affinity = a
	xs.task.Data.Begin, xs.task.Data.End = begin, end
	xs.kern = ps.kern
	xs.sub = true
	if xs.err.Load() != nil {
		xs.err.Store(nil)
	}
	atomic.StoreInt32(&xs.open, 1)
	storeUnpublished32(&xs.parent, p+1)
	storeUnpublished32(&xs.pgen, ps.genLoad())
	storeUnpublished32(&xs.kid, uint32(ps.task.Kernel))
	storeUnpublished64(&xs.dep, 0)
}

func (s *Scheduler) pushCPU(idx uint32, lv int, c *Ctx) {
	if lv != 1 {
		s.queued[lv].Add(1)
	}
	if c == nil || !c.dq[lv].push(idx) {
		s.inject[lv].push(idx)
	}
	if s.nIdle.Load() > 0 {
		s.wakeOne()
	}
}

// finish ends idx's own work with err (nil on success).
func (s *Scheduler) finish(idx uint32, err error, c *Ctx) {
	if err != nil {
		s.setErr(idx, err)
	}
	s.decOpen(idx, c)
}

func (s *Scheduler) setErr(idx uint32, err error) {
	sl := &s.slots[idx]
	if sl.err.Load() != nil {
		return
	}
	te, ok := err.(*TaskError)
	if !ok || te.Task != makeID(s.id, sl.genLoad(), idx) {
		te = &TaskError{Task: makeID(s.id, sl.genLoad(), idx), Kernel: sl.task.Kernel, Name: sl.kern.Name, Err: err}
	}
	sl.err.CompareAndSwap(nil, te)
}

func (s *Scheduler) decOpen(idx uint32, c *Ctx) { s.dec(idx, c, false) }

// dec decrements idx's open count and completes it at zero (deferParent:
// see complete).
func (s *Scheduler) dec(idx uint32, c *Ctx, deferParent bool) {
	if atomic.AddInt32(&s.slots[idx].open, -1) == 0 {
		s.complete(idx, c, deferParent)
	}
}

// finishRun is finish for a task that thread c just ran: if the task
// completes, its parent's decrement may be deferred (see Ctx.deferDec).
func (s *Scheduler) finishRun(idx uint32, err error, c *Ctx) {
	if err != nil {
		s.setErr(idx, err)
	}
	s.dec(idx, c, true)
}

// complete runs when a task's own work and all its children are done.
// With deferParent (only on the run path of thread c), a successful task's
// decrement of its parent's open count may be left pending on c.
func (s *Scheduler) complete(idx uint32, c *Ctx, deferParent bool) {
	sl := &s.slots[idx]
	gen := sl.genLoad()
	te := sl.err.Load()
	var err error
	if te != nil {
		err = te
		// Record before the generation bump: a waiter that sees the task
		// finished must find its error.
		if !sl.sub && uint32(sl.deps.Load()) != depsAbandoned {
			s.recordFailure(te)
		}
	}
	parent := sl.parent
	if s.cfg.CheckRaces { // race.go: forgotten before anyone sees it finished
		s.raceDone(idx, gen)
	}
	// Close the dependents list and bump the generation: from here on the
	// ID reads as finished.
	h := sl.deps.Swap(uint64(gen+1) << 32)
	// Mark the slot free (open -1; Add stores 1): an open count of 0
	// under an ID's generation then means only "completing", and checkID
	// tells a free slot from a completing task without waiting (ids.go).
	// After the bump, so the task's own ID never reads open -1 under its
	// generation; a plain store, ordered after the Swap (store_amd64.go).
	storeUnpublished32((*uint32)(unsafe.Pointer(&sl.open)), freeOpenBits)
	if uint32(h) == depsAbandoned {
		// Abandon already failed the dependents and released the parent.
		h, parent = 0, 0
	}
	sl.kern = nil
	if sl.task.Data.Data != nil {
		sl.task.Data.Data = nil
	}
	waiters := sl.waiters.Load()
	sub := sl.sub // read before the slot goes back: another thread may reuse it at once
	s.putSlot(idx, c)
	if d := uint32(h); d != 0 && d != depsClosed {
		if err == nil && s.slots[d-1].depNext != 0 {
			s.releaseMany(d, c)
		} else {
			for d != 0 && d != depsClosed {
				next := s.slots[d-1].depNext
				s.depReady(d-1, err, c)
				d = next
			}
		}
	}
	if parent != 0 {
		if te == nil && deferParent {
			c.deferDec(parent)
		} else {
			if te != nil {
				ps := &s.slots[parent-1]
				if ps.err.Load() == nil {
					if sub {
						s.setErr(parent-1, te.Err)
					} else {
						s.setErr(parent-1, fmt.Errorf("%w: %w", ErrChildFailed, te))
					}
				}
			}
			s.decOpen(parent-1, c)
		}
	}
	if waiters > 0 {
		s.wakeWaiters()
	}
}

// releaseMany readies a dependents list of two or more tasks, starting at
// d, whose dependency succeeded. Dependents that run on CPU workers are
// readied here; from the first one that may go to an executor on,
// releaseBurst takes over. A fan-out of CPU tasks so begins no burst,
// delays no other goroutine's GPU job, and costs no defer.
func (s *Scheduler) releaseMany(d uint32, c *Ctx) {
	for d != 0 && d != depsClosed {
		sl := &s.slots[d-1]
		if a := sl.task.Affinity; a != AnyWorker && (a == GPU || a == SPU || a == Auto && s.cfg.Placer != nil) {
			s.releaseBurst(d, c)
			return
		}
		next := sl.depNext
		s.ready(d-1, c)
		d = next
	}
}

// releaseBurst readies the rest of a dependents list from d. Before the
// first of them that may go to an executor that is a Burster (GPU or SPU
// affinity, or Auto with a Placer), it begins a burst on that executor,
// and it ends every burst it began after the last, from a defer: a panic
// (a kernel's recover may catch it and the thread go on) leaves no
// executor held.
func (s *Scheduler) releaseBurst(d uint32, c *Ctx) {
	var begun [2]Burster
	defer func() {
		for _, b := range begun {
			if b != nil {
				b.EndBurst()
			}
		}
	}()
	for d != 0 && d != depsClosed {
		sl := &s.slots[d-1]
		next := sl.depNext
		var kinds uint8 // bit k: the task may go to executor kind k
		switch sl.task.Affinity {
		case GPU:
			kinds = 1 << ExecGPU
		case SPU:
			kinds = 1 << ExecSPU
		case Auto:
			if s.cfg.Placer != nil && sl.task.Kernel != KernelNone {
				kinds = 1<<ExecGPU | 1<<ExecSPU
			}
		}
		for k := range begun {
			if kinds&(1<<k) != 0 && begun[k] == nil && s.bursters[k] != nil {
				begun[k] = s.bursters[k]
				begun[k].BeginBurst()
			}
		}
		s.ready(d-1, c)
		d = next
	}
}

// Add adds a task and returns its ID. The task runs when its dependency
// (if any) completed; it completes when its own work and all its children
// completed. Add returns an error, and adds nothing, for an unknown kernel,
// streams that don't match the kernel's declaration or element count, an
// invalid affinity or priority, a parent or dependency from another
// scheduler or never issued, a dependency on an ancestor, a parent that
// already finished, a dependency that depends on an ancestor (ErrCycle), or
// a closed scheduler. When the pool is full and a kernel is running on
// this thread, a plain CPU child (no Create, an affinity this thread
// serves, no unfinished dependency: see addInPlace in inplace.go) runs in
// place at once, and Add returns its ID, already finished, with its
// error; otherwise Add runs other tasks until a slot frees
// (back-pressure); if nothing can run, so that only a Run or Abandon
// from elsewhere could free a slot, it waits on, and fails with
// ErrPoolDeadlock once the pool has stayed that way for
// Config.PoolStallLimit. A dependency that
// already finished is satisfied (or, if it failed, fails this task at once).
func (c *Ctx) Add(t *Task) (TaskID, error) { return c.s.add(t, c) }

// Create adds a task like Add but holds it until Run: children added to a
// held task cannot race its completion. Run must be called exactly once.
func (c *Ctx) Create(t *Task) (TaskID, error) { return c.s.create(t, c, true) }

// Run starts a task made with Create.
func (c *Ctx) Run(id TaskID) error { return c.s.run(id, c) }

// fullPool is create's way when the pool is full: a kernel's plain CPU
// child runs in place (id set: addInPlace, inplace.go), anything else
// waits for a slot (idx: alloc, pool.go). Out of line, so create's
// common path keeps its frame and code layout: with these calls inline
// in create, EmptyTask ran measurably slower.
//
//go:noinline
func (s *Scheduler) fullPool(t *Task, k *Kernel, c *Ctx, hold bool) (uint32, TaskID, error) {
	if id, done, err := s.addInPlace(t, k, c, hold); done {
		return 0, id, err
	}
	idx, err := s.alloc(c)
	if err != nil {
		return 0, NoTask, fmt.Errorf("sched: Add: kernel %q: %w", k.Name, err)
	}
	return idx, NoTask, nil
}
