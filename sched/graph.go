package sched

// Frame graphs: a frame whose tasks and edges are the same every frame is
// built once and replayed.
//
// The design, as steps:
//
//  1. Build. Graph.Add validates a node's task once (its kernel is
//     registered, its streams fit the kernel) and stores it; Precede adds an
//     edge. Nodes may have any number of predecessors (a dynamic Task has one
//     Dependency, so a join per extra edge; a graph needs none).
//  2. Seal. The first Run after a change lays the edges out as one array of
//     successor lists (CSR), counts each node's predecessors, lists the roots
//     and refuses a cycle, naming a node on it. Nothing of this is redone
//     while the graph is unchanged.
//  3. Run. One held join task (the run's root) and one runner task per share
//     of the roots go through the scheduler; nothing else does. A runner
//     takes a range of roots, hands the upper half of a long range to its
//     deque while other threads could take it (binary splitting, as a
//     streaming task's pieces), and runs each node in place: a call of the
//     kernel's CPU function with the runner's Ctx, no slot, no ID, no queue
//     trip. A finished node decrements its successors' counts with one atomic
//     add each; the successor it takes to zero is ready, and its count is
//     stored back to its predecessor count at once (nothing else touches it
//     in this run), so the next run starts from the right counts with no
//     pass over the nodes. The readier runs a ready node itself, depth
//     first from a small local stack; when the scheduler has more than one
//     thread (and Go more than one P), a second ready node goes to the
//     deque as a runner task of its own while the deque is empty, so other
//     threads always find something to steal and the rest stays local.
//  4. Dynamic nodes. A node that cannot run in place — an affinity other
//     than AnyWorker (a registered thread, the GPU, the SPU executor, Auto),
//     or a streaming node larger than one grain, which the scheduler splits —
//     is added as an ordinary task (a child of the run's root) followed by a
//     runner task that depends on it and releases the node's successors when
//     it completes. Everything the dynamic path offers (executors, splitting,
//     placement) works in a graph, at the dynamic path's cost. Hand-offs
//     in a row to an executor that is a Burster are bracketed in one burst,
//     ended before the runner calls a CPU kernel, so GPU nodes readied
//     together leave in one submission.
//  5. Errors. A kernel that returns an error or panics stops its node's
//     successors; the rest of the graph runs, and Run returns the first
//     error, naming the node and its kernel. So does a runtime.Goexit in
//     a kernel (a test's FailNow): the runner's goroutine unwinds, and
//     hands what it still held to new runner tasks first. Counters left
//     part-way by a failed run are reset at the start of the next.
//  6. GPU segments. When the GPU executor is a SegmentExecutor (package
//     gpu's is), the seal groups the GPU nodes that have the same
//     predecessors (as a list: the nodes readied together, by whichever
//     predecessor finishes last) into a segment, hands each segment to the
//     executor once (NewSegment), and contracts it to its first node, the
//     leader: edges into the other members are dropped (the leader has
//     the same ones) and edges out of them leave from the leader. A run
//     then readies the leader as one node, and hands the executor one task
//     for the whole segment (KernelGraph with GPU affinity; Job.Segment
//     names the segment) plus the runner that releases the successors of
//     every member when it completes: two tasks a segment, not two a node.
//     A member that cannot run (its pipeline, a binding) fails alone
//     (Job.FailNode): the run returns its error, its successors do not
//     run, and the successors of the members that ran are released, each
//     member's own (the seal keeps a list per member beside the leader's
//     union), as on the dynamic path; an error of the whole segment (its
//     submission, the device) stops the successors of every member.
//     The executor keeps the segment recorded (package gpu: one command
//     buffer submitted again each run, re-recorded only when what it binds
//     changed) and so does per run only what must happen per run. Grouping
//     by equal predecessors adds no wait and no cycle: the members were
//     readied at the same moment anyway, and a path from a member back to
//     a predecessor would be a cycle of the graph itself. SetData tells
//     the executor (Segment.Changed); Params it compares itself. A second
//     seal (after Add or Precede) or Release closes the segments; a graph
//     dropped without Release keeps them until the executor's Close. A
//     run of a graph with GPU or SPU nodes ends with an executor's
//     completion, so its wait sleeps as soon as it finds nothing to run,
//     as a Wait for an executor's task does (Ctx.Wait), instead of
//     spinning on a CPU that the device's threads need (lavapipe's, on a
//     CPU device).
//     Rejected: one segment per connected group of GPU nodes (a GPU chain
//     in one submission): members readied at different moments would wait
//     for each other, and contracting such a group can close a cycle
//     through a CPU node, so it needs barriers inside the command buffer
//     and a cycle check per group; a chain is one segment per level.
//     Rejected too: a segment per GPU node submitted together (one
//     vkQueueSubmit of many command buffers): the scheduler's two tasks,
//     the hand-off and the Done per node would stay.
//
//  7. Started runs. Start is Run without the wait: it returns the run's
//     join (the held root of step 3), which finishes when every node has
//     run, and which a caller waits for, makes a dependency, or hands to
//     another graph's Start as an after. The roots' runner and the join
//     depend on the afters (one directly; several through a join task,
//     the scheduler's own), so no node starts before them and the race
//     check sees the graph ordered after them. A runner that meets a
//     node's error fails with it, so the join fails too and a Wait on it
//     returns the error. A pipeline of frames is then a chain of runs of
//     distinct graphs (one per buffer set, or per stage), each started
//     after the runs it follows, many in flight at once.
//     Rejected: a run started while the same graph's previous run is in
//     flight queuing behind it (the counters, the error and a segment's
//     one job in flight belong to the run in progress; its reset on a
//     failure would race with the queued run's start): Start refuses it.
//
// A GPU node that is not in a segment (no SegmentExecutor, or NewSegment
// failed) takes the dynamic path: the executor batches the hand-offs of a
// burst, but records them again at each run.
//
// The Observer (Config.Observer) is told of each node run in place, as a
// RunEvent on the runner's thread with Task NoTask (the node is no task)
// and Parent the run's join: traces and per-kernel counts see a graph's
// kernels as they see a dynamic frame's. Without an Observer this costs
// one branch per node.
//
// Invariants: a node runs at most once per run, and only after every
// predecessor's kernel returned; a run allocates nothing and validates
// nothing that Add, SetData or the seal already validated; one run of a
// graph at a time (Run and Start refuse a second while a run is in
// progress or a started run's join has not finished, nor, for an
// abandoned join, while runners of its run still run; a GPU segment
// relies on it: one job of it in flight); a graph is changed (Add,
// Precede, SetData, Params' memory, Release) only between runs.
//
// A node's successors start when its kernel returns. Children a node's
// kernel adds through its Ctx are children of the runner, so the run waits
// for them, but its successors do not: a node whose children must finish
// first should be a dynamic node (give it a dependency-free join in the
// dynamic API), or wait for them in its kernel.
//
// Rejected: one task per node with the dynamic path's Dependency chain
// (that is today's cost, plus a join per second predecessor); resetting
// every counter before each run (a pass over all nodes, a cache miss per
// node on large graphs); a graph-private worker pool (a second set of
// threads competing with the scheduler's for the same cores).

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// GraphNode names a node of a Graph: its index in the order of Add.
type GraphNode int32

