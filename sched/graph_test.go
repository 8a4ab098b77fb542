package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	kgOrder KernelID = 40 + iota
	kgStream
	kgEmpty
	kgFaulty
	kgBlock
)

// graphOrder is the shared state of the ordering kernel: each node checks
// that every predecessor finished in this run before it, and stamps itself.
type graphOrder struct {
	run   atomic.Uint32
	done  []atomic.Uint32 // run number in which the node last finished
	preds [][]int
	count []atomic.Int32 // runs of each node in this run
	bad   atomic.Int64
	first atomic.Pointer[string]
}

func (o *graphOrder) kernel(_ *Ctx, d *TaskData) error {
	n := int(d.Params[0])
	r := o.run.Load()
	for _, p := range o.preds[n] {
		if o.done[p].Load() != r {
			if o.bad.Add(1) == 1 {
				msg := fmt.Sprintf("node %d ran before its predecessor %d in run %d", n, p, r)
				o.first.Store(&msg)
			}
		}
	}
	o.count[n].Add(1)
	o.done[n].Store(r)
	return nil
}

func newGraphSched(t testing.TB, workers int, o *graphOrder) (*Scheduler, *Ctx) {
	t.Helper()
	reg := NewRegistry()
	must(t, reg.Register(kgOrder, Kernel{Name: "order", CPU: func(c *Ctx, d *TaskData) error { return o.kernel(c, d) }}))
	must(t, reg.Register(kgEmpty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kgStream, Kernel{Name: "double", Kind: Streaming, Grain: 256,
		In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			x, y := View[uint32](d.In[0]), View[uint32](d.Out[0])
			for i := d.Begin; i < d.End; i++ {
				y[i] = 2*x[i] + d.Params[0]
			}
			return nil
		}}))
	s, err := New(Config{Kernels: reg, Workers: workers})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, m
}

// randomDAG returns n nodes' predecessor lists: edges only from lower to
// higher indexes (acyclic), of a density drawn per graph, with some wide
// fan-outs and fan-ins.
func randomDAG(rng *rand.Rand, n int) [][]int {
	preds := make([][]int, n)
	p := rng.Float64() * 4 / float64(n)
	for j := 1; j < n; j++ {
		for i := range j {
			if rng.Float64() < p || (j%97 == 0 && i%7 == 0) {
				preds[j] = append(preds[j], i)
			}
		}
	}
	return preds
}

// TestGraphOrderRandomDAGs builds random DAGs and replays each several
// times on 1, 2 and 4 workers: every node runs exactly once per run, after
// all its predecessors.
func TestGraphOrderRandomDAGs(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			o := &graphOrder{}
			s, m := newGraphSched(t, workers, o)
			rng := rand.New(rand.NewPCG(uint64(workers), 7))
			graphs := 40
			if testing.Short() {
				graphs = 10
			}
			for gi := range graphs {
				n := 1 + rng.IntN(600)
				preds := randomDAG(rng, n)
				o.preds = preds
				o.done = make([]atomic.Uint32, n)
				o.count = make([]atomic.Int32, n)
				g := s.NewGraph()
				for i := range n {
					tk := Task{Kernel: kgOrder}
					tk.Data.Params[0] = uint32(i)
					if _, err := g.Add(&tk); err != nil {
						t.Fatal(err)
					}
				}
				for j, ps := range preds {
					for _, i := range ps {
						if err := g.Precede(GraphNode(i), GraphNode(j)); err != nil {
							t.Fatal(err)
						}
					}
				}
				for r := range 4 {
					o.run.Store(uint32(gi*10 + r + 1))
					for i := range o.count {
						o.count[i].Store(0)
					}
					var err error
					if r%2 == 0 {
						err = g.RunCtx(m)
					} else {
						err = g.Run()
					}
					if err != nil {
						t.Fatalf("graph %d (%d nodes) run %d: %v", gi, n, r, err)
					}
					for i := range o.count {
						if c := o.count[i].Load(); c != 1 {
							t.Fatalf("graph %d run %d: node %d ran %d times", gi, r, i, c)
						}
					}
					if o.bad.Load() != 0 {
						t.Fatalf("graph %d: %s", gi, *o.first.Load())
					}
				}
			}
		})
	}
}

