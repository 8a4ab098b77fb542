package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRandomPrograms checks the scheduler against random acyclic programs
// written through the public API only, the way an engine would write them:
// a valid program must neither fail nor hang. Where TestModel (model_test.go)
// checks error propagation on large graphs with failing kernels, this test
// draws small configurations (1-4 workers, 1-3 registered threads, a pool of
// 16-64 slots so that Add meets back-pressure and children run in place)
// and mixes every way of waiting the package offers:
//
//   - held gates (Create) with children, Run by another goroutine after a
//     delay, and tasks depending on gates, on earlier tasks and on gates'
//     children (never on an ancestor, nor on a task that needs the gate);
//   - kernels that Wait for an earlier task that does not need them (on
//     workers only: a registered thread's wait helps with any task, which
//     Ctx.Wait documents can deadlock a program without a cycle);
//   - kernels that Add children and Wait, WaitFor (then Wait, on a
//     time-out: WaitFor runs nothing) or do not wait for them;
//   - Ctx.Join and Ctx.RunInPlace inside kernels;
//   - kernels in WaitEvent for an event another goroutine signals later,
//     or an earlier task's kernel signals;
//   - tasks pinned to registered threads, which serve them with RunPinned
//     and now and then Wait for a task from their own code;
//   - a frame graph with random Precede edges, replayed several times from
//     a goroutine or a registered thread while the rest runs;
//   - in some programs, kernels that block on a channel: the checker
//     Abandons them once they started, then releases them.
//
// It checks that no Add, Create, Run, Wait or graph run fails (except,
// in programs with Abandon, with an error wrapping ErrAbandoned: the
// abandoned task, what depends on it, and what abandon.go point 5 says
// Abandon takes with it), that no kernel runs twice or before its
// dependency finished, that every task of a successful parent ran (nothing
// lost), that graph nodes run once per run after their predecessors, and
// that Close returns. A program that does not finish within rpLimit fails
// with its seed and every goroutine's stack.
//
// Budget: rpBudget (a quarter with -short), or VKJOBS_SOAK if set;
// VKJOBS_RP_SEED replays one program.
func TestRandomPrograms(t *testing.T) {
	if s := os.Getenv("VKJOBS_RP_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("VKJOBS_RP_SEED=%q: %v", s, err)
		}
		rpRound(t, seed)
		return
	}
	budget := rpBudget
	if soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK")); soak > 0 {
		budget = soak
	}
	if testing.Short() {
		budget /= 4
	}
	start := time.Now()
	var tasks int
	rounds := 0
	for ; rounds < 4 || time.Since(start) < budget; rounds++ {
		seed := uint64(time.Now().UnixNano())
		if rounds < 4 {
			seed = uint64(rounds) // the first programs are the same every run
		}
		tasks += rpRound(t, seed)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d programs, %d tasks in %v (GOMAXPROCS %d)", rounds, tasks,
		time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0))
}

const (
	rpBudget = 15 * time.Second
	// rpLimit bounds one program: a hang fails within it.
	rpLimit = 10 * time.Second
)

type rpKind int

const (
	rpLeaf    rpKind = iota
	rpGate           // held with Create, Run later by the releaser
	rpSpawn          // adds children, then Wait / WaitFor / no wait
	rpJoin           // Ctx.Join of two halves
	rpInPlace        // Ctx.RunInPlace of one half
	rpEvent          // WaitEvent for an event signalled from outside
	rpHang           // blocks on a channel until abandoned and released
)

var errRPHang = errors.New("random program: kernel blocked, abandoned")

type rpNode struct {
	idx      int
	kind     rpKind
	aff      Affinity
	prio     Priority
	parent   *rpNode // a gate
	dep      *rpNode
	kids     []*rpNode // children added by the builder (gates only)
	spawn    int       // children its kernel adds
	waitMode int       // spawn: 0 none, 1 Wait first, 2 WaitFor each
	other    *rpNode   // spawn: an earlier task that does not need it, to Wait for
	id       atomic.Uint64
	runs     atomic.Int32
	done     atomic.Bool // kernel returned without error
	kidRuns  [4]atomic.Int32
	halfRuns [3]atomic.Int32
	ev       *Event
	byTask   bool     // ev is signalled by an earlier task's kernel
	signals  []*Event // leaf: events its kernel signals
	hang     chan struct{}
	started  chan struct{}
}