// ErrGraphRunning is returned by a change to a graph, a second Run or a
// Start while a run of it is in progress (a started run: until its join
// has finished and, if it was abandoned, every runner of it returned).
var ErrGraphRunning = errors.New("sched: graph is running")

// Graph is a frame graph: tasks and their order, built once and run many
// times (see the package documentation, and the top of graph.go for the
// design). Build it with Scheduler.NewGraph, Add and Precede; run it with
// Run, or start it with Start. Its methods are for one goroutine at a time.
type Graph struct {
	s    *Scheduler
	hot  []graphHot  // per node, what a run touches
	data []TaskData  // per node, what the kernel sees
	task []graphCold // per node, the rest of the task

	edges [][2]int32 // before the seal: (before, after)
	succ  []int32    // after the seal: successor lists, hot[i].succ0..succ1
	roots []int32
	segs  []graphSeg // after the seal: the GPU segments (step 6)
	dev   bool       // after the seal: some node has GPU or SPU affinity
	seal  bool
	dirty bool // a failed run may have left counters part-way

	running  atomic.Bool // a run is being started, or a Run is in progress
	root     TaskID      // the current (or last) run's join
	inflight TaskID      // the join of the last Start, until seen finished
	par      bool        // more than one thread and P: share ready nodes

	errMu    sync.Mutex
	firstErr error
}

// graphHot is a node's part that a run reads: 32 bytes, two per cache line.
type graphHot struct {
	pending atomic.Int32 // predecessors not yet finished in this run
	preds   int32        // predecessors in all
	succ0   int32        // successors: succ[succ0:succ1]
	succ1   int32
	flags   uint32
	fn      KernelFunc // nil: an empty node
}

type graphCold struct {
	kernel   KernelID
	affinity Affinity
	priority Priority
	k        *Kernel
	seg      int32 // 1 + the index in segs of the node's segment, or 0
	segPos   int32 // the node's index in its segment
}

// graphSeg is a GPU segment: the executor's handle, and the members,
// leader first.
type graphSeg struct {
	h     Segment
	nodes []int32
	// succ is each member's own successors in the contracted layout: the
	// leader's list is their union, which a run releases when every
	// member ran; after a member failed alone (Job.FailNode), the others'
	// lists are released.
	succ [][]int32
	// This run's members that failed alone, and the first of their
	// errors: written by the executor before the segment's Done, read by
	// the release runner after it (or reset by the next run's start).
	failed    []bool
	anyFailed bool
	err       error
}

const (
	nodeDynamic uint32 = 1 << iota // goes through the scheduler as a task
	nodeSegment                    // leads a GPU segment (step 6)
)

// Runner modes (Params[0] of a runner task).
const (
	runRoots   = iota // run roots[Params[1]:Params[2]]
	runNode           // run node Params[1]
	runRelease        // node Params[1] completed as a task: release its successors
	runSegment        // a GPU segment's task (Params[1]: its index, [2]: its leader): the executor's, never run here
)

// graphGrain is the fewest roots a runner keeps for itself before it
// hands the upper half of its range to the deque.
const graphGrain = 64

// graphStack is the depth of a runner's local stack of ready nodes; a
// deeper fan-out goes to the deque.
const graphStack = 64

// NewGraph returns an empty graph whose nodes run on s.
func (s *Scheduler) NewGraph() *Graph {
	return &Graph{s: s}
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.hot) }