// TestGraphDynamicNodes mixes nodes that run in place with streaming nodes
// larger than a grain (split by the scheduler as tasks) and checks both the
// order and the streams' contents, re-pointed between runs.
func TestGraphDynamicNodes(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 2, o)
	const n = 5000
	x := make([]uint32, n)
	for i := range x {
		x[i] = uint32(i)
	}
	y1, y2 := make([]uint32, n), make([]uint32, n)
	g := s.NewGraph()
	// chain: order(0) -> stream(x->y1) -> order(1) -> stream(y1->y2) -> order(2)
	o.preds = [][]int{nil, {0}, {1}}
	o.done = make([]atomic.Uint32, 3)
	o.count = make([]atomic.Int32, 3)
	var nodes []GraphNode
	add := func(tk Task) GraphNode {
		nd, err := g.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, nd)
		return nd
	}
	order := func(i uint32) Task {
		tk := Task{Kernel: kgOrder}
		tk.Data.Params[0] = i
		return tk
	}
	stream := func(in, out []uint32, p uint32) Task {
		tk := Task{Kernel: kgStream, Data: TaskData{Elements: n}}
		tk.Data.In[0], tk.Data.Out[0] = StreamOf(in), StreamOf(out)
		tk.Data.Params[0] = p
		return tk
	}
	a := add(order(0))
	s1 := add(stream(x, y1, 1))
	b := add(order(1))
	s2 := add(stream(y1, y2, 0))
	c := add(order(2))
	for i := 1; i < len(nodes); i++ {
		must(t, g.Precede(nodes[i-1], nodes[i]))
	}
	_ = a
	_ = b
	_ = c
	check := func(p uint32, src []uint32) {
		t.Helper()
		for i := range y2 {
			if want := 2 * (2*src[i] + p); y2[i] != want {
				t.Fatalf("y2[%d] = %d, want %d", i, y2[i], want)
			}
		}
	}
	o.run.Store(1)
	must(t, g.RunCtx(m))
	check(1, x)
	// Re-point: new params and a new input, validated once here.
	*g.Params(s1) = Params{5}
	x2 := make([]uint32, n)
	for i := range x2 {
		x2[i] = uint32(3 * i)
	}
	d := stream(x2, y1, 5).Data
	must(t, g.SetData(s1, &d))
	o.run.Store(2)
	must(t, g.RunCtx(m))
	check(5, x2)
	// A bad re-point is refused, naming the node and the stream.
	bad := stream(x2[:10], y1, 0).Data
	if err := g.SetData(s2, &bad); err == nil || !strings.Contains(err.Error(), "graph node 3") {
		t.Fatalf("SetData with a short input: %v", err)
	}
	if o.bad.Load() != 0 {
		t.Fatal(*o.first.Load())
	}
}

// TestGraphNodeErrors: a node whose kernel fails or panics stops its own
// successors, not the rest; Run names the node and kernel; the next run,
// with the fault gone, starts from the right counts (the counters the
// failed run left part-way are reset): a node with two predecessors, one
// of which failed, does not run early.
func TestGraphNodeErrors(t *testing.T) {
	for _, mode := range []uint32{1, 2} { // 1: returns an error, 2: panics
		o := &graphOrder{}
		s, m := newGraphSched(t, 2, o)
		must(t, s.Kernels().Register(kgFaulty, Kernel{Name: "faulty", CPU: func(c *Ctx, d *TaskData) error {
			switch d.Params[1] {
			case 1:
				return errors.New("bad input")
			case 2:
				panic("boom")
			}
			return o.kernel(c, d)
		}}))
		g := s.NewGraph()
		// 0 -> 1 (faulty) -> 2; 0 -> 3 -> 2; 0 -> 4
		o.preds = [][]int{nil, {0}, {1, 3}, {0}, {0}}
		o.done = make([]atomic.Uint32, 5)
		o.count = make([]atomic.Int32, 5)
		var ids [5]GraphNode
		for i := range ids {
			tk := Task{Kernel: kgFaulty}
			tk.Data.Params[0] = uint32(i)
			if i == 1 {
				tk.Data.Params[1] = mode
			}
			var err error
			ids[i], err = g.Add(&tk)
			must(t, err)
		}
		for j, ps := range o.preds {
			for _, i := range ps {
				must(t, g.Precede(ids[i], ids[j]))
			}
		}
		o.run.Store(1)
		err := g.RunCtx(m)
		if err == nil || !strings.Contains(err.Error(), `graph node 1 (kernel 43 "faulty")`) {
			t.Fatalf("mode %d: Run = %v, want an error naming graph node 1 and its kernel", mode, err)
		}
		if mode == 2 && !errors.Is(err, ErrKernelPanic) {
			t.Fatalf("panic: %v does not wrap ErrKernelPanic", err)
		}
		if c2, c3, c4 := o.count[2].Load(), o.count[3].Load(), o.count[4].Load(); c2 != 0 || c3 != 1 || c4 != 1 {
			t.Fatalf("after the failure: nodes 2, 3, 4 ran %d, %d, %d times, want 0, 1, 1", c2, c3, c4)
		}
		*g.Params(ids[1]) = Params{1, 0}
		for r := uint32(2); r < 6; r++ {
			o.run.Store(r)
			for i := range o.count {
				o.count[i].Store(0)
			}
			must(t, g.RunCtx(m))
			for i := range o.count {
				if c := o.count[i].Load(); c != 1 {
					t.Fatalf("run %d: node %d ran %d times", r, i, c)
				}
			}
			if o.bad.Load() != 0 {
				t.Fatalf("run %d: %s", r, *o.first.Load())
			}
		}
	}
}

