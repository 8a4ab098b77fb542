// Package sched is a task scheduler for frame-based engines: many small
// tasks per frame, spread over every core with very low overhead, with a
// task model ready to send streaming work to a GPU.
//
// # The model
//
// A task is a small fixed-size value (Task) copied into a slot of a
// preallocated pool: a kernel ID (which registered Kernel runs it), task data
// (32 bytes of Params, a read-only Data pointer and, for streaming kernels,
// an element count and up to four input and four output Streams), an
// Affinity (where it may run), a Priority, an optional Parent and an optional
// Dependency. Adding a task allocates nothing.
//
// Kernels come in four kinds (Molecule's task model, seed 001): Simple
// (kernel data only), Streaming (item i of the inputs makes item i of the
// outputs), Reduce (Factor inputs per output, e.g. the average of every 32
// elements) and Expand (Factor outputs per input). Streaming, Reduce and
// Expand tasks are split into ranges of work items; a kernel is called with
// [TaskData.Begin, TaskData.End) and indexes whole streams with absolute item
// numbers, so the same bytes and the same indexing work on a GPU.
//
// Add copies the whole Task for streaming kinds, but only the header, Params
// and Data for Simple kernels (which take no streams: Add refuses them), so
// the cache lines that move between cores per task stay few. Add increments
// the parent's open count before it writes the slot, and stores the slot's
// own fields without locked instructions (the deque push publishes them), so
// the one locked instruction of an Add does not wait for the slot's lines.
// Those lines were usually last written by the thread that completed the
// previous task in the slot; a thread that refills its cache of free slots
// writes to all of them at once, so the lines come over in parallel rather
// than one miss per Add.
//
// A TaskID packs the slot index, the slot's generation and the scheduler's
// number. When a task completes its slot's generation is bumped and the slot
// is reused: an old ID then reads as finished (IsFinished is true, never a
// wrong answer), and its error, if it failed, is kept in a bounded table so
// Wait still reports it.
//
// # Invariants
//
//   - Open work: a task's open count is 1 (its own work) plus its unfinished
//     children. It completes when the count reaches zero, so a parent always
//     completes after all its children, including children added while it
//     runs. Create holds a task unstarted so children can be attached to an
//     empty parent without racing its completion.
//   - Empty tasks (KernelNone: joins, gates) have no work to run: they
//     complete where they become ready (in a thread's Add or Run, or in
//     the completion that readied them), without a trip through the
//     queues, nested at most 8 deep; deeper ones, and those readied
//     outside the scheduler's threads, are queued.
//   - One dependency: a task waits for at most one other task. To depend on
//     several, make them children of an empty task (a join) and depend on
//     that. A dependency that already finished is satisfied at once.
//     Depending on one's own ancestor would deadlock and is refused.
//   - Each task runs exactly once, or fails without running: a failed task's
//     dependents fail in turn (ErrDepFailed) without running, and its parent
//     fails with ErrChildFailed. Kernel panics become errors (ErrKernelPanic)
//     that name the task and kernel; the worker survives.
//   - Close finishes or fails every task: nothing is lost, and no goroutine
//     is left behind. Tasks made with Create and never Run, and tasks pinned
//     to a registered thread that no longer serves them, fail with ErrClosed.
//   - A kernel that never returns cannot be stopped (Go cannot kill a
//     goroutine), but it need not stall the frame: WaitFor gives up after a
//     time-out, and Abandon fails the task at once — waiters, dependents and
//     the parent see ErrAbandoned — while its slot stays reserved until the
//     kernel returns, so no ID is ever reused under a running kernel.
//
// # Threads
//
// The scheduler runs Workers goroutines plus the MainThreads that register
// (RegisterThread): by default workers = GOMAXPROCS - MainThreads, so the
// machine is neither over- nor under-subscribed. Every thread has one
// Chase-Lev deque per priority level (fixed power-of-two capacity); it pushes
// and pops its own work at the bottom, LIFO, and steals the oldest work of
// others from the top. Higher priority levels are served first. A full deque
// spills into a shared queue; nothing grows on the hot path. By default a
// deque holds as many tasks as the pool (up to 16384), so in practice it
// never spills: with a smaller one, a thread that added faster than the
// thieves took sent most of its tasks through the shared queue, whose lock
// it and every thief then took per task, a slow mode of its own that
// lasted as long as the adder stayed ahead. Tasks with
// affinity OnThread(i) go to that registered thread's own queue and run only
// there, when it calls Wait, WaitEvent or RunPinned.
//
// An idle thread looks for work for a short while (Config.SpinRounds,
// about 70 µs here) without yielding its P, then sleeps on its own
// channel. Every 16 rounds it yields the CPU, not the P (sched_yield): on
// cores shared with other programs the thread that has the work may be
// queued behind the spinning one. Two measurements set the spin. Waking
// a sleeping thread costs
// 0.1-2 ms on this VM (futex, M hand-off), so a thread that sleeps between
// the dependent stages of a frame joins the next stage late: in the crowd
// demo both threads then took part in only some stages (CPU use 75%).
// And runtime.Gosched between rounds, as first written, made it worse: it
// puts the goroutine on the global run queue without waking an idle P, so
// a worker that had just woken another goroutine (queued on its own P)
// stood runnable for up to 2 ms while the other core idled (runtime
// trace). Without it and with the longer spin, the demo's sampling +
// local-to-model went from 2.7 to 1.75 ms per frame and its CPU use from
// 75% to 98%; ParallelFor at the kernel's grain from 1.12x to 0.98x the
// hand-split goroutines at 1M elements and from 1.2-1.5x to 0.89x at 64K;
// EmptyTask, Fib and Graph did not change beyond noise (with lazyMisses
// below raised to match). A thread that goes to sleep first registers
// as idle and then re-checks every queue, and a thread that queues work first
// publishes it and then looks for sleepers: whichever comes second sees the
// other. That needs a store-load fence on both sides; the sleeper has one
// (a locked increment), but a fence in every push doubled the cost of a
// task handed between two cores (120 -> 205 ns), so a push publishes with a
// plain store and x86 may let its look for sleepers pass that store. A
// push racing with a thread's falling asleep can therefore go unannounced.
// The next push wakes the thread anyway (it reads the settled count), and
// for the case with no next push a sleeping thread rechecks the queues 1,
// 5, 21 and 85 ms after falling asleep, then waits for a token alone
// (TestLostWakeUpRecovered forces the case). Nobody polls.
//
// A thread that runs several children of one parent in a row owes the
// parent one decrement of its open count per child, and pays the debt with
// one atomic add when it turns to a task with another parent, finds no work
// (before it sleeps), leaves Wait, WaitFor, WaitEvent, RunPinned or RunOne,
// or waits for that very parent; RunPinned pays it and runs what that
// readied. The debt is never held while user code runs, except a kernel of
// another child of the same parent, which the parent must wait for anyway,
// and an Observer's TaskRan (which must not block); so completion is never delayed, while the
// parent's counter stops moving between cores once per task. A thread in
// Wait that finds nothing to run also pays what other threads owe the
// awaited task (paying early is always correct: those children are done).
// One case needs more: if that kernel hangs and is abandoned, the parent
// must fail at once, but the stuck thread cannot pay, so Abandon pays every
// thread's debt. Deferring must still cost no locked instruction per task
// (one waits for the thread's earlier stores to drain: a compare-and-swap
// on the thread's own line cost about 12% of a task handed between two
// cores). So the owner only adds, with plain stores, to a counter owed
// (and names the parent in debtParent, changed only when nothing is owed),
// and whoever pays, the owner or another thread, advances a second
// counter paid to the owed it read with a compare-and-swap and pays the
// difference: no decrement is paid twice (TestDebtPaidOnce), and one that
// is deferred after a payer read owed is left to the next payer.
// TestAbandonWithSiblingsDone is the abandoned case. Threads defer on one
// core too: no line moves there, but deferring spares a locked add per
// task (EmptyTask with GOMAXPROCS 1: 77.4 -> 73.4 ns; Fib and Graph
// unchanged). Measured
// (EmptyTask, medians of three, one session): 2 threads 231 -> 119 ns per
// task (WaitGroup.Go about 361 ns: 0.33x; chanpool 62 ns: 1.9x); one core
// 72.6 -> 72.0 ns (chanpool 47.9: 1.5x).
//
// Stealing moves work in batches, not per task. A thief that finds at
// least batchMin (8) tasks in a victim's deque takes half of them, up to
// 16, with one compare-and-swap of top (deque.stealBatch), runs the first
// and pushes the rest onto its own deque, where they can be stolen again.
// A pop that races with a batch could take an item inside the thief's
// range without a CAS, so a batching thief raises a flag on top's line
// before it reads bottom, and a pop that sees it while within
// maxStealBatch of top takes the oldest item with a CAS instead
// (TestDequeBatchStealRacesPop forces that race). A worker leaves a
// victim with fewer tasks to its owner until it has found no work
// lazyMisses (64, some 2 µs) times in a row, then it takes one: a thief that answered every push at
// once moved the producer's deque and slot lines to its core and back for
// every task (registered threads, which wait for a result, steal at
// once). Nothing is left behind: a thread re-checks every deque before it
// sleeps. Measured with the debt above (medians of the old and new
// builds run interleaved, five runs for EmptyTask and three for the
// others, on cores shared with another engineer's benchmarks, which made
// every figure slower than in a quiet hour): EmptyTask at 2 threads 0.89x
// (118.4 -> 105.3 ns; chanpool 1.84x -> 1.61x, WaitGroup.Go 0.29x ->
// 0.26x), on one core 1.01x (chanpool 1.49x -> 1.51x); Graph 0.88x; Fib
// 1.03x (probably the workers' patience with shallow deques); ParallelFor
// 1M 0.99x, 64K 1.03x (at grain n/16, before the spin change above). The
// plain-store debt alone gave 0.87x on EmptyTask in a quiet hour (87.8 ->
// 76.1 ns, 16 runs each).
//
// What a task costs between two cores is mostly cache lines, so two
// more rules. A thread takes free slots from the shared list in batches
// (half its slot cache) and asks for the lines Add will write for each of
// them at once with PREFETCHW (touchSlots; x86 without it and other CPUs
// write the lines instead). They were written by the threads that
// completed those tasks, so they sit in other cores' caches; fetched in
// parallel they cost one round trip per batch. Written instead, the
// stores wait in the store buffer, and the next locked instruction (the
// parent's increment in Add) waits for all of them: that wait was the
// largest single cost of EmptyTask. And the Scheduler's fields that
// threads write (the free list, the queues, the idle list) are padded off
// the lines of the fields every Add reads: the free list's lock shared a
// line with the slots' slice header, so each time a worker returned
// slots, the next Add's bounds check missed (TestSchedulerLayout).
// Measured (EmptyTask, 2 threads, medians of interleaved runs of the old
// and new builds): 107.3 ns per task before, 79.5 with PREFETCHW, 67.9
// with the padding as well (five runs); in a quieter hour, seven runs,
// 102.8 -> 67.3 ns. WaitGroup.Go costs 360-415 ns in the same runs, so
// the scheduler is 0.16-0.19x of it, and 1.0x the bare channel pool
// (66 ns), which has none of its features. Fib, Graph and ParallelFor
// did not change beyond noise.
//
// Wait helps: a waiting thread runs other tasks until the awaited one
// completes, and sleeps only when there is nothing to run. WaitEvent does the
// same until an Event is signalled (frame synchronisation).
//
// # Splitting
//
// A streaming task larger than its grain is split when it first runs into
// one piece per thread (fewer if the grain demands; 7 items over 4 threads
// give 2,2,2,1), all pushed at once so idle threads can steal them
// immediately. Each piece splits itself in halves while it is at least two
// grains long, keeping the lower half and pushing the upper half, so work
// stealing balances whatever the even split got wrong.
//
// # Executors and placement
//
// The scheduler knows no devices. A GPU (or SPU-style) executor implements
// Executor and is attached with AttachExecutor: the scheduler hands it each
// task with that affinity when it becomes runnable, and the executor calls
// Job.Done when the device finished; completion then releases dependents and
// the parent exactly as a CPU completion does. A Placer decides where Auto
// tasks run, and may split one between a device and the CPU workers. An
// Observer sees every kernel invocation with its timing, for profiling and
// for learning placement.
//
// # Alternatives rejected
//
//   - One goroutine per task (the go statement, errgroup): about 300 ns and
//     an allocation per task, and no priorities, affinity or dependencies.
//   - A central channel or mutex-protected queue: cheap for a single
//     producer, but every thread contends on one lock, and there is no
//     locality (a task's children are best run by the thread that made
//     them, while their data is in its cache).
//   - Heap-allocated task objects freed by the garbage collector: per-task
//     allocation is exactly the cost this package exists to avoid, and IDs
//     with generations make stale handles safe without reference counts.
//   - Several dependencies per task: a list per task makes every task
//     larger; a join task expresses the same thing (Molecule, seed 003).
//   - Spinning idle workers (beyond the bounded spin above): they would
//     steal the cores that a GPU driver (lavapipe here) or the rest of the
//     program needs.
//   - A static task graph built ahead of time: engines create work on the
//     fly (immediate mode), so tasks, children and dependencies are added
//     from any thread and from running kernels.
package sched
