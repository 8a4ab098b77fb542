package sched

import (
	"fmt"
	"sync/atomic"
)

// Executors and placement: tasks that do not run on the CPU threads.
//
// The scheduler knows no devices.
//
//  1. A GPU (or SPU-style) executor implements Executor and is attached
//     with AttachExecutor, once per kind, before such tasks are added.
//  2. When a task with that affinity becomes runnable, ready counts it in
//     execJobs, records its ID in the slot (execID: a Wait for it sleeps
//     at once, see Ctx.Wait) and hands it over (Enqueue).
//  3. The executor calls Job.Done when the device finished: completion
//     then releases dependents and the parent exactly as a CPU completion
//     does, and execJobs drops after the dependents are queued (so Close
//     cannot see the scheduler quiescent in between).
//  4. An executor that is also a Burster is told when one completion
//     releases several dependents at once (BeginBurst before their
//     Enqueues, EndBurst after: releaseBurst, lifecycle.go), so it can
//     start them together: a GPU executor records such a burst into as
//     few command buffers as its batch size allows, instead of racing the
//     releasing thread one job at a time.
//  5. A Placer decides where Auto tasks run (place), at the moment they
//     become runnable, and may split one between a device and the CPU
//     workers (coExecute: two range children of the task). A Placer that
//     panics fails the task it was placing (ErrPlacerPanic).
//  6. Close closes each executor once; it finishes or fails its jobs.
//  7. An executor that is also a SegmentExecutor keeps a frame graph's
//     nodes of its kind recorded across runs (graph.go, step 6): the graph
//     hands it each segment once, at the seal (NewSegment), and then, per
//     run, one job that stands for the whole segment (Job.Segment names
//     it), instead of one job per node.

// Placer decides where an Auto task runs, at the moment it becomes runnable.
type Placer interface {
	// Place returns AnyWorker, GPU or SPU, and optionally split > 0: the
	// first split work items run on the returned device and the rest on
	// CPU workers (co-execution). d is the task's own data: Place may
	// raise d.Grain (to the task's size: CPU workers run it unsplit) and
	// must change nothing else in it. It is called concurrently. A panic in
	// Place fails the task with ErrPlacerPanic. Place must return or
	// panic: runtime.Goexit in it (testing's FailNow or Fatal, which
	// belong in the test's goroutine only) cannot be stopped, and the
	// tasks its caller was readying are then lost.
	Place(id KernelID, k *Kernel, d *TaskData) (where Affinity, split uint32)
}

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

// A SegmentExecutor is an Executor that can keep a frame graph's GPU
// nodes prepared across runs, as a CUDA graph does: the graph groups its
// GPU nodes into segments (the nodes readied together: the same
// predecessors) and, when it seals, hands each segment to NewSegment once.
// Each run then enqueues one job per segment, for which Job.Segment
// returns the handle NewSegment gave; the executor runs every node of the
// segment and calls that job's Done once: with nil when every node ran,
// after Job.FailNode for each node that could not run alone (the others'
// successors still run), or with an error (naming the node) that fails
// the whole segment. A graph with a segment runs one job of it at a time.
//
// Between runs, and only then, the graph calls Changed when SetData
// re-pointed a node's data, and Close when it is sealed again or Released;
// Params may change between runs without a call (the executor compares
// them). NewSegment failing is not an error of the graph: its nodes then
// take the dynamic path, one job each, where their errors show at the run.
type SegmentExecutor interface {
	Executor
	NewSegment(nodes []SegmentNode) (Segment, error)
}

// SegmentNode is one node of a segment handed to NewSegment.
type SegmentNode struct {
	Node   GraphNode
	Kernel KernelID
	K      *Kernel
	// Data is the graph's own copy of the node's data (Begin 0, End
	// Elements), validated; the executor reads it at each run. It stays
	// at this address until the segment's Close, and changes only
	// between runs (SetData, Params).
	Data *TaskData
}

// Segment is a SegmentExecutor's handle on a segment (see there).
type Segment interface {
	// Changed says that node i (an index into NewSegment's nodes) was
	// given new data by SetData since the last run.
	Changed(i int)
	// Close frees what the executor holds for the segment. No job of it
	// is running; it is called once.
	Close()
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

// Segment returns the graph segment this job runs, as its executor's
// NewSegment returned it, or nil for a job that is one task.
func (j Job) Segment() Segment {
	sl := &j.s.slots[j.idx]
	if sl.task.Kernel != KernelGraph || sl.task.Data.Params[0] != runSegment {
		return nil
	}
	g, _ := sl.task.Data.Data.(*Graph)
	if g == nil || int(sl.task.Data.Params[1]) >= len(g.segs) {
		return nil
	}
	return g.segs[sl.task.Data.Params[1]].h
}

// FailNode fails member i (an index into NewSegment's nodes) of the
// segment this job runs, alone, with err (which should name the node):
// the graph's run returns it as that node's error and that member's
// successors do not run, while the successors of the members that ran are
// released when Done(nil) completes the job, as they would be on the
// dynamic path, where each node is a task of its own. Call it before Done,
// once for each member that could not run (its pipeline, a binding); a
// Done with an error still fails the whole segment (a submission, the
// device). It does nothing for a job that runs no segment, an i out of
// range, a nil err, or a job already completed (Done): its slot may hold
// the graph's next job by then, whose run did nothing wrong.
func (j Job) FailNode(i int, err error) {
	sl := &j.s.slots[j.idx]
	if err == nil || j.s.IsFinished(j.id) || sl.task.Kernel != KernelGraph || sl.task.Data.Params[0] != runSegment {
		return
	}
	if g, _ := sl.task.Data.Data.(*Graph); g != nil {
		g.failMember(int(sl.task.Data.Params[1]), i, err)
	}
}

// Scheduler returns the job's scheduler.
func (j Job) Scheduler() *Scheduler { return j.s }

// Abandoned reports whether Scheduler.Abandon failed the task. An executor
// checks it when it takes the job, before any work: an abandoned job is
// completed with Done at once and never run, as a CPU worker never runs a
// task abandoned before it started (its waiters already saw the error, and
// may have reused the memory its streams name).
func (j Job) Abandoned() bool { return uint32(j.s.slots[j.idx].deps.Load()) == depsAbandoned }

// Done completes the job's own work. err != nil fails the task (wrapped in
// a TaskError); dependents and the parent are released exactly as for a CPU
// task. Calling Done twice is a bug that corrupts the pool.
func (j Job) Done(err error) {
	j.s.finish(j.idx, err, nil)
	j.s.execJobs.Add(-1) // after the dependents are queued (see quiescent)
}

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
