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
//     error, naming the node and its kernel. Counters left part-way by a
//     failed run are reset at the start of the next.
//
// Invariants: a node runs at most once per run, and only after every
// predecessor's kernel returned; a run allocates nothing and validates
// nothing that Add, SetData or the seal already validated; one run of a
// graph at a time (Run refuses a second); a graph is changed (Add, Precede,
// SetData, Params' memory) only between runs.
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
//
// GPU nodes take the dynamic path: the executor batches them as it batches
// any burst, but does not yet keep their command buffers recorded across
// runs (each run records them again).

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// GraphNode names a node of a Graph: its index in the order of Add.
type GraphNode int32

// ErrGraphRunning is returned by a change to a graph, or a second Run,
// while a run of it is in progress.
var ErrGraphRunning = errors.New("sched: graph is running")

// Graph is a frame graph: tasks and their order, built once and run many
// times (see the package documentation, and the top of graph.go for the
// design). Build it with Scheduler.NewGraph, Add and Precede; run it with
// Run. Its methods are for one goroutine at a time.
type Graph struct {
	s    *Scheduler
	hot  []graphHot  // per node, what a run touches
	data []TaskData  // per node, what the kernel sees
	task []graphCold // per node, the rest of the task

	edges [][2]int32 // before the seal: (before, after)
	succ  []int32    // after the seal: successor lists, hot[i].succ0..succ1
	roots []int32
	seal  bool
	dirty bool // a failed run may have left counters part-way

	running atomic.Bool
	root    TaskID // the current run's join
	par     bool   // more than one thread and P: share ready nodes

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
}

const (
	nodeDynamic uint32 = 1 << iota // goes through the scheduler as a task
)

