package sched

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
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

// TestRegisterNext: the registry hands out free IDs, never KernelGraph's,
// and skips the ones libraries chose by hand.
func TestRegisterNext(t *testing.T) {
	reg := NewRegistry()
	f := func(*Ctx, *TaskData) error { return nil }
	must(t, reg.Register(1, Kernel{Name: "a", CPU: f}))
	must(t, reg.Register(3, Kernel{Name: "b", CPU: f}))
	for _, want := range []KernelID{2, 4, 5} {
		id, err := reg.RegisterNext(Kernel{Name: "n", CPU: f})
		must(t, err)
		if id != want {
			t.Fatalf("RegisterNext = %d, want %d", id, want)
		}
	}
	if _, err := reg.RegisterNext(Kernel{Name: "nocpu"}); err == nil {
		t.Fatal("RegisterNext accepted a kernel without a CPU function")
	}
	if k := reg.Lookup(KernelGraph); k == nil || k.Name != "sched.graph" {
		t.Fatalf("Lookup(KernelGraph) = %v", k)
	}
}
