package sched

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
)

// kRaceSpan reads one Whole stream and writes another, any stride: a
// node's ranges are whatever the test points them at.
const kRaceSpan KernelID = 3

func spanSched(t testing.TB, ran *atomic.Int32) *Scheduler {
	s := raceSched(t, 2, goExec{})
	registerSpan(t, s.Kernels(), ran)
	return s
}

func registerSpan(t testing.TB, reg *Registry, ran *atomic.Int32) {
	must(t, reg.Register(kRaceSpan, Kernel{Name: "span", Kind: Streaming,
		In:  []StreamSpec{{Name: "src", Rate: Whole}},
		Out: []StreamSpec{{Name: "dst", Rate: Whole}},
		CPU: func(*Ctx, *TaskData) error {
			if ran != nil {
				ran.Add(1)
			}
			return nil
		}}))
}

func span(src, dst []byte) *Task {
	t := &Task{Kernel: kRaceSpan}
	t.Data.Elements = 1
	if src != nil {
		t.Data.In[0] = Stream{Bytes: src, Stride: 1, Count: uint32(len(src))}
	}
	if dst != nil {
		t.Data.Out[0] = Stream{Bytes: dst, Stride: 1, Count: uint32(len(dst))}
	}
	return t
}

func addNode(t testing.TB, g *Graph, tk *Task) GraphNode {
	n, err := g.Add(tk)
	must(t, err)
	return n
}

// TestGraphRaceBetweenNodes: two nodes writing overlapping bytes with no
// Precede chain between them fail the run before any node runs; the error
// names both nodes, their kernels and streams, and the overlap. An edge,
// or a chain through a third node, orders them.
func TestGraphRaceBetweenNodes(t *testing.T) {
	var ran atomic.Int32
	s := spanSched(t, &ran)
	mem := make([]byte, 256)
	g := s.NewGraph()
	a := addNode(t, g, span(mem[:64], mem[64:128]))  // reads [0,64), writes [64,128)
	b := addNode(t, g, span(mem[200:], mem[96:160])) // writes [96,160)
	c := addNode(t, g, span(mem[:128], nil))         // reads [0,128): only reads overlap a's input
	err := g.Run()
	var re *RaceError
	if !errors.Is(err, ErrRace) || !errors.As(err, &re) {
		t.Fatalf("unordered writers: Run = %v, want ErrRace", err)
	}
	if ran.Load() != 0 {
		t.Fatalf("%d nodes ran in a refused run", ran.Load())
	}
	nodes := map[GraphNode]bool{re.Node: true, re.OtherNode: true}
	if len(nodes) != 2 || re.Task != NoTask || re.Other != NoTask || re.End-re.Begin != 32 {
		t.Fatalf("race %+v", re)
	}
	for _, w := range []string{"graph node", "\"span\"", "out[0] dst", "Precede"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q lacks %q", err, w)
		}
	}
	// Still refused: a refused graph is checked at every run.
	if err := g.Run(); !errors.Is(err, ErrRace) {
		t.Fatalf("second run: %v", err)
	}
	// a -> c -> b: b is ordered after a through c; c reads what a writes,
	// ordered by the edge; b writes what c reads, ordered too.
	must(t, g.Precede(a, c))
	must(t, g.Precede(c, b))
	must(t, g.Run())
	if ran.Load() != 3 {
		t.Fatalf("%d nodes ran, want 3", ran.Load())
	}
}

// TestGraphRaceSetData: re-pointing a node's stream is checked at the
// next run, and re-pointing it back runs again.
func TestGraphRaceSetData(t *testing.T) {
	s := spanSched(t, nil)
	mem := make([]byte, 256)
	g := s.NewGraph()
	addNode(t, g, span(nil, mem[:64]))
	b := addNode(t, g, span(nil, mem[64:128]))
	must(t, g.Run())
	must(t, g.SetData(b, &span(nil, mem[32:96]).Data))
	if err := g.Run(); !errors.Is(err, ErrRace) {
		t.Fatalf("after SetData onto node 0's output: %v", err)
	}
	must(t, g.SetData(b, &span(mem[:64], mem[128:]).Data)) // reads what node 0 writes
	if err := g.Run(); !errors.Is(err, ErrRace) {
		t.Fatalf("a read of node 0's output: %v", err)
	}
	must(t, g.SetData(b, &span(nil, mem[64:128]).Data))
	must(t, g.Run())
}