// TestGraphRefusals: cycles, self edges, unknown nodes and kernels,
// dynamic-only fields, and a second concurrent run.
func TestGraphRefusals(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 1, o)
	g := s.NewGraph()
	var ids [3]GraphNode
	for i := range ids {
		var err error
		ids[i], err = g.Add(&Task{Kernel: kgEmpty})
		must(t, err)
	}
	must(t, g.Precede(ids[0], ids[1]))
	must(t, g.Precede(ids[1], ids[2]))
	must(t, g.Precede(ids[2], ids[1]))
	if err := g.RunCtx(m); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
	if err := g.Precede(ids[0], ids[0]); err == nil {
		t.Fatal("self edge accepted")
	}
	if err := g.Precede(ids[0], 7); err == nil {
		t.Fatal("edge to a missing node accepted")
	}
	if _, err := g.Add(&Task{Kernel: 999}); !errors.Is(err, ErrUnknownKernel) {
		t.Fatalf("unknown kernel: %v", err)
	}
	if _, err := g.Add(&Task{Kernel: kgEmpty, Dependency: ids[0].asTaskForTest()}); err == nil {
		t.Fatal("a Dependency on a graph node task accepted")
	}
	if err := s.Kernels().Register(KernelGraph, Kernel{Name: "x", CPU: func(*Ctx, *TaskData) error { return nil }}); err == nil {
		t.Fatal("KernelGraph's ID registered twice")
	}
	// A second run while one is in progress.
	block := make(chan struct{})
	started := make(chan struct{})
	reg := s.Kernels()
	must(t, reg.Register(kgBlock, Kernel{Name: "block", CPU: func(*Ctx, *TaskData) error {
		close(started)
		<-block
		return nil
	}}))
	g2 := s.NewGraph()
	_, err := g2.Add(&Task{Kernel: kgBlock})
	must(t, err)
	done := make(chan error)
	go func() { done <- g2.Run() }()
	<-started
	if err := g2.Run(); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("concurrent Run: %v", err)
	}
	if _, err := g2.Add(&Task{Kernel: kgEmpty}); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("Add during a run: %v", err)
	}
	close(block)
	must(t, <-done)
}

// asTaskForTest turns a node number into a non-zero TaskID, as a user who
// confuses the two would.
func (n GraphNode) asTaskForTest() TaskID { return TaskID(uint64(n) + 1) }

