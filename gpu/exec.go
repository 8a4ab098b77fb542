package gpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkjobs/vkjobs/gpu/bind"
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
	// FenceTimeout bounds each wait for a command buffer (default 10 s; 60
	// s on a CPU device such as lavapipe, which compiles a shader when it
	// first dispatches it, on the program's own cores: seconds for a large
	// shader, more on a loaded machine, and slow is not hung). When it
	// expires the command buffer's tasks fail with ErrTimeout; the
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
	ts   bool        // timestamps in use
	bdev bind.Device // what a kernel's bind.Binding.Admit is told (admit.go)

	// mu guards the submission state: pending, closed, subBusy,
	// inlineBusy, burst (the executor's states, at the head of submit.go).
	mu      sync.Mutex
	pending []job // enqueued jobs the submitter has not taken
	closed  bool
	wake    chan struct{}
	// subBusy: the submitter holds jobs (it took pending ones and has not
	// finished submitting them); inlineBusy: an Enqueue is submitting its
	// job itself (states submitting and inline).
	subBusy, inlineBusy bool
	// burst counts the scheduler's open BeginBursts: while it
	// is above zero, Enqueue neither submits inline nor wakes the
	// submitter, and an idle submitter stays asleep, so that the jobs one
	// finished task releases go out together (see BeginBurst).
	burst    int
	inlineQ  [1]job // the inline job (one at a time; owned while inlineBusy)
	noInline bool   // tests: always hand off to the submitter
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
	// leftover: Close gave up waiting for a hung queue and left the
	// executor's Vulkan objects, which the GPU may still use, for
	// Device.Close to free once the queue is idle (freeLeftover).
	leftover bool

	// Graph segments (segment.go), under e.mu: segs are those not yet
	// destroyed; segQ those submitted, in order, for segmentLoop; segSub
	// counts runs between their check of closed and their place in segQ
	// (segmentLoop returns only when it is zero); segLoop: the goroutine
	// was started.
	segs    map[*segment]struct{}
	segQ    []*segment
	segSub  int
	segLoop bool
	segWake chan struct{}

	submits atomic.Uint64
	records atomic.Uint64 // command buffers recorded (vkBeginCommandBuffer)
	replays atomic.Uint64 // segment runs submitted without recording
	inline  atomic.Uint64 // jobs submitted inline (runBatch with queueHeld)
	smu     sync.Mutex
	st      ExecStats
	kst     []KernelStats
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
// otherwise to the submitter. A graph segment's slot (seg != nil) is the
// segment's own, never in e.free or e.inflight: it belongs to the run that
// holds the segment (segment.go). Its slices are reused, so the hot path
// allocates nothing in steady state.
type slot struct {
	ts      bool     // timestamps recorded (the executor's ts; never for a segment)
	seg     *segment // the graph segment whose recording this is, or nil
	stalled bool     // the recording waits for FaultStall's event (a segment records again)
	pool    vk.CommandPool
	cb      vk.CommandBuffer
	fence   vk.Fence
	dpool   vk.DescriptorPool
	qpool   vk.QueryPool
	arena   *Arena
	want    uint64 // arena size wanted at the next use

	jobs      []plannedJob
	copyIn    []copyOp
	copyOut   []copyOp
	regions   []vk.BufferCopy
	readbacks []readback
	refs      []*Buffer
	access    []access
	queries   []uint64
	writes    [2 * sched.MaxStreams]vk.DescWrite
	setOut    uint64
	done      int // jobs[:done] have been handed to Job.Done (finishSlot, failRest)
	params    [8]uint32
	ev        sched.RunEvent
	submitAt  int64
	copyTS    bool // queries 2n..2n+3 time the copy phases
	upBytes   uint64
	downBytes uint64
}

