package gpu

// Submission: how a task gets into a command buffer, and out of the
// executor.
//
// A task crosses the executor's boundary as a sched.Job (Enqueue in, Done
// out). Inside, it is a job (the sched.Job and its Enqueue time) until it
// is planned into a slot (one command buffer and its resources), and from
// then a plannedJob (the job with its pipeline, descriptor set, copies and
// times, in slot.jobs) until Done.
//
// The states of a job, and the function that moves it on:
//
//	enqueued   made by Enqueue (or, for a burst of one, taken back out of
//	           e.pending by EndBurst)
//	  -> failed     device lost (Enqueue, EndBurst) or executor closed
//	                (Enqueue): finishEarly
//	  -> taken      executor idle: submitOrQueueAndUnlock, and the caller
//	                runs it (submitInlineAndUnlockQueue, in e.inlineQ)
//	  -> pending    else: submitOrQueueAndUnlock appends it to e.pending
//	pending    in e.pending; held there while a burst is open, unless
//	           the submitter is submitting
//	  -> taken      submitLoop moves all of e.pending into its q
//	taken      in the submitter's q or e.inlineQ
//	  -> failed     device lost (submitLoop), slot reset failed (runBatch):
//	                finishEarly
//	  -> planned    runBatch -> planSafe -> plan appends a plannedJob to
//	                sl.jobs
//	  -> completed  plan: no work items, finishEarly(nil)
//	  -> failed     plan: no pipeline, bad stream, no memory: finishEarly;
//	                a panic: planSafe, recoverBatch
//	  -> taken      slot full (MaxBatch) or arena full: left in q for the
//	                next runBatch
//	planned    in sl.jobs
//	  -> recorded   record, for the whole slot
//	recorded
//	  -> submitted  runBatch: d.submitQueue, then sl goes to e.inflight
//	  -> failed     record or submit failed: runBatch -> finishSlot(err);
//	                a panic: recoverBatch -> failRest
//	submitted  its slot owned by the completion goroutine
//	  -> completed  complete -> finishSlot(nil) once the fence signals:
//	                outputs copied back, Done(nil)
//	  -> failed     complete -> finishSlot(err): fence timed out, device
//	                lost; a panic: completeSafe -> failRest
//
// completed and failed are final: Done is called once, with job.done
// (finishEarly) or slot.done (finishSlot, failRest) advanced first.
//
// A job that stands for a graph segment (sched.Job.Segment) leaves this
// machine at Enqueue, after the device-loss check: runSegment submits the
// segment's own recorded command buffer and segmentLoop completes it
// (segment.go); the executor's states below do not hold it.
//
// The states of the executor (fields under e.mu):
//
//	idle        !subBusy, !inlineBusy, burst == 0, pending empty; the
//	            submitter sleeps on e.wake (submitLoop)
//	inline      inlineBusy: a caller of Enqueue or EndBurst holds a slot
//	            and the queue lock (d.qmu) and submits its one job; the
//	            submitter takes nothing meanwhile.
//	            idle -> inline: submitOrQueueAndUnlock, when
//	            idleForInlineLocked and a slot and the queue lock are free.
//	            inline -> idle: submitInlineAndUnlockQueue, which wakes
//	            the submitter when jobs arrived meanwhile or Close began.
//	submitting  subBusy: the submitter holds taken jobs (q).
//	            idle -> submitting: submitLoop, woken with jobs pending
//	            and no burst open. submitting -> idle: submitLoop, when q
//	            is empty. Meanwhile Enqueue only appends and wakes it.
//	burst       burst > 0 (BeginBurst; nested ones count): Enqueue only
//	            appends, without waking; an idle submitter stays asleep,
//	            a submitting one keeps taking what arrives.
//	            burst -> idle: the last EndBurst; a single pending job then
//	            goes through submitOrQueueAndUnlock as if just enqueued
//	            (maybe inline), more wake the submitter.
//	closing     closed (Close): Enqueue fails jobs; the submitter ignores
//	            bursts, waits out an inline submission, drains e.pending
//	            and returns, closing e.inflight, so that the completion
//	            goroutine returns after the last slot.
//	lost        d.Lost() != nil (the device's state, not under e.mu):
//	            Enqueue and EndBurst fail jobs at once, the submitter fails
//	            what it takes (woken by d.lostCh when no slot is free), and
//	            complete fails a slot's jobs without waiting for it.
//
// A slot goes from e.free to runBatch (the submitter's, or an inline
// caller's) to e.inflight to the completion goroutine and back to e.free;
// from runBatch straight back when nothing went out; never back
// when its fence hangs or the device is lost (Close then waits for the
// queue before freeing it).
//
// Locks: e.mu guards the executor's state above; d.qmu the queue; e.smu
// the statistics. A function named ...Locked is called with the lock
// held; one named ...AndUnlock (AndUnlockQueue) is called with e.mu (d.qmu)
// held and returns with it released. No job is handed to Done, and no
// Vulkan call made, with e.mu held.

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/vkjobs/vkjobs/sched"
)

