package gpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/sched"
)

// ExecutorOptions configures an Executor. The zero value gives defaults.
type ExecutorOptions struct {
	// MaxBatch is the most tasks recorded into one command buffer
	// (default 64).
	MaxBatch int
	// InFlight is how many command buffers may be submitted and not yet
	// completed (default 2, at most MaxInFlight). While all are in flight,
	// runnable GPU tasks accumulate and go out together in the next one.
	InFlight int
	// ArenaSize is the initial size in bytes of each command buffer's
	// transient arena for host streams (default 1 MiB). An arena grows, when
	// its command buffer is idle, to fit the largest batch seen.
	ArenaSize uint64
	// FenceTimeout bounds each wait for a command buffer (default 10 s).
	// When it expires the command buffer's tasks fail with ErrTimeout; the
	// executor keeps waiting for it in the background, and declares the
	// device lost after HungAfter more time-outs.
	FenceTimeout time.Duration
	// HungAfter: see FenceTimeout (default 3).
	HungAfter int
	// NoTimestamps disables timestamp queries even where supported.
	NoTimestamps bool
	// CPUTimestamps keeps timestamp queries on CPU devices (lavapipe). By
	// default they are off there: lavapipe charges tens of µs per command
	// buffer for them (BENCHMARKS.md, section gpu), and since a
	// CPU device runs commands in order both timestamps are taken at the
	// top of the pipe, so the durations they give are not dispatch times.
	// Without them, per-task times come from submission and completion.
	CPUTimestamps bool
}

// MaxInFlight bounds ExecutorOptions.InFlight: each command buffer in
// flight has its own pool, fence, descriptor and query pools and arena,
// and beyond a few the GPU gains nothing (batching comes from
// back-pressure).
const MaxInFlight = 64

// Executor runs tasks with GPU affinity as Vulkan compute dispatches. It
// implements sched.Executor: attach it with
//
//	s.AttachExecutor(sched.ExecGPU, exec)
//
// Enqueue only appends the job to a list and wakes the submitter
// goroutine; the submitter records runnable jobs into a command buffer (as
// many as arrived, up to MaxBatch) and submits it; the completion goroutine
// blocks in vkWaitForFences, copies outputs back, reports timings and calls
// Job.Done. No scheduler thread ever blocks on the GPU. A panic of the
// executor's own code, on either goroutine or in an inline submission,
// fails the tasks involved (ErrExecutorPanic) instead of ending the
// process. See the package documentation for the design.
type Executor struct {
	d    *Device
	opts ExecutorOptions
	ts   bool // timestamps in use

	mu      sync.Mutex
	pending []pendingJob
	closed  bool
	wake    chan struct{}
	// subBusy: the submitter holds jobs (it took pending ones and has not
	// finished submitting them); inlineBusy: an Enqueue is submitting its
	// job itself. Both under mu; see Enqueue.
	subBusy, inlineBusy bool
	// burst counts the scheduler's open BeginBursts (under mu): while it
	// is above zero, Enqueue neither submits inline nor wakes the
	// submitter, and an idle submitter stays asleep, so that the jobs one
	// finished task releases go out together (see BeginBurst).
	burst    int
	inlineQ  [1]pendingJob // the inline job (one at a time)
	noInline bool          // tests: always hand off to the submitter
	// testHook, when a test sets it (before the first Enqueue), is called
	// with hookPlan before each job is planned and with hookComplete
	// before each job is completed: a seam to make the executor panic
	// there (see planSafe and completeSafe).
	testHook func(at string, kid sched.KernelID)

	free     chan *slot
	inflight chan *slot
	slots    []*slot

	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	submits atomic.Uint64
	inline  atomic.Uint64 // jobs submitted inline (runBatch with queueHeld)
	smu     sync.Mutex
	st      ExecStats
	kst     []KernelStats
}

type pendingJob struct {
	j    sched.Job
	t    int64 // Enqueue time, sched.Nanotime
	done bool  // Done was called (finishEarly): never call it again
}

// Points at which testHook is called.
const (
	hookPlan     = "plan"
	hookComplete = "complete"
)

// ErrExecutorPanic is wrapped by the error of a task that failed because
// the executor panicked while handling it: a bug in package gpu (or in a
// driver call it made) rather than in the task. The executor recovers on
// every goroutine it runs on (the submitter, the completion goroutine, and
// the caller's in Enqueue's inline submission), fails the tasks involved
// with an error naming the kernel and holding the panic's stack, and goes
// on with the next tasks.
var ErrExecutorPanic = errors.New("gpu: executor panicked")

// slot is one command buffer's worth of resources and bookkeeping. Between
// submission and completion it belongs to the completion goroutine;
// otherwise to the submitter. Its slices are reused, so the hot path
// allocates nothing in steady state.
type slot struct {
	pool  vk.CommandPool
	cb    vk.CommandBuffer
	fence vk.Fence
	dpool vk.DescriptorPool
	qpool vk.QueryPool
	arena *Arena
	want  uint64 // arena size wanted at the next use

	jobs      []jobRec
	copyIn    []copyOp
	copyOut   []copyOp
	regions   []bufferCopy
	readbacks []readback
	refs      []*Buffer
	access    []access
	queries   []uint64
	writes    [2 * sched.MaxStreams]descWrite
	setOut    uint64
	done      int // jobs[:done] have been handed to Job.Done (finishSlot, failRest)
	params    [8]uint32
	ev        sched.RunEvent
	submitAt  int64
	copyTS    bool // queries 2n..2n+3 time the copy phases
	upBytes   uint64
	downBytes uint64
}