// Add adds a node that runs t. The task is validated now (kernel
// registered, streams matching it, affinity and priority valid), not at
// each run. Its Parent and Dependency must be unset: order nodes with
// Precede.
func (g *Graph) Add(t *Task) (GraphNode, error) {
	if g.busy() {
		return -1, ErrGraphRunning
	}
	if t.Parent != NoTask || t.Dependency != NoTask {
		return -1, fmt.Errorf("sched: graph node %d (kernel %d): Parent and Dependency are for dynamic tasks; order graph nodes with Precede", len(g.hot), t.Kernel)
	}
	if len(g.hot) == 1<<31-1 {
		return -1, fmt.Errorf("sched: graph: too many nodes")
	}
	// What the task's own Add would refuse whatever is attached later:
	// refused here once, not at every run (an in-place node would never
	// meet the check). A GPU or SPU node's executor may be attached after
	// the build: a run without it fails that node (ErrNoExecutor).
	if uint8(t.Priority-PriorityLow) > uint8(PriorityHigh-PriorityLow) {
		return -1, fmt.Errorf("sched: graph node %d (kernel %d): %w %d", len(g.hot), t.Kernel, ErrBadPriority, t.Priority)
	}
	switch a := t.Affinity; a {
	case AnyWorker, Auto, GPU, SPU:
	default:
		if i, ok := a.Thread(); !ok || i >= g.s.cfg.MainThreads {
			return -1, fmt.Errorf("sched: graph node %d (kernel %d): %w %v (MainThreads %d)", len(g.hot), t.Kernel, ErrBadAffinity, a, g.s.cfg.MainThreads)
		}
	}
	n := len(g.hot)
	g.hot = append(g.hot, graphHot{})
	g.data = append(g.data, TaskData{})
	g.task = append(g.task, graphCold{})
	if err := g.set(n, t.Kernel, t.Affinity, t.Priority, &t.Data); err != nil {
		g.hot, g.data, g.task = g.hot[:n], g.data[:n], g.task[:n]
		return -1, err
	}
	g.seal = false
	return GraphNode(n), nil
}

// set validates and stores node n's task.
func (g *Graph) set(n int, kid KernelID, aff Affinity, pri Priority, d *TaskData) error {
	k := g.s.reg.Lookup(kid)
	if k == nil {
		return fmt.Errorf("sched: graph node %d: kernel %d: %w", n, kid, ErrUnknownKernel)
	}
	if err := k.Validate(kid, d); err != nil {
		return fmt.Errorf("sched: graph node %d: %w", n, err)
	}
	c := &g.task[n] // its segment, if any, stays
	c.kernel, c.affinity, c.priority, c.k = kid, aff, pri, k
	g.data[n] = *d
	g.data[n].Begin, g.data[n].End = 0, d.Elements
	h := &g.hot[n]
	h.flags &^= nodeDynamic
	h.fn = nil
	grain := d.Grain
	if grain == 0 {
		grain = k.Grain
	}
	switch {
	case kid == KernelNone && aff == AnyWorker:
	case aff != AnyWorker || (k.Kind != Simple && d.Elements > grain):
		h.flags |= nodeDynamic
	default:
		h.fn = k.CPU
	}
	return nil
}

// SetData re-points node n's streams, element count and parameters for the
// next runs, validating only this node. Not during a run.
func (g *Graph) SetData(n GraphNode, d *TaskData) error {
	if g.busy() {
		return ErrGraphRunning
	}
	if n < 0 || int(n) >= len(g.hot) {
		return fmt.Errorf("sched: graph: no node %d (the graph has %d)", n, len(g.hot))
	}
	c := &g.task[n]
	if err := g.set(int(n), c.kernel, c.affinity, c.priority, d); err != nil {
		return err
	}
	if c.seg != 0 && g.seal {
		g.segs[c.seg-1].h.Changed(int(c.segPos))
	}
	return nil
}

// Release frees what executors hold for the graph between runs: the
// recorded command buffers of its GPU segments, their descriptor sets and
// staging memory, and their references to GPU buffers (a buffer closed
// while a segment binds it is freed only then). The graph stays as it is;
// its next Run seals it again and prepares its segments anew. Not during
// a run.
func (g *Graph) Release() error {
	if g.busy() {
		return ErrGraphRunning
	}
	g.closeSegments()
	g.seal = false
	return nil
}

// Params returns node n's parameters, to change between runs without
// revalidation (parameters are plain words: nothing in them is checked).
// The pointer is valid until the next Add.
func (g *Graph) Params(n GraphNode) *Params { return &g.data[n].Params }

// Precede orders before ahead of after: after's kernel starts only once
// before's returned (or, for a dynamic node, its task completed).
func (g *Graph) Precede(before, after GraphNode) error {
	if g.busy() {
		return ErrGraphRunning
	}
	n := GraphNode(len(g.hot))
	if before < 0 || before >= n || after < 0 || after >= n {
		return fmt.Errorf("sched: graph: edge %d -> %d names a node the graph (%d nodes) does not have", before, after, n)
	}
	if before == after {
		return fmt.Errorf("sched: graph: node %d cannot precede itself", before)
	}
	g.edges = append(g.edges, [2]int32{int32(before), int32(after)})
	g.seal = false
	return nil
}