// TestGraphRunAllocatesNothing: replaying a built graph allocates nothing.
func TestGraphRunAllocatesNothing(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 1, o)
	g := s.NewGraph()
	const w = 32
	var prev [w]GraphNode
	for l := range 16 {
		for j := range w {
			nd, err := g.Add(&Task{Kernel: kgEmpty})
			must(t, err)
			if l > 0 {
				must(t, g.Precede(prev[j], nd))
				must(t, g.Precede(prev[(j+1)%w], nd))
			}
			prev[j] = nd
		}
	}
	must(t, g.RunCtx(m))
	if a := testing.AllocsPerRun(50, func() {
		if err := g.RunCtx(m); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("RunCtx allocates %.1f times per run", a)
	}
	if a := testing.AllocsPerRun(50, func() {
		if err := g.Run(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("Run allocates %.1f times per run", a)
	}
}

// segExec is a SegmentExecutor: it keeps the segments it was given, runs
// a segment's nodes (the order kernel) on a goroutine of its own and
// completes the segment's job there; refuse makes NewSegment fail, fail
// fails the next segment job whose leader is that node + 1.
type segExec struct {
	o       *graphOrder
	refuse  bool
	fail    atomic.Int32
	mu      sync.Mutex
	segs    []*fakeSeg
	segJobs atomic.Int32 // jobs standing for a segment
	plain   atomic.Int32 // jobs of one node
}

type fakeSeg struct {
	nodes   []SegmentNode
	changed []int
	closed  int
}

var errSegment = errors.New("segment failed")

func (e *segExec) NewSegment(nodes []SegmentNode) (Segment, error) {
	if e.refuse {
		return nil, errors.New("no segments here")
	}
	sg := &fakeSeg{nodes: append([]SegmentNode(nil), nodes...)}
	e.mu.Lock()
	e.segs = append(e.segs, sg)
	e.mu.Unlock()
	return sg, nil
}

func (s *fakeSeg) Changed(i int) { s.changed = append(s.changed, i) }
func (s *fakeSeg) Close()        { s.closed++ }

func (e *segExec) Enqueue(j Job) {
	if h := j.Segment(); h != nil {
		e.segJobs.Add(1)
		sg := h.(*fakeSeg)
		var err error
		if e.fail.Load() == int32(sg.nodes[0].Node)+1 {
			e.fail.Store(0)
			err = errSegment
		}
		go func() {
			if err == nil {
				for _, n := range sg.nodes {
					e.o.kernel(nil, n.Data)
				}
			}
			j.Done(err)
		}()
		return
	}
	e.plain.Add(1)
	go func() {
		e.o.kernel(nil, j.Data())
		j.Done(nil)
	}()
}

func (e *segExec) Close() error { return nil }

// TestGraphSegments: with a SegmentExecutor, the GPU nodes that share
// their predecessors form one segment each (roots included), handed to
// NewSegment once at the seal; a run enqueues one job per segment and no
// job per node, successors of every member wait for the segment; SetData
// on a member reaches the segment as Changed, Params do not; a segment
// that fails stops its successors and the next run starts clean; a second
// seal (after Add) or Release closes the segments and forms them anew; an
// executor that refuses NewSegment gets the nodes one job each.
func TestGraphSegments(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%v", refuse), func(t *testing.T) {
			o := &graphOrder{}
			reg := NewRegistry()
			must(t, reg.Register(kgOrder, Kernel{Name: "order", CPU: func(c *Ctx, d *TaskData) error { return o.kernel(c, d) }}))
			ex := &segExec{o: o, refuse: refuse}
			s, err := New(Config{Kernels: reg, Workers: 2})
			must(t, err)
			must(t, s.AttachExecutor(ExecGPU, ex))
			m, err := s.RegisterThread("main")
			must(t, err)
			t.Cleanup(func() { s.Close() })

			// 0 A, 1 B (after A), 2-4 GPU after A, 5-6 GPU after B, 7 GPU
			// after A and B, 8-9 GPU roots, 10 C after every GPU node.
			o.preds = [][]int{nil, {0}, {0}, {0}, {0}, {1}, {1}, {0, 1}, nil, nil, {2, 3, 4, 5, 6, 7, 8, 9}}
			gpuNodes := []int{2, 3, 4, 5, 6, 7, 8, 9}
			g := s.NewGraph()
			build := func(preds [][]int, from int) {
				for i := from; i < len(preds); i++ {
					tk := Task{Kernel: kgOrder}
					tk.Data.Params[0] = uint32(i)
					if i >= 2 && i <= 9 {
						tk.Affinity = GPU
					}
					if _, err := g.Add(&tk); err != nil {
						t.Fatal(err)
					}
					for _, p := range preds[i] {
						must(t, g.Precede(GraphNode(p), GraphNode(i)))
					}
				}
			}
			build(o.preds, 0)
			o.done = make([]atomic.Uint32, 12)
			o.count = make([]atomic.Int32, 12)
			var run uint32
			runOnce := func(what string, segJobs, plain int32) {
				t.Helper()
				run++
				o.run.Store(run)
				ex.segJobs.Store(0)
				ex.plain.Store(0)
				must(t, g.RunCtx(m))
				if o.bad.Load() != 0 {
					t.Fatalf("%s: %s", what, *o.first.Load())
				}
				for i := range o.preds {
					if o.done[i].Load() != run {
						t.Fatalf("%s: node %d did not run", what, i)
					}
				}
				if got, gotPlain := ex.segJobs.Load(), ex.plain.Load(); got != segJobs || gotPlain != plain {
					t.Fatalf("%s: %d segment jobs and %d node jobs, want %d and %d", what, got, gotPlain, segJobs, plain)
				}
			}
			wantSegs, wantPlain := int32(4), int32(0)
			if refuse {
				wantSegs, wantPlain = 0, int32(len(gpuNodes))
			}
			for r := range 5 {
				runOnce(fmt.Sprintf("run %d", r), wantSegs, wantPlain)
			}
			if refuse {
				return
			}
			var groups [][]GraphNode
			for _, sg := range ex.segs {
				var nodes []GraphNode
				for _, n := range sg.nodes {
					nodes = append(nodes, n.Node)
					if int(n.Data.Params[0]) != int(n.Node) {
						t.Fatalf("segment node %d carries the data of node %d", n.Node, n.Data.Params[0])
					}
				}
				groups = append(groups, nodes)
			}
			if got, want := fmt.Sprint(groups), "[[2 3 4] [5 6] [7] [8 9]]"; got != want {
				t.Fatalf("segments %s, want %s (by equal predecessors)", got, want)
			}

			// SetData on node 3 (position 1 of the first segment); Params
			// of node 6 only.
			d := TaskData{}
			d.Params[0] = 3
			must(t, g.SetData(3, &d))
			g.Params(6)[1] = 9
			if c := ex.segs[0].changed; len(c) != 1 || c[0] != 1 {
				t.Fatalf("Changed calls of the first segment: %v, want [1]", c)
			}
			if c := ex.segs[1].changed; len(c) != 0 {
				t.Fatalf("a Params change called Changed: %v", c)
			}
			runOnce("after SetData", 4, 0)

			// A failed segment (nodes 5, 6) stops its successor (10).
			ex.fail.Store(5 + 1)
			run++
			o.run.Store(run)
			if err := g.RunCtx(m); !errors.Is(err, errSegment) {
				t.Fatalf("run with a failing segment: err = %v, want it to wrap the segment's error", err)
			}
			if o.done[10].Load() == run {
				t.Fatal("node 10 ran though the segment of its predecessors 5 and 6 failed")
			}
			runOnce("after the failed run", 4, 0)

			// A node added: the next run seals again.
			old := ex.segs
			ex.segs = nil
			o.preds = append(o.preds, []int{10})
			build(o.preds, 11)
			runOnce("after Add", 4, 0)
			for i, sg := range old {
				if sg.closed != 1 {
					t.Fatalf("segment %d closed %d times after a second seal, want 1", i, sg.closed)
				}
			}
			if len(ex.segs) != 4 {
				t.Fatalf("%d segments formed at the second seal, want 4", len(ex.segs))
			}
			old = ex.segs
			ex.segs = nil
			must(t, g.Release())
			for i, sg := range old {
				if sg.closed != 1 {
					t.Fatalf("segment %d closed %d times by Release, want 1", i, sg.closed)
				}
			}
			runOnce("after Release", 4, 0)
			if len(ex.segs) != 4 {
				t.Fatalf("%d segments formed after Release, want 4", len(ex.segs))
			}
		})
	}
}

