package sched

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// Taskflow's benchmark shapes (github.com/taskflow/taskflow, benchmarks/
// linear_chain, binary_tree, wavefront, graph_traversal), with the node work
// of Taskflow's versions, so ns/task can be set beside Taskflow's C++
// figures measured on the same machine, run in turn with these:
//
//	go test -run '^$' -bench TaskflowShapes -cpu 1,2 -count 5 ./sched/
//
//	linear_chain:    2^17 tasks in a line, each a counter++ (plain: the
//	                 chain orders them)
//	binary_tree:     2^17-1 tasks, parent before both children, each an
//	                 atomic add (relaxed in Taskflow)
//	wavefront:       256x256 blocks (Taskflow's S=2048, B=8), block (i, j)
//	                 after (i-1, j) and (i, j-1); Taskflow's block work
//	                 returns i+j, so the node is empty
//	graph_traversal: 256 levels of 256 nodes (Taskflow's LevelGraph(256,
//	                 256)), each node before 1-4 nodes of the next level
//	                 (a shuffled permutation cut in runs of 1-4, as
//	                 levelgraph.hpp; Go's generator, so the edges are the
//	                 same in law, not one for one); each node marks itself
//	                 and does 32 rounds of sin and cos (Node::mark)
//
// "graph" builds a frame graph once and replays it every op (Taskflow's
// executor.run on a prebuilt taskflow); "dynamic" adds every task through
// Add each op, with a join for a task of several predecessors, as
// BenchmarkGraphReplay's dynamic rows (Taskflow's benchmarks rebuild the
// taskflow inside the timed region each round: the dynamic rows are the
// like-for-like ones). graph_traversal/work runs the nodes' work alone, in
// order, on one goroutine: the floor under that shape's rows.
func BenchmarkTaskflowShapes(b *testing.B) {
	const (
		chainLen   = 1 << 17
		treeLayers = 17
		waveBlocks = 256 // Taskflow's S=2048 with B=8
		travSize   = 256
	)
	lg := newTfsLevelGraph(travSize)
	shapes := []struct {
		name   string
		nodes  int
		kernel KernelID
		edges  func(add func(a, b int))
		params func(k int) Params
	}{
		{"linear_chain", chainLen, tfsChain, func(add func(a, b int)) {
			for k := 1; k < chainLen; k++ {
				add(k-1, k)
			}
		}, nil},
		{"binary_tree", 1<<treeLayers - 1, tfsTree, func(add func(a, b int)) {
			for k := 1; k < 1<<treeLayers-1; k++ {
				add((k-1)/2, k)
			}
		}, nil},
		{"wavefront", waveBlocks * waveBlocks, tfsEmpty, func(add func(a, b int)) {
			for i := range waveBlocks {
				for j := range waveBlocks {
					k := i*waveBlocks + j
					if i > 0 {
						add(k-waveBlocks, k)
					}
					if j > 0 {
						add(k-1, k)
					}
				}
			}
		}, func(k int) Params { return Params{uint32(k / waveBlocks), uint32(k % waveBlocks)} }},
		{"graph_traversal", travSize * travSize, tfsMark, lg.edges,
			func(k int) Params { return Params{uint32(k % travSize), uint32(k)} }},
	}
	for _, sh := range shapes {
		task := func(k int) Task {
			t := Task{Kernel: sh.kernel}
			if sh.params != nil {
				t.Data.Params = sh.params(k)
			}
			return t
		}
		b.Run(sh.name+"/graph", func(b *testing.B) {
			st := &tfsState{}
			s, m := newTfsSched(b, st, sh.nodes)
			g := s.NewGraph()
			for k := range sh.nodes {
				t := task(k)
				if _, err := g.Add(&t); err != nil {
					b.Fatal(err)
				}
			}
			sh.edges(func(x, y int) { must(b, g.Precede(GraphNode(x), GraphNode(y))) })
			must(b, g.RunCtx(m))
			pt := startPerTask(b, sh.nodes, "task")
			for range b.N {
				if err := g.RunCtx(m); err != nil {
					b.Fatal(err)
				}
			}
			pt.stop()
			st.check(b, sh.kernel, sh.nodes, b.N+1)
		})
		b.Run(sh.name+"/dynamic", func(b *testing.B) {
			preds := make([][]int, sh.nodes)
			sh.edges(func(x, y int) { preds[y] = append(preds[y], x) })
			st := &tfsState{}
			_, m := newTfsSched(b, st, sh.nodes)
			ids := make([]TaskID, sh.nodes)
			pt := startPerTask(b, sh.nodes, "task")
			for range b.N {
				addDAG(b, m, preds, ids, task)
			}
			pt.stop()
			st.check(b, sh.kernel, sh.nodes, b.N)
		})
	}
	b.Run("graph_traversal/work", func(b *testing.B) {
		const n = travSize * travSize
		st := &tfsState{mark: make([]float64, n)}
		pt := startPerTask(b, n, "task")
		for range b.N {
			for k := range n {
				st.mark[k] = tfsMarkWork(uint32(k % travSize))
			}
		}
		pt.stop()
	})
}

