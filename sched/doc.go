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
// spills into a shared queue; nothing grows on the hot path. Tasks with
// affinity OnThread(i) go to that registered thread's own queue and run only
// there, when it calls Wait, WaitEvent or RunPinned.
//
// An idle thread looks for work for a short while, yielding between rounds,
// then sleeps on its own channel. A thread that goes to sleep first registers
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
// parent's counter stops moving between cores once per task. One case
// needs more: if that kernel hangs and is abandoned, the parent must fail
// at once, but the stuck thread cannot pay. So the debt is one atomic word
// per thread that the owner updates with a compare-and-swap on its own
// cache line (about 5 ns), and Abandon takes and pays every thread's debt
// (paying early is always correct: those children are done).
// TestAbandonWithSiblingsDone is that case. With GOMAXPROCS 1 no line
// moves between cores and the CAS would be pure cost, so threads then
// decrement at once. Measured (EmptyTask, medians of three, one session):
// 2 threads 231 -> 119 ns per task (WaitGroup.Go about 361 ns: 0.33x;
// chanpool 62 ns: 1.9x); one core 72.6 -> 72.0 ns (chanpool 47.9: 1.5x).
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
//   - Spinning idle workers: they would steal the cores that a GPU driver
//     (lavapipe here) or the rest of the program needs.
//   - A static task graph built ahead of time: engines create work on the
//     fly (immediate mode), so tasks, children and dependencies are added
//     from any thread and from running kernels.
package sched