// TestGraphRaceDevice: nodes on the GPU (dynamic nodes) and on the CPU,
// device buffers compared by buffer and offset.
func TestGraphRaceDevice(t *testing.T) {
	s := spanSched(t, nil)
	dev := func(aff Affinity, buf BufferID, off uint64, n uint32) *Task {
		tk := &Task{Kernel: kRaceSpan, Affinity: aff}
		tk.Data.Elements = 1
		tk.Data.Out[0] = Stream{Buffer: buf, Offset: off, Stride: 4, Count: n}
		return tk
	}
	g := s.NewGraph()
	addNode(t, g, dev(GPU, 1, 0, 16))
	addNode(t, g, dev(AnyWorker, 1, 64, 16)) // the next 64 bytes
	addNode(t, g, dev(GPU, 2, 0, 16))        // another buffer
	must(t, g.Run())
	addNode(t, g, dev(Auto, 1, 60, 1)) // the last word of node 0's range
	err := g.Run()
	var re *RaceError
	if !errors.As(err, &re) || re.Buffer != 1 || re.Begin != 60 || re.End != 64 {
		t.Fatalf("overlap in buffer 1: %v (%+v)", err, re)
	}
}

// TestGraphRaceAgainstTasks: a graph run is compared with the live tasks
// when it starts, and a task added while it runs is compared with its
// nodes; the run's own children are not.
func TestGraphRaceAgainstTasks(t *testing.T) {
	s := spanSched(t, nil)
	mem := make([]byte, 256)
	g := s.NewGraph()
	addNode(t, g, span(mem[:64], mem[64:128]))
	// A live task (behind a gate) writing what the node reads.
	w := span(nil, mem[32:48])
	w.Dependency = gate(t, s)
	wid, err := s.Add(w)
	must(t, err)
	err = g.Run()
	var re *RaceError
	if !errors.As(err, &re) || re.Node != 0 || re.Task == NoTask || re.Other != wid || re.OtherNode != -1 {
		t.Fatalf("graph against a live writer: %v (%+v)", err, re)
	}
	if !strings.Contains(err.Error(), "graph node 0 (run ") {
		t.Fatalf("error text %q", err)
	}
	// More live ranges than the graph has: the graph's are looked up
	// among the tasks' (the other way round above).
	w2 := span(mem[128:160], mem[160:192])
	w2.Dependency = w.Dependency
	_, err = s.Add(w2)
	must(t, err)
	g1 := s.NewGraph()
	addNode(t, g1, span(mem[40:44], nil))
	if err := g1.Run(); !errors.As(err, &re) || re.Other != wid || re.Node != 0 {
		t.Fatalf("a one-range graph against a live writer: %v", err)
	}
	must(t, g1.SetData(0, &span(mem[0:32], nil).Data)) // beside the writers
	must(t, g1.Run())

	// During a run: a node's kernel adds a task that writes what the
	// other node reads (refused), and a child of its own task reading it
	// (not compared with the graph's nodes).
	const kAdder KernelID = 4
	var added, child error
	must(t, s.Kernels().Register(kAdder, Kernel{Name: "adder", CPU: func(c *Ctx, d *TaskData) error {
		_, added = c.Add(span(nil, mem[200:210]))
		k := span(mem[200:210], nil)
		k.Parent = c.Current()
		_, child = c.Add(k)
		return nil
	}}))
	g2 := s.NewGraph()
	addNode(t, g2, span(mem[200:220], nil))
	addNode(t, g2, &Task{Kernel: kAdder})
	must(t, g2.Run())
	if !errors.Is(added, ErrRace) {
		t.Fatalf("a task racing a node during the run: %v", added)
	}
	if child != nil {
		t.Fatalf("a child of a node's runner: %v", child)
	}
	t.Logf("example: %v", added)
}