type jobRec struct {
	pj         pendingJob
	kid        sched.KernelID
	pipe       *pipeline
	set        uint64
	params     [8]uint32
	begin, end uint32
	upNS       int64 // host copies into the arena
	rbNS       int64 // host copies out of the arena
	upBytes    uint64
	downBytes  uint64
	rb0, rb1   int   // sl.readbacks range
	ac0, ac1   int   // sl.access range
	start      int64 // GPU start and stop, sched.Nanotime scale
	stop       int64
}

type copyOp struct {
	src, dst vk.Buffer
	r        bufferCopy
}

type readback struct{ dst, src []byte }

// access is a use of a persistent buffer's bytes by a dispatch.
type access struct {
	id     sched.BufferID
	lo, hi uint64
	write  bool
}

// NewExecutor creates an executor on d with its submission and completion
// goroutines. Close it (Scheduler.Close does) before closing the device.
func NewExecutor(d *Device, opts ExecutorOptions) (*Executor, error) {
	// Zero means the default; a negative value is a mistake, not a
	// request for the default.
	switch {
	case opts.MaxBatch < 0:
		return nil, fmt.Errorf("gpu: ExecutorOptions.MaxBatch %d: want 0 (default 64) or more", opts.MaxBatch)
	case opts.InFlight < 0 || opts.InFlight > MaxInFlight:
		return nil, fmt.Errorf("gpu: ExecutorOptions.InFlight %d: want 0 (default 2) up to %d", opts.InFlight, MaxInFlight)
	case opts.FenceTimeout < 0:
		return nil, fmt.Errorf("gpu: ExecutorOptions.FenceTimeout %v: want 0 (default 10 s) or more", opts.FenceTimeout)
	case opts.HungAfter < 0:
		return nil, fmt.Errorf("gpu: ExecutorOptions.HungAfter %d: want 0 (default 3) or more", opts.HungAfter)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.InFlight <= 0 {
		opts.InFlight = 2
	}
	if opts.ArenaSize == 0 {
		opts.ArenaSize = 1 << 20
	}
	if opts.FenceTimeout <= 0 {
		opts.FenceTimeout = 10 * time.Second
	}
	if opts.HungAfter <= 0 {
		opts.HungAfter = 3
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	e := &Executor{
		d:        d,
		opts:     opts,
		ts:       d.lim.timestampBits > 0 && !opts.NoTimestamps && (opts.CPUTimestamps || d.sel.Chosen.Type != TypeCPU),
		wake:     make(chan struct{}, 1),
		free:     make(chan *slot, opts.InFlight),
		inflight: make(chan *slot, opts.InFlight),
	}
	d.emu.Lock()
	if d.closed {
		d.emu.Unlock()
		return nil, fmt.Errorf("%w: NewExecutor on a device that was closed (Device.Close)", ErrClosed)
	}
	d.execs[e] = struct{}{}
	d.emu.Unlock()
	for range opts.InFlight {
		sl, err := e.newSlot()
		if err != nil {
			e.destroySlots()
			d.emu.Lock()
			delete(d.execs, e)
			d.emu.Unlock()
			return nil, err
		}
		e.slots = append(e.slots, sl)
		e.free <- sl
	}
	if e.ts {
		d.clockOnce.Do(func() { d.clockOff = e.calibrate(e.slots[0]) })
	}
	e.wg.Add(2)
	go e.submitLoop()
	go e.completeLoop()
	return e, nil
}

func (e *Executor) newSlot() (*slot, error) {
	d := e.d
	sl := &slot{
		jobs:    make([]jobRec, 0, e.opts.MaxBatch),
		queries: make([]uint64, 2*e.opts.MaxBatch+4),
	}
	var err error
	if sl.pool, sl.cb, err = d.newCommandPool(); err != nil {
		return nil, err
	}
	if sl.fence, err = d.newFence(); err != nil {
		e.destroySlot(sl)
		return nil, err
	}
	n := uint32(e.opts.MaxBatch)
	dp, r := d.shim.CreateDescriptorPool(n, []vk.DescriptorPoolSize{
		{Type: vk.DescriptorTypeStorageBuffer, Count: 2 * sched.MaxStreams * n},
		{Type: vk.DescriptorTypeUniformBuffer, Count: sched.MaxStreams * n},
	})
	if err := check("vkCreateDescriptorPool", Result(r)); err != nil {
		e.destroySlot(sl)
		return nil, err
	}
	sl.dpool = dp
	if e.ts {
		qp, r := d.shim.CreateTimestampPool(2*n + 4)
		if err := check("vkCreateQueryPool", Result(r)); err != nil {
			e.destroySlot(sl)
			return nil, err
		}
		sl.qpool = qp
	}
	if sl.arena, err = d.NewArena(e.opts.ArenaSize); err != nil {
		e.destroySlot(sl)
		return nil, err
	}
	return sl, nil
}

func (e *Executor) destroySlot(sl *slot) {
	d := e.d
	if sl.arena != nil {
		sl.arena.Close()
		sl.arena = nil
	}
	d.shim.DestroyQueryPool(sl.qpool)
	d.shim.DestroyDescriptorPool(sl.dpool)
	d.shim.DestroyFence(sl.fence)
	d.shim.DestroyCommandPool(sl.pool)
	sl.qpool, sl.dpool, sl.fence, sl.pool = 0, 0, 0, 0
}

func (e *Executor) destroySlots() {
	for _, sl := range e.slots {
		e.destroySlot(sl)
	}
	e.slots = nil
}

// Device returns the executor's device.
func (e *Executor) Device() *Device { return e.d }

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
	pj := pendingJob{j: j, t: sched.Nanotime()}
	if err := e.d.Lost(); err != nil {
		e.finishEarly(&pj, err)
		return
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.finishEarly(&pj, fmt.Errorf("%w: Enqueue after the executor's Close", ErrClosed))
		return
	}
	e.submitOrQueue(pj)
}

// submitOrQueue submits pj itself when the executor is idle (see Enqueue),
// else appends it to the pending jobs and wakes the submitter unless a
// burst holds it. Called with e.mu held; returns with it released.
func (e *Executor) submitOrQueue(pj pendingJob) {
	if !e.noInline && !e.subBusy && !e.inlineBusy && e.burst == 0 && len(e.pending) == 0 && e.inlineable(pj.j) {
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
			e.inlineBusy = true
			e.mu.Unlock()
			e.inlineQ[0] = pj
			e.runBatch(sl, e.inlineQ[:], true) // consumes the one job
			e.inlineQ[0] = pendingJob{}
			e.d.qmu.Unlock()
			e.mu.Lock()
			e.inlineBusy = false
			more := len(e.pending) > 0 || e.closed
			e.mu.Unlock()
			if more {
				e.wakeSubmitter()
			}
			return
		}
		if sl != nil {
			e.free <- sl // never blocks: the slot came from there
		}
	}
	e.pending = append(e.pending, pj)
	held := e.burst > 0
	e.mu.Unlock()
	if !held {
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
		pj := e.pending[0]
		e.pending[0] = pendingJob{}
		e.pending = e.pending[:0]
		if err := e.d.Lost(); err != nil {
			// As Enqueue: after a loss, fail at once, submit nothing.
			e.mu.Unlock()
			e.finishEarly(&pj, err)
			return
		}
		e.submitOrQueue(pj)
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

// Close stops accepting jobs (later Enqueues fail at once), submits the jobs
// already enqueued, waits for every command buffer in flight, completes or
// fails each of their jobs, stops both goroutines and frees the executor's
// Vulkan objects. The scheduler calls it from Scheduler.Close. A GPU that
// never completes a command buffer delays Close by at most
// FenceTimeout*(HungAfter+1), after which the device counts as lost.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		select {
		case e.wake <- struct{}{}:
		default:
		}
		e.wg.Wait()
		if e.d.lost.Load() {
			// Command buffers may still run on a device that only
			// reported a loss (or an injected one): drain before freeing.
			e.closeErr = e.d.waitIdle()
		}
		e.destroySlots()
		e.d.emu.Lock()
		delete(e.d.execs, e)
		e.d.emu.Unlock()
	})
	return e.closeErr
}