type rpProg struct {
	s        *Scheduler
	nodes    []*rpNode
	abandons bool
	workers  int
	mu       sync.Mutex
	bad      []string
	k        struct{ leaf, spawn, kid, join, inPlace, half, event, hang, gnode KernelID }
	graph    *rpGraph
}

func (p *rpProg) violate(format string, args ...any) {
	p.mu.Lock()
	if len(p.bad) < 20 {
		p.bad = append(p.bad, fmt.Sprintf(format, args...))
	}
	p.mu.Unlock()
}

// allowed reports whether err may end an operation of this program: nil,
// or, in a program with Abandon, an error that wraps ErrAbandoned.
func (p *rpProg) allowed(err error) bool {
	return err == nil || p.abandons && errors.Is(err, ErrAbandoned)
}

// rpForbidden names the errors that a valid program must never see.
func rpForbidden(err error) bool {
	for _, e := range []error{ErrDeadlock, ErrPoolDeadlock, ErrCycle, ErrSelfDepend, ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (p *rpProg) check(what string, err error) {
	if !p.allowed(err) || rpForbidden(err) {
		p.violate("%s: %v", what, err)
	}
}

type rpGraph struct {
	g     *Graph
	preds [][]int
	epoch atomic.Int32
	runs  []atomic.Int32 // the epoch each node last ran in
}

func (p *rpProg) node(d *TaskData) *rpNode { return p.nodes[d.Params[0]] }

// enter records a kernel start: at most once, and after its dependency.
func (p *rpProg) enter(n *rpNode) {
	if r := n.runs.Add(1); r > 1 {
		p.violate("task %d (kind %d) ran %d times", n.idx, n.kind, r)
	}
	if d := n.dep; d != nil {
		if !p.s.IsFinished(TaskID(d.id.Load())) || d.kind != rpGate && !d.done.Load() {
			p.violate("task %d started before its dependency %d finished", n.idx, d.idx)
		}
	}
}

func (p *rpProg) register(t *testing.T, reg *Registry) {
	must := func(k Kernel) KernelID {
		id, err := reg.RegisterNext(k)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	p.k.leaf = must(Kernel{Name: "rp.leaf", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		for _, e := range n.signals {
			e.Signal()
		}
		n.done.Store(true)
		return nil
	}})
	p.k.kid = must(Kernel{Name: "rp.kid", CPU: func(c *Ctx, d *TaskData) error {
		p.node(d).kidRuns[d.Params[1]].Add(1)
		return nil
	}})
	p.k.half = must(Kernel{Name: "rp.half", CPU: func(c *Ctx, d *TaskData) error {
		p.node(d).halfRuns[d.Params[1]].Add(1)
		return nil
	}})
	p.k.spawn = must(Kernel{Name: "rp.spawn", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		var ids [4]TaskID
		for k := 0; k < n.spawn; k++ {
			id, err := c.Add(&Task{Kernel: p.k.kid, Parent: c.Current(), Data: TaskData{Params: Params{uint32(n.idx), uint32(k)}}})
			p.check(fmt.Sprintf("task %d: Add of child %d", n.idx, k), err)
			if err != nil {
				return err
			}
			ids[k] = id
		}
		switch n.waitMode {
		case 1:
			err := c.Wait(ids[0])
			p.check(fmt.Sprintf("task %d: Wait for child 0", n.idx), err)
			if err == nil && n.kidRuns[0].Load() != 1 {
				p.violate("task %d: Wait for child 0 returned, child ran %d times", n.idx, n.kidRuns[0].Load())
			}
		case 2:
			for k := 0; k < n.spawn; k++ {
				// WaitFor runs nothing while it waits: on the only worker
				// its child may wait for it (documented), so a time-out
				// is no failure; a Wait then runs the child.
				err := c.WaitFor(ids[k], time.Duration(1+k)*time.Millisecond)
				if errors.Is(err, ErrTimeout) {
					err = c.Wait(ids[k])
				}
				p.check(fmt.Sprintf("task %d: WaitFor (then Wait) child %d", n.idx, k), err)
				if err == nil && n.kidRuns[k].Load() != 1 {
					p.violate("task %d: WaitFor child %d returned, child ran %d times", n.idx, k, n.kidRuns[k].Load())
				}
			}
		}
		// A wait for a task that does not need this one: a worker's Wait
		// hands the worker over, so it cannot deadlock. A registered
		// thread's wait helps with any task, which can (Ctx.Wait), so
		// there the kernel does not make it.
		if o := n.other; o != nil && c.Index() < p.workers {
			err := c.Wait(TaskID(o.id.Load()))
			p.check(fmt.Sprintf("task %d: Wait for unrelated task %d", n.idx, o.idx), err)
			if err == nil && o.kind != rpGate && o.runs.Load() != 1 {
				p.violate("task %d: Wait for task %d returned, its kernel ran %d times", n.idx, o.idx, o.runs.Load())
			}
		}
		n.done.Store(true)
		return nil
	}})
	p.k.join = must(Kernel{Name: "rp.join", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		err := c.Join(&Call{Kernel: p.k.half, Params: Params{uint32(n.idx), 0}}, &Call{Kernel: p.k.half, Params: Params{uint32(n.idx), 1}})
		p.check(fmt.Sprintf("task %d: Join", n.idx), err)
		if err == nil && (n.halfRuns[0].Load() != 1 || n.halfRuns[1].Load() != 1) {
			p.violate("task %d: Join returned with halves run %d and %d times", n.idx, n.halfRuns[0].Load(), n.halfRuns[1].Load())
		}
		n.done.Store(err == nil)
		return err
	}})
	p.k.inPlace = must(Kernel{Name: "rp.inplace", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		err := c.RunInPlace(&Task{Kernel: p.k.half, Data: TaskData{Params: Params{uint32(n.idx), 2}}})
		p.check(fmt.Sprintf("task %d: RunInPlace", n.idx), err)
		if err == nil && n.halfRuns[2].Load() != 1 {
			p.violate("task %d: RunInPlace returned with the task run %d times", n.idx, n.halfRuns[2].Load())
		}
		n.done.Store(err == nil)
		return err
	}})
	p.k.event = must(Kernel{Name: "rp.event", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		c.WaitEvent(n.ev)
		if !n.ev.IsSet() {
			p.violate("task %d: WaitEvent returned before the event was set (no Close began)", n.idx)
		}
		n.done.Store(true)
		return nil
	}})
	p.k.hang = must(Kernel{Name: "rp.hang", CPU: func(c *Ctx, d *TaskData) error {
		n := p.node(d)
		p.enter(n)
		close(n.started)
		<-n.hang
		n.done.Store(true)
		return nil
	}})
	p.k.gnode = must(Kernel{Name: "rp.gnode", CPU: func(c *Ctx, d *TaskData) error {
		g := p.graph
		i, e := d.Params[0], g.epoch.Load()
		for _, q := range g.preds[i] {
			if g.runs[q].Load() != e {
				p.violate("graph run %d: node %d started before its predecessor %d ran", e, i, q)
			}
		}
		if prev := g.runs[i].Swap(e); prev != e-1 {
			p.violate("graph run %d: node %d ran after run %d (twice, or a run missed)", e, i, prev)
		}
		return nil
	}})
}

