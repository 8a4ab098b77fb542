package sched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Configuration, the Scheduler, New and the errors.
//
// The model and the invariants are in doc.go. Each protocol has its file,
// which opens with its design as numbered steps:
//
//  1. ids.go: the tags and generations of TaskIDs, checks of given IDs,
//     the errors of finished tasks.
//  2. lifecycle.go: a task from Add to the reuse of its slot.
//  3. pool.go: slots, the free list, back-pressure.
//  4. executor.go: executors, bursts, placement.
//  5. worker.go: the thread loop, stealing, splitting, running a kernel.
//  6. debt.go: deferred decrements of a parent's open count.
//  7. wake.go: the idle list, sleeping and waking, lost wake-ups.
//  8. wait.go: Wait, WaitFor, WaitEvent, RunPinned, RunOne.
//  9. hang.go: cycles and deadlocks refused or reported.
//  10. abandon.go: failing a task that has not finished.
//  11. caller.go: which thread a call without a Ctx comes from.
//  12. close.go: Close, the drain, and Adds that race with it.
//
// Measurements are in BENCHMARKS.md (sections sched-peers, sched-design).

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
	// default 16384; at most MaxPoolSize, of which one then names the
	// children run in place). When every slot is in use, a kernel's Add of a plain
	// CPU child runs the child in place (inplace.go); any other Add applies
	// back-pressure: the caller helps run work (or sleeps) until a slot
	// frees. If nothing can run, so that only a Run (or Abandon) from
	// outside could free a slot (the pool holds held tasks and what waits
	// for them), Add waits on, and fails with ErrPoolDeadlock only after
	// PoolStallLimit. Every slot not holding a task is free to every Add:
	// the free slots a thread keeps at hand (a few dozen at most) are
	// taken back by an Add that finds no other, even while that thread is
	// a registered one busy elsewhere, or a worker whose kernel is
	// blocked outside the scheduler (on a channel, say).
	PoolSize int
	// PoolStallLimit is how long an Add waits for a slot while the pool is
	// full and nothing can run (no thread runs a task, no queue or
	// executor holds one, no thread keeps a free slot cached): every slot
	// holds a task made by Create and not yet Run, or one that waits for
	// such a task. Only a Run or Abandon can then free a slot, and the
	// scheduler cannot tell a goroutine that will make that call later
	// (after a sleep, a file load, a frame of its own) from one that
	// never will, nor know which goroutine holds the held tasks' IDs. So
	// such an Add waits, like any Add on a full pool, and fails with an
	// error wrapping ErrPoolDeadlock only once the pool has stayed stuck
	// for PoolStallLimit without a break. Default (0): half a second;
	// negative: no limit, Add waits until a slot frees.
	PoolStallLimit time.Duration
	// DequeSize is each thread's deque capacity per priority level (power
	// of two, default PoolSize up to maxDefaultDeque). Overflow goes to the
	// shared queue. A deque as large as the pool never overflows: with
	// 1024, a thread that added faster than the others took its tasks
	// spilled into the shared queue, whose lock the adder and every
	// thief then took once per task: a slow mode that lasted as long as
	// the adder stayed ahead (BENCHMARKS.md, section sched-design).
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
	// OnWorkerStart, when set, is called on every goroutine that serves a
	// worker, once, before it runs any task, with the worker's index
	// (0..Workers-1). A worker is served by one goroutine at a time, but
	// not always the same one: a kernel's wait hands the worker to another
	// goroutine (handoff.go, up to maxRunners per worker, made when waits
	// first nest that deep and kept), and a kernel's runtime.Goexit
	// replaces the goroutine it ran on; each new one calls the hook. A
	// hook that calls runtime.LockOSThread locks that goroutine to its OS
	// thread, so a worker may use several OS threads over its life, one at
	// a time (a locked goroutine's thread exits with it: at Close, or
	// after a Goexit); pinning.Pinner.OnWorkerStart (affinity/pinning)
	// pins each of them to the worker's CPU. Off by default: pinning
	// goroutines that are not locked fights Go's own scheduler.
	OnWorkerStart func(index int)
	// MaxRetainedErrors bounds how many failed tasks' errors are kept for
	// Wait/Err on IDs whose slots were reused (default 65536). When more fail
	// before being collected, the oldest are dropped and counted. Negative
	// values fail New.
	MaxRetainedErrors int
	// CheckRaces, when set, refuses data races between tasks when they
	// are added (race.go): Add (and Run of a task made with Create) fails
	// with a *RaceError wrapping ErrRace when the task's streams overlap
	// those of a live task that may run at the same time (no chain of
	// parent, dependency or join orders the two) and at least one of
	// them writes. Host streams are compared by address range of Bytes,
	// device streams by (Buffer, Offset, Count*Stride), wherever the tasks
	// run. Reads never conflict with reads, and a task's split pieces are
	// that task. Off by default: on, every Add, Run and completion takes a
	// lock and a check costs a walk of the live tasks it may be ordered
	// with (BenchmarkStreamTask in race_test.go).
	//
	// The environment variable VKJOBS_CHECK_RACES (strconv.ParseBool: 1,
	// true, 0, false...) read by New turns the check on for every
	// scheduler of the process that leaves CheckRaces unset: make test sets
	// it, so the project's own tests and programs run checked without each
	// naming it. It never turns a set CheckRaces off; a value that is not a
	// boolean fails New. A test that races on purpose, or measures the
	// unchecked path, sets the variable to 0 (testing.T.Setenv).
	CheckRaces bool
}

