package sched

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Config configures a Scheduler. The zero value gives sensible defaults.
type Config struct {
	// MainThreads is how many threads created elsewhere (main, render...)
	// will register with RegisterThread. Default 1.
	MainThreads int
	// Workers is the number of worker goroutines. Default: the number of
	// usable CPUs (GOMAXPROCS) minus MainThreads, at least 1, so the
	// scheduler neither over- nor under-subscribes the machine.
	Workers int
	// PoolSize is the number of task slots (rounded up to a power of two,
	// default 16384; at most MaxPoolSize). When every slot is in use, Add
	// applies back-pressure: the caller helps run work (or sleeps) until a
	// slot frees. If nothing can run and nothing but the caller could free
	// a slot (the pool holds held tasks and what waits for them), Add fails
	// with ErrPoolDeadlock instead.
	PoolSize int
	// DequeSize is each thread's deque capacity per priority level (power
	// of two, default PoolSize up to maxDefaultDeque). Overflow goes to the
	// shared queue. A deque as large as the pool never overflows: with
	// 1024, a thread that added faster than the others took its tasks
	// spilled into the shared queue, whose lock the adder and every
	// thief then took once per task: a slow mode (2-3x per empty task)
	// that lasted as long as the adder stayed ahead.
	DequeSize int
	// Kernels is the kernel registry; default a new one with KernelNone.
	Kernels *Registry
	// Placer decides where Auto tasks run; nil runs them on CPU workers.
	Placer Placer
	// Observer, when set, is told about every kernel invocation (profiling,
	// learned placement). Nil costs nothing.
	Observer Observer
	// SpinRounds is how many rounds an idle thread looks for work before it
	// sleeps (default 2048, some tens of microseconds). A round does not
	// yield the P (every 16th yields the CPU to other OS threads, see
	// spinPause): Gosched puts the goroutine on the global run queue and
	// wakes no idle P for it, so a worker that had just woken another
	// goroutine (queued on its own P) waited there while the other core
	// idled (runtime trace of the crowd demo). Waking a sleeping thread
	// (the runtime's M hand-off) takes much longer than a task; the spin
	// covers the gaps between dependent stages of a frame, so both cores
	// stay in the frame. The spin is bounded, then the thread sleeps: an
	// idle scheduler costs no CPU. A Wait for a task that an executor
	// holds does not spin (see Ctx.Wait). Measurements: BENCHMARKS.md,
	// section sched-design.
	SpinRounds int
	// OnWorkerStart, when set, is called on each worker goroutine before
	// it runs any task, with the worker's index (0..Workers-1). A hook that
	// calls runtime.LockOSThread keeps the worker on that OS thread for its
	// life (the thread exits with the worker at Close);
	// affinity.Pinner.OnWorkerStart pins it to a CPU. Off by default:
	// pinning goroutines that are not locked fights Go's own scheduler.
	OnWorkerStart func(index int)
	// MaxRetainedErrors bounds how many failed tasks' errors are kept for
	// Wait/Err on IDs whose slots were reused (default 65536). When more fail
	// before being collected, the oldest are dropped and counted.
	MaxRetainedErrors int
}

// Placer decides where an Auto task runs, at the moment it becomes runnable.
type Placer interface {
	// Place returns AnyWorker, GPU or SPU, and optionally split > 0: the
	// first split work items run on the returned device and the rest on
	// CPU workers (co-execution). It is called concurrently. A panic in
	// Place fails the task with ErrPlacerPanic. Place must return or
	// panic: runtime.Goexit in it (testing's FailNow or Fatal, which
	// belong in the test's goroutine only) cannot be stopped, and the
	// tasks its caller was readying are then lost.
	Place(id KernelID, k *Kernel, d *TaskData) (where Affinity, split uint32)
}

// RunEvent describes one finished kernel invocation.
type RunEvent struct {
	Thread      int // scheduler thread index; -1 for an executor
	Where       Affinity
	Task        TaskID
	Parent      TaskID
	Dependency  TaskID
	Kernel      KernelID
	Begin, End  uint32 // work items
	Start, Stop int64  // Nanotime()
	Err         error
}

// Observer receives RunEvents. It is called on the thread that ran the
// kernel, so it must be cheap and safe for concurrent use. The event is only
// valid during the call: copy what you keep.
type Observer interface {
	TaskRan(ev *RunEvent)
}

var clockBase = time.Now()

// Nanotime returns monotonic nanoseconds used in RunEvents.
func Nanotime() int64 { return int64(time.Since(clockBase)) }

// Errors reported by the scheduler. Task errors wrap them or a kernel's error.
var (
	ErrClosed       = errors.New("sched: scheduler closed")
	ErrForeignTask  = errors.New("task belongs to another scheduler")
	ErrNotIssued    = errors.New("task ID was never issued (freed or forged slot)")
	ErrSelfDepend   = errors.New("task would depend on itself")
	ErrParentDone   = errors.New("parent task already finished")
	ErrNoExecutor   = errors.New("no executor attached for affinity")
	ErrBadAffinity  = errors.New("invalid affinity")
	ErrBadPriority  = errors.New("invalid priority")
	ErrDepFailed    = errors.New("dependency failed")
	ErrChildFailed  = errors.New("child task failed")
	ErrKernelPanic  = errors.New("kernel panicked")
	ErrPlacerPanic  = errors.New("Config.Placer panicked placing the task")
	ErrAbandoned    = errors.New("task abandoned")
	ErrTimeout      = errors.New("wait timed out")
	ErrThreadsTaken = errors.New("all MainThreads are already registered")
	ErrCycle        = errors.New("dependency cycle")
	ErrDeadlock     = errors.New("wait can never return")
	ErrPoolDeadlock = errors.New("task pool full and nothing can run")
	// ErrCloseInKernel: Close would wait for the kernel that called it
	// (or, from Config.Observer's TaskRan, for the thread it runs on).
	ErrCloseInKernel = errors.New("scheduler closed from one of its kernels, which Close would wait for: call Close after the last Wait, outside kernels")
)