// submitLoop is the submitter goroutine.
func (e *Executor) submitLoop() {
	defer e.wg.Done()
	defer close(e.inflight)
	var q []pendingJob
	for {
		if len(q) == 0 {
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
func (e *Executor) runBatch(sl *slot, q []pendingJob, queueHeld bool) (consumed int) {
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
	if err := check("vkResetFences/vkResetCommandPool/vkResetDescriptorPool", d.shim.slotReset(sl.fence, sl.pool, sl.dpool)); err != nil {
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
func (e *Executor) recoverBatch(sl *slot, q []pendingJob, consumed int, held bool, phase int, stage string, r any) int {
	stack := debug.Stack()
	fail := func(pj *pendingJob, what string) {
		if !pj.done {
			kid, k := pj.j.Kernel()
			e.finishEarly(pj, panicError(what+" "+stage, kid, k, r, stack))
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
		kid, k := rec.pj.j.Kernel()
		e.finishEarly(&rec.pj, panicError(stage, kid, k, r, stack))
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
func (e *Executor) planSafe(sl *slot, pj *pendingJob, stage string) (ok bool) {
	m := sl.mark()
	defer func() {
		if r := recover(); r != nil {
			sl.rollback(m)
			if !pj.done {
				kid, k := pj.j.Kernel()
				e.finishEarly(pj, panicError("planning the task "+stage, kid, k, r, debug.Stack()))
			}
			ok = true
		}
	}()
	if h := e.testHook; h != nil {
		kid, _ := pj.j.Kernel()
		h(hookPlan, kid)
	}
	return e.plan(sl, pj)
}

// slotMark is how far a slot's per-job state reached: a job that fails
// half-way through plan is rolled back to it.
type slotMark struct {
	arena                                          *Arena
	used                                           uint64
	jobs, copyIn, copyOut, readbacks, refs, access int
}

func (sl *slot) mark() slotMark {
	return slotMark{arena: sl.arena, used: sl.arena.used, jobs: len(sl.jobs), copyIn: len(sl.copyIn), copyOut: len(sl.copyOut),
		readbacks: len(sl.readbacks), refs: len(sl.refs), access: len(sl.access)}
}

// rollback drops what was added to sl since m; the references to
// persistent buffers taken since are released.
func (sl *slot) rollback(m slotMark) {
	if sl.arena == m.arena {
		sl.arena.used = m.used
	} else {
		sl.arena.Reset() // grown for this job (growArena): nothing else in it
	}
	clear(sl.jobs[m.jobs:])
	sl.jobs = sl.jobs[:m.jobs]
	sl.copyIn, sl.copyOut = sl.copyIn[:m.copyIn], sl.copyOut[:m.copyOut]
	clear(sl.readbacks[m.readbacks:])
	sl.readbacks = sl.readbacks[:m.readbacks]
	for _, b := range sl.refs[m.refs:] {
		b.release()
	}
	clear(sl.refs[m.refs:])
	sl.refs = sl.refs[:m.refs]
	sl.access = sl.access[:m.access]
}

// plan prepares one job in sl: pipeline, streams, uploads, descriptor set.
// It returns false when the job must wait for the next command buffer (the
// arena is full); a job that fails or has no work is finished here.
func (e *Executor) plan(sl *slot, pj *pendingJob) bool {
	kid, k := pj.j.Kernel()
	td := pj.j.Data()
	if td.End <= td.Begin {
		e.finishEarly(pj, nil) // nothing to dispatch
		return true
	}
	p, err := e.d.pipelineFor(k)
	if err != nil {
		e.finishEarly(pj, err)
		return true
	}
	a := sl.arena
	need := e.arenaNeed(k, td, a.align)
	if a.used+need > a.Cap() {
		if len(sl.jobs) > 0 {
			sl.want = max(sl.want, pow2(a.used+need))
			return false
		}
		if err := e.growArena(sl, pow2(max(need, a.Cap()))); err != nil {
			e.finishEarly(pj, fmt.Errorf("gpu: transient memory for %d bytes of streams: %w", need, err))
			return true
		}
	}
	m := sl.mark() // for rolling back a job that fails half-way
	rec := jobRec{pj: *pj, kid: kid, pipe: p, params: td.Params, begin: td.Begin, end: td.End, rb0: m.readbacks, ac0: m.access}
	nw := 0
	for i := range k.In {
		if sl.writes[nw], err = e.bindStream(sl, k, td, false, i, p.uniform[i], &rec); err != nil {
			break
		}
		nw++
	}
	for i := 0; err == nil && i < len(k.Out); i++ {
		if sl.writes[nw], err = e.bindStream(sl, k, td, true, i, false, &rec); err != nil {
			break
		}
		nw++
	}
	if err == nil {
		err = check("vkAllocateDescriptorSets", e.d.shim.set(sl.dpool, p.setLayout, sl.writes[:nw], &sl.setOut))
	}
	if err != nil {
		sl.rollback(m)
		e.finishEarly(pj, err)
		return true
	}
	rec.set = sl.setOut
	rec.rb1, rec.ac1 = len(sl.readbacks), len(sl.access)
	sl.jobs = append(sl.jobs, rec)
	return true
}

// streamSpan returns the bytes [lo, hi) of a stream that work items
// [Begin, End) use, and the stream's total size.
func streamSpan(k *sched.Kernel, td *sched.TaskData, out bool, i int) (lo, hi, total uint64) {
	// Inputs and outputs are counted apart: index only the side that
	// stream i belongs to (a kernel may have more outputs than inputs).
	var s *sched.Stream
	var spec sched.StreamSpec
	if out {
		s, spec = &td.Out[i], k.Out[i]
	} else {
		s, spec = &td.In[i], k.In[i]
	}
	total = uint64(s.Count) * uint64(s.Stride)
	if spec.Rate == sched.Whole || k.Kind == sched.Simple {
		return 0, total, total
	}
	f := uint64(1)
	if (!out && k.Kind == sched.Reduce) || (out && k.Kind == sched.Expand) {
		f = uint64(k.Factor)
	}
	hi = min(uint64(td.End)*f*uint64(s.Stride), total)
	lo = min(uint64(td.Begin)*f*uint64(s.Stride), hi)
	return lo, hi, total
}

// arenaNeed bounds the arena bytes a job's streams take (see Arena.window).
func (e *Executor) arenaNeed(k *sched.Kernel, td *sched.TaskData, align uint64) uint64 {
	var sum, maxLo uint64
	add := func(s *sched.Stream, out bool, i int) {
		lo, hi, _ := streamSpan(k, td, out, i)
		if hi == 0 || (s.Buffer != 0 && len(s.Bytes) == 0) {
			return
		}
		sum += hi - lo + align
		if s.Buffer == 0 {
			maxLo = max(maxLo, lo)
		}
	}
	for i := range k.In {
		add(&td.In[i], false, i)
	}
	for i := range k.Out {
		add(&td.Out[i], true, i)
	}
	return sum + maxLo
}

func pow2(n uint64) uint64 {
	p := uint64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// growArena replaces sl's arena by one of size bytes (sl is idle).
func (e *Executor) growArena(sl *slot, size uint64) error {
	a, err := e.d.NewArena(size)
	if err != nil {
		return err
	}
	sl.arena.Close()
	sl.arena = a
	return nil
}

// bindStream resolves input or output stream i of a job to a descriptor,
// uploading host bytes into the arena and queueing the copies and
// read-backs it needs.
func (e *Executor) bindStream(sl *slot, k *sched.Kernel, td *sched.TaskData, out bool, i int, uniform bool, rec *jobRec) (descWrite, error) {
	d := e.d
	var s *sched.Stream
	var name, dir string
	var bind uint32
	if out {
		s, name, bind, dir = &td.Out[i], k.Out[i].Name, uint32(FirstOutBinding+i), "output"
	} else {
		s, name, bind, dir = &td.In[i], k.In[i].Name, uint32(FirstInBinding+i), "input"
	}
	w := descWrite{Bind: bind, Type: uint32(vk.DescriptorTypeStorageBuffer)}
	maxRange, align, what := d.lim.maxStorageRange, d.lim.storageAlign, "maxStorageBufferRange"
	if uniform {
		w.Type = uint32(vk.DescriptorTypeUniformBuffer)
		maxRange, align, what = d.lim.maxUniformRange, d.lim.uniformAlign, "maxUniformBufferRange"
	}
	lo, hi, total := streamSpan(k, td, out, i)
	if hi == 0 {
		// An absent or empty stream: bind the device's dummy buffer.
		w.Buffer, w.Range = d.dummy.blk.buf, d.dummy.blk.size
		return w, nil
	}
	a := sl.arena
	if s.Buffer == 0 {
		if hi > maxRange {
			return w, fmt.Errorf("%w: %s stream %d (%s): binding %d bytes exceeds the device's %s of %d bytes", ErrBadStream, dir, i, name, hi, what, maxRange)
		}
		base, ok := a.window(lo, hi)
		if !ok {
			return w, fmt.Errorf("%w: %s stream %d (%s): transient arena overflow", ErrOutOfMemory, dir, i, name)
		}
		w.Buffer, w.Offset, w.Range = a.dev.buf, base, hi
		r := bufferCopy{Src: base + lo, Dst: base + lo, Size: hi - lo}
		if out {
			if a.Staged() {
				sl.copyOut = append(sl.copyOut, copyOp{a.dev.buf, a.host.buf, r})
			}
			sl.readbacks = append(sl.readbacks, readback{dst: s.Bytes[lo:hi], src: a.host.mapped[base+lo : base+hi]})
			rec.downBytes += hi - lo
		} else {
			t0 := sched.Nanotime()
			copy(a.host.mapped[base+lo:base+hi], s.Bytes[lo:hi])
			rec.upNS += sched.Nanotime() - t0
			rec.upBytes += hi - lo
			if a.Staged() {
				sl.copyIn = append(sl.copyIn, copyOp{a.host.buf, a.dev.buf, r})
			}
		}
		return w, nil
	}
	// A GPU-resident buffer: bind it in place.
	b, err := d.lookupBuffer(s.Buffer)
	if err != nil {
		return w, fmt.Errorf("%s stream %d (%s): %w", dir, i, name, err)
	}
	sl.refs = append(sl.refs, b)
	size := b.blk.size
	switch {
	case s.Offset%align != 0:
		return w, fmt.Errorf("%w: %s stream %d (%s): offset %d in buffer %d is not a multiple of the device's binding alignment %d", ErrBadStream, dir, i, name, s.Offset, s.Buffer, align)
	case s.Offset > size || total > size-s.Offset:
		return w, fmt.Errorf("%w: %s stream %d (%s): bytes [%d, %d) lie outside buffer %d of %d bytes", ErrBadStream, dir, i, name, s.Offset, s.Offset+total, s.Buffer, size)
	case total > maxRange:
		return w, fmt.Errorf("%w: %s stream %d (%s): binding %d bytes exceeds the device's %s of %d bytes", ErrBadStream, dir, i, name, total, what, maxRange)
	}
	w.Buffer, w.Offset, w.Range = b.blk.buf, s.Offset, total
	sl.access = append(sl.access, access{id: s.Buffer, lo: s.Offset + lo, hi: s.Offset + hi, write: out})
	inPlace := b.blk.mapped != nil && len(s.Bytes) > 0 && s.Offset < uint64(len(b.blk.mapped)) && &s.Bytes[0] == &b.blk.mapped[s.Offset]
	if len(s.Bytes) == 0 || hi == lo || inPlace {
		return w, nil
	}
	// A host mirror: inputs are copied into the buffer before the
	// dispatch, outputs copied back to the host after it.
	base, ok := a.window(0, hi-lo)
	if !ok {
		return w, fmt.Errorf("%w: %s stream %d (%s): transient arena overflow", ErrOutOfMemory, dir, i, name)
	}
	if out {
		sl.copyOut = append(sl.copyOut, copyOp{b.blk.buf, a.host.buf, bufferCopy{Src: s.Offset + lo, Dst: base, Size: hi - lo}})
		sl.readbacks = append(sl.readbacks, readback{dst: s.Bytes[lo:hi], src: a.host.mapped[base : base+hi-lo]})
		rec.downBytes += hi - lo
	} else {
		t0 := sched.Nanotime()
		copy(a.host.mapped[base:base+hi-lo], s.Bytes[lo:hi])
		rec.upNS += sched.Nanotime() - t0
		rec.upBytes += hi - lo
		sl.copyIn = append(sl.copyIn, copyOp{a.host.buf, b.blk.buf, bufferCopy{Src: base, Dst: s.Offset + lo, Size: hi - lo}})
	}
	return w, nil
}

// Pipeline stages and access masks used by record.
const (
	stCompute  = vk.PipelineStageComputeShaderBit
	stTransfer = vk.PipelineStageTransferBit
	stHost     = vk.PipelineStageHostBit
	acSRead    = vk.AccessShaderReadBit
	acSWrite   = vk.AccessShaderWriteBit
	acURead    = vk.AccessUniformReadBit
	acTRead    = vk.AccessTransferReadBit
	acTWrite   = vk.AccessTransferWriteBit
	acHRead    = vk.AccessHostReadBit
)

// record records sl's jobs:
//
//	reset queries
//	barrier   (earlier command buffers' writes of persistent buffers)
//	copy-in   (staging -> device, host mirror -> persistent buffer)
//	barrier   transfer -> compute
//	dispatch  per job, timestamps around it; a barrier before a job
//	          whose persistent-buffer bytes overlap an earlier job's write
//	barrier   compute -> transfer; copy-out (device -> staging)
//	barrier   -> host reads
func (e *Executor) record(sl *slot) error {
	s, cb := e.d.shim, sl.cb
	if err := check("vkBeginCommandBuffer", s.begin(cb)); err != nil {
		return err
	}
	if ev := e.d.stallEvent(); ev != 0 {
		s.waitEvent(cb, ev) // FaultStall
	}
	n := uint32(len(sl.jobs))
	sl.copyTS = e.ts && len(sl.copyIn)+len(sl.copyOut) > 0
	if e.ts {
		nq := 2 * n
		if sl.copyTS {
			nq += 4
		}
		s.resetQueries(cb, sl.qpool, 0, nq)
	}
	if len(sl.refs) > 0 {
		s.barrier(cb, stCompute|stTransfer, stCompute|stTransfer, acSWrite|acTWrite, acSRead|acSWrite|acURead|acTRead|acTWrite)
	}
	if sl.copyTS {
		s.timestamp(cb, e.d.tsEnd, sl.qpool, 2*n)
	}
	if len(sl.copyIn) > 0 {
		sl.upBytes = e.emitCopies(sl, sl.copyIn)
		s.barrier(cb, stTransfer, stCompute, acTWrite, acSRead|acURead|acSWrite)
	}
	if sl.copyTS {
		s.timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+1)
	}
	since := 0
	for i := range sl.jobs {
		r := &sl.jobs[i]
		if hazard(sl.access[since:r.ac0], sl.access[r.ac0:r.ac1]) {
			s.barrier(cb, stCompute, stCompute, acSWrite, acSRead|acSWrite|acURead)
			since = r.ac0
		}
		q := int32(-1)
		if e.ts {
			q = int32(2 * i)
		}
		sl.params = r.params
		s.dispatch(cb, r.pipe.pipe, r.pipe.layout, r.set, &sl.params, r.begin, r.end, r.pipe.itemsPerGroup,
			e.d.lim.maxGroupCount, sl.qpool, q, e.d.tsBegin, e.d.tsEnd)
	}
	if sl.copyTS {
		s.timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+2)
	}
	if len(sl.copyOut) > 0 {
		s.barrier(cb, stCompute, stTransfer, acSWrite, acTRead)
		sl.downBytes = e.emitCopies(sl, sl.copyOut)
	}
	if sl.copyTS {
		s.timestamp(cb, e.d.tsEnd, sl.qpool, 2*n+3)
	}
	s.barrier(cb, stCompute|stTransfer, stHost, acSWrite|acTWrite, acHRead)
	r := s.end(cb)
	if r == ErrorValidationFailedEXT {
		// The layer reported an error on this thread since slotReset: the
		// command buffer is not submitted (see shim.go).
		if n, msg := captured(); n > 0 {
			return fmt.Errorf("%w: %d error message(s) while recording the command buffer of %d tasks; the first: %s", ErrValidation, n, len(sl.jobs), msg)
		}
	}
	return check("vkEndCommandBuffer", r)
}

// hazard reports whether any access of cur overlaps one of prev with at
// least one of the two writing.
func hazard(prev, cur []access) bool {
	for _, c := range cur {
		for _, p := range prev {
			if p.id == c.id && p.lo < c.hi && c.lo < p.hi && (p.write || c.write) {
				return true
			}
		}
	}
	return false
}

// emitCopies records ops, one vkCmdCopyBuffer per run of equal (src, dst),
// and returns the bytes copied.
func (e *Executor) emitCopies(sl *slot, ops []copyOp) uint64 {
	var total uint64
	for i := 0; i < len(ops); {
		j := i
		sl.regions = sl.regions[:0]
		for ; j < len(ops) && ops[j].src == ops[i].src && ops[j].dst == ops[i].dst; j++ {
			sl.regions = append(sl.regions, ops[j].r)
			total += ops[j].r.Size
		}
		e.d.shim.copy(sl.cb, ops[i].src, ops[i].dst, sl.regions)
		i = j
	}
	return total
}

// completeLoop is the completion goroutine: it waits for each submitted
// command buffer's fence in order, blocking in vkWaitForFences.
func (e *Executor) completeLoop() {
	defer e.wg.Done()
	for sl := range e.inflight {
		e.completeSafe(sl)
	}
}

// completeSafe is complete with a panic recovered: the jobs of sl not yet
// handed to Done fail with ErrExecutorPanic (a panic after all of them
// were is kept as an error message of the device, Device.Messages). The
// slot is reused once its fence shows that the GPU is done with it;
// otherwise the device is marked lost, since a command buffer the
// executor can neither wait for nor reuse would leave it a slot short for
// good.
func (e *Executor) completeSafe(sl *slot) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		stack := debug.Stack()
		stage := fmt.Sprintf("completing a command buffer of %d tasks on the completion goroutine", len(sl.jobs))
		if sl.done < len(sl.jobs) {
			e.failRest(sl, stage, r, stack)
		} else {
			e.d.log.add(Message{Severity: SeverityError, Layer: "vkjobs",
				Text: fmt.Sprintf("%v %s, after its tasks completed: %v\n%s", ErrExecutorPanic, stage, r, stack)})
		}
		d := e.d
		if res := d.shim.wait(sl.fence, uint64(e.opts.FenceTimeout)); res != Success {
			d.markLost(fmt.Errorf("%w: %w %s: %v; its fence then gave %w", ErrDeviceLost, ErrExecutorPanic, stage, r, check("vkWaitForFences", res)))
			return
		}
		releaseRefs(sl)
		e.clearSlot(sl)
		e.free <- sl
	}()
	e.complete(sl)
}

func (e *Executor) complete(sl *slot) {
	d := e.d
	if err := d.Lost(); err != nil {
		// Fail fast; the command buffer may still run, so the slot is
		// not reused (Close drains the queue before freeing it).
		e.finishSlot(sl, err, 0)
		return
	}
	timeout := uint64(e.opts.FenceTimeout)
	r := d.shim.wait(sl.fence, timeout)
	if r == Timeout {
		err := fmt.Errorf("%w: command buffer of %d tasks not complete after %v (%w)", ErrTimeout, len(sl.jobs), e.opts.FenceTimeout, check("vkWaitForFences", r))
		e.finishSlot(sl, err, 0)
		for k := 0; k < e.opts.HungAfter && r == Timeout; k++ {
			r = d.shim.wait(sl.fence, timeout)
		}
		switch r {
		case Success:
			releaseRefs(sl) // late, but complete: reuse it
			e.free <- sl
		case Timeout:
			d.markLost(fmt.Errorf("%w: queue hung: a fence stayed unsignalled for %v", ErrDeviceLost, time.Duration(e.opts.HungAfter+1)*e.opts.FenceTimeout))
		default:
			d.markLost(check("vkWaitForFences", r))
		}
		return
	}
	if r != Success {
		err := check("vkWaitForFences", r)
		d.markLost(err)
		e.finishSlot(sl, d.Lost(), 0)
		return
	}
	e.finishSlot(sl, nil, sched.Nanotime())
	releaseRefs(sl)
	e.free <- sl
}

// finishSlot completes (err == nil) or fails every job of sl and reports
// them to the observer and the statistics. Outputs are copied back and
// the jobs completed first; timestamps are read and reported after that,
// off the critical path (vkGetQueryPoolResults costs microseconds). The
// buffer references stay until releaseRefs: the GPU may still use them
// after a failure.
func (e *Executor) finishSlot(sl *slot, err error, doneAt int64) {
	if len(sl.jobs) == 0 {
		e.clearSlot(sl)
		return
	}
	if h := e.testHook; h != nil {
		for i := range sl.jobs {
			h(hookComplete, sl.jobs[i].kid)
		}
	}
	if err == nil {
		for i := range sl.jobs {
			r := &sl.jobs[i]
			if r.rb1 > r.rb0 {
				t0 := sched.Nanotime()
				for _, rb := range sl.readbacks[r.rb0:r.rb1] {
					copy(rb.dst, rb.src)
				}
				r.rbNS = sched.Nanotime() - t0
			}
		}
	}
	e.account(sl, err)
	// Job.ID and Job.Scheduler stay valid after Done; Job.Data does not.
	for i := range sl.jobs {
		sl.done = i + 1 // before Done: a job is never handed to it twice
		sl.jobs[i].pj.j.Done(err)
	}
	if err == nil {
		var copyUp, copyDown int64
		e.times(sl, max(doneAt, sl.submitAt), &copyUp, &copyDown)
		e.accountTimes(sl, copyUp, copyDown)
	} else {
		now := sched.Nanotime()
		for i := range sl.jobs {
			sl.jobs[i].start, sl.jobs[i].stop = sl.submitAt, now
		}
	}
	for i := range sl.jobs {
		r := &sl.jobs[i]
		j := r.pj.j
		if obs := j.Scheduler().Observer(); obs != nil {
			sl.ev = sched.RunEvent{Thread: -1, Where: sched.GPU, Task: j.ID(), Kernel: r.kid,
				Begin: r.begin, End: r.end, Start: r.start, Stop: r.stop, Err: err}
			e.observe(obs, &sl.ev)
		}
	}
	e.clearSlot(sl)
}

// times sets each job's start and stop (sched.Nanotime scale) from the
// timestamps, or from submission and completion times without them, and the
// GPU time of the copy phases.
func (e *Executor) times(sl *slot, doneAt int64, copyUp, copyDown *int64) {
	n := len(sl.jobs)
	nq := 2 * n
	if sl.copyTS {
		nq += 4
	}
	if !e.ts || e.d.shim.queries(sl.qpool, 0, uint32(nq), sl.queries) != Success {
		// No timestamps: spread the batch's wall time evenly.
		per := (doneAt - sl.submitAt) / int64(n)
		for i := range sl.jobs {
			sl.jobs[i].start = sl.submitAt + int64(i)*per
			sl.jobs[i].stop = sl.jobs[i].start + per
		}
		return
	}
	conv := e.d.batchClock(sl.queries[0], sl.submitAt).at
	first, last := conv(sl.queries[0]), conv(sl.queries[2*n-1])
	// The batch ran between submission and completion: shift the
	// calibrated clock if it drifted outside.
	var shift int64
	if first < sl.submitAt {
		shift = sl.submitAt - first
	} else if last > doneAt {
		shift = doneAt - last
	}
	for i := range sl.jobs {
		sl.jobs[i].start = conv(sl.queries[2*i]) + shift
		sl.jobs[i].stop = max(conv(sl.queries[2*i+1])+shift, sl.jobs[i].start)
	}
	if sl.copyTS {
		*copyUp = max(conv(sl.queries[2*n+1])-conv(sl.queries[2*n]), 0)
		*copyDown = max(conv(sl.queries[2*n+3])-conv(sl.queries[2*n+2]), 0)
	}
}

// batchClock returns the conversion of a batch's raw timestamps to
// sched.Nanotime. A counter of fewer than 64 valid bits wraps (36 bits at
// a 52 ns period is about an hour), so the batch's first stamp t0 is
// placed by the calibration at the wrap period nearest to the batch's
// submission, and every other stamp by its distance from t0 modulo the
// counter's width: times stay right across a wrap, however long the run.
func (d *Device) batchClock(t0 uint64, submitAt int64) stampConv {
	return stampClock(t0, submitAt, d.lim.timestampBits, d.lim.timestampPeriod, d.clockOff)
}

// stampConv converts a batch's raw timestamps (a value, not a closure, so
// that reading a batch's times allocates nothing).
type stampConv struct {
	t0, mask uint64
	base     int64
	period   float64
}

func (c stampConv) ns(ticks uint64) int64 {
	if c.period == 1 {
		return int64(ticks)
	}
	return int64(float64(ticks) * c.period)
}

// at converts the raw timestamp t to sched.Nanotime.
func (c stampConv) at(t uint64) int64 { return c.base + c.ns((t-c.t0)&c.mask) }

func stampClock(t0 uint64, submitAt int64, bits uint32, period float64, clockOff int64) stampConv {
	c := stampConv{t0: t0, mask: ^uint64(0), period: period}
	if bits > 0 && bits < 64 {
		c.mask = 1<<bits - 1
	}
	c.base = c.ns(t0&c.mask) + clockOff
	if c.mask != ^uint64(0) {
		if wrap := float64(c.mask+1) * period; wrap < 1<<62 {
			c.base += int64(math.Round(float64(submitAt-c.base)/wrap) * wrap)
		}
	}
	return c
}

// gpuToHost converts a raw timestamp to sched.Nanotime.
func (d *Device) gpuToHost(t uint64) int64 {
	if b := d.lim.timestampBits; b < 64 {
		t &= 1<<b - 1
	}
	if d.lim.timestampPeriod == 1 {
		return int64(t) + d.clockOff
	}
	return int64(float64(t)*d.lim.timestampPeriod) + d.clockOff
}

// calibrate estimates the offset between the GPU clock and sched.Nanotime
// by writing one timestamp between two host readings, a few times, and
// keeping the tightest bracket.
func (e *Executor) calibrate(sl *slot) int64 {
	d, s := e.d, e.d.shim
	best, off := int64(-1), int64(0)
	for range 5 {
		if s.slotReset(sl.fence, sl.pool, 0) != Success || s.begin(sl.cb) != Success {
			break
		}
		s.resetQueries(sl.cb, sl.qpool, 0, 1)
		s.timestamp(sl.cb, e.d.tsEnd, sl.qpool, 0)
		if s.end(sl.cb) != Success {
			break
		}
		h0 := sched.Nanotime()
		if d.submit(sl.cb, sl.fence) != nil || s.wait(sl.fence, uint64(e.opts.FenceTimeout)) != Success {
			break
		}
		h1 := sched.Nanotime()
		if s.queries(sl.qpool, 0, 1, sl.queries) != Success {
			break
		}
		d.clockOff = 0
		g := d.gpuToHost(sl.queries[0])
		if best < 0 || h1-h0 < best {
			best, off = h1-h0, (h0+h1)/2-g
		}
	}
	return off
}

// releaseRefs drops sl's references to persistent buffers, once the GPU
// is done with them.
func releaseRefs(sl *slot) {
	for _, b := range sl.refs {
		b.release()
	}
	clear(sl.refs)
	sl.refs = sl.refs[:0]
}

// clearSlot drops sl's per-job state (not the buffer references).
func (e *Executor) clearSlot(sl *slot) {
	clear(sl.jobs) // drop Job references
	sl.jobs = sl.jobs[:0]
	clear(sl.readbacks) // drop references to host memory
	sl.readbacks = sl.readbacks[:0]
	sl.copyIn, sl.copyOut, sl.access = sl.copyIn[:0], sl.copyOut[:0], sl.access[:0]
	sl.upBytes, sl.downBytes = 0, 0
	sl.done = 0
}

// observe reports ev to the scheduler's Observer. A panic in the Observer
// (the user's code, called here on the executor's goroutines) is kept as
// an error message of the device (Device.Messages) instead of ending the
// process or the executor; the task's outcome stands.
func (e *Executor) observe(obs sched.Observer, ev *sched.RunEvent) {
	defer func() {
		if r := recover(); r != nil {
			e.d.log.add(Message{Severity: SeverityError, Layer: "vkjobs",
				Text: fmt.Sprintf("sched.Observer panicked on the GPU run of task %v (kernel %d): %v", ev.Task, ev.Kernel, r)})
		}
	}()
	obs.TaskRan(ev)
}

// finishEarly completes a job that never went out in a command buffer, or
// (failRest) one of a command buffer whose completion panicked.
func (e *Executor) finishEarly(pj *pendingJob, err error) {
	j := pj.j
	kid, _ := j.Kernel()
	now := sched.Nanotime()
	td := j.Data()
	e.smu.Lock()
	ks := e.kernel(kid)
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
	pj.done = true // before Done: a job is never handed to it twice
	j.Done(err)
}