// EnvCheckRaces names the environment variable that turns
// Config.CheckRaces on by default.
const EnvCheckRaces = "VKJOBS_CHECK_RACES"

// checkRacesDefault reads EnvCheckRaces (unset or empty: off).
func checkRacesDefault() (bool, error) {
	v := os.Getenv(EnvCheckRaces)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("sched: New: environment variable %s=%q: want a boolean (1, true, 0, false)", EnvCheckRaces, v)
	}
	return on, nil
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
// kernel (for an executor's task, on a goroutine of the executor, with
// Thread -1), so it must be cheap and safe for concurrent use. The event
// is only valid during the call: copy what you keep. On a scheduler
// thread the task completes after TaskRan returns: a wait in TaskRan for
// it, or for a task that needs it (its parent, a dependent), fails with
// ErrDeadlock, Close there fails with ErrCloseInKernel, and a panic in
// TaskRan fails the task with ErrObserverPanic. An executor reports its
// tasks when and how its package documents (package gpu keeps a panic in
// TaskRan as a device message, the task's outcome unchanged; the SPU
// executor fails the task with ErrObserverPanic); make no waits there.
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
	// ErrPoolDeadlock: an Add found the pool full and nothing able to
	// run for Config.PoolStallLimit, so that only a Run or Abandon from
	// outside could have freed a slot, and none came.
	ErrPoolDeadlock = errors.New("task pool full and nothing can run")
	// ErrObserverPanic: Config.Observer's TaskRan panicked when told of
	// a task's run; the task fails with it (its kernel's own error, if
	// any, joined).
	ErrObserverPanic = errors.New("Config.Observer's TaskRan panicked")
	// ErrCloseInKernel: Close would wait for the kernel that called it
	// (or, from Config.Observer's TaskRan or Config.OnWorkerStart, for the
	// thread it runs on).
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
	// caches holds, by thread index, the shared state of each thread's
	// slot cache, which another thread's Add may take back (pool.go,
	// slotCache); Ctx.sc points into it.
	caches   []slotCache
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

	// The in-place stacks of every goroutine that ever served a thread,
	// where thieves find Join records (join.go): copied on write under
	// joinMu, read without a lock.
	joinMu     sync.Mutex
	joinStacks atomic.Pointer[[]*inPlaceStack]
}

// New creates a scheduler and starts its workers.
func New(cfg Config) (*Scheduler, error) {
	for _, f := range [...]struct {
		name string
		v    int
	}{{"MainThreads", cfg.MainThreads}, {"Workers", cfg.Workers}, {"PoolSize", cfg.PoolSize}, {"DequeSize", cfg.DequeSize}, {"MaxRetainedErrors", cfg.MaxRetainedErrors}} {
		if f.v < 0 {
			return nil, fmt.Errorf("sched: New: Config.%s is %d: want 0 (the default) or more", f.name, f.v)
		}
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
	if cfg.PoolStallLimit == 0 {
		cfg.PoolStallLimit = defaultPoolStall
	}
	if !cfg.CheckRaces {
		on, err := checkRacesDefault()
		if err != nil {
			return nil, err
		}
		cfg.CheckRaces = on
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
		slots:   make([]slot, poolSlots(cfg.PoolSize)),
		nwork:   cfg.Workers,
		failed:  make(map[TaskID]*TaskError),
	}
	s.freeIdx = make([]uint32, 0, cfg.PoolSize)
	s.extCond = sync.NewCond(&s.extMu)
	s.initSlots(base)
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
	s.caches = make([]slotCache, n) // by thread index
	for i, c := range s.threads {
		c.sc = &s.caches[i]
	}
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