// job is a task inside the executor from Enqueue until it is planned
// (plannedJob) or finished early (finishEarly); see the states above.
type job struct {
	j    sched.Job
	t    int64 // Enqueue time, sched.Nanotime
	done bool  // Done was called (finishEarly): never call it again
}

// Enqueue hands the executor a runnable GPU task. It never blocks on the
// GPU. When the executor is idle (no job waiting, the submitter idle, a
// command buffer free, the queue not in use) and the job's host streams
// are small (inlineBytes), it records and submits the job itself, on the
// caller's thread: a tiny task then costs no hand-off to the submitter
// goroutine, which on a loaded machine is most of its round trip. Else it
// appends the job and wakes the submitter. After Close, or once the device
// is lost, it fails the job at once. Called by the scheduler from any
// goroutine.
func (e *Executor) Enqueue(j sched.Job) {
	jb := job{j: j, t: sched.Nanotime()}
	if err := e.d.Lost(); err != nil {
		e.finishEarly(&jb, err)
		return
	}
	if h := j.Segment(); h != nil {
		e.runSegment(h, jb) // a graph's recorded segment (segment.go)
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.finishEarly(&jb, fmt.Errorf("%w: Enqueue after the executor's Close", ErrClosed))
		return
	}
	e.submitOrQueueAndUnlock(jb)
}

// submitOrQueueAndUnlock moves the enqueued job jb on: inline when the
// executor is idle and a command buffer and the queue are free (idle ->
// inline), else to e.pending, waking the submitter unless a burst holds
// it. Called with e.mu held; returns with it released.
func (e *Executor) submitOrQueueAndUnlock(jb job) {
	if e.idleForInlineLocked(jb) {
		var sl *slot
		select {
		case sl = <-e.free:
		default:
		}
		// The queue lock is held from here to the submission (tens of
		// µs for a small job with a ready pipeline); taking it with
		// TryLock, the caller never waits for a presentation holding
		// it: then the submitter goes.
		if sl != nil && e.d.qmu.TryLock() {
			e.inlineBusy = true // idle -> inline
			e.mu.Unlock()
			e.submitInlineAndUnlockQueue(sl, jb)
			return
		}
		if sl != nil {
			e.free <- sl // never blocks: the slot came from there
		}
	}
	e.pending = append(e.pending, jb) // enqueued -> pending
	held := e.burst > 0
	e.mu.Unlock()
	if !held {
		e.wakeSubmitter()
	}
}

// idleForInlineLocked reports whether the executor is idle (no job
// pending, the submitter idle, no inline submission, no burst open) and
// jb may be submitted by its caller (inlineable). Called with e.mu held.
func (e *Executor) idleForInlineLocked(jb job) bool {
	return !e.noInline && !e.subBusy && !e.inlineBusy && e.burst == 0 && len(e.pending) == 0 && e.inlineable(jb.j)
}