// rpNeeds reports whether a's completion waits for b's: through a's
// dependency chain and its (builder-added) children.
func rpNeeds(a, b *rpNode) bool {
	if a == nil {
		return false
	}
	if a == b {
		return true
	}
	if rpNeeds(a.dep, b) {
		return true
	}
	for _, k := range a.kids {
		if rpNeeds(k, b) {
			return true
		}
	}
	return false
}

func (n *rpNode) task(p *rpProg) *Task {
	t := &Task{Affinity: n.aff, Priority: n.prio, Data: TaskData{Params: Params{uint32(n.idx)}}}
	switch n.kind {
	case rpLeaf:
		t.Kernel = p.k.leaf
	case rpGate:
		t.Kernel = KernelNone
	case rpSpawn:
		t.Kernel = p.k.spawn
	case rpJoin:
		t.Kernel = p.k.join
	case rpInPlace:
		t.Kernel = p.k.inPlace
	case rpEvent:
		t.Kernel = p.k.event
	case rpHang:
		t.Kernel = p.k.hang
	}
	if n.parent != nil {
		t.Parent = TaskID(n.parent.id.Load())
	}
	if n.dep != nil {
		t.Dependency = TaskID(n.dep.id.Load())
	}
	return t
}

// rpRound draws, runs and checks one program; it returns its task count.
func rpRound(t *testing.T, seed uint64) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x9a11))
	workers := 1 + rng.IntN(4)
	mains := 1 + rng.IntN(3)
	pool := 16 << rng.IntN(3)
	p := &rpProg{abandons: rng.IntN(3) == 0, workers: workers}
	reg := NewRegistry()
	p.register(t, reg)
	s, err := New(Config{Workers: workers, MainThreads: mains, PoolSize: pool, PoolStallLimit: 3 * time.Second, Kernels: reg})
	if err != nil {
		t.Fatalf("seed %#x: New: %v", seed, err)
	}
	p.s = s
	desc := fmt.Sprintf("seed %#x (workers %d, registered threads %d, pool %d, abandon %v)", seed, workers, mains, pool, p.abandons)

	// Draw the program: nodes in the order the builder adds them.
	n := 20 + rng.IntN(180)
	var open *rpNode // the gate whose children are being added
	openLeft := 0
	hangs := 0
	for i := 0; i < n; i++ {
		nd := &rpNode{idx: i}
		switch x := rng.IntN(100); {
		case x < 12:
			nd.kind = rpGate
		case x < 30:
			nd.kind, nd.spawn, nd.waitMode = rpSpawn, 1+rng.IntN(4), rng.IntN(3)
		case x < 40:
			nd.kind = rpJoin
		case x < 48:
			nd.kind = rpInPlace
		case x < 54:
			nd.kind, nd.ev = rpEvent, s.NewEvent()
		case x < 58 && p.abandons && hangs < 3:
			nd.kind, nd.hang, nd.started = rpHang, make(chan struct{}), make(chan struct{})
			hangs++
		default:
			nd.kind = rpLeaf
		}
		if nd.kind != rpGate && rng.IntN(6) == 0 {
			nd.aff = OnThread(rng.IntN(mains))
		}
		nd.prio = Priority(rng.IntN(3) - 1)
		if open != nil && openLeft > 0 && nd.kind != rpGate {
			nd.parent = open
			open.kids = append(open.kids, nd)
			openLeft--
		}
		if i > 0 && rng.IntN(3) == 0 {
			d := p.nodes[rng.IntN(i)]
			// Never on an ancestor, nor on a task that needs it: that is a
			// cycle, which this test does not draw.
			if nd.parent == nil || !rpNeeds(d, nd.parent) {
				nd.dep = d
			}
		}
		p.nodes = append(p.nodes, nd)
		if nd.kind == rpGate {
			open, openLeft = nd, rng.IntN(4)
		}
	}

	for i, nd := range p.nodes { // once every gate has its children
		// An event signalled by an earlier task, in programs without
		// Abandon (an abandoned signaller would never signal): a leaf that
		// is ready at once and pinned nowhere, so no wait can need the
		// waiter before it signals.
		if nd.kind == rpEvent && !p.abandons && i > 0 && rng.IntN(2) == 0 {
			if j := p.nodes[rng.IntN(i)]; j.kind == rpLeaf && j.dep == nil && j.parent == nil && j.aff == AnyWorker {
				j.signals = append(j.signals, nd.ev)
				nd.byTask = true
			}
		}
		if nd.kind == rpSpawn && i > 0 && rng.IntN(3) == 0 {
			if o := p.nodes[rng.IntN(i)]; !rpNeeds(o, nd) {
				nd.other = o
			}
		}
	}

	var ops sync.WaitGroup // goroutines of the program other than the threads
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the bound on the whole program
		select {
		case <-done:
		case <-time.After(rpLimit):
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s: still running after %v\n%s", t.Name(), desc, rpLimit, buf[:runtime.Stack(buf, true)])
			os.Exit(1)
		}
	}()
	defer close(done)

	// The frame graph, replayed by a goroutine or a registered thread.
	gn := 2 + rng.IntN(10)
	p.graph = &rpGraph{g: s.NewGraph(), preds: make([][]int, gn), runs: make([]atomic.Int32, gn)}
	for i := 0; i < gn; i++ {
		aff := AnyWorker
		if rng.IntN(8) == 0 {
			aff = OnThread(rng.IntN(mains))
		}
		if _, err := p.graph.g.Add(&Task{Kernel: p.k.gnode, Affinity: aff, Data: TaskData{Params: Params{uint32(i)}}}); err != nil {
			t.Fatalf("%s: Graph.Add: %v", desc, err)
		}
		for j := 0; j < i; j++ {
			if rng.IntN(4) == 0 {
				if err := p.graph.g.Precede(GraphNode(j), GraphNode(i)); err != nil {
					t.Fatalf("%s: Precede: %v", desc, err)
				}
				p.graph.preds[i] = append(p.graph.preds[i], j)
			}
		}
	}
	graphRuns := 1 + rng.IntN(5)
	graphOnThread := rng.IntN(2) == 0
	runGraph := func(c *Ctx) {
		for r := 1; r <= graphRuns; r++ {
			p.graph.epoch.Store(int32(r))
			var err error
			if c != nil {
				err = p.graph.g.RunCtx(c)
			} else {
				err = p.graph.g.Run()
			}
			p.check(fmt.Sprintf("graph run %d", r), err)
			if err != nil {
				// An abandoned run's runners run on, and the graph stays
				// running until they return (Graph.Start): stop replaying.
				return
			}
			for i := range p.graph.runs {
				if got := p.graph.runs[i].Load(); err == nil && got != int32(r) {
					p.violate("graph run %d returned, node %d last ran in run %d", r, i, got)
				}
			}
		}
	}

	// Registered threads: serve their pinned tasks until stop; thread 0
	// may run the graph.
	var threads sync.WaitGroup
	var graphDone sync.WaitGroup
	graphDone.Add(1)
	for m := 0; m < mains; m++ {
		threads.Add(1)
		go func(m int) {
			defer threads.Done()
			trng := rand.New(rand.NewPCG(seed, uint64(2+m)))
			c, err := s.RegisterThread(fmt.Sprintf("main%d", m))
			if err != nil {
				p.violate("RegisterThread %d: %v", m, err)
				if m == 0 && graphOnThread {
					graphDone.Done()
				}
				return
			}
			if m == 0 && graphOnThread {
				runGraph(c)
				graphDone.Done()
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Now and then the thread's own code waits for a task
				// (its wait runs any task meanwhile).
				if trng.IntN(64) == 0 {
					nd := p.nodes[trng.IntN(len(p.nodes))]
					if id := TaskID(nd.id.Load()); id != NoTask {
						p.check(fmt.Sprintf("registered thread %d: Wait for task %d", m, nd.idx), c.Wait(id))
					}
				}
				if c.RunPinned() == 0 {
					time.Sleep(20 * time.Microsecond)
				}
			}
		}(m)
	}
	if !graphOnThread {
		ops.Add(1)
		go func() {
			defer ops.Done()
			runGraph(nil)
			graphDone.Done()
		}()
	}

	// Releaser: Runs gates after a short delay, in the order handed over.
	gates := make(chan *rpNode, n)
	ops.Add(1)
	go func(delayRng *rand.Rand) {
		defer ops.Done()
		for g := range gates {
			time.Sleep(time.Duration(delayRng.IntN(300)) * time.Microsecond)
			p.check(fmt.Sprintf("Run of gate %d", g.idx), s.Run(TaskID(g.id.Load())))
		}
	}(rand.New(rand.NewPCG(seed, 1)))

	built := make(chan struct{})
	// Events are signalled, and blocked kernels abandoned and released, by
	// goroutines of their own.
	for _, nd := range p.nodes {
		switch nd.kind {
		case rpEvent:
			if nd.byTask {
				continue
			}
			d := time.Duration(rng.IntN(2000)) * time.Microsecond
			ops.Add(1)
			go func(nd *rpNode) {
				defer ops.Done()
				time.Sleep(d)
				nd.ev.Signal()
			}(nd)
		case rpHang:
			d := time.Duration(rng.IntN(2000)) * time.Microsecond
			ops.Add(1)
			go func(nd *rpNode) {
				defer ops.Done()
				defer close(nd.hang)
				for {
					id := TaskID(nd.id.Load())
					select {
					case <-nd.started:
						time.Sleep(d)
						for id == NoTask { // the kernel may start before Add returns
							time.Sleep(50 * time.Microsecond)
							id = TaskID(nd.id.Load())
						}
						if err := s.Abandon(id, errRPHang); err != nil {
							p.violate("Abandon of running task %d: %v", nd.idx, err)
						}
						time.Sleep(d)
						return
					case <-built:
						if id == NoTask {
							return // never added
						}
					default:
					}
					if id != NoTask && s.IsFinished(id) {
						return // failed without running (its dependency was abandoned)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}(nd)
		}
	}
	// Build: a foreign goroutine adds every node in order; a gate's
	// children follow it, and it goes to the releaser after the last.
	var released []*rpNode
	for i, nd := range p.nodes {
		var id TaskID
		var err error
		if nd.kind == rpGate {
			id, err = s.Create(nd.task(p))
		} else {
			id, err = s.Add(nd.task(p))
		}
		if err != nil {
			p.violate("add of task %d (kind %d): %v", i, nd.kind, err)
			// What needs it cannot be added: stop building.
			for _, g := range p.nodes[:i] {
				if g.kind == rpGate && !rpContains(released, g) {
					gates <- g
				}
			}
			break
		}
		nd.id.Store(uint64(id))
		if nd.parent != nil && nd == nd.parent.kids[len(nd.parent.kids)-1] {
			gates <- nd.parent
			released = append(released, nd.parent)
		}
		if nd.kind == rpGate && len(nd.kids) == 0 {
			gates <- nd
			released = append(released, nd)
		}
	}
	close(gates)
	close(built)

	// Wait for every task from outside (these Waits run nothing), then
	// check what ran.
	for _, nd := range p.nodes {
		id := TaskID(nd.id.Load())
		if id == NoTask {
			continue
		}
		err := s.Wait(id)
		p.check(fmt.Sprintf("Wait for task %d (kind %d)", nd.idx, nd.kind), err)
		r := nd.runs.Load()
		switch {
		case nd.kind == rpGate:
		case err == nil && r != 1:
			p.violate("task %d (kind %d) succeeded with its kernel run %d times", nd.idx, nd.kind, r)
		case r > 1:
			p.violate("task %d (kind %d) ran %d times", nd.idx, nd.kind, r)
		}
		if err == nil && nd.kind == rpSpawn {
			for k := 0; k < nd.spawn; k++ {
				if got := nd.kidRuns[k].Load(); got != 1 {
					p.violate("task %d succeeded with its child %d run %d times", nd.idx, k, got)
				}
			}
		}
	}
	graphDone.Wait()
	ops.Wait()
	close(stop)
	threads.Wait()
	if err := s.Close(); !p.allowed(err) || rpForbidden(err) {
		p.violate("Close: %v", err)
	}
	if len(p.bad) > 0 {
		t.Errorf("%s: %d violations:", desc, len(p.bad))
		for _, b := range p.bad {
			t.Errorf("  %s", b)
		}
	}
	return n + gn*graphRuns
}

func rpContains(ns []*rpNode, n *rpNode) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}