const (
	tfsEmpty KernelID = 1 + iota
	tfsChain
	tfsTree
	tfsMark
)

// tfsState is what the shapes' kernels touch: linear_chain's counter,
// binary_tree's atomic counter, graph_traversal's marks.
type tfsState struct {
	chain int
	tree  atomic.Int64
	mark  []float64
}

func (st *tfsState) check(b *testing.B, k KernelID, nodes, runs int) {
	b.Helper()
	switch k {
	case tfsChain:
		if st.chain != nodes*runs {
			b.Fatalf("linear_chain: counter %d, want %d", st.chain, nodes*runs)
		}
	case tfsTree:
		if got := st.tree.Load(); got != int64(nodes*runs) {
			b.Fatalf("binary_tree: counter %d, want %d", got, nodes*runs)
		}
	case tfsMark:
		for i, v := range st.mark {
			if v == 0 {
				b.Fatalf("graph_traversal: node %d not visited", i)
			}
		}
	}
}

// newTfsSched is newBenchSched with the shapes' kernels.
func newTfsSched(b *testing.B, st *tfsState, nodes int) (*Scheduler, *Ctx) {
	st.mark = make([]float64, nodes)
	reg := NewRegistry()
	must(b, reg.Register(tfsEmpty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(b, reg.Register(tfsChain, Kernel{Name: "chain", CPU: func(*Ctx, *TaskData) error {
		st.chain++
		return nil
	}}))
	must(b, reg.Register(tfsTree, Kernel{Name: "tree", CPU: func(*Ctx, *TaskData) error {
		st.tree.Add(1)
		return nil
	}}))
	must(b, reg.Register(tfsMark, Kernel{Name: "mark", CPU: func(_ *Ctx, d *TaskData) error {
		st.mark[d.Params[1]] = tfsMarkWork(d.Params[0])
		return nil
	}}))
	s, err := New(Config{Kernels: reg})
	must(b, err)
	m, err := s.RegisterThread("main")
	must(b, err)
	b.Cleanup(func() { s.Close() })
	return s, m
}

// tfsMarkWork is Node::mark's work for the node of index idx in its level:
// 32 rounds of sin and cos from a hash of idx. Its result is stored, as
// Taskflow's goes to a volatile, so the loop is not dropped.
func tfsMarkWork(idx uint32) float64 {
	x := float64(idx*1315423911^idx>>3) + 1
	sink := 0.0
	for range 32 {
		x = math.Sin(x)*1.0000001 + math.Cos(x)
		sink += x
	}
	if sink == 0 {
		sink = math.SmallestNonzeroFloat64 // a mark is nonzero
	}
	return sink
}

// tfsLevelGraph is levelgraph.hpp's LevelGraph(n, n) with threshold 0:
// n levels of n nodes; node i of a level goes before the next 1-4 entries
// (1 + rand()%4) of a shuffled list of the next level's nodes, the list
// shuffled again when a run reaches its end. out[l*n+i] are node i's
// successors in level l+1 (the last level's are not used, as in Taskflow).
type tfsLevelGraph struct {
	n   int
	out [][]int32
}

func newTfsLevelGraph(n int) *tfsLevelGraph {
	g := &tfsLevelGraph{n: n, out: make([][]int32, n*n)}
	rng := rand.New(rand.NewPCG(0, 0))
	next := make([]int32, n)
	shuffle := func() { rng.Shuffle(n, func(i, j int) { next[i], next[j] = next[j], next[i] }) }
	for l := range n {
		for i := range next {
			next[i] = int32(i)
		}
		shuffle()
		start := 0
		for i := range n {
			end := start + 1 + rng.IntN(4)
			if end >= n {
				end = n
			}
			g.out[l*n+i] = append([]int32(nil), next[start:end]...)
			if end == n {
				shuffle()
				start = 0
			} else {
				start = end
			}
		}
	}
	return g
}

func (g *tfsLevelGraph) edges(add func(a, b int)) {
	for l := range g.n - 1 {
		for i := range g.n {
			for _, j := range g.out[l*g.n+i] {
				add(l*g.n+i, (l+1)*g.n+int(j))
			}
		}
	}
}