// TestGraphRaceRunFromKernel: a kernel that runs a graph over its own
// streams waits for the run: the two are not compared.
func TestGraphRaceRunFromKernel(t *testing.T) {
	s := spanSched(t, nil)
	mem := make([]byte, 64)
	g := s.NewGraph()
	addNode(t, g, span(mem[:32], mem[32:]))
	const kOuter KernelID = 5
	must(t, s.Kernels().Register(kOuter, Kernel{Name: "outer", Kind: Streaming,
		Out: []StreamSpec{{Name: "all", Rate: Whole}},
		CPU: func(c *Ctx, d *TaskData) error { return g.RunCtx(c) }}))
	tk := &Task{Kernel: kOuter}
	tk.Data.Elements = 1
	tk.Data.Out[0] = Stream{Bytes: mem, Stride: 1, Count: 64}
	id, err := s.Add(tk)
	must(t, err)
	must(t, s.Wait(id))
}

// TestGraphRaceNestedRun: a graph run from a node's kernel is compared
// with the outer run's nodes: writing what an outer node reads is refused,
// other memory is not.
func TestGraphRaceNestedRun(t *testing.T) {
	s := spanSched(t, nil)
	mem := make([]byte, 256)
	inner := s.NewGraph()
	addNode(t, inner, span(nil, mem[200:256]))
	const kRunInner KernelID = 6
	must(t, s.Kernels().Register(kRunInner, Kernel{Name: "run_inner", CPU: func(c *Ctx, _ *TaskData) error { return inner.RunCtx(c) }}))
	outer := s.NewGraph()
	addNode(t, outer, span(mem[:64], mem[64:128]))
	addNode(t, outer, &Task{Kernel: kRunInner})
	must(t, outer.Run())
	must(t, inner.SetData(0, &span(nil, mem[32:40]).Data)) // outer node 0's input
	err := outer.Run()
	var re *RaceError
	if !errors.As(err, &re) || re.Node != 0 || re.OtherNode != 0 || re.Task == re.Other {
		t.Fatalf("inner run writing the outer run's input: %v (%+v)", err, re)
	}
}

// TestGraphRaceRandom compares the pair check with a brute-force model
// on random graphs: random edges (lower to higher index, the order
// shuffled), random read and write ranges over a span that grows with
// the nodes (a few hazards per graph at most); a run is refused
// iff two nodes overlap with a write and neither reaches the other. More
// than 64 nodes, so reachability takes several chunks of sources.
func TestGraphRaceRandom(t *testing.T) {
	s := spanSched(t, nil)
	rng := rand.New(rand.NewPCG(7, 11))
	mem := make([]byte, 1<<16)
	refused := 0
	for iter := range 300 {
		n := 2 + rng.IntN(150)
		perm := rng.Perm(n)
		g := s.NewGraph()
		type rg struct{ lo, hi int }
		in, out := make([]rg, n), make([]rg, n)
		pick := func() rg {
			if rng.IntN(3) == 0 {
				return rg{}
			}
			lo := rng.IntN(min(len(mem)-8, 2*n*n))
			return rg{lo, lo + 1 + rng.IntN(8)}
		}
		for i := range n {
			in[i], out[i] = pick(), pick()
			var src, dst []byte
			if in[i].hi > 0 {
				src = mem[in[i].lo:in[i].hi]
			}
			if out[i].hi > 0 {
				dst = mem[out[i].lo:out[i].hi]
			}
			addNode(t, g, span(src, dst))
		}
		succ := make([][]int, n)
		density := rng.Float64() * rng.Float64()
		for a := range n {
			for b := a + 1; b < n; b++ {
				if rng.Float64() < density {
					succ[a] = append(succ[a], b)
					must(t, g.Precede(GraphNode(perm[a]), GraphNode(perm[b])))
				}
			}
		}
		reach := func(a, b int) bool {
			seen := make([]bool, n)
			st := []int{a}
			for len(st) > 0 {
				x := st[len(st)-1]
				st = st[:len(st)-1]
				if x == b {
					return true
				}
				for _, y := range succ[x] {
					if !seen[y] {
						seen[y] = true
						st = append(st, y)
					}
				}
			}
			return false
		}
		ov := func(x, y rg) bool { return x.hi > 0 && y.hi > 0 && x.lo < y.hi && y.lo < x.hi }
		want := false
		for a := 0; a < n && !want; a++ {
			for b := a + 1; b < n && !want; b++ {
				// perm[a] is the node made a's: indices are positions in
				// the unshuffled order.
				pa, pb := perm[a], perm[b]
				hz := ov(out[pa], out[pb]) || ov(out[pa], in[pb]) || ov(in[pa], out[pb])
				want = hz && !reach(a, b)
			}
		}
		err := g.Run()
		if got := errors.Is(err, ErrRace); got != want {
			t.Fatalf("graph %d (%d nodes): Run = %v, want a race: %v", iter, n, err, want)
		} else if err != nil && !got {
			t.Fatalf("graph %d: %v", iter, err)
		}
		if want {
			refused++
		}
	}
	t.Logf("%d of 300 graphs refused", refused)
	if refused < 30 || refused > 270 {
		t.Fatalf("%d of 300 graphs refused: the generator tests one verdict only", refused)
	}
}