// sealGraph lays out the successor lists, counts predecessors, lists the
// roots, refuses a cycle, and forms the GPU segments (step 6).
func (g *Graph) sealGraph() error {
	g.closeSegments()
	n := len(g.hot)
	preds := g.layout(nil, nil)
	// Kahn's algorithm: whatever is never reached from the roots is on,
	// or behind, a cycle.
	left := append([]int32(nil), preds...)
	queue := append([]int32(nil), g.roots...)
	seen := 0
	for len(queue) > 0 {
		x := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		seen++
		for _, y := range g.succ[g.hot[x].succ0:g.hot[x].succ1] {
			if left[y]--; left[y] == 0 {
				queue = append(queue, y)
			}
		}
	}
	if seen != n {
		for i := range left {
			if left[i] > 0 {
				return fmt.Errorf("sched: graph: %d of %d nodes are on or behind a cycle of Precede edges (node %d, kernel %d %q, among them)",
					n-seen, n, i, g.task[i].kernel, g.task[i].k.Name)
			}
		}
	}
	g.formSegments()
	g.dev = false
	for i := range g.task {
		if a := g.task[i].affinity; a == GPU || a == SPU {
			g.dev = true
		}
	}
	g.seal, g.dirty = true, false
	return nil
}

// layout lays the edges out as successor lists (CSR), sets each node's
// predecessor count (and pending count) and lists the roots; it returns
// the predecessor counts. With rep and skip (step 6), the edges of node i
// leave from rep[i], and the edges into a node marked in skip are
// dropped; nil: the graph as built.
func (g *Graph) layout(rep []int32, skip []bool) []int32 {
	n := len(g.hot)
	from := func(i int32) int32 {
		if rep != nil {
			return rep[i]
		}
		return i
	}
	dropped := func(i int32) bool { return skip != nil && skip[i] }
	cnt := make([]int32, n+1)
	m := 0
	for _, e := range g.edges {
		if !dropped(e[1]) {
			cnt[from(e[0])+1]++
			m++
		}
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	g.succ = make([]int32, m)
	next := append([]int32(nil), cnt[:n]...)
	preds := make([]int32, n)
	for _, e := range g.edges {
		if dropped(e[1]) {
			continue
		}
		a := from(e[0])
		g.succ[next[a]] = e[1]
		next[a]++
		preds[e[1]]++
	}
	g.roots = g.roots[:0]
	for i := range g.hot {
		h := &g.hot[i]
		h.succ0, h.succ1, h.preds = cnt[i], cnt[i+1], preds[i]
		h.pending.Store(preds[i])
		if preds[i] == 0 && !dropped(int32(i)) {
			g.roots = append(g.roots, int32(i))
		}
	}
	return preds
}

// formSegments groups the GPU nodes by their list of predecessors, hands
// each group to the GPU executor if it is a SegmentExecutor, and lays the
// edges out again with each segment contracted to its leader (step 6). A
// group the executor refuses stays dynamic.
func (g *Graph) formSegments() {
	se, ok := g.s.execs[ExecGPU].(SegmentExecutor)
	if !ok {
		return
	}
	n := len(g.hot)
	in := make([][]int32, n)
	for _, e := range g.edges {
		if g.task[e[1]].affinity == GPU {
			in[e[1]] = append(in[e[1]], e[0])
		}
	}
	groups := map[string][]int32{}
	var order []string
	var key []byte
	for i := range n {
		if g.task[i].affinity != GPU {
			continue
		}
		slices.Sort(in[i])
		key = key[:0]
		for _, p := range in[i] {
			key = binary.LittleEndian.AppendUint32(key, uint32(p))
		}
		k := string(key)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], int32(i))
	}
	var rep []int32
	var skip []bool
	for _, k := range order {
		members := groups[k]
		nodes := make([]SegmentNode, len(members))
		for j, m := range members {
			nodes[j] = SegmentNode{Node: GraphNode(m), Kernel: g.task[m].kernel, K: g.task[m].k, Data: &g.data[m]}
		}
		h, err := se.NewSegment(nodes)
		if err != nil || h == nil {
			continue
		}
		if rep == nil {
			rep, skip = make([]int32, n), make([]bool, n)
			for i := range rep {
				rep[i] = int32(i)
			}
		}
		g.segs = append(g.segs, graphSeg{h: h, nodes: members})
		lead := members[0]
		g.hot[lead].flags |= nodeSegment
		for j, m := range members {
			g.task[m].seg, g.task[m].segPos = int32(len(g.segs)), int32(j)
			rep[m], skip[m] = lead, j > 0
		}
	}
	if rep == nil {
		return
	}
	g.layout(rep, skip)
	for i := range g.segs {
		sg := &g.segs[i]
		sg.succ, sg.failed = make([][]int32, len(sg.nodes)), make([]bool, len(sg.nodes))
	}
	for _, e := range g.edges {
		if c := &g.task[e[0]]; c.seg != 0 && !skip[e[1]] {
			sg := &g.segs[c.seg-1]
			sg.succ[c.segPos] = append(sg.succ[c.segPos], e[1])
		}
	}
}

// failMember fails member i of segment seg alone for this run
// (Job.FailNode). An executor may report members from several goroutines
// at once, so the segment's record is written under errMu, with the run's
// first error; Done orders it before the release runner reads it.
func (g *Graph) failMember(seg, i int, err error) {
	if seg < 0 || seg >= len(g.segs) {
		return
	}
	sg := &g.segs[seg]
	if i < 0 || i >= len(sg.failed) {
		return
	}
	g.errMu.Lock()
	defer g.errMu.Unlock()
	if sg.failed[i] {
		return
	}
	sg.failed[i] = true
	if !sg.anyFailed {
		sg.anyFailed, sg.err = true, err
	}
	if g.firstErr == nil {
		g.firstErr = err
	}
}

