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
// the cache lines that move between cores per task stay few (lifecycle.go).
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
//     under a running kernel. The kernels that cannot return before it
//     does (suspended under it on its goroutine, the owner of a Join's
//     half under it, or parked in a wait of the worker whose goroutine
//     runs it outside a Wait or WaitEvent of its own) are abandoned with
//     it, so nothing waits behind a hung kernel without an error.
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
// An idle thread spins for a bounded while, then sleeps; work wakes it.
// A waiting thread keeps working until what it waits for completes, in a
// way that does not deadlock a program that has no cycle: a worker's Wait
// runs the awaited task and its descendants on top of the waiting kernel
// (nothing else there can need it), and hands the worker, with any other
// task it finds, to another goroutine, parking the waiting one until its
// task completes (handoff.go; a WaitEvent hands over whatever it finds).
// So the kernels that run on one worker do not nest: one suspended in a
// wait may resume while others that started after it are still suspended,
// and scratch kept per thread (by Index) must not be held across a wait.
// A registered thread (RunPinned's, which may be locked to its OS thread)
// does not hand over: its waits run any task, as a helping wait does, and
// so do a kernel's Add under back-pressure and RunOne (hang.go, 2): those
// can still end in ErrDeadlock on a program without a cycle. A
// thread that runs several children of one parent in a row
// pays the parent's decrements once. Streaming tasks are split into range
// pieces when they first run, and stealing balances the pieces.
//
// # Executors and placement
//
// The scheduler knows no devices. An Executor (GPU, SPU) attached with
// AttachExecutor runs the tasks of its affinity and calls Job.Done when the
// device finished; completion then releases dependents and the parent
// exactly as a CPU completion does. A Placer decides where Auto tasks run,
// and an Observer sees every kernel invocation with its timing.
//
// # Frame graphs and children run in place
//
// A frame whose tasks and edges repeat every frame is built once as a
// Graph (Scheduler.NewGraph, Graph.Add, Graph.Precede) and replayed with
// Run or RunCtx: a run validates nothing that was validated when the
// node was added, hands out no IDs and no slots, and readies each node
// with one atomic decrement of a precomputed count. A node may have any
// number of predecessors (no joins). Nodes that need the dynamic path (an
// executor, a pinned thread, a streaming node larger than a grain) take
// it, and GPU nodes with the same predecessors (a segment) leave in one
// submission, recorded once (nodes readied at the same moment but with
// other predecessors are segments of their own). A Graph reports whether
// a run, an abandoned one included, still runs (Running). Streams and
// parameters are re-pointed between runs (SetData, Params). graph.go
// opens with the design.
//
// Recursive parallelism splits with Ctx.Join (Rayon's join): one half
// runs at once on the calling thread, the other waits on the thread's
// deque as a record, not a task (no slot, ID or Wait), where another
// thread may take it; if none did, the caller runs it too, for the cost
// of a push and a pop (join.go). Ctx.RunInPlace runs one task as a
// function call (TBB's run_and_wait), for a half shared through Add
// (inplace.go).
//
// # Checked runs
//
// Config.CheckRaces refuses data races between tasks: Add (or Run of a held
// task) fails with a *RaceError when the task's streams overlap those of a
// live task that no chain of parents, dependencies and joins orders with it,
// one of the two writing, wherever either runs (race.go). Nothing else
// orders tasks for the check: an Event one task signals and another waits
// for (WaitEvent) does not, nor does a kernel's Wait for a task it added
// without a parent (that task is compared with the kernel's own). What is no
// task is not checked: a task run in place (Ctx.RunInPlace, the halves of
// Ctx.JoinTasks) is part of its caller's kernel, whose own streams must name
// what it touches. A frame graph is checked when a run starts: its nodes
// among themselves (Precede chains) unless the graph is as it was at one
// of the last two checks that passed (so a graph re-pointed between two
// buffer sets is checked once per set), and against the live tasks at
// every run (graph_race.go); the children a node's kernel adds are
// compared with every task but not with the graph's nodes. The
// environment variable VKJOBS_CHECK_RACES=1 turns it on for every
// scheduler of the process; make test sets it, so the project's tests and
// programs run checked.
//
// # Misuse the peers' users reported
//
// Hangs filed against other schedulers, written in this API
// (peer_misuse_test.go); each completes, ends with an error naming its
// cause, or is marked as the hang it still is:
//
//	Taskflow #756 corun_until: flows that wait (WaitEvent) for a future
//	    the previous flow sets: completes. A helping wait would nest flow
//	    j on top of flow i on one goroutine, and i could not return before
//	    j, whose event needs i; the wait hands the worker over instead.
//	    Written with each future as a held gate (Create, Run): completes.
//	Taskflow #435 run_and_wait: two kernels run one frame graph at once:
//	    the second run gets ErrGraphRunning, then runs it; completes.
//	Taskflow #506 nested tasks and a semaphore: the semaphore as a chain
//	    of dependencies completes; as a Go mutex held across WaitFor, the
//	    holders end with ErrTimeout naming the task they waited for (a
//	    mutex is invisible to any scheduler; a helping Wait under it can
//	    hang the thread).
//	oneTBB #1316 nested parallelism with a barrier among inner pieces:
//	    WaitEvent lets the other pieces run meanwhile; completes.
//	oneTBB #2156 a task added during a wait, one worker: completes.
//	enkiTS #128 a pinned task that loops until shutdown: its WaitEvent
//	    returns at Close; Close returns.
//	enkiTS #51 waiting for all with a registered thread that serves
//	    nothing: WaitFor ends with ErrTimeout; Close fails the pinned task
//	    with ErrClosed and returns.
//	Rayon's join whose second closure waits for a signal from the first
//	    (the first is queued under it and never runs): Ctx.Join with b in
//	    WaitEvent for a's event completes, the worker handed over or a run
//	    by the registered thread's wait (join_test.go).
//	Taskflow #152, #575 an executor made and waited for inside a task: a
//	    kernel makes a Scheduler, waits for it and closes it, three deep:
//	    completes (misuse_shapes_test.go, as the rows below).
//	Taskflow #107 an empty flow: an empty graph's Run, RunCtx and Start,
//	    and Wait(NoTask): complete.
//	Taskflow #479 a task that throws: ErrKernelPanic naming the kernel.
//	Taskflow #424 a wait inside the completion callback: Observer.TaskRan
//	    waiting for its task, its parent or a dependent ends with
//	    ErrDeadlock naming the Observer (it hung); a panic in TaskRan fails
//	    the task with ErrObserverPanic (it killed the process).
//	oneTBB #324 a wait inside its own task_group: a kernel waiting for its
//	    parent or grandparent ends with ErrDeadlock naming the chain.
//	oneTBB #2056 run on one thread, wait on another: a second registered
//	    thread's Wait takes the work; completes.
//	Rayon #446 nested install: a graph node runs another graph under 100
//	    nested RunInPlace calls: completes.
//	Rayon #835 a blocking scope on a pool of one: a kernel on the only
//	    worker blocks on a bounded channel whose consumers the main
//	    thread's Wait runs: completes.
//	Rayon #592 a lock held across join: still hangs now and then (the
//	    worker handed over runs a kernel that blocks on the lock); Join's
//	    doc forbids it, and the test runs only with
//	    VKJOBS_RUN_KNOWN_HANGS=1.
//	enkiTS #48 pinned tasks added as their thread falls asleep: complete.
//	enkiTS #75 waiting for no task: RunOne with nothing returns false.
//
// # Where the design is
//
// Each protocol has its own file, which opens with its design as numbered
// steps: ids.go (tags, generations, checks of IDs), lifecycle.go (a task
// from Add to the reuse of its slot), pool.go (slots, the free list,
// back-pressure), executor.go (executors, bursts, placement), worker.go
// (the thread loop, stealing, splitting), handoff.go (waits that hand a
// worker to another goroutine), debt.go (deferred decrements),
// wake.go (sleeping, waking, the lost wake-up), wait.go (Wait, WaitFor,
// WaitEvent, RunPinned, RunOne), inplace.go (a child run as a function
// call), join.go (Join: a split whose shared half is a deque record),
// graph.go (frame graphs), hang.go (cycles and deadlocks refused or
// reported), abandon.go (Abandon), caller.go (calls without a Ctx) and
// close.go (Close and the drain). What a hang costs the caller is an
// error, never a wait for ever, where it can be seen cheaply: ErrSelfDepend
// and ErrCycle at Add, ErrDeadlock for a circular wait (a real cycle, or
// one that helping made on a registered thread),
// ErrCloseInKernel, ErrPoolDeadlock for back-pressure with no way out, and
// ErrForeignTask. The measurements are in BENCHMARKS.md (sections
// sched-peers and sched-design).
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
//   - A wait that helps with any task, on the waiting kernel's stack (as
//     this package did, and Taskflow's corun, TBB without isolation): the
//     kernel cannot return before the tasks run on top of it, so one of
//     them that waits for a task needing that kernel (a dependent of it,
//     a task it holds, an event it will set) deadlocks a program with no
//     cycle. Detecting that (ErrDeadlock) failed valid programs; handing
//     the worker over (handoff.go) runs them.
//   - A wait that only runs what cannot need the waiter (TBB's isolation)
//     and otherwise sleeps: the worker idles beside runnable work while
//     the awaited task runs elsewhere, and a WaitEvent could run nothing.
//     The awaited task's subtree is still what a wait runs itself: it is
//     found with a short walk up the parents, and the common case (a
//     child popped back from the thread's own deque) costs one compare.
//   - A goroutine per waiting kernel without a limit, or one made per
//     hand-off: a hand-off reuses a free goroutine of the worker (made
//     once, when waits first nest that deep), so steady state allocates
//     nothing; at a bound per worker (maxRunners) waits help instead.
//   - Resuming parked kernels in stack order (the innermost first), which
//     would keep kernels nested per thread: it brings back the helping
//     deadlock (the outer kernel waits for the inner one to return).
//   - Handing registered threads over too: their goroutine may be locked
//     to an OS thread (a render or main thread), and the tasks pinned to
//     it must run there.
//   - Only a static task graph built ahead of time: engines create work on
//     the fly (immediate mode), so tasks, children and dependencies are
//     added from any thread and from running kernels. Frame graphs are the
//     replayed form of what repeats, beside the dynamic API, not instead.
package sched