// seqGraph is a graph of a chain of n nodes of a kernel that stamps a
// shared sequence: stamp[node] is the sequence number when it ran.
type seqGraph struct {
	g     *Graph
	stamp []atomic.Int64
}

const kgSeq KernelID = 48

func registerSeq(t testing.TB, s *Scheduler, seq *atomic.Int64) {
	t.Helper()
	must(t, s.Kernels().Register(kgSeq, Kernel{Name: "seq", CPU: func(_ *Ctx, d *TaskData) error {
		d.Data.(*seqGraph).stamp[d.Params[0]].Store(seq.Add(1))
		return nil
	}}))
}

func newSeqGraph(t testing.TB, s *Scheduler, n int) *seqGraph {
	t.Helper()
	sg := &seqGraph{g: s.NewGraph(), stamp: make([]atomic.Int64, n)}
	prev := GraphNode(-1)
	for i := range n {
		tk := Task{Kernel: kgSeq}
		tk.Data.Data = sg
		tk.Data.Params[0] = uint32(i)
		nd, err := sg.g.Add(&tk)
		must(t, err)
		if prev >= 0 {
			must(t, sg.g.Precede(prev, nd))
		}
		prev = nd
	}
	return sg
}

// gate is a dynamic task that finishes when open is closed.
func gateTask(t testing.TB, s *Scheduler, open chan struct{}) TaskID {
	t.Helper()
	tk := Task{Kernel: kgBlock}
	tk.Data.Data = open
	id, err := s.Add(&tk)
	must(t, err)
	return id
}