// clearFailed forgets the members failed alone in a run whose segment's
// release never ran (the run failed otherwise too, or was abandoned).
func (g *Graph) clearFailed() {
	for i := range g.segs {
		if sg := &g.segs[i]; sg.anyFailed {
			clear(sg.failed)
			sg.anyFailed, sg.err = false, nil
		}
	}
}

// closeSegments closes the GPU segments and clears their marks.
func (g *Graph) closeSegments() {
	for _, sg := range g.segs {
		sg.h.Close()
		for _, m := range sg.nodes {
			g.task[m].seg, g.task[m].segPos = 0, 0
			g.hot[m].flags &^= nodeSegment
		}
	}
	clear(g.segs)
	g.segs = g.segs[:0]
}

// Run runs the graph once and returns when every node has run (or
// failed), with the first error. It may be called from any goroutine,
// including a kernel's (its Wait helps, as Scheduler.Wait does); use
// RunCtx from a registered thread or a kernel that has its Ctx.
func (g *Graph) Run() error { return g.run(nil) }

// RunCtx is Run through c (the calling thread's Ctx), which spares the
// lookup of the calling thread.
func (g *Graph) RunCtx(c *Ctx) error { return g.run(c) }

// Start starts a run of the graph and returns at once with the run's join:
// a task that finishes when every node has run, to Wait on (its error is
// the run's first: a node's, wrapped as a failed child) or to pass as a
// Dependency, or as an after of another graph's Start. No node starts
// before every task in after has finished (NoTask entries, and tasks
// already finished, are skipped; several are joined by a held task with
// one empty child each, the scheduler's join); the join, too, depends on
// them, so the race check (Config.CheckRaces) sees the graph's nodes
// ordered after them. c is the calling thread's Ctx, or nil from any
// goroutine.
//
// One run of a graph at a time: while the previous run's join has not
// finished, Start (like Run and every change to the graph) returns
// ErrGraphRunning. A join that was abandoned (Abandon, after a WaitFor
// that timed out) reads as finished at once, but the run's nodes go on:
// the graph stays running until every node that had started returned
// (Running tells when).
// A run does not queue behind the previous one: its nodes' counters,
// its error and its GPU segments' single job in flight belong to the run
// in progress, and a refused Start tells the caller that it reuses a
// graph (and the buffers its nodes name) too early — where runs must
// follow each other, give each its own graph (one per buffer set, say)
// and order them with after. Rejected: chaining the new
// run behind the one in flight (its counters would have to be reset when
// the previous run ends, by a task, and a failed run's reset would race
// with the next run's start).
//
// Start allocates nothing once the graph is sealed (after does not escape).
func (g *Graph) Start(c *Ctx, after ...TaskID) (TaskID, error) {
	if !g.running.CompareAndSwap(false, true) {
		return NoTask, ErrGraphRunning
	}
	if after == nil {
		after = []TaskID{} // non-nil: a Start always has a join (no allocation: zero length)
	}
	root, err := g.begin(c, after)
	g.running.Store(false)
	if err != nil {
		return NoTask, err
	}
	g.inflight = root
	return root, nil
}

// Running reports whether a run of the graph is in progress: a Run, a
// started run whose join has not finished, or an abandoned run whose
// nodes still run (a join abandoned after WaitFor timed out reads as
// finished at once, but a node's kernel, or a GPU segment still on the
// device, which copies its host outputs back when it completes, may still
// write the memory the nodes' streams name). Reuse that memory, or expect
// Run, Start and the changes to succeed, only once it reports false. For
// the goroutine that runs the graph, as the other methods.
func (g *Graph) Running() bool { return g.busy() }

// busy reports whether a run is being started, running synchronously, or
// in flight (its join not settled).
func (g *Graph) busy() bool {
	return g.running.Load() || (g.inflight != NoTask && !g.settled(g.inflight))
}

// settled reports whether the run whose join is root is over: the join's
// slot has moved on, which happens only once every runner task (its
// children) completed. IsFinished is not enough: an abandoned join reads
// as finished at once while its runners still run nodes and count down
// the successors' counters, which the next run would share.
func (g *Graph) settled(root TaskID) bool {
	return g.s.slots[root.index()].genLoad() != root.gen()
}

func (g *Graph) run(c *Ctx) error {
	if !g.running.CompareAndSwap(false, true) {
		return ErrGraphRunning
	}
	defer g.running.Store(false)
	root, err := g.begin(c, nil)
	if err != nil || root == NoTask {
		return err
	}
	s := g.s
	if c != nil {
		err = c.Wait(root)
	} else {
		err = s.Wait(root)
	}
	if err != nil {
		// The join failed: it may have been abandoned, with runners
		// still running and failing nodes (without an error, every
		// runner completed before the join, and wrote before it).
		g.errMu.Lock()
		if g.firstErr != nil {
			err = g.firstErr
		}
		g.errMu.Unlock()
	} else if g.firstErr != nil {
		err = g.firstErr
	}
	if err != nil {
		g.dirty = true
		if !g.settled(root) {
			// The join was abandoned (Abandon of the ID an Observer
			// saw as a node's Parent): its runners still run. The
			// graph stays busy until they are done, as after Start.
			g.inflight = root
		}
	}
	return err
}