// TaskError is the error of a failed task: it names the task and kernel.
type TaskError struct {
	Task   TaskID
	Kernel KernelID
	Name   string
	Err    error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("%v (kernel %d %q): %v", e.Task, e.Kernel, e.Name, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

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

const (
	depsClosed    = 0xffffffff
	depsAbandoned = 0xfffffffe // Abandon released the dependents early
)

// genLoad returns the slot's generation (the high half of deps).
func (sl *slot) genLoad() uint32 { return uint32(sl.deps.Load() >> 32) }

// Executor runs tasks whose affinity is GPU or SPU. The scheduler hands it
// each such task when it becomes runnable; the executor must eventually call
// Job.Done exactly once per job, from any goroutine, including after Close
// began (with an error if it cannot run the job).
type Executor interface {
	// Enqueue must not block for long. It is called from scheduler
	// threads and from other executors' completion goroutines.
	Enqueue(j Job)
	// Close finishes or fails every job it holds; called by
	// Scheduler.Close once. Later Enqueues must fail their job at once.
	Close() error
}

// A Burster is an Executor that wants to know when the scheduler hands it
// several jobs at once: when a finished task releases two or more
// dependents, the scheduler calls BeginBurst on the executor before the
// first of them that may run there (its affinity is the executor's, or
// Auto with a Placer), readies the rest of them (Enqueue for those that
// run on the executor), then calls EndBurst (from a defer: also when
// something in between panics). The executor may hold the jobs enqueued
// in between and start them together at EndBurst: a GPU executor then
// records the burst into as few command buffers as MaxBatch allows, rather
// than racing the releasing thread one job at a time. Calls nest (a
// release inside a release) and come from any goroutine; each BeginBurst
// is followed by one EndBurst on the same goroutine. Neither may block
// for long (EndBurst may submit a job, as Enqueue may). Jobs other
// goroutines enqueue meanwhile may wait for that EndBurst.
type Burster interface {
	BeginBurst()
	EndBurst()
}

// ExecutorKind selects which affinity an executor serves.
type ExecutorKind int

const (
	ExecGPU ExecutorKind = iota
	ExecSPU
)

// Job is a runnable task handed to an Executor.
type Job struct {
	s   *Scheduler
	idx uint32
	id  TaskID
}

// ID returns the task's ID.
func (j Job) ID() TaskID { return j.id }

// Kernel returns the task's kernel ID and registration.
func (j Job) Kernel() (KernelID, *Kernel) {
	sl := &j.s.slots[j.idx]
	return sl.task.Kernel, sl.kern
}

// Data returns the task's data; valid until Done is called.
func (j Job) Data() *TaskData { return &j.s.slots[j.idx].task.Data }

// Priority returns the task's priority.
func (j Job) Priority() Priority { return j.s.slots[j.idx].task.Priority }

// Parent returns the task's parent (NoTask if none).
func (j Job) Parent() TaskID { return j.s.slots[j.idx].task.Parent }

// Dependency returns the task's dependency (NoTask if none).
func (j Job) Dependency() TaskID { return j.s.slots[j.idx].task.Dependency }

// Scheduler returns the job's scheduler.
func (j Job) Scheduler() *Scheduler { return j.s }

// Done completes the job's own work. err != nil fails the task (wrapped in
// a TaskError); dependents and the parent are released exactly as for a CPU
// task. Calling Done twice is a bug that corrupts the pool.
func (j Job) Done(err error) {
	j.s.finish(j.idx, err, nil)
	j.s.execJobs.Add(-1) // after the dependents are queued (see quiescent)
}

// Scheduler runs tasks over worker goroutines and registered threads. Create
// with New, stop with Close. All methods are safe for concurrent use unless
// their comment says otherwise.
type Scheduler struct {
	// Read-mostly fields first: set up by New, read by every Add and every
	// idle round. The groups that threads write are padded off their
	// lines and each other's: the free list's lock used to share a line
	// with the slots' slice header, which every Add reads for its bounds
	// check, so each time a worker returned slots, the next Add missed.
	// TestSchedulerLayout checks the padding.
	id       uint16 // the tag in this scheduler's TaskIDs (see TaskID)
	genBase  uint32 // every slot's first generation (see TaskID)
	closing  atomic.Bool
	stopping atomic.Bool
	// drained is set when Close found that nothing can run: from then on
	// WaitEvent returns when it finds nothing to run, signalled or not.
	drained  atomic.Bool
	cfg      Config
	reg      *Registry
	slots    []slot
	cacheCap int
	threads  []*Ctx // workers first, then registered threads
	nwork    int
	execs    [2]Executor
	bursters [2]Burster // execs[k] when it is a Burster, else nil
	_        [cacheLine]byte

	// The shared free list: written when a thread's slot cache spills or
	// refills (every cacheCap/2 tasks).
	freeMu  sync.Mutex
	freeIdx []uint32     // free slot indices (a stack; capacity PoolSize)
	nfree   atomic.Int32 // len(freeIdx), readable without the lock
	_       [cacheLine]byte

	inject [numPriorities]ring
	queued [numPriorities]atomic.Int32 // tasks queued at High and Low levels
	_      [cacheLine]byte

	execJobs atomic.Int64  // jobs handed to executors and not yet Done
	activity atomic.Uint64 // counts threads leaving the idle list
	nreg     atomic.Int32
	idleMu   sync.Mutex
	idle     []*Ctx
	nIdle    atomic.Int32
	extMu    sync.Mutex
	extCond  *sync.Cond
	extWait  atomic.Int32
	poolWait atomic.Int32
	_        [cacheLine]byte

	workersWG sync.WaitGroup
	drainMu   sync.Mutex // orders Close's last look with lateAdd
	closeOnce sync.Once
	closeErr  error

	// waitCycle's scratch, guarded by idleMu: a bit per slot and the log
	// of the walk, made on first use and reused.
	cycSeen []uint64
	cycLog  []cycVisit

	failMu   sync.Mutex
	failed   map[TaskID]*TaskError
	failFIFO []TaskID
	nFailed  atomic.Int64
	dropped  atomic.Int64
}

// tags hands out the tags of TaskIDs (see TaskID): used marks the tags of
// open schedulers; next[t] is the first generation a new holder of tag t
// starts its slots at, above every generation its holders issued; last is
// the tag given out last (tags go round, so a freed tag is reused late).
var tags struct {
	mu   sync.Mutex
	used [MaxSchedulers + 1]bool
	next [MaxSchedulers + 1]uint32
	last uint16
}

// takeTag reserves a tag and its first generation for a new scheduler.
func takeTag() (uint16, uint32, bool) {
	tags.mu.Lock()
	defer tags.mu.Unlock()
	for i := 0; i < MaxSchedulers; i++ {
		t := uint16(int(tags.last)%MaxSchedulers + 1) // 1..MaxSchedulers; 0 is NoTask's
		tags.last = t
		if !tags.used[t] {
			tags.used[t] = true
			if tags.next[t] == 0 {
				tags.next[t] = 1
			}
			return t, tags.next[t], true
		}
	}
	return 0, 0, false
}

// releaseTag frees s's tag once s issues no more IDs (end of Close): the
// next holder starts above the newest generation of s's slots.
func (s *Scheduler) releaseTag() {
	var top uint32 // highest generation above the base, in modular distance
	for i := range s.slots {
		top = max(top, s.slots[i].genLoad()-s.genBase)
	}
	tags.mu.Lock()
	// The margin covers the few generations an Add that raced with Close
	// can still use up after this (see lateAdd).
	tags.next[s.id] = s.genBase + top + 1 + 1<<16
	tags.used[s.id] = false
	tags.mu.Unlock()
}

// New creates a scheduler and starts its workers.
func New(cfg Config) (*Scheduler, error) {
	if cfg.MainThreads < 0 || cfg.Workers < 0 || cfg.PoolSize < 0 || cfg.DequeSize < 0 {
		return nil, fmt.Errorf("sched: negative value in Config %+v", cfg)
	}
	if cfg.MainThreads == 0 {
		cfg.MainThreads = 1
	}
	if cfg.Workers == 0 {
		cfg.Workers = max(1, runtime.GOMAXPROCS(0)-cfg.MainThreads)
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 16384
	}
	if cfg.PoolSize > MaxPoolSize {
		return nil, fmt.Errorf("sched: PoolSize %d exceeds %d", cfg.PoolSize, MaxPoolSize)
	}
	cfg.PoolSize = pow2(cfg.PoolSize)
	if cfg.DequeSize == 0 {
		cfg.DequeSize = min(cfg.PoolSize, maxDefaultDeque)
	}
	cfg.DequeSize = pow2(cfg.DequeSize)
	if cfg.Kernels == nil {
		cfg.Kernels = NewRegistry()
	}
	if cfg.SpinRounds == 0 {
		cfg.SpinRounds = 2048
	}
	if cfg.MaxRetainedErrors == 0 {
		cfg.MaxRetainedErrors = 65536
	}
	tag, base, ok := takeTag()
	if !ok {
		return nil, fmt.Errorf("sched: New: %d schedulers are open, the most a process can have at once (Close the ones no longer used)", MaxSchedulers)
	}
	s := &Scheduler{
		id:      tag,
		genBase: base,
		cfg:     cfg,
		reg:     cfg.Kernels,
		slots:   make([]slot, cfg.PoolSize),
		nwork:   cfg.Workers,
		failed:  make(map[TaskID]*TaskError),
	}
	s.freeIdx = make([]uint32, 0, cfg.PoolSize)
	s.extCond = sync.NewCond(&s.extMu)
	// Free list: every slot, lowest index on top.
	for i := len(s.slots) - 1; i >= 0; i-- {
		s.freeIdx = append(s.freeIdx, uint32(i))
		s.nfree.Store(int32(len(s.freeIdx)))
		s.slots[i].deps.Store(uint64(base) << 32)
	}
	for p := range s.inject {
		s.inject[p].init(cfg.PoolSize)
	}
	n := cfg.Workers + cfg.MainThreads
	s.threads = make([]*Ctx, n)
	s.idle = make([]*Ctx, 0, n) // never grows: a thread is listed at most once
	for i := range s.threads {
		c := &Ctx{s: s, index: i, worker: i < cfg.Workers, wake: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
		c.timer.Stop()
		for p := range c.dq {
			c.dq[p].init(cfg.DequeSize)
		}
		if !c.worker {
			for p := range c.pinned {
				c.pinned[p].init(cfg.PoolSize)
			}
		}
		s.threads[i] = c
	}
	s.cacheCap = min(slotCacheSize, cfg.PoolSize/(4*n))
	for i := 0; i < cfg.Workers; i++ {
		s.workersWG.Add(1)
		go s.threads[i].workerLoop()
	}
	return s, nil
}

func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Kernels returns the scheduler's kernel registry.
func (s *Scheduler) Kernels() *Registry { return s.reg }

// Workers returns the number of worker goroutines.
func (s *Scheduler) Workers() int { return s.nwork }

// Threads returns workers plus MainThreads: the threads that run CPU tasks.
func (s *Scheduler) Threads() int { return len(s.threads) }

// Observer returns the configured observer (nil if none); executors report
// their own RunEvents through it.
func (s *Scheduler) Observer() Observer { return s.cfg.Observer }

// AttachExecutor makes e run tasks of the given kind (GPU or SPU affinity).
// Attach before adding such tasks; attaching twice replaces nothing and
// returns an error.
func (s *Scheduler) AttachExecutor(kind ExecutorKind, e Executor) error {
	if kind != ExecGPU && kind != ExecSPU {
		return fmt.Errorf("sched: AttachExecutor: unknown kind %d", kind)
	}
	if s.execs[kind] != nil {
		return fmt.Errorf("sched: AttachExecutor: kind %d already attached", kind)
	}
	s.execs[kind] = e
	if b, ok := e.(Burster); ok {
		s.bursters[kind] = b
	}
	return nil
}

// HasExecutor reports whether an executor serves kind.
func (s *Scheduler) HasExecutor(kind ExecutorKind) bool { return s.execs[kind] != nil }

// RegisterThread registers the calling thread (a goroutine that will call
// the returned Ctx's methods; lock it with runtime.LockOSThread if it must
// stay on one OS thread) as one of Config.MainThreads. Tasks with affinity
// OnThread(i) run only on the i-th registered thread, when it calls Wait,
// WaitEvent or RunPinned. It fails with ErrThreadsTaken when all are
// registered and with ErrClosed once Close has begun.
func (s *Scheduler) RegisterThread(name string) (*Ctx, error) {
	if s.closing.Load() {
		return nil, fmt.Errorf("sched: RegisterThread(%q): %w", name, ErrClosed)
	}
	i := int(s.nreg.Add(1)) - 1
	if i >= s.cfg.MainThreads {
		s.nreg.Add(-1)
		return nil, fmt.Errorf("sched: RegisterThread(%q): %w (%d)", name, ErrThreadsTaken, s.cfg.MainThreads)
	}
	c := s.threads[s.nwork+i]
	c.name = name
	c.g.Store(getg())
	c.goid.Store(goid())
	return c, nil
}

// IsFinished reports whether the task completed (with or without error).
// Stale IDs (the slot was reused) report true. NoTask reports true.
func (s *Scheduler) IsFinished(id TaskID) bool {
	if id == NoTask {
		return true
	}
	idx := id.index()
	if id.sched() != s.id || int(idx) >= len(s.slots) {
		return true
	}
	h := s.slots[idx].deps.Load()
	return uint32(h>>32) != id.gen() || uint32(h) == depsAbandoned
}

// Err returns a finished task's error (nil if it succeeded or has not
// finished). Errors of stale IDs are kept up to Config.MaxRetainedErrors.
func (s *Scheduler) Err(id TaskID) error {
	if !s.IsFinished(id) || s.nFailed.Load() == 0 {
		return nil
	}
	s.failMu.Lock()
	e := s.failed[id]
	s.failMu.Unlock()
	if e == nil {
		return nil
	}
	return e
}

// DroppedErrors reports how many task errors were dropped because more than
// MaxRetainedErrors failures were retained.
func (s *Scheduler) DroppedErrors() int64 { return s.dropped.Load() }

// ForgetErrors drops every retained task error.
func (s *Scheduler) ForgetErrors() {
	s.failMu.Lock()
	clear(s.failed)
	s.failFIFO = s.failFIFO[:0]
	s.nFailed.Store(0)
	s.failMu.Unlock()
}

func (s *Scheduler) recordFailure(e *TaskError) {
	s.failMu.Lock()
	if len(s.failFIFO) >= s.cfg.MaxRetainedErrors {
		old := s.failFIFO[0]
		s.failFIFO = s.failFIFO[1:]
		delete(s.failed, old)
		s.dropped.Add(1)
	}
	s.failed[e.Task] = e
	s.failFIFO = append(s.failFIFO, e.Task)
	s.nFailed.Store(int64(len(s.failed)))
	s.failMu.Unlock()
}

// Add adds a task from a goroutine that is not a scheduler thread. The task
// goes to the shared queue (FIFO): kernels that spawn recursively should
// use their Ctx's Add, which queues on the thread's deque and runs the
// tree depth first; through the shared queue it runs breadth first, and a
// pool smaller than a level of it fills up (ErrPoolDeadlock). When the
// pool is full the caller sleeps until a slot frees (back-pressure);
// called on a scheduler thread after all (a kernel), it runs tasks
// meanwhile, as Ctx.Add does. Once Close began it fails with ErrClosed,
// except from a running kernel (its thread is looked up then, see
// callerCtx), which may still add children, as through Ctx.Add. See
// Ctx.Add for the rules, and Config.PoolSize for the dead end
// (ErrPoolDeadlock).
func (s *Scheduler) Add(t *Task) (TaskID, error) { return s.add(t, nil) }

// Wait blocks until id finished and returns its error. Called from a
// goroutine that is not a scheduler thread, it runs no tasks. Called from
// a scheduler thread (a kernel that has no Ctx at hand, or a registered
// thread), it is Ctx.Wait on that thread, which runs tasks meanwhile:
// blocking there could leave nobody to run the awaited task (one worker).
// Telling the two apart costs a look-up of the calling goroutine (see
// callerCtx: nanoseconds from a worker's kernel or a goroutine that is no
// thread, microseconds from a registered thread), only when id has not
// finished yet; Ctx.Wait is the direct way.
func (s *Scheduler) Wait(id TaskID) error {
	if err := s.checkID(id, "Wait"); err != nil {
		return err
	}
	if !s.IsFinished(id) {
		if c := s.callerCtx(); c != nil {
			return c.Wait(id)
		}
		s.payDebtsTo(id, nil)
		sl := &s.slots[id.index()]
		s.extMu.Lock()
		s.extWait.Add(1)
		sl.waiters.Add(1)
		for !s.IsFinished(id) {
			s.extCond.Wait()
		}
		sl.waiters.Add(-1)
		s.extWait.Add(-1)
		s.extMu.Unlock()
	}
	return s.Err(id)
}

// checkID validates an ID given by a caller.
func (s *Scheduler) checkID(id TaskID, what string) error {
	if id == NoTask {
		return nil // inlined: Add checks a parent and a dependency, mostly none
	}
	return s.checkIDSlow(id, what)
}

// checkIDSlow is checkID for an ID that is not NoTask.
func (s *Scheduler) checkIDSlow(id TaskID, what string) error {
	if id.sched() != s.id || int32(id.gen()-s.genBase) < 0 {
		// The tag is ours only while we are open, and an ID of an earlier
		// holder of the tag has a generation below our base (see TaskID).
		return fmt.Errorf("sched: %s %v: %w", what, id, ErrForeignTask)
	}
	idx := id.index()
	if int(idx) >= len(s.slots) {
		return fmt.Errorf("sched: %s %v: %w", what, id, ErrNotIssued)
	}
	sl := &s.slots[idx]
	d := int32(id.gen() - sl.genLoad())
	if d > 0 {
		return fmt.Errorf("sched: %s %v: %w", what, id, ErrNotIssued)
	}
	if d == 0 && atomic.LoadInt32(&sl.open) == 0 {
		// Either a free slot (the ID was never issued) or a task between
		// its last decrement and its generation bump: a few instructions,
		// unless the OS preempts the completing thread right there, which
		// on a loaded machine can last milliseconds. Be patient before
		// calling the ID forged: only forged IDs pay for the wait.
		deadline := time.Now().Add(250 * time.Millisecond)
		for i := 0; ; i++ {
			if sl.genLoad() != id.gen() || atomic.LoadInt32(&sl.open) != 0 {
				return nil
			}
			if i < 100 {
				runtime.Gosched()
			} else if time.Now().Before(deadline) {
				time.Sleep(50 * time.Microsecond)
			} else {
				return fmt.Errorf("sched: %s %v: %w", what, id, ErrNotIssued)
			}
		}
	}
	return nil
}

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
		var err error
		if idx, err = s.alloc(c); err != nil {
			return NoTask, fmt.Errorf("sched: Add: kernel %q: %w", k.Name, err)
		}
	}
	// Hold the parent before touching the slot: the locked add waits for
	// the stores before it to reach the cache, and the slot's lines may
	// still be in the core that last completed a task in it.
	if t.Parent != NoTask && !s.holdParent(t.Parent) {
		s.putSlot(idx, c)
		return NoTask, fmt.Errorf("sched: Add: kernel %q: parent %v: %w", k.Name, t.Parent, ErrParentDone)
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

// kernelMayAdd reports, once Close began, whether an Add on thread c (nil:
// a Scheduler call, whose thread is looked up) may still be accepted: it
// comes from a running kernel (through its Ctx or the Scheduler) and
// Close has not stopped the workers yet.
func (s *Scheduler) kernelMayAdd(c *Ctx) bool {
	if s.stopping.Load() {
		return false
	}
	if c == nil {
		c = s.callerCtx()
	}
	return c != nil && c.running > 0
}

// lateAdd ends an Add, Create or Run from outside the scheduler that
// passed the closed check just before Close began: Close may have found
// the scheduler idle and stopped its workers before the task was queued
// or held, and then nobody would ever run or fail it. Close takes drainMu
// after it stops the workers and fails what it finds left (failLeftovers);
// so does lateAdd if Close is that far. The lock orders the two: either
// this task is visible to Close's look, or lateAdd sees stopping and
// looks itself.
func (s *Scheduler) lateAdd(c *Ctx) {
	s.drainMu.Lock()
	if s.stopping.Load() {
		s.failLeftovers(c)
	}
	s.drainMu.Unlock()
}

// failLeftovers fails with ErrClosed every task left queued or held once
// Close stopped the workers (only Adds that raced with Close leave any).
// c is the calling thread (nil if none): its own deque is popped, the
// others' stolen from. Called with drainMu held.
func (s *Scheduler) failLeftovers(c *Ctx) {
	for lv := range s.inject {
		for x := s.inject[lv].pop(); x != noItem; x = s.inject[lv].pop() {
			if lv != 1 {
				s.queued[lv].Add(-1)
			}
			s.finish(x, ErrClosed, nil)
		}
		for _, t := range s.threads {
			for {
				var x uint32
				if t == c {
					x = t.dq[lv].pop()
				} else {
					x = t.dq[lv].steal()
				}
				if x == noItem {
					break
				}
				if lv != 1 {
					s.queued[lv].Add(-1)
				}
				s.finish(x, ErrClosed, nil)
			}
		}
	}
	for i := range s.slots {
		if s.slots[i].held.CompareAndSwap(true, false) {
			s.finish(uint32(i), ErrClosed, nil)
		}
	}
}

// addCycle refuses the cycles a new task with this parent and dependency
// would close that are cheap to see: depending on an ancestor (the
// ancestor waits for the new task), or on a task that itself depends on an
// ancestor (X -> child C -> D -> X: D waits for X, X for C, C for D). Both
// reads are of lines checkID just read. Longer cycles (through deeper
// dependency chains or through other tasks' children) are not looked for
// here; Close fails their tasks with ErrCycle, and a Wait that would sleep
// forever on one returns ErrCycle (Ctx.Wait).
func (s *Scheduler) addCycle(parent, dep TaskID) error {
	// dep's own dependency, if dep has not finished: the value is dep's
	// if dep's generation did not move while it was read.
	var dep2 TaskID
	if ds := &s.slots[dep.index()]; ds.genLoad() == dep.gen() {
		d := TaskID(atomic.LoadUint64(&ds.dep))
		if liveTask(ds.deps.Load(), dep) {
			dep2 = d
		}
	}
	// Up the ancestors: each link is read from a task that was live and
	// not abandoned when it was read (its parent could not have finished),
	// and names the parent with its generation, so a parent whose slot
	// was reused since reads as finished and ends the walk. Each step goes
	// to a task issued before the last, so the walk ends.
	for p := parent; p != NoTask; {
		if p == dep {
			return fmt.Errorf("dependency %v is an ancestor: %w", p, ErrSelfDepend)
		}
		if p == dep2 {
			return fmt.Errorf("dependency %v depends on %v, an ancestor of the new task: %w", dep, p, ErrCycle)
		}
		p = s.parentOf(p)
	}
	return nil
}

// liveTask reports whether h, a slot's deps word, shows task id neither
// finished nor abandoned. An abandoned task is finished for all that
// needed it (Abandon released its parent and dependents), so the links it
// still holds (parent, dependency) are stale: the parent's slot may even
// belong to one of its children by now.
func liveTask(h uint64, id TaskID) bool {
	return uint32(h>>32) == id.gen() && uint32(h) != depsAbandoned
}

// parentOf returns the parent of task x (NoTask if it has none, or if x
// finished or was abandoned: then its parent no longer waits for it). The
// result may have finished since; its generation says so.
func (s *Scheduler) parentOf(x TaskID) TaskID {
	sl := &s.slots[x.index()]
	pi := atomic.LoadUint32(&sl.parent)
	pg := atomic.LoadUint32(&sl.pgen)
	if pi == 0 || int(pi) > len(s.slots) || !liveTask(sl.deps.Load(), x) {
		return NoTask // read after the links: they were x's
	}
	return makeID(s.id, pg, pi-1)
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
	if id == NoTask || s.IsFinished(id) {
		return fmt.Errorf("sched: Run %v: task is not held (finished)", id)
	}
	sl := &s.slots[id.index()]
	if !sl.held.CompareAndSwap(true, false) {
		return fmt.Errorf("sched: Run %v: task is not held (already started or made by Add)", id)
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

// Run starts a task made with Create. Call it exactly once per Create.
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

// place asks the Placer where an Auto task runs. A panic in it fails the
// task with ErrPlacerPanic rather than unwinding through the scheduler:
// from a release it would leave the rest of the dependents list unreadied
// (never run, their waiters asleep for ever), and from a thread's loop it
// would end the process.
func (s *Scheduler) place(sl *slot) (where Affinity, split uint32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPlacerPanic, r)
		}
	}()
	where, split = s.cfg.Placer.Place(sl.task.Kernel, sl.kern, &sl.task.Data)
	return where, split, nil
}

// maxInline bounds how deeply ready completes empty tasks in place (a
// chain of joins each readied by the previous one's completion); deeper
// ones are queued, so the stack stays small.
const maxInline = 8

// coExecute splits task idx at item `at`: [Begin, at) on device where and
// [at, End) on CPU workers, both as children of idx.
func (s *Scheduler) coExecute(idx uint32, where Affinity, at uint32, c *Ctx) bool {
	if (where == GPU && s.execs[ExecGPU] == nil) || (where == SPU && s.execs[ExecSPU] == nil) {
		return false
	}
	sl := &s.slots[idx]
	a, ok := s.getSlot(c)
	if !ok {
		return false
	}
	b, ok := s.getSlot(c)
	if !ok {
		s.putSlot(a, c)
		return false
	}
	d := sl.task.Data
	s.initSub(a, idx, d.Begin, at, where, c)
	s.initSub(b, idx, at, d.End, AnyWorker, c)
	atomic.AddInt32(&sl.open, 2)
	s.ready(a, c)
	s.ready(b, c)
	s.finish(idx, nil, c)
	return true
}

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

// payDebtsTo pays what any thread owes task id (see Ctx.deferDec): a
// thread that ran its last children holds their decrements until it runs
// a task of another parent or finds no work, and a waiter that has nothing
// to run need not wait for that (paying early is always correct). by is
// the calling thread, nil if none.
func (s *Scheduler) payDebtsTo(id TaskID, by *Ctx) {
	p := id.index() + 1
	for _, t := range s.threads {
		if t != by && atomic.LoadUint32(&t.debtParent) == p {
			t.takeDebt(by)
		}
	}
}

// payDebt applies n decrements of the open count of parent (index+1)
// that a thread deferred (Ctx.deferDec).
func (s *Scheduler) payDebt(parent uint32, n int64, c *Ctx) {
	p := parent - 1
	if atomic.AddInt32(&s.slots[p].open, -int32(n)) == 0 {
		s.complete(p, c, false)
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
	// Close the dependents list and bump the generation: from here on the
	// ID reads as finished.
	h := sl.deps.Swap(uint64(gen+1) << 32)
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
		// Nothing to run here: sleep until a slot frees, or until the
		// scheduler goes idle (sleep broadcasts) to look for the dead end.
		s.extMu.Lock()
		s.poolWait.Add(1)
		if s.nfree.Load() == 0 {
			if s.poolStuck(c) {
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

// poolStuck reports whether no slot can free without an outside call: the
// pool is full and nothing can run (see quiescent), c (the caller, blocked
// in Add; nil if not a thread) aside. Called with extMu held.
func (s *Scheduler) poolStuck(c *Ctx) bool {
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
		ErrPoolDeadlock, len(s.slots), held)
}

// callerCtx returns the scheduler thread the calling goroutine is (a
// worker, or the thread it registered), or nil. A goroutine that
// registered several threads hands all but one to other goroutines, and
// which one it kept is unknown: nil then. For the slow paths of calls
// made without a Ctx.
//
// It goes by the goroutine's runtime g first (getg, a few nanoseconds):
// no two live goroutines share one. A worker's recorded g is that of its
// live goroutine (stored as it starts, cleared before it exits), so a
// match names the worker, and a kernel on a worker is found at once. A
// registered thread's was stored as it registered, and the goroutine may
// have exited since and its g been reused: a match there is confirmed by
// goroutine ID (goid, microseconds). A g that matches nothing is no
// thread's: a worker's would match, and so would that of the goroutine
// that registered a thread, while it lives. Where getg is not available
// (not amd64) every look-up goes by goroutine ID.
func (s *Scheduler) callerCtx() *Ctx {
	if me := getg(); me != 0 {
		confirm := false
		for _, t := range s.threads {
			if t.g.Load() == me {
				if t.worker {
					return t
				}
				confirm = true
			}
		}
		if !confirm {
			return nil
		}
	}
	g := goid()
	var found *Ctx
	for _, t := range s.threads {
		if t.goid.Load() == g {
			if found != nil {
				return nil
			}
			found = t
		}
	}
	return found
}

var goidBufs = sync.Pool{New: func() any { return new([64]byte) }}

// goid returns the calling goroutine's ID, read from the first line of its
// stack trace ("goroutine 123 [running]:"). runtime.Stack walks the whole
// stack even into a 64-byte buffer: about 8 µs near the bottom of a stack
// and 115 µs under 100 frames (2 cores, Go 1.26). Unlike a g, an ID is
// never reused; callerCtx asks for it only to confirm a registered
// thread (or everywhere, off amd64).
func goid() uint64 {
	buf := goidBufs.Get().(*[64]byte) // runtime.Stack's buffer escapes: reused, not allocated per call
	defer goidBufs.Put(buf)
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, ch := range b[len(prefix):] {
		if ch < '0' || ch > '9' {
			break
		}
		id = id*10 + uint64(ch-'0')
	}
	return id
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

// wakeOne wakes one sleeping thread (new CPU work arrived).
func (s *Scheduler) wakeOne() {
	s.idleMu.Lock()
	var t *Ctx
	for i := len(s.idle) - 1; i >= 0; i-- {
		if s.idle[i].worker || s.idle[i].waiting.Load() {
			t = s.idle[i]
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			break
		}
	}
	s.idleMu.Unlock()
	if t != nil {
		// No Gosched: the woken goroutine waits in this P's run-next
		// slot only until an idle P steals it (the runtime wakes one);
		// yielding here put this goroutine on the global run queue,
		// where no idle P is woken for it (see Config.SpinRounds).
		t.signal()
	}
}

// wakeThread wakes t if it sleeps (pinned work for it arrived).
func (s *Scheduler) wakeThread(t *Ctx) {
	s.idleMu.Lock()
	found := false
	for i, x := range s.idle {
		if x == t {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			found = true
			break
		}
	}
	s.idleMu.Unlock()
	if found {
		t.signal()
	}
}

// removeIdle takes t off the idle list if it is there (t itself, after a
// wake-up: a spurious one, from a token a waker sent late, leaves t listed)
// and reports whether it was.
func (s *Scheduler) removeIdle(t *Ctx) bool {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	for i, x := range s.idle {
		if x == t {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			return true
		}
	}
	return false
}

// wakeWaiters wakes every sleeping waiter (a waited-for task completed).
func (s *Scheduler) wakeWaiters() {
	if s.extWait.Load() > 0 {
		s.extMu.Lock()
		s.extCond.Broadcast()
		s.extMu.Unlock()
	}
	s.idleMu.Lock()
	var buf [8]*Ctx
	woken := buf[:0]
	for i := 0; i < len(s.idle); {
		if s.idle[i].waiting.Load() {
			woken = append(woken, s.idle[i])
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.nIdle.Add(-1)
			s.activity.Add(1)
			continue
		}
		i++
	}
	s.idleMu.Unlock()
	for _, t := range woken {
		t.signal()
	}
}

func (s *Scheduler) wakeAll() {
	s.idleMu.Lock()
	// Copied out, and the list truncated rather than dropped, so that
	// sleeping again does not grow a new list (no allocation per wake).
	var buf [16]*Ctx
	woken := append(buf[:0], s.idle...)
	s.idle = s.idle[:0]
	s.nIdle.Store(0)
	s.activity.Add(uint64(len(woken)))
	s.idleMu.Unlock()
	for _, t := range woken {
		t.signal()
	}
}

// Close stops accepting tasks from outside (Add from a Thread or a foreign
// goroutine returns ErrClosed; running kernels may still add children,
// through their Ctx or the Scheduler, until Close stops the workers),
// fails every task queued for a registered thread with ErrClosed, closes the
// executors (which finish or fail their jobs), lets the workers drain every
// other task, then stops the workers. No task is lost: each one either ran
// or failed with an error its waiters see (tasks made with Create and never
// Run fail with ErrClosed). It knows the drain is over when every thread
// sleeps, every queue is empty and no executor holds a job, so the hot
// path keeps no task counter for it. Then kernels waiting in WaitEvent
// return, signalled or not (nothing else can run to signal them), and
// what they ready runs. Tasks that can still never run after that (a
// cycle through their dependencies and parents, which Add could not see)
// fail with ErrClosed and ErrCycle, so that every Wait returns, and the
// error counts them.
// Close returns when no goroutine of the scheduler is left. A kernel that
// never returns blocks Close (Abandon fails its task, but its goroutine
// cannot be stopped). Call Close after the last Add: an Add racing with
// Close may be refused (ErrClosed), or accepted and its task then failed
// with ErrClosed, never lost (see lateAdd). Calling Close again returns the
// first call's result.
//
// Close called from a kernel (on a scheduler thread, with a kernel
// running), or from Config.Observer's TaskRan on a scheduler thread (it
// runs as part of the kernel's task), fails with ErrCloseInKernel and
// closes nothing: it would wait for that thread, for ever. Telling costs
// a look-up of the calling goroutine (see callerCtx).
func (s *Scheduler) Close() error {
	if c := s.callerCtx(); c != nil {
		if c.running > 0 {
			return fmt.Errorf("sched: Close from the kernel of %v: %w", c.current, ErrCloseInKernel)
		}
		if c.observing {
			return fmt.Errorf("sched: Close from Config.Observer's TaskRan for %v, on the thread that ran its kernel (Close would wait for that thread): %w", c.ev.Task, ErrCloseInKernel)
		}
	}
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		var errs []error
		for _, t := range s.threads[s.nwork:] {
			for lv := range t.pinned {
				for x := t.pinned[lv].pop(); x != noItem; x = t.pinned[lv].pop() {
					t.npinned.Add(-1)
					s.finish(x, ErrClosed, nil)
				}
			}
		}
		// Tasks made by Create and never Run would wait forever.
		for i := range s.slots {
			if s.slots[i].held.CompareAndSwap(true, false) {
				s.finish(uint32(i), ErrClosed, nil)
			}
		}
		for _, e := range s.execs {
			if e != nil {
				if err := e.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		// Registered threads may hold deque work nobody else would run
		// once they stop helping: workers steal it. Then wait until
		// nothing can run any more; tasks that kernels made with Create
		// during the drain and never Run are failed, which may release
		// more work, until none is left.
		s.wakeAll()
		cycles := 0
		for d := 20 * time.Microsecond; ; d = min(2*d, 5*time.Millisecond) {
			if !s.quiescent() {
				time.Sleep(d)
				continue
			}
			held := 0
			for i := range s.slots {
				if s.slots[i].held.CompareAndSwap(true, false) {
					s.finish(uint32(i), ErrClosed, nil)
					held++
				}
			}
			if held == 0 && !s.drained.Load() {
				// Nothing else can run, so kernels parked in WaitEvent
				// return now (signalled or not), and what they ready
				// runs, before anything is called stuck: a task that
				// waits for such a kernel is not in a cycle.
				s.drained.Store(true)
				s.wakeAll()
				continue
			}
			if held == 0 {
				// Tasks still open now can never run: only a cycle
				// through dependencies and parents leaves them (a
				// kernel waiting in one sleeps, and counts as idle).
				// Fail them, so that every Wait returns; that can wake
				// such kernels, so look again until none is left.
				n := s.failStuck()
				if n == 0 {
					break
				}
				cycles += n
			}
			s.wakeAll()
		}
		if cycles > 0 {
			errs = append(errs, fmt.Errorf("sched: Close: %d tasks could never run (a cycle through their dependencies and parents): they failed with %w", cycles, ErrCycle))
		}
		s.stopping.Store(true)
		s.wakeAll()
		s.workersWG.Wait()
		s.drainMu.Lock()
		s.failLeftovers(nil) // Adds that raced with Close (see lateAdd)
		s.drainMu.Unlock()
		s.releaseTag() // no generation moves any more
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Abandon fails a task that has not finished, at once: its waiters,
// dependents and parent see a *TaskError wrapping err and ErrAbandoned. If
// its kernel has not started it never runs; if it is running (a kernel that
// hangs, a GPU job that never completes), it runs on, its result is
// discarded, and its pool slot is reused only once it returns. Abandon is the
// way out of a kernel that never finishes: WaitFor a task with a time-out,
// then Abandon it. It returns an error if id finished or was abandoned.
// Children of an abandoned task still run; the parent no longer waits.
func (s *Scheduler) Abandon(id TaskID, err error) error {
	if err := s.checkID(id, "Abandon"); err != nil {
		return err
	}
	if id == NoTask {
		return fmt.Errorf("sched: Abandon: no task")
	}
	if err == nil {
		err = ErrAbandoned
	} else {
		err = fmt.Errorf("%w: %w", ErrAbandoned, err)
	}
	if !s.abandon(id, err) {
		return fmt.Errorf("sched: Abandon %v: task already finished or abandoned", id)
	}
	return nil
}

// abandon is Abandon with the task's error given whole; it reports whether
// it failed the task (false: it had finished or was abandoned).
func (s *Scheduler) abandon(id TaskID, err error) bool {
	idx := id.index()
	sl := &s.slots[idx]
	want := uint64(id.gen()) << 32
	for {
		h := sl.deps.Load()
		if h&^0xffffffff != want || uint32(h) >= depsAbandoned {
			return false
		}
		// Read before the CAS: once it succeeds the kernel may return and
		// the slot be reused at once. If the slot was reused before these
		// loads, the CAS fails (the generation moved) and they are dropped.
		p := atomic.LoadUint32(&sl.parent)
		kid := KernelID(atomic.LoadUint32(&sl.kid))
		te := &TaskError{Task: id, Err: err, Kernel: kid}
		if k := s.reg.Lookup(kid); k != nil {
			te.Name = k.Name
		}
		sl.err.Store(te) // before the CAS: late dependents read it
		if sl.deps.CompareAndSwap(h, want|depsAbandoned) {
			s.recordFailure(te)
			for d := uint32(h); d != 0; {
				next := s.slots[d-1].depNext
				s.depReady(d-1, te, nil)
				d = next
			}
			if p != 0 {
				s.setErr(p-1, fmt.Errorf("%w: %w", ErrChildFailed, te))
				// The thread stuck in the kernel may owe P decrements
				// for siblings it ran before (Ctx.deferDec) and cannot
				// pay them while stuck: pay every thread's debt now
				// (paying early is always correct).
				for _, c := range s.threads {
					c.takeDebt(nil)
				}
				s.decOpen(p-1, nil)
			}
			s.wakeWaiters()
			return true
		}
		sl.err.CompareAndSwap(te, nil) // not ours after all (a dependent came, the task completed, or the slot was reused)
	}
}

// failStuck fails, with ErrClosed and ErrCycle, every task that still
// waits for its dependency once Close found that nothing can run (see
// Close), and returns how many it failed. A cycle has at least one such
// task (parents and children alone form a tree), and failing one releases
// the rest (its dependents fail, its parent loses a child). Tasks without
// a dependency are left alone: an Add from outside that raced with Close
// may hold one that is not queued yet (see lateAdd).
func (s *Scheduler) failStuck() int {
	n := 0
	for i := range s.slots {
		sl := &s.slots[i]
		h := sl.deps.Load()
		if atomic.LoadInt32(&sl.open) <= 0 || sl.sub || uint32(h) == depsAbandoned {
			continue
		}
		if d := TaskID(atomic.LoadUint64(&sl.dep)); d == NoTask || s.IsFinished(d) {
			continue
		}
		id := makeID(s.id, uint32(h>>32), uint32(i))
		if s.abandon(id, fmt.Errorf("%w: %w: the task waits, through dependencies and children, for itself", ErrClosed, ErrCycle)) {
			n++
		}
	}
	return n
}

// Pending returns how many tasks are allocated (queued, running, waiting
// for a dependency or for children).
func (s *Scheduler) Pending() int { return int(s.live()) }

// quiescent reports whether nothing can run any more: every worker is
// asleep, every registered thread is outside the scheduler or asleep in it,
// every queue is empty and no executor holds a job, and no thread woke up
// while this was being checked. Once closing, no task can then appear
// except by a task running, so the state is final. Close only.
func (s *Scheduler) quiescent() bool { return s.quiescentExcept(nil, false) }

// quiescentExcept is quiescent with thread c (if not nil) counted as idle:
// it is the caller, blocked; with inAlloc, so are the threads blocked in
// Add's back-pressure (poolStuck holds extMu, so they cannot wake while it
// looks).
func (s *Scheduler) quiescentExcept(c *Ctx, inAlloc bool) bool {
	a0 := s.activity.Load()
	if s.execJobs.Load() != 0 {
		return false
	}
	s.idleMu.Lock()
	workers := 0
	for _, t := range s.idle {
		if t.worker && t != c && !(inAlloc && t.inAlloc.Load()) {
			workers++
		}
	}
	for _, t := range s.threads[:s.nwork] {
		if t == c || inAlloc && t.inAlloc.Load() {
			workers++
		}
	}
	ok := workers == s.nwork
	for _, r := range s.threads[s.nwork:] {
		if !ok {
			break
		}
		if r != c && !(inAlloc && r.inAlloc.Load()) && r.busy.Load() != 0 {
			ok = false
			for _, t := range s.idle {
				if t == r {
					ok = true
					break
				}
			}
		}
	}
	s.idleMu.Unlock()
	if !ok {
		return false
	}
	for lv := range s.inject {
		if s.inject[lv].n.Load() != 0 {
			return false
		}
		for _, t := range s.threads {
			if !t.dq[lv].empty() || (!t.worker && t.npinned.Load() != 0) {
				return false
			}
		}
	}
	return s.execJobs.Load() == 0 && s.activity.Load() == a0
}

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
