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
// Kernels come in four kinds (the task model of Stefan Reinalter's Molecule
// engine: "Building a load-balanced task scheduler – Part 2: Task model",
// Molecular Musings, 2012,
// https://blog.molecular-matters.com/2012/04/12/building-a-load-balanced-task-scheduler-part-2-task-model/): Simple
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
// tag (see TaskID). When a task completes its slot's generation is bumped and the slot
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
//     that name the task and kernel; the worker survives. So does a
//     runtime.Goexit in a kernel (testing's FailNow or Fatal): it cannot
//     be stopped, but the task fails (ErrKernelPanic) as the goroutine
//     unwinds, and a worker's goroutine is replaced. A Placer that panics
//     fails the task it was placing (ErrPlacerPanic); the other dependents
//     of the same release still run.
//   - Close finishes or fails every task: nothing is lost, and no goroutine
//     is left behind. Tasks made with Create and never Run, and tasks pinned
//     to a registered thread that no longer serves them, fail with ErrClosed.
//   - A kernel that never returns cannot be stopped (Go cannot kill a
//     goroutine), but it need not stall the frame: WaitFor gives up after
//     a time-out (it runs no tasks meanwhile, so no kernel it picked up
//     can hold it past the deadline), and Abandon fails the task at once —
//     waiters, dependents and the parent see ErrAbandoned — while its slot
//     stays reserved until the kernel returns, so no ID is ever reused
//     under a running kernel.
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
// An idle thread looks for work for a bounded while (Config.SpinRounds
// rounds) without yielding its P, then sleeps on its own channel. Every 16
// rounds it yields the CPU, not the P (sched_yield): on cores shared with
// other programs the thread that has the work may be queued behind the
// spinning one. Two observations set the spin. Waking a sleeping thread
// (a futex wake and the runtime's M hand-off) takes far longer than a task,
// so a thread that sleeps between the dependent stages of a frame joins
// the next stage late: in the crowd demo both threads then took part in
// only some stages. And runtime.Gosched between rounds, as first written,
// made it worse: it puts the goroutine on the global run queue without
// waking an idle P, so a worker that had just woken another goroutine
// (queued on its own P) stood runnable while the other core idled
// (runtime trace). The spin is bounded, so an idle scheduler costs no CPU.
// The measurements are in BENCHMARKS.md (section sched-design). One wait
// does not spin: a Wait for a task that an executor holds (GPU or SPU
// affinity) sleeps as soon as it finds nothing to run. The executor
// completes the task on a goroutine of its own after tens of microseconds
// at least, and wakes the sleeper then; a spinning waiter would only take
// a CPU that the executor's threads need (the device driver's: lavapipe
// runs the GPU's work on the CPU cores). With the spin, a lone GPU task's
// round trip on two shared cores was several times that of the bare
// dispatch (BENCHMARKS.md, section gpu).
//
// A thread that goes to sleep first registers as idle and then re-checks
// every queue, and a thread that queues work first publishes it and then
// looks for sleepers: whichever comes second sees the other. That needs a
// store-load fence on both sides; the sleeper has one (a locked
// increment), but a fence in every push nearly doubled the cost of a task
// handed between two cores, so a push publishes with a plain store and x86
// may let its look for sleepers pass that store. A push racing with a
// thread's falling asleep can therefore go unannounced. The next push
// wakes the thread anyway (it reads the settled count), and for the case
// with no next push a sleeping thread rechecks the queues 1, 5, 21 and 85
// ms after falling asleep, then waits for a token alone
// (TestLostWakeUpRecovered forces the case). Beyond those four rechecks a
// sleeping thread runs only when woken, except a Wait in a kernel, which
// goes on looking for a wait-for cycle every 256 ms (see Hangs below).
// WaitFor does not sleep in the scheduler: it runs no tasks, and polls,
// sleeping at most 50 µs between looks, since it must also watch its
// deadline.
//
// A thread that runs several children of one parent in a row owes the
// parent one decrement of its open count per child, and pays the debt with
// one atomic add when it turns to a task with another parent, finds no work
// (before it sleeps), leaves Wait, WaitEvent, RunPinned or RunOne, begins
// WaitFor, or waits for that very parent; RunPinned pays it and runs what
// that readied. The debt is never held while user code runs, except a kernel of
// another child of the same parent, which the parent must wait for anyway,
// and an Observer's TaskRan (which must not block); so completion is never delayed, while the
// parent's counter stops moving between cores once per task. A thread in
// Wait that finds nothing to run also pays what other threads owe the
// awaited task (paying early is always correct: those children are done).
// One case needs more: if that kernel hangs and is abandoned, the parent
// must fail at once, but the stuck thread cannot pay, so Abandon pays every
// thread's debt. Deferring must still cost no locked instruction per task
// (one waits for the thread's earlier stores to drain, even a
// compare-and-swap on the thread's own line). So the owner only adds, with plain stores, to a counter owed
// (and names the parent in debtParent, changed only when nothing is owed),
// and whoever pays, the owner or another thread, advances a second
// counter paid to the owed it read with a compare-and-swap and pays the
// difference: no decrement is paid twice (TestDebtPaidOnce), and one that
// is deferred after a payer read owed is left to the next payer.
// TestAbandonWithSiblingsDone is the abandoned case. Threads defer on one
// core too: no line moves there, but deferring spares a locked add per
// task.
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
// lazyMisses (64) times in a row, then it takes one: a thief that answered every push at
// once moved the producer's deque and slot lines to its core and back for
// every task (registered threads, which wait for a result, steal at
// once). Nothing is left behind: a thread re-checks every deque before it
// sleeps.
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
//
// Wait helps: a waiting thread runs other tasks until the awaited one
// completes, and sleeps only when there is nothing to run. WaitEvent does the
// same until an Event is signalled (frame synchronisation). WaitFor does not
// help: a kernel it picked up could outlast its deadline, and the time-out
// is the reason to call it (a waiting thread cannot leave a kernel it runs).
//
// # Hangs refused or reported
//
// A task system hangs where something waits, so what can be seen cheaply
// is refused or reported, with an error that names the tasks:
//
//   - Cycles. Add refuses a dependency on an ancestor (ErrSelfDepend) and
//     on a task that itself depends on an ancestor (ErrCycle: X -> child
//     C -> D -> X); both reads are of lines Add reads anyway. Longer cycles
//     would need a walk per Add and are not looked for there: Close fails
//     their tasks with ErrClosed and ErrCycle, so every Wait returns.
//   - Helping. A waiting thread that runs other tasks can deadlock what
//     would not deadlock without helping: A waits for its child B, the
//     thread runs C meanwhile, C waits for D, and D depends on A, whose
//     kernel is under C's on the same stack. A wait in a kernel that finds
//     nothing to run (as it goes to sleep, and then at each recheck of
//     its sleep) looks for a wait-for cycle and fails with ErrDeadlock,
//     naming the tasks, if the task it waits for needs, through
//     dependencies, children and kernels suspended on other sleeping
//     threads, a kernel suspended under it. Children are not recorded,
//     so the walk goes backwards from the suspended kernels, along the
//     links that are: parents, dependents lists, and what sleeping
//     threads wait for (see waitCycle). A thread that fails its wait
//     wakes the other waiters, which look again: its kernel returns, but
//     its task may still need a child in the cycle. Abandoned tasks are
//     not walked: whatever waited for one (waiters, dependents, parent)
//     no longer does, so the links it keeps are stale, and its parent's
//     slot may already hold another task (a parent is named with its
//     generation, so a reused slot reads as finished). Rejected: running
//     only tasks that cannot need the waiter (TBB's isolation, Taskflow's
//     corun). A task's children are not known before it runs, so only
//     the waiting kernel's descendants are safe; every task found would
//     need a walk up its parents, and a thread whose child was stolen
//     would idle beside runnable work. Not seen: cycles through a thread
//     in WaitFor (it is not asleep in the scheduler; its time-out is the
//     way out) or through a wait from outside the scheduler's threads.
//   - Close from a kernel, or from Config.Observer's TaskRan on the
//     kernel's thread, would wait for that thread for ever: it fails with
//     ErrCloseInKernel and closes nothing. A kernel waiting in WaitEvent
//     for an event nobody signals returns once Close has run everything
//     that can run, before Close looks for tasks that can never run: a
//     task that waits for such a kernel runs after it, and only what is
//     still stuck then (a cycle) fails with ErrCycle.
//   - Calls without a Ctx. Scheduler.Wait and Scheduler.Add's
//     back-pressure, called on a scheduler thread (a kernel that has no
//     Ctx at hand), run tasks as Ctx.Wait does: blocking there could leave
//     nobody to run the awaited task. The thread is found on the slow
//     path only (the task has not finished, the pool is full), by the
//     goroutine's runtime g (nanoseconds; a registered thread's is
//     confirmed by goroutine ID, which takes a stack trace: see
//     callerCtx).
//   - Back-pressure with no way out. An Add that waits for a free slot
//     while nothing can run (every thread idle, no queued or executor
//     work: the pool holds held tasks and what waits for them) fails with
//     ErrPoolDeadlock after a short grace, instead of waiting for a Run
//     that only its blocked caller could make.
//   - Foreign IDs. A TaskID carries its scheduler's tag, unique among open
//     schedulers, and generations start above any an earlier holder of the
//     tag issued, so another scheduler's ID is refused (ErrForeignTask)
//     however many schedulers a process makes (see TaskID).
//
// # Splitting
//
// A streaming task larger than its grain is split when it first runs into
// one piece per thread (fewer if the grain demands; 7 items over 4 threads
// give 2,2,2,1), all pushed at once so idle threads can steal them
// immediately. Each piece splits itself in halves while it is at least two
// grains long, keeping the lower half and pushing the upper half, so work
// stealing balances whatever the even split got wrong. The arithmetic is
// done in 64 bits, so counts up to the type's limit split. A streaming task
// pinned to a registered thread is not split: its one thread would run
// every piece anyway, and pieces on its deque were stolen by workers.
//
// # Executors and placement
//
// The scheduler knows no devices. A GPU (or SPU-style) executor implements
// Executor and is attached with AttachExecutor: the scheduler hands it each
// task with that affinity when it becomes runnable, and the executor calls
// Job.Done when the device finished; completion then releases dependents and
// the parent exactly as a CPU completion does. An executor that is also a
// Burster is told when one completion releases several dependents at once
// (BeginBurst before their Enqueues, EndBurst after), so it can start them
// together: a GPU executor records such a burst into as few command
// buffers as its batch size allows, instead of racing the releasing
// thread one job at a time. A Placer decides where Auto
// tasks run, and may split one between a device and the CPU workers. An
// Observer sees every kernel invocation with its timing, for profiling and
// for learning placement.
//
// # Alternatives rejected
//
//   - One goroutine per task (the go statement, errgroup): a goroutine start
//     and an allocation per task, several times what a task costs here
//     (BENCHMARKS.md), and no priorities, affinity or dependencies.
//   - A central channel or mutex-protected queue: cheap for a single
//     producer, but every thread contends on one lock, and there is no
//     locality (a task's children are best run by the thread that made
//     them, while their data is in its cache).
//   - Heap-allocated task objects freed by the garbage collector: per-task
//     allocation is exactly the cost this package exists to avoid, and IDs
//     with generations make stale handles safe without reference counts.
//   - Several dependencies per task: a list per task makes every task
//     larger; a join task expresses the same thing (an empty parent, as in
//     Molecule's parent-child tasks, Reinalter 2012, above).
//   - Spinning idle workers (beyond the bounded spin above): they would
//     steal the cores that a GPU driver (lavapipe here) or the rest of the
//     program needs.
//   - A static task graph built ahead of time: engines create work on the
//     fly (immediate mode), so tasks, children and dependencies are added
//     from any thread and from running kernels.
package sched