// TestGraphRaceAllocatesNothing: a checked run of an unchanged graph
// allocates nothing.
func TestGraphRaceAllocatesNothing(t *testing.T) {
	s := spanSched(t, nil)
	m, err := s.RegisterThread("main")
	must(t, err)
	mem := make([]byte, 4096)
	g := s.NewGraph()
	var prev GraphNode = -1
	for i := range 32 {
		n := addNode(t, g, span(mem[i*64:i*64+64], mem[2048+i*64:2048+i*64+64]))
		if i%2 == 1 {
			must(t, g.Precede(prev, n))
		}
		prev = n
	}
	must(t, g.RunCtx(m))
	if a := testing.AllocsPerRun(50, func() { must(t, g.RunCtx(m)) }); a != 0 {
		t.Fatalf("%v allocations per checked run", a)
	}
}

// BenchmarkGraphRaceCheck: a run of an unchanged 256-node graph (pairs
// of nodes in a chain, each node reading 64 bytes and writing 64) with
// Config.CheckRaces off and on; ns/op is per node. On, a run derives the
// nodes' ranges and compares them with the last checked ones, and the
// run's root enters and leaves the task checker's index.
func BenchmarkGraphRaceCheck(b *testing.B) {
	for _, check := range []string{"0", "1"} {
		b.Run("check="+check, func(b *testing.B) {
			s, m := graphRaceBenchSched(b, check)
			const nodes = 256
			mem := make([]byte, 2*64*nodes)
			g := s.NewGraph()
			for i := range nodes {
				n := addNode(b, g, span(mem[i*64:i*64+64], mem[(nodes+i)*64:(nodes+i)*64+64]))
				if i%2 == 1 {
					must(b, g.Precede(n-1, n))
				}
			}
			must(b, g.RunCtx(m))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += nodes {
				if err := g.RunCtx(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// graphRaceBenchSched makes the scheduler of the race-check benchmarks: the
// span kernel registered, Config.CheckRaces from check ("0" or "1", through
// the environment as make test sets it), a registered main thread; closed
// when the benchmark ends.
func graphRaceBenchSched(b *testing.B, check string) (*Scheduler, *Ctx) {
	b.Setenv(EnvCheckRaces, check)
	reg := NewRegistry()
	registerSpan(b, reg, nil)
	s, err := New(Config{Kernels: reg})
	must(b, err)
	b.Cleanup(func() { s.Close() })
	m, err := s.RegisterThread("main")
	must(b, err)
	return s, m
}