// begin starts a run whose roots wait for after and returns its join; the
// caller holds g.running. A synchronous run (after nil) of a graph
// without roots returns NoTask; Start's always has a join.
func (g *Graph) begin(c *Ctx, after []TaskID) (TaskID, error) {
	s := g.s
	if prev := g.inflight; prev != NoTask {
		if !g.settled(prev) {
			return NoTask, ErrGraphRunning
		}
		// A failed run may have left counters part-way: a node's
		// error, or a task of the run that failed (its dependents,
		// the release runners, never ran).
		if g.firstErr != nil || s.Err(prev) != nil {
			g.dirty = true
		}
		g.inflight = NoTask
	}
	if !g.seal {
		if err := g.sealGraph(); err != nil {
			return NoTask, err
		}
	} else if g.dirty {
		for i := range g.hot {
			g.hot[i].pending.Store(g.hot[i].preds)
		}
		g.clearFailed()
		g.dirty = false
	}
	async := after != nil
	if len(g.roots) == 0 && !async {
		return NoTask, nil
	}
	g.firstErr = nil
	g.par = s.Threads() > 1 && runtime.GOMAXPROCS(0) > 1
	dep, err := g.joinAfter(c, after)
	if err != nil {
		return NoTask, err
	}
	join := Task{Dependency: dep}
	if c != nil {
		g.root, err = c.Create(&join)
	} else {
		g.root, err = s.Create(&join)
	}
	if err != nil {
		return NoTask, err
	}
	if s.cfg.CheckRaces { // graph_race.go: before any node can run
		if err := g.raceCheck(c); err != nil {
			return NoTask, err
		}
	}
	if g.dev {
		// The run ends with an executor's completion (a GPU segment,
		// typically, after the CPU nodes ran): the wait for it sleeps
		// as soon as it finds nothing to run, as a Wait for an
		// executor's task does (Ctx.Wait), rather than spin on the CPU
		// that the device's threads (lavapipe's) need.
		s.slots[g.root.index()].execID.Store(uint64(g.root))
	}
	if len(g.roots) > 0 {
		r := Task{Kernel: KernelGraph, Parent: g.root, Dependency: dep}
		r.Data.Data = g
		r.Data.Params[0], r.Data.Params[1], r.Data.Params[2] = runRoots, 0, uint32(len(g.roots))
		if c != nil {
			_, err = c.Add(&r)
		} else {
			_, err = s.Add(&r)
		}
	}
	// The root is released even when the runner could not be added: a
	// held root would never finish.
	var rerr error
	if c != nil {
		rerr = c.Run(g.root)
	} else {
		rerr = s.Run(g.root)
	}
	if err = cmp.Or(err, rerr); err != nil {
		g.dirty = true
		return NoTask, err
	}
	return g.root, nil
}

// joinAfter returns a task that finishes once every unfinished task of
// after has: NoTask for none, the task itself for one, else a held join
// with one empty child depending on each.
func (g *Graph) joinAfter(c *Ctx, after []TaskID) (TaskID, error) {
	s := g.s
	dep, n := NoTask, 0
	for i, a := range after {
		if err := s.checkID(a, "Graph.Start"); err != nil {
			return NoTask, fmt.Errorf("sched: graph Start: after[%d]: %w", i, err)
		}
		if !s.IsFinished(a) && a != dep {
			dep = a
			n++
		}
	}
	if n <= 1 {
		return dep, nil
	}
	add := func(t *Task, hold bool) (TaskID, error) {
		switch {
		case c != nil && hold:
			return c.Create(t)
		case c != nil:
			return c.Add(t)
		case hold:
			return s.Create(t)
		}
		return s.Add(t)
	}
	t := Task{}
	j, err := add(&t, true)
	if err != nil {
		return NoTask, fmt.Errorf("sched: graph Start: joining after: %w", err)
	}
	for _, a := range after {
		if a == NoTask || s.IsFinished(a) {
			continue
		}
		t = Task{Parent: j, Dependency: a}
		if _, err = add(&t, false); err != nil {
			break
		}
	}
	// j is released even when a child could not be added: a held task
	// never finishes, and its slot would stay taken until Close.
	var rerr error
	if c != nil {
		rerr = c.Run(j)
	} else {
		rerr = s.Run(j)
	}
	if err != nil {
		return NoTask, fmt.Errorf("sched: graph Start: joining after: %w", err)
	}
	return j, rerr
}

// fail records a node's error (the first of the run wins).
func (g *Graph) fail(err error) {
	g.errMu.Lock()
	if g.firstErr == nil {
		g.firstErr = err
	}
	g.errMu.Unlock()
}

// graphRun is the runner kernel: it runs a range of roots, one node, or
// releases a dynamic node's successors, then every node that readies on
// this thread.
func graphRun(c *Ctx, d *TaskData) error {
	r := graphRunner{g: d.Data.(*Graph), c: c, cur: -1, lvl: Priority(0).level(), obs: c.s.cfg.Observer}
	g := r.g
	switch d.Params[0] {
	case runRoots:
		lo, hi := d.Params[1], d.Params[2]
		for g.par && hi-lo > graphGrain {
			mid := lo + (hi-lo)/2
			g.spawn(c, runRoots, mid, hi)
			hi = mid
		}
		r.lo, r.hi = lo, hi
	case runNode:
		r.push(int32(d.Params[1]))
	case runRelease:
		n := int32(d.Params[1])
		if sg := g.task[n].seg; sg != 0 && g.segs[sg-1].anyFailed {
			r.releaseMembers(&g.segs[sg-1])
		} else {
			h := &g.hot[n]
			r.release(g.succ[h.succ0:h.succ1])
		}
	case runSegment:
		// A segment's task goes to its executor (GPU affinity); a CPU
		// thread running it would release the successors of work never
		// done.
		return fmt.Errorf("sched: graph segment of node %d ran on a CPU thread", d.Params[2])
	}
	for !r.runGuarded() {
	}
	// The runner fails with the first node error it met, so the run's
	// join fails too (a failed child) and a Wait on a started run sees it.
	return r.err
}