// Runner modes (Params[0] of a runner task).
const (
	runRoots   = iota // run roots[Params[1]:Params[2]]
	runNode           // run node Params[1]
	runRelease        // node Params[1] completed as a task: release its successors
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
// registered, streams matching it), not at each run. Its Parent and
// Dependency must be unset: order nodes with Precede.
func (g *Graph) Add(t *Task) (GraphNode, error) {
	if g.running.Load() {
		return -1, ErrGraphRunning
	}
	if t.Parent != NoTask || t.Dependency != NoTask {
		return -1, fmt.Errorf("sched: graph node %d (kernel %d): Parent and Dependency are for dynamic tasks; order graph nodes with Precede", len(g.hot), t.Kernel)
	}
	if len(g.hot) == 1<<31-1 {
		return -1, fmt.Errorf("sched: graph: too many nodes")
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
	g.task[n] = graphCold{kernel: kid, affinity: aff, priority: pri, k: k}
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
	if g.running.Load() {
		return ErrGraphRunning
	}
	if n < 0 || int(n) >= len(g.hot) {
		return fmt.Errorf("sched: graph: no node %d (the graph has %d)", n, len(g.hot))
	}
	c := &g.task[n]
	return g.set(int(n), c.kernel, c.affinity, c.priority, d)
}

// Params returns node n's parameters, to change between runs without
// revalidation (parameters are plain words: nothing in them is checked).
// The pointer is valid until the next Add.
func (g *Graph) Params(n GraphNode) *Params { return &g.data[n].Params }

// Precede orders before ahead of after: after's kernel starts only once
// before's returned (or, for a dynamic node, its task completed).
func (g *Graph) Precede(before, after GraphNode) error {
	if g.running.Load() {
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
// roots, and refuses a cycle.
func (g *Graph) sealGraph() error {
	n := len(g.hot)
	cnt := make([]int32, n+1)
	for _, e := range g.edges {
		cnt[e[0]+1]++
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	g.succ = make([]int32, len(g.edges))
	next := append([]int32(nil), cnt[:n]...)
	preds := make([]int32, n)
	for _, e := range g.edges {
		g.succ[next[e[0]]] = e[1]
		next[e[0]]++
		preds[e[1]]++
	}
	g.roots = g.roots[:0]
	for i := range g.hot {
		h := &g.hot[i]
		h.succ0, h.succ1, h.preds = cnt[i], cnt[i+1], preds[i]
		h.pending.Store(preds[i])
		if preds[i] == 0 {
			g.roots = append(g.roots, int32(i))
		}
	}
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
	g.seal, g.dirty = true, false
	return nil
}

// Run runs the graph once and returns when every node has run (or
// failed), with the first error. It may be called from any goroutine,
// including a kernel's (its Wait helps, as Scheduler.Wait does); use
// RunCtx from a registered thread or a kernel that has its Ctx.
func (g *Graph) Run() error { return g.run(nil) }

// RunCtx is Run through c (the calling thread's Ctx), which spares the
// lookup of the calling thread.
func (g *Graph) RunCtx(c *Ctx) error { return g.run(c) }

func (g *Graph) run(c *Ctx) error {
	if !g.running.CompareAndSwap(false, true) {
		return ErrGraphRunning
	}
	defer g.running.Store(false)
	if !g.seal {
		if err := g.sealGraph(); err != nil {
			return err
		}
	} else if g.dirty {
		for i := range g.hot {
			g.hot[i].pending.Store(g.hot[i].preds)
		}
		g.dirty = false
	}
	if len(g.roots) == 0 {
		return nil
	}
	g.firstErr = nil
	s := g.s
	g.par = s.Threads() > 1 && runtime.GOMAXPROCS(0) > 1
	join := Task{}
	var err error
	if c != nil {
		g.root, err = c.Create(&join)
	} else {
		g.root, err = s.Create(&join)
	}
	if err != nil {
		return err
	}
	r := Task{Kernel: KernelGraph, Parent: g.root}
	r.Data.Data = g
	r.Data.Params[0], r.Data.Params[1], r.Data.Params[2] = runRoots, 0, uint32(len(g.roots))
	if c != nil {
		_, err = c.Add(&r)
		if err == nil {
			err = c.Run(g.root)
		}
		if err == nil {
			err = c.Wait(g.root)
		}
	} else {
		_, err = s.Add(&r)
		if err == nil {
			err = s.Run(g.root)
		}
		if err == nil {
			err = s.Wait(g.root)
		}
	}
	if g.firstErr != nil {
		err = g.firstErr
	}
	if err != nil {
		g.dirty = true
	}
	return err
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
	r := graphRunner{g: d.Data.(*Graph), c: c, cur: -1, lvl: Priority(0).level()}
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
		r.release(int32(d.Params[1]))
	}
	for !r.runGuarded() {
	}
	return nil
}

// graphRunner is one runner task's state: its range of roots left and
// its stack of ready nodes. It lives on the runner's goroutine stack.
type graphRunner struct {
	g      *Graph
	c      *Ctx
	lo, hi uint32 // roots[lo:hi] are still to run
	sp     int
	cur    int32 // the node whose kernel is running, or -1
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
			return // not a kernel's panic (none, or Goexit): unwind
		}
		if p := recover(); p != nil {
			r.g.fail(r.g.nodeErr(r.cur, fmt.Errorf("%w: %v", ErrKernelPanic, p)))
			r.cur = -1
			done = false
		}
	}()
	r.loop()
	return true
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
			err := h.fn(r.c, &g.data[n])
			r.cur = -1
			if err != nil {
				g.fail(g.nodeErr(n, err))
				continue
			}
		}
		r.release(n)
	}
}

// release counts node n done for each successor; those it readies go on
// the stack, or to the deque.
func (r *graphRunner) release(n int32) {
	g := r.g
	h := &g.hot[n]
	for _, x := range g.succ[h.succ0:h.succ1] {
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

func (g *Graph) nodeErr(n int32, err error) error {
	t := &g.task[n]
	return fmt.Errorf("sched: graph node %d (kernel %d %q): %w", n, t.kernel, t.k.Name, err)
}

// handOff sends dynamic node n through the scheduler as a task, followed
// by a runner that releases its successors when it completes.
func (g *Graph) handOff(c *Ctx, n int32) {
	t := &g.task[n]
	dt := Task{Kernel: t.kernel, Affinity: t.affinity, Priority: t.priority, Parent: g.root, Data: g.data[n]}
	id, err := c.Add(&dt)
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