func registerGate(t testing.TB, s *Scheduler) {
	t.Helper()
	must(t, s.Kernels().Register(kgBlock, Kernel{Name: "gate", CPU: func(_ *Ctx, d *TaskData) error {
		<-d.Data.(chan struct{})
		return nil
	}}))
}

// TestGraphStartWaitsForAfter: a started run's nodes wait for every task
// given as after (one, or several through a join), and its join finishes
// only after the nodes ran.
func TestGraphStartWaitsForAfter(t *testing.T) {
	for _, gates := range []int{1, 3} {
		s, m := newGraphSched(t, 3, &graphOrder{})
		registerGate(t, s)
		var seq atomic.Int64
		registerSeq(t, s, &seq)
		sg := newSeqGraph(t, s, 4)
		opens := make([]chan struct{}, gates)
		after := make([]TaskID, 0, gates+1)
		after = append(after, NoTask) // skipped
		for i := range opens {
			opens[i] = make(chan struct{})
			after = append(after, gateTask(t, s, opens[i]))
		}
		root, err := sg.g.Start(m, after...)
		must(t, err)
		for i := range opens {
			time.Sleep(5 * time.Millisecond)
			if s.IsFinished(root) || sg.stamp[0].Load() != 0 {
				t.Fatalf("%d gates, %d open: the run started (node 0 stamp %d) before every after task finished", gates, i, sg.stamp[0].Load())
			}
			close(opens[i])
		}
		must(t, m.Wait(root))
		for i := range sg.stamp {
			if sg.stamp[i].Load() == 0 {
				t.Fatalf("%d gates: node %d did not run by the time the run's join finished", gates, i)
			}
		}
	}
}

// TestGraphStartChainsInFlight starts runs of many distinct graphs at
// once, each after the previous one's join (a frame pipeline's order), and
// a second chain alongside: all are in flight together, and each graph's
// first node runs after the previous graph's last.
func TestGraphStartChainsInFlight(t *testing.T) {
	s, m := newGraphSched(t, 3, &graphOrder{})
	registerGate(t, s)
	var seq atomic.Int64
	registerSeq(t, s, &seq)
	const k, n = 12, 5
	var chains [2][k]*seqGraph
	for c := range chains {
		for i := range chains[c] {
			chains[c][i] = newSeqGraph(t, s, n)
		}
	}
	for rep := range 5 {
		open := make(chan struct{})
		gate := gateTask(t, s, open)
		var joins [2][k]TaskID
		for c := range chains {
			prev := gate
			for i, sg := range chains[c] {
				for j := range sg.stamp {
					sg.stamp[j].Store(0)
				}
				id, err := sg.g.Start(m, prev)
				must(t, err)
				joins[c][i], prev = id, id
			}
		}
		for c := range joins {
			for i, id := range joins[c] {
				if s.IsFinished(id) {
					t.Fatalf("rep %d: chain %d graph %d finished before the gate opened", rep, c, i)
				}
			}
		}
		close(open)
		for c := range joins {
			must(t, m.Wait(joins[c][k-1]))
			for i := 1; i < k; i++ {
				first, last := chains[c][i].stamp[0].Load(), chains[c][i-1].stamp[n-1].Load()
				if first == 0 || last == 0 || first < last {
					t.Fatalf("rep %d: chain %d: graph %d's first node ran at %d, graph %d's last at %d", rep, c, i, first, i-1, last)
				}
			}
		}
	}
}