// submitInlineAndUnlockQueue plans, records and submits jb into sl on the
// caller's goroutine (runBatch consumes it), releases the queue lock that
// submitOrQueueAndUnlock took, and moves the executor from inline back to
// idle, waking the submitter when jobs arrived meanwhile or Close began.
// Called with d.qmu held and e.mu not held; returns with both released.
func (e *Executor) submitInlineAndUnlockQueue(sl *slot, jb job) {
	e.inlineQ[0] = jb
	e.runBatch(sl, e.inlineQ[:], true) // consumes the one job
	e.inlineQ[0] = job{}
	e.d.qmu.Unlock()
	e.mu.Lock()
	e.inlineBusy = false
	more := len(e.pending) > 0 || e.closed
	e.mu.Unlock()
	if more {
		e.wakeSubmitter()
	}
}

// BeginBurst is called by the scheduler before it readies the GPU
// dependents of a finished task (sched.Burster): until the matching
// EndBurst, jobs are only appended, so an idle submitter finds the whole
// burst at once and records it into ceil(n/MaxBatch) command buffers
// rather than racing the releasing thread one job at a time. A submitter
// already busy keeps taking what has arrived; the hold only keeps an idle
// one asleep. Other goroutines' jobs enqueued meanwhile wait for
// EndBurst too (the release of one dependents list).
func (e *Executor) BeginBurst() {
	e.mu.Lock()
	e.burst++
	e.mu.Unlock()
}

// EndBurst ends a BeginBurst. When it was the last one open, a burst of
// one job (a release whose other dependents run on CPU workers) goes out
// as a lone Enqueue would: failed at once after a device loss, else
// submitted inline when the executor is idle (the caller's thread records
// and submits it, tens of µs). More jobs wake the submitter.
func (e *Executor) EndBurst() {
	e.mu.Lock()
	e.burst--
	if e.burst == 0 && len(e.pending) == 1 && !e.closed {
		jb := e.pending[0]
		e.pending[0] = job{}
		e.pending = e.pending[:0]
		if err := e.d.Lost(); err != nil {
			// As Enqueue: after a loss, fail at once, submit nothing.
			e.mu.Unlock()
			e.finishEarly(&jb, err)
			return
		}
		e.submitOrQueueAndUnlock(jb)
		return
	}
	wake := e.burst == 0 && len(e.pending) > 0
	e.mu.Unlock()
	if wake {
		e.wakeSubmitter()
	}
}

// inlineBytes bounds the host-stream bytes of a job that Enqueue submits
// itself: their copy into the arena runs under the queue lock.
const inlineBytes = 64 << 10

// inlineable reports whether Enqueue may submit j itself: its host
// streams hold at most inlineBytes and its pipeline is ready (compiling
// one takes tens of milliseconds).
func (e *Executor) inlineable(j sched.Job) bool {
	td := j.Data()
	var n int
	for i := range sched.MaxStreams {
		n += len(td.In[i].Bytes) + len(td.Out[i].Bytes)
	}
	if n > inlineBytes {
		return false
	}
	_, k := j.Kernel()
	return e.d.pipelineReady(k)
}

func (e *Executor) wakeSubmitter() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// submitLoop is the submitter goroutine: it moves the executor between
// idle and submitting, takes pending jobs and runs them in batches
// (runBatch), and returns once closed and drained.
func (e *Executor) submitLoop() {
	defer e.wg.Done()
	defer close(e.inflight)
	var q []job
	for {
		if len(q) == 0 {
			// submitting -> idle; sleep until idle -> submitting.
			e.mu.Lock()
			e.subBusy = false
			// While an Enqueue submits inline it owns a slot and may
			// send it to the completion goroutine: wait for it.
			for e.inlineBusy || (!e.closed && (len(e.pending) == 0 || e.burst > 0)) {
				e.mu.Unlock()
				<-e.wake
				e.mu.Lock()
			}
			if len(e.pending) == 0 {
				e.mu.Unlock()
				return // closed and drained
			}
			e.subBusy = true
			e.mu.Unlock()
		}
		// Take a free command buffer; while all are in flight, jobs
		// accumulate and go out together.
		var sl *slot
		select {
		case sl = <-e.free:
		case <-e.d.lostCh:
		}
		// pending -> taken.
		e.mu.Lock()
		q = append(q, e.pending...)
		clear(e.pending)
		e.pending = e.pending[:0]
		e.mu.Unlock()
		if err := e.d.Lost(); err != nil {
			for i := range q {
				e.finishEarly(&q[i], err)
			}
			clear(q)
			q = q[:0]
			if sl != nil {
				e.free <- sl
			}
			continue
		}
		n := e.runBatch(sl, q, false)
		copy(q, q[n:])
		clear(q[len(q)-n:])
		q = q[:len(q)-n]
	}
}

