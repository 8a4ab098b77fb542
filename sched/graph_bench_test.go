package sched

import (
	"fmt"
	"testing"
)

// Frame-graph replay beside the dynamic path, in one run: ns per node.
//
//	independent: 10,000 empty nodes, no edges (Taskflow's prebuilt graph
//	             of empty tasks)
//	dag:         the 64x64 DAG of BenchmarkPeersDAG, node (l, j) after
//	             (l-1, j) and (l-1, (j+1) % 64)
//	chain:       10,000 nodes in a line (Taskflow's linear chain)
//	tree:        a binary tree of 2^13-1 nodes, parents before children
//	             (Taskflow's binary tree)
//
// "graph" replays a graph built once; "dynamic" adds the same tasks
// through Add each op (a node with two predecessors needs a join there).
func BenchmarkGraphReplay(b *testing.B) {
	shapes := []struct {
		name  string
		nodes int
		edges func(add func(a, b int))
	}{
		{"independent", 10000, func(func(a, b int)) {}},
		{"dag", dagNodes, func(add func(a, b int)) {
			for k := dagWidth; k < dagNodes; k++ {
				l, j := k/dagWidth, k%dagWidth
				add((l-1)*dagWidth+j, k)
				add((l-1)*dagWidth+(j+1)%dagWidth, k)
			}
		}},
		{"chain", 10000, func(add func(a, b int)) {
			for k := 1; k < 10000; k++ {
				add(k-1, k)
			}
		}},
		{"tree", 1<<13 - 1, func(add func(a, b int)) {
			for k := 1; k < 1<<13-1; k++ {
				add((k-1)/2, k)
			}
		}},
	}
	for _, sh := range shapes {
		b.Run(fmt.Sprintf("%s/graph", sh.name), func(b *testing.B) {
			s, m := peerSched(b)
			g := s.NewGraph()
			for range sh.nodes {
				if _, err := g.Add(&Task{Kernel: pkEmpty}); err != nil {
					b.Fatal(err)
				}
			}
			sh.edges(func(x, y int) { must(b, g.Precede(GraphNode(x), GraphNode(y))) })
			must(b, g.RunCtx(m))
			pt := startPerTask(b, sh.nodes, "node")
			for range b.N {
				if err := g.RunCtx(m); err != nil {
					b.Fatal(err)
				}
			}
			pt.stop()
		})
		b.Run(fmt.Sprintf("%s/dynamic", sh.name), func(b *testing.B) {
			_, m := peerSched(b)
			preds := make([][]int, sh.nodes)
			sh.edges(func(x, y int) { preds[y] = append(preds[y], x) })
			ids := make([]TaskID, sh.nodes)
			pt := startPerTask(b, sh.nodes, "node")
			for range b.N {
				addDAG(b, m, preds, ids, func(int) Task { return Task{Kernel: pkEmpty} })
			}
			pt.stop()
		})
	}
}

// addDAG adds one run of a DAG through the dynamic API and waits for it:
// task(k) for node k, a child of one held root, after its predecessors
// preds[k] (a node with several needs a join: an empty task after the
// first, holding an empty child after each other). ids is scratch.
func addDAG(b *testing.B, m *Ctx, preds [][]int, ids []TaskID, task func(k int) Task) {
	root, err := m.Create(&Task{})
	must(b, err)
	for k := range preds {
		t := task(k)
		t.Parent = root
		switch len(preds[k]) {
		case 0:
		case 1:
			t.Dependency = ids[preds[k][0]]
		default:
			j, err := m.Create(&Task{Parent: root, Dependency: ids[preds[k][0]]})
			must(b, err)
			for _, p := range preds[k][1:] {
				_, err := m.Add(&Task{Parent: j, Dependency: ids[p]})
				must(b, err)
			}
			must(b, m.Run(j))
			t.Dependency = j
		}
		ids[k], err = m.Add(&t)
		must(b, err)
	}
	must(b, m.Run(root))
	must(b, m.Wait(root))
}