// TestGraphStartRefusedWhileInFlight: while a started run is in flight, a
// second Start, a Run and every change of the same graph are refused with
// ErrGraphRunning; once its join finished, the graph starts again.
func TestGraphStartRefusedWhileInFlight(t *testing.T) {
	s, m := newGraphSched(t, 2, &graphOrder{})
	registerGate(t, s)
	var seq atomic.Int64
	registerSeq(t, s, &seq)
	sg := newSeqGraph(t, s, 3)
	open := make(chan struct{})
	root, err := sg.g.Start(m, gateTask(t, s, open))
	must(t, err)
	if _, err := sg.g.Start(m); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("second Start in flight = %v, want ErrGraphRunning", err)
	}
	if err := sg.g.RunCtx(m); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("Run while a started run is in flight = %v, want ErrGraphRunning", err)
	}
	if _, err := sg.g.Add(&Task{Kernel: kgEmpty}); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("Add in flight = %v, want ErrGraphRunning", err)
	}
	if err := sg.g.Precede(0, 2); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("Precede in flight = %v, want ErrGraphRunning", err)
	}
	if err := sg.g.SetData(0, &TaskData{}); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("SetData in flight = %v, want ErrGraphRunning", err)
	}
	if err := sg.g.Release(); !errors.Is(err, ErrGraphRunning) {
		t.Fatalf("Release in flight = %v, want ErrGraphRunning", err)
	}
	close(open)
	must(t, m.Wait(root))
	if sg.stamp[2].Load() == 0 {
		t.Fatal("the started run did not run its last node")
	}
	sg.stamp[2].Store(0)
	root, err = sg.g.Start(m)
	must(t, err)
	must(t, m.Wait(root))
	if sg.stamp[2].Load() == 0 {
		t.Fatal("the run started after the first finished did not run its last node")
	}
	must(t, sg.g.RunCtx(m))
}

// TestGraphStartNodeError: a node's error fails the started run's join
// (Wait returns it, naming the node), and the next run starts from whole
// counters.
func TestGraphStartNodeError(t *testing.T) {
	o := &graphOrder{}
	s, m := newGraphSched(t, 2, o)
	must(t, s.Kernels().Register(kgFaulty, Kernel{Name: "faulty", CPU: func(c *Ctx, d *TaskData) error {
		if d.Params[1] == 1 {
			return errors.New("bad input")
		}
		return o.kernel(c, d)
	}}))
	g := s.NewGraph()
	// 0 -> 1 (faulty) -> 2; 0 -> 3 -> 2
	o.preds = [][]int{nil, {0}, {1, 3}, {0}}
	o.done = make([]atomic.Uint32, 4)
	o.count = make([]atomic.Int32, 4)
	var ids [4]GraphNode
	for i := range ids {
		tk := Task{Kernel: kgFaulty}
		tk.Data.Params[0] = uint32(i)
		if i == 1 {
			tk.Data.Params[1] = 1
		}
		var err error
		ids[i], err = g.Add(&tk)
		must(t, err)
	}
	for j, ps := range o.preds {
		for _, i := range ps {
			must(t, g.Precede(ids[i], ids[j]))
		}
	}
	o.run.Store(1)
	root, err := g.Start(m)
	must(t, err)
	err = m.Wait(root)
	if err == nil || !strings.Contains(err.Error(), `graph node 1 (kernel 43 "faulty")`) || !errors.Is(err, ErrChildFailed) {
		t.Fatalf("Wait on a failed started run = %v, want a failed child naming graph node 1", err)
	}
	*g.Params(ids[1]) = Params{1, 0}
	for r := uint32(2); r < 5; r++ {
		o.run.Store(r)
		for i := range o.count {
			o.count[i].Store(0)
		}
		root, err := g.Start(m)
		must(t, err)
		must(t, m.Wait(root))
		for i := range o.count {
			if c := o.count[i].Load(); c != 1 {
				t.Fatalf("run %d after a failed run: node %d ran %d times", r, i, c)
			}
		}
	}
	if o.bad.Load() != 0 {
		t.Fatal(*o.first.Load())
	}
}

// TestGraphStartAllocatesNothing: starting a sealed graph after other
// tasks (one, or several joined) and waiting for it allocates nothing.
func TestGraphStartAllocatesNothing(t *testing.T) {
	s, m := newGraphSched(t, 1, &graphOrder{})
	var seq atomic.Int64
	registerSeq(t, s, &seq)
	a, b, c := newSeqGraph(t, s, 8), newSeqGraph(t, s, 8), newSeqGraph(t, s, 8)
	step := func() {
		// A held task keeps a's and c's runs unfinished until b started,
		// so b's two afters go through a join.
		hold, err := m.Create(&Task{})
		if err != nil {
			t.Fatal(err)
		}
		ja, err := a.g.Start(m, hold)
		if err != nil {
			t.Fatal(err)
		}
		jc, err := c.g.Start(m, hold)
		if err != nil {
			t.Fatal(err)
		}
		jb, err := b.g.Start(m, ja, NoTask, jc)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Run(hold); err != nil {
			t.Fatal(err)
		}
		if err := m.Wait(jb); err != nil {
			t.Fatal(err)
		}
		if b.stamp[0].Load() < max(a.stamp[7].Load(), c.stamp[7].Load()) {
			t.Fatal("b ran before a or c finished")
		}
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("Start allocates %.1f times per step of three runs", n)
	}
}