// graphRunner is one runner task's state: its range of roots left and
// its stack of ready nodes. It lives on the runner's goroutine stack.
type graphRunner struct {
	g      *Graph
	c      *Ctx
	lo, hi uint32 // roots[lo:hi] are still to run
	sp     int
	cur    int32 // the node whose kernel is running, or -1
	err    error // the first node error this runner met
	obs    Observer
	lvl    int
	begun  [2]Burster // executors holding this runner's hand-offs
	stack  [graphStack]int32
}

// runGuarded runs the loop, turning a kernel's panic into that node's
// error; it returns false after a panic, with the runner's state intact,
// so the caller carries on with the other nodes. One recover per runner,
// not per node: a node costs no deferred call.
func (r *graphRunner) runGuarded() (done bool) {
	defer func() {
		r.endBursts()
		if r.cur < 0 {
			return // not a kernel's panic (none, or the runner's own): unwind
		}
		p := recover()
		if p == nil {
			// runtime.Goexit in the node's kernel: the goroutine
			// unwinds and cannot be stopped. Fail the node, and hand
			// what this runner still holds (roots, ready nodes) to new
			// runners, so the nodes that do not depend on it still run.
			r.fail(r.g.nodeErr(r.cur, fmt.Errorf("%w: runtime.Goexit", ErrKernelPanic)))
			r.cur = -1
			r.handBack()
			return
		}
		r.fail(r.g.nodeErr(r.cur, fmt.Errorf("%w: %v", ErrKernelPanic, p)))
		r.cur = -1
		done = false
	}()
	r.loop()
	return true
}

// handBack adds runner tasks for the roots and ready nodes this runner
// still holds (its goroutine unwinds: a kernel's runtime.Goexit).
func (r *graphRunner) handBack() {
	g := r.g
	if r.lo < r.hi {
		g.spawn(r.c, runRoots, r.lo, r.hi)
		r.lo = r.hi
	}
	for r.sp > 0 {
		r.sp--
		g.spawn(r.c, runNode, uint32(r.stack[r.sp]), 0)
	}
}

// loop runs ready nodes, depth first from the stack, then the roots left.
func (r *graphRunner) loop() {
	g := r.g
	for {
		var n int32
		switch {
		case r.sp > 0:
			r.sp--
			n = r.stack[r.sp]
		case r.lo < r.hi:
			n = g.roots[r.lo]
			r.lo++
		default:
			return
		}
		h := &g.hot[n]
		if h.flags&nodeSegment != 0 {
			g.handOffSegment(r.c, n) // one task for the whole segment
			continue
		}
		if h.flags&nodeDynamic != 0 {
			r.beginBursts(n)
			g.handOff(r.c, n) // its release runner takes the successors
			continue
		}
		if h.fn != nil {
			if r.begun != [2]Burster{} {
				r.endBursts() // the held executor jobs start before CPU work
			}
			r.cur = n
			var start int64
			if r.obs != nil {
				start = Nanotime()
			}
			err := h.fn(r.c, &g.data[n])
			r.cur = -1
			if r.obs != nil {
				if oerr := r.observe(n, start, err); oerr != nil {
					err = errors.Join(err, oerr)
				}
			}
			if err != nil {
				r.fail(g.nodeErr(n, err))
				continue
			}
		}
		r.release(g.succ[h.succ0:h.succ1])
	}
}

// releaseMembers releases the successors of the members of segment sg
// that ran, after the executor failed others alone (Job.FailNode); the
// runner fails with the first of their errors, so a started run's join
// fails too. The successors of a failed member keep their counts part-way:
// the run has an error, so the next one starts from reset counts.
func (r *graphRunner) releaseMembers(sg *graphSeg) {
	err := sg.err
	for j := range sg.nodes {
		if !sg.failed[j] {
			r.release(sg.succ[j])
		}
	}
	clear(sg.failed)
	sg.anyFailed, sg.err = false, nil
	if r.err == nil {
		r.err = err
	}
}

// release counts a node done for each of its successors, list; those it
// readies go on the stack, or to the deque.
func (r *graphRunner) release(list []int32) {
	g := r.g
	for _, x := range list {
		xh := &g.hot[x]
		if xh.pending.Add(-1) != 0 {
			continue
		}
		xh.pending.Store(xh.preds)
		// Publish a second ready node only while this thread's deque is
		// empty: other threads then always find work to steal, and the
		// rest stays on the local stack. A dynamic node stays here: its
		// hand-off is only an Add, and hand-offs in a row share a burst.
		if r.sp == len(r.stack) || (r.sp > 0 && g.par && xh.flags&nodeDynamic == 0 && r.c.dq[r.lvl].empty()) {
			g.spawn(r.c, runNode, uint32(x), 0)
			continue
		}
		r.push(x)
	}
}