// runBatch plans, records and submits jobs from q into sl; it returns how
// many jobs of q it consumed (submitted or finished). The slot goes to the
// completion goroutine, or back to the free list when nothing was
// submitted.
//
// queueHeld: the caller holds the queue lock (Enqueue's inline path).
//
// A panic in it does not unwind into the caller: a job whose planning
// panics fails alone (planSafe); any other panic fails the jobs of the
// command buffer that did not go out (recoverBatch).
func (e *Executor) runBatch(sl *slot, q []job, queueHeld bool) (consumed int) {
	d := e.d
	// One OS thread from slotReset to vkEndCommandBuffer, so that the
	// validation layer's messages during planning and recording are
	// counted against this command buffer (see shim.go). Locked per batch
	// only: a goroutine locked for good would make every wake-up of the
	// submitter a hand-off between OS threads.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stage := "on the submitter goroutine"
	if queueHeld {
		stage = "in Enqueue's inline submission, on the caller's goroutine"
	}
	// held: sl is still this call's (not yet sent to the free list or to
	// the completion goroutine); phase: how far the batch got.
	held, phase := true, phasePrepare
	defer func() {
		if r := recover(); r != nil {
			consumed = e.recoverBatch(sl, q, consumed, held, phase, stage, r)
		}
	}()
	if sl.want > sl.arena.Cap() {
		_ = e.growArena(sl, sl.want) // on failure the old arena stays
	}
	sl.want = 0
	sl.arena.Reset()
	if err := check("vkResetFences/vkResetCommandPool/vkResetDescriptorPool", Result(d.shim.SlotReset(sl.fence, sl.pool, sl.dpool))); err != nil {
		if errors.Is(err, ErrDeviceLost) {
			d.markLost(err)
		}
		for i := range q {
			e.finishEarly(&q[i], err)
		}
		held = false
		e.free <- sl
		return len(q)
	}
	phase = phasePlan
	for i := range q {
		if len(sl.jobs) == e.opts.MaxBatch || !e.planSafe(sl, &q[i], stage) {
			break
		}
		consumed++
	}
	phase = phaseSubmit
	if len(sl.jobs) == 0 {
		held = false
		e.free <- sl
		return consumed
	}
	err := e.record(sl)
	if err == nil {
		sl.submitAt = sched.Nanotime()
		err = d.submitQueue(sl.cb, sl.fence, queueHeld)
	}
	if err != nil {
		e.finishSlot(sl, err, 0)
		releaseRefs(sl)
		held = false
		e.free <- sl
		return consumed
	}
	e.submits.Add(1)
	if queueHeld {
		e.inline.Add(uint64(len(sl.jobs))) // Enqueue's (or EndBurst's) own submission
	}
	held = false
	e.inflight <- sl // never blocks: at most InFlight slots exist
	return consumed
}

// Phases of runBatch, for recoverBatch.
const (
	phasePrepare = iota // growing and resetting the slot
	phasePlan           // planning the jobs of q (planSafe)
	phaseSubmit         // recording and submitting, or failing the batch
)