// graphObs records the node events of a graph run: nodes run in place
// are reported with Task NoTask and the run's join as Parent.
type graphObs struct {
	mu     sync.Mutex
	byPar  map[TaskID]int
	kernel map[KernelID]int
	bad    int // events off a scheduler thread, or with a negative span
}

func (o *graphObs) TaskRan(ev *RunEvent) {
	if ev.Task != NoTask {
		return
	}
	o.mu.Lock()
	o.byPar[ev.Parent]++
	o.kernel[ev.Kernel]++
	if ev.Stop < ev.Start || ev.Thread < 0 {
		o.bad++
	}
	o.mu.Unlock()
}

// TestGraphObserverSeesInPlaceNodes: every node run in place is reported
// to the Observer once per run, on a scheduler thread, under the run's join.
func TestGraphObserverSeesInPlaceNodes(t *testing.T) {
	reg := NewRegistry()
	obs := &graphObs{byPar: map[TaskID]int{}, kernel: map[KernelID]int{}}
	s, err := New(Config{Kernels: reg, Workers: 2, Observer: obs})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	m, err := s.RegisterThread("main")
	must(t, err)
	var seq atomic.Int64
	registerSeq(t, s, &seq)
	sg := newSeqGraph(t, s, 6)
	for range 3 {
		root, err := sg.g.Start(m)
		must(t, err)
		must(t, m.Wait(root))
		obs.mu.Lock()
		n := obs.byPar[root]
		obs.mu.Unlock()
		if n != 6 {
			t.Fatalf("the observer saw %d nodes under the run's join, want 6", n)
		}
	}
	if k, bad := obs.kernel[kgSeq], obs.bad; k != 18 || bad != 0 {
		t.Fatalf("node events: %d of the node kernel (want 18), %d with a bad thread or span", k, bad)
	}
}

// TestGraphRaceCheckSegmentMembers: with the race check on, the members
// of a GPU segment are ordered as its leader is (the seal's contraction
// drops their own edges): a CPU node writing what both members read, and
// preceding both, is no race; two members of one segment writing the same
// range are one.
func TestGraphRaceCheckSegmentMembers(t *testing.T) {
	o := &graphOrder{preds: [][]int{nil, {0}, {0}}, done: make([]atomic.Uint32, 3), count: make([]atomic.Int32, 3)}
	reg := NewRegistry()
	must(t, reg.Register(kgStream, Kernel{Name: "copy", Kind: Streaming, Grain: 1 << 20,
		In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error { return o.kernel(c, d) }}))
	s, err := New(Config{Kernels: reg, Workers: 2, CheckRaces: true})
	must(t, err)
	ex := &segExec{o: o}
	must(t, s.AttachExecutor(ExecGPU, ex))
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() { s.Close() })
	x, y, z1, z2 := make([]uint32, 64), make([]uint32, 64), make([]uint32, 64), make([]uint32, 64)
	build := func(out2 []uint32) *Graph {
		g := s.NewGraph()
		for i, io := range [][2][]uint32{{x, y}, {y, z1}, {y, out2}} {
			tk := Task{Kernel: kgStream}
			tk.Data.Params[0] = uint32(i)
			tk.Data.Elements = 64
			tk.Data.In[0], tk.Data.Out[0] = StreamOf(io[0]), StreamOf(io[1])
			if i > 0 {
				tk.Affinity = GPU
			}
			n, err := g.Add(&tk)
			must(t, err)
			if i > 0 {
				must(t, g.Precede(0, n))
			}
		}
		return g
	}
	g := build(z2)
	for r := uint32(1); r <= 3; r++ {
		o.run.Store(r)
		must(t, g.RunCtx(m))
	}
	if len(ex.segs) != 1 || len(ex.segs[0].nodes) != 2 {
		t.Fatalf("the two GPU nodes formed %d segments, want one of two", len(ex.segs))
	}
	if o.bad.Load() != 0 {
		t.Fatal(*o.first.Load())
	}
	if err := build(z1).RunCtx(m); !errors.Is(err, ErrRace) || !strings.Contains(err.Error(), "graph node 2") {
		t.Fatalf("two members of a segment writing one range: Run = %v, want ErrRace naming node 2", err)
	}
}