// beginBursts begins a burst on each executor that dynamic node n may go
// to, unless this runner holds one there already: hand-offs in a row
// (GPU roots, a release that readies several GPU nodes) then leave in as
// few submissions as the executor allows, as the scheduler's own release
// of several dependents does (see Burster).
func (r *graphRunner) beginBursts(n int32) {
	t := &r.g.task[n]
	var kinds uint8
	switch t.affinity {
	case GPU:
		kinds = 1 << ExecGPU
	case SPU:
		kinds = 1 << ExecSPU
	case Auto:
		if r.g.s.cfg.Placer != nil {
			kinds = 1<<ExecGPU | 1<<ExecSPU
		}
	}
	for k := range r.begun {
		if kinds&(1<<k) != 0 && r.begun[k] == nil && r.g.s.bursters[k] != nil {
			r.begun[k] = r.g.s.bursters[k]
			r.begun[k].BeginBurst()
		}
	}
}

// endBursts ends the bursts this runner began.
func (r *graphRunner) endBursts() {
	for k, b := range r.begun {
		if b != nil {
			r.begun[k] = nil
			b.EndBurst()
		}
	}
}

// observe tells the Observer of node n's run in place: a RunEvent on this
// thread whose Task is NoTask (the node is no task) and whose Parent is
// the run's join, so an observer that knows the join (it is what Start
// returns) can tell which run the node belonged to. A panic in TaskRan
// fails the node (ErrObserverPanic), as it fails a task (Ctx.observe).
func (r *graphRunner) observe(n int32, start int64, err error) (oerr error) {
	c, g := r.c, r.g
	c.ev = RunEvent{Thread: c.index, Where: AnyWorker, Task: NoTask, Parent: g.root, Kernel: g.task[n].kernel,
		Begin: g.data[n].Begin, End: g.data[n].End, Start: start, Stop: Nanotime(), Err: err}
	c.observing = true
	defer func() {
		c.observing = false
		if p := recover(); p != nil {
			oerr = fmt.Errorf("%w: %v", ErrObserverPanic, p) // the runner's nodeErr names the node
		}
	}()
	r.obs.TaskRan(&c.ev)
	return nil
}

// fail records a node's error for the run and for this runner's task.
func (r *graphRunner) fail(err error) {
	r.g.fail(err)
	if r.err == nil {
		r.err = err
	}
}

func (r *graphRunner) push(n int32) {
	r.stack[r.sp] = n
	r.sp++
}

// spawn adds a runner task to the run.
func (g *Graph) spawn(c *Ctx, mode, a, b uint32) {
	r := Task{Kernel: KernelGraph, Parent: g.root}
	r.Data.Data = g
	r.Data.Params[0], r.Data.Params[1], r.Data.Params[2] = mode, a, b
	if _, err := c.Add(&r); err != nil {
		g.fail(fmt.Errorf("sched: graph run: adding a runner: %w", err))
	}
}

// releaseDepErr is the error of graph runner task t whose dependency
// failed with depErr. For a release runner (step 4), that dependency is a
// dynamic node's task, whose error names a task ID and a kernel only: it
// is named as the node (as a node run in place is, step 5) and recorded
// as the run's, so Run's error says which node of several of one kernel
// failed. A segment's error already names its node (the executor's).
func releaseDepErr(t *Task, depErr error) error {
	g, ok := t.Data.Data.(*Graph)
	if !ok || t.Data.Params[0] != runRelease {
		return depErr
	}
	n := int32(t.Data.Params[1])
	if g.hot[n].flags&nodeSegment != 0 {
		return depErr
	}
	err := g.nodeErr(n, depErr)
	g.fail(err)
	return err
}

func (g *Graph) nodeErr(n int32, err error) error {
	t := &g.task[n]
	return fmt.Errorf("sched: graph node %d (kernel %d %q): %w", n, t.kernel, t.k.Name, err)
}

// handOff sends dynamic node n through the scheduler as a task, followed
// by a runner that releases its successors when it completes.
func (g *Graph) handOff(c *Ctx, n int32) {
	t := &g.task[n]
	dt := Task{Kernel: t.kernel, Affinity: t.affinity, Priority: t.priority, Parent: g.root, Data: g.data[n]}
	g.addThenRelease(c, n, &dt)
}

// handOffSegment sends the GPU segment that node n leads to its executor
// as one task, followed by a runner that releases the successors of every
// member (the leader's, after the seal's contraction) when it completes.
func (g *Graph) handOffSegment(c *Ctx, n int32) {
	t := &g.task[n]
	st := Task{Kernel: KernelGraph, Affinity: GPU, Priority: t.priority, Parent: g.root}
	st.Data.Data = g
	st.Data.Params[0], st.Data.Params[1], st.Data.Params[2] = runSegment, uint32(t.seg-1), uint32(n)
	g.addThenRelease(c, n, &st)
}

// addThenRelease adds dt, the task of node n, and a runner that releases
// n's successors once dt completed.
func (g *Graph) addThenRelease(c *Ctx, n int32, dt *Task) {
	id, err := c.Add(dt)
	if err != nil {
		g.fail(g.nodeErr(n, err))
		return
	}
	r := Task{Kernel: KernelGraph, Parent: g.root, Dependency: id}
	r.Data.Data = g
	r.Data.Params[0], r.Data.Params[1] = runRelease, uint32(n)
	if _, err := c.Add(&r); err != nil {
		g.fail(g.nodeErr(n, err))
	}
}