// recoverBatch handles a panic in runBatch outside planSafe's own
// recovery. A panic while preparing the slot fails every job of q: each
// would meet it again, and the inline caller counts on its job being
// consumed. Later, the job being planned (when planSafe's recovery itself
// panicked) and the jobs planned into sl that were not yet handed to Done
// fail; the jobs of q not reached stay for the next command buffer. The
// slot goes back to the free list: the next runBatch resets its command
// pool, descriptor pool and arena. It returns how many jobs of q are
// consumed.
func (e *Executor) recoverBatch(sl *slot, q []job, consumed int, held bool, phase int, stage string, r any) int {
	stack := debug.Stack()
	fail := func(jb *job, what string) {
		if !jb.done {
			kid, k := jb.j.Kernel()
			e.finishEarly(jb, panicError(what+" "+stage, kid, k, r, stack))
		}
	}
	switch phase {
	case phasePrepare:
		for i := range q {
			fail(&q[i], "preparing a command buffer")
		}
		consumed = len(q)
	case phasePlan:
		if consumed < len(q) {
			fail(&q[consumed], "planning the task")
			consumed++
		}
	}
	if !held {
		return consumed
	}
	e.failRest(sl, fmt.Sprintf("preparing or submitting a command buffer of %d tasks", len(sl.jobs))+" "+stage, r, stack)
	releaseRefs(sl)
	e.clearSlot(sl)
	e.free <- sl
	return consumed
}

// failRest fails, with ErrExecutorPanic, the jobs of sl not yet handed to
// Done, each with an error naming its own kernel.
func (e *Executor) failRest(sl *slot, stage string, r any, stack []byte) {
	for sl.done < len(sl.jobs) {
		rec := &sl.jobs[sl.done]
		sl.done++
		kid, k := rec.j.Kernel()
		e.finishEarly(&rec.job, panicError(stage, kid, k, r, stack))
	}
}

// panicError is the error of a task of kernel kid (k) failed by the panic
// r of the executor during stage. A panic value that is an error (a
// runtime.Error) stays in the chain.
func panicError(stage string, kid sched.KernelID, k *sched.Kernel, r any, stack []byte) error {
	name := ""
	if k != nil && k.Name != "" {
		name = fmt.Sprintf(" %q", k.Name)
	}
	if err, ok := r.(error); ok {
		return fmt.Errorf("%w %s, task of kernel %d%s: %w\n%s", ErrExecutorPanic, stage, kid, name, err, stack)
	}
	return fmt.Errorf("%w %s, task of kernel %d%s: %v\n%s", ErrExecutorPanic, stage, kid, name, r, stack)
}

// planSafe is plan with a panic recovered: the slot is rolled back to
// where it was before the job, the job fails with ErrExecutorPanic, and
// the jobs planned before it still go out.
func (e *Executor) planSafe(sl *slot, jb *job, stage string) (ok bool) {
	m := sl.mark()
	defer func() {
		if r := recover(); r != nil {
			sl.rollback(m)
			if !jb.done {
				kid, k := jb.j.Kernel()
				e.finishEarly(jb, panicError("planning the task "+stage, kid, k, r, debug.Stack()))
			}
			ok = true
		}
	}()
	if h := e.testHook; h != nil {
		kid, _ := jb.j.Kernel()
		h(hookPlan, kid)
	}
	return e.plan(sl, jb)
}

// finishEarly completes a job that never went out in a command buffer, or
// (failRest) one of a command buffer whose completion panicked.
func (e *Executor) finishEarly(jb *job, err error) {
	j := jb.j
	kid, _ := j.Kernel()
	now := sched.Nanotime()
	td := j.Data()
	e.smu.Lock()
	ks := e.kernelLocked(kid)
	if err != nil {
		e.st.Failed++
		ks.Failed++
	} else {
		e.st.Tasks++
		ks.Tasks++
	}
	e.smu.Unlock()
	if obs := j.Scheduler().Observer(); obs != nil {
		ev := sched.RunEvent{Thread: -1, Where: sched.GPU, Task: j.ID(), Kernel: kid,
			Begin: td.Begin, End: td.End, Start: now, Stop: now, Err: err}
		e.observe(obs, &ev)
	}
	jb.done = true // before Done: a job is never handed to it twice
	j.Done(err)
}