// Default fence time-outs (ExecutorOptions.FenceTimeout).
const (
	defaultFenceTimeout    = 10 * time.Second
	defaultCPUFenceTimeout = 60 * time.Second
)

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
		return nil, fmt.Errorf("gpu: ExecutorOptions.FenceTimeout %v: want 0 (the default) or more", opts.FenceTimeout)
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
	if opts.HungAfter <= 0 {
		opts.HungAfter = 3
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	if opts.FenceTimeout <= 0 {
		opts.FenceTimeout = defaultFenceTimeout
		if d.Limits().CPU {
			opts.FenceTimeout = defaultCPUFenceTimeout
		}
	}
	e := &Executor{
		d:        d,
		opts:     opts,
		ts:       d.lim.timestampBits > 0 && !opts.NoTimestamps && (opts.CPUTimestamps || d.sel.Chosen.Type != TypeCPU),
		wake:     make(chan struct{}, 1),
		segWake:  make(chan struct{}, 1),
		free:     make(chan *slot, opts.InFlight),
		inflight: make(chan *slot, opts.InFlight),
		bdev:     bind.Device{Name: d.Name(), LoopBudget: d.LoopBudget()},
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

// newSlot creates a batch's slot: room for MaxBatch jobs, an arena.
func (e *Executor) newSlot() (*slot, error) {
	return e.makeSlot(e.opts.MaxBatch, e.ts, e.opts.ArenaSize)
}

// makeSlot creates a slot for nJobs jobs (timestamps if ts); arena 0:
// no arena yet.
func (e *Executor) makeSlot(nJobs int, ts bool, arena uint64) (*slot, error) {
	d := e.d
	sl := &slot{ts: ts, jobs: make([]plannedJob, 0, nJobs)}
	if ts {
		sl.queries = make([]uint64, 2*nJobs+4)
	}
	var err error
	if sl.pool, sl.cb, err = d.newCommandPool(); err != nil {
		return nil, err
	}
	if sl.fence, err = d.newFence(); err != nil {
		e.destroySlot(sl)
		return nil, err
	}
	n := uint32(nJobs)
	dp, r := d.shim.CreateDescriptorPool(n, []vk.DescriptorPoolSize{
		{Type: vk.DescriptorTypeStorageBuffer, Count: 2 * sched.MaxStreams * n},
		{Type: vk.DescriptorTypeUniformBuffer, Count: sched.MaxStreams * n},
	})
	if err := check("vkCreateDescriptorPool", Result(r)); err != nil {
		e.destroySlot(sl)
		return nil, err
	}
	sl.dpool = dp
	if ts {
		qp, r := d.shim.CreateTimestampPool(2*n + 4)
		if err := check("vkCreateQueryPool", Result(r)); err != nil {
			e.destroySlot(sl)
			return nil, err
		}
		sl.qpool = qp
	}
	if arena > 0 {
		if sl.arena, err = d.NewArena(arena); err != nil {
			e.destroySlot(sl)
			return nil, err
		}
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

// Close stops accepting jobs (later Enqueues fail at once), submits the jobs
// already enqueued, waits for every command buffer in flight, completes or
// fails each of their jobs, stops its goroutines and frees the executor's
// Vulkan objects, graph segments included (a graph's later run fails its
// GPU nodes with ErrClosed). The scheduler calls it from Scheduler.Close. A GPU that
// never completes a command buffer delays Close by at most
// FenceTimeout*(HungAfter+1), after which the device counts as lost, and
// then by at most that again: Vulkan cannot abort a dispatch, so a
// command buffer still running then is left to run, Close returns an
// error wrapping ErrTimeout, and the objects it uses are freed by
// Device.Close, which waits for the queue to finish.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		select {
		case e.wake <- struct{}{}:
		default:
		}
		e.wakeSegments()
		e.wg.Wait()
		if e.d.lost.Load() {
			// Command buffers may still run on a device that only
			// reported a loss (or an injected one, or a queue declared
			// hung): drain before freeing, for a bounded time.
			bound := time.Duration(e.opts.HungAfter+1) * e.opts.FenceTimeout
			idle := make(chan error, 1)
			go func() { idle <- e.d.waitIdle() }()
			t := time.NewTimer(bound)
			select {
			case e.closeErr = <-idle:
				t.Stop()
			case <-t.C:
				e.leftover = true
				e.closeErr = fmt.Errorf("%w: Executor.Close: the device is lost and its queue still runs a command buffer after %v more; the executor's objects are left for Device.Close, which waits for the queue", ErrTimeout, bound)
				return
			}
		}
		e.destroySlots()
		e.destroySegments()
		e.d.emu.Lock()
		delete(e.d.execs, e)
		e.d.emu.Unlock()
	})
	return e.closeErr
}

// freeLeftover frees what Close left to a hung queue (see leftover);
// Device.Close calls it once the queue is idle.
func (e *Executor) freeLeftover() {
	if !e.leftover {
		return
	}
	e.leftover = false
	e.destroySlots()
	e.destroySegments()
	e.d.emu.Lock()
	delete(e.d.execs, e)
	e.d.emu.Unlock()
}
