package sched

import (
	"errors"
	"runtime"
	"testing"
)

// doubleBuffered is a frame graph re-pointed between two buffer sets each
// run, the engines' double buffering: pairs of nodes in a chain, node 2i
// writing 64 bytes that node 2i+1 reads, each pair on its own bytes of
// the set.
type doubleBuffered struct {
	g    *Graph
	sets [2][]TaskData // each node's data in set 0 and set 1
}

func newDoubleBuffered(t testing.TB, s *Scheduler, nodes int) *doubleBuffered {
	db := &doubleBuffered{g: s.NewGraph()}
	for set := range db.sets {
		mem := make([]byte, 64*nodes)
		for i := range nodes {
			pair := mem[i/2*128 : i/2*128+128]
			tk := span(nil, pair[:64]) // the pair's first node writes its first half
			if i%2 == 1 {
				tk = span(pair[:64], pair[64:]) // the second reads it, writes the second half
			}
			db.sets[set] = append(db.sets[set], tk.Data)
		}
	}
	for i := range nodes {
		tk := &Task{Kernel: kRaceSpan, Data: db.sets[0][i]}
		n := addNode(t, db.g, tk)
		if i%2 == 1 {
			must(t, db.g.Precede(n-1, n))
		}
	}
	return db
}

// point re-points every node at set's buffers.
func (db *doubleBuffered) point(t testing.TB, set int) {
	for i := range db.sets[set] {
		if err := db.g.SetData(GraphNode(i), &db.sets[set][i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGraphRaceDoubleBufferAllocatesNothing: a checked graph re-pointed
// between two buffer sets every run allocates nothing once both sets were
// checked (the node-against-node check, which allocates, is not run
// again for a set already checked).
func TestGraphRaceDoubleBufferAllocatesNothing(t *testing.T) {
	s := spanSched(t, nil)
	m, err := s.RegisterThread("main")
	must(t, err)
	db := newDoubleBuffered(t, s, 8)
	for set := range 2 {
		db.point(t, set)
		must(t, db.g.RunCtx(m))
	}
	frame := 0
	if a := testing.AllocsPerRun(50, func() {
		db.point(t, frame%2)
		must(t, db.g.RunCtx(m))
		frame++
	}); a != 0 {
		t.Fatalf("%v allocations per checked run alternating between two buffer sets", a)
	}
}

// TestGraphRaceDoubleBufferThirdSet: with two sets checked, a third that
// makes two unordered nodes write the same bytes is still refused, at
// every run, naming both nodes; the two checked sets still run without
// being checked again (the refused set displaced neither), and a
// live task racing a node of a checked set is still refused: the check
// against live tasks runs at every run.
func TestGraphRaceDoubleBufferThirdSet(t *testing.T) {
	s := spanSched(t, nil)
	m, err := s.RegisterThread("main")
	must(t, err)
	db := newDoubleBuffered(t, s, 8)
	for set := range 2 {
		db.point(t, set)
		must(t, db.g.RunCtx(m))
	}
	// A third set: set 0, but node 4 (its pair's writer) writes node 2's
	// output, which node 3 reads: unordered with both.
	third := make([]TaskData, len(db.sets[0]))
	copy(third, db.sets[0])
	third[4].Out[0] = third[2].Out[0]
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as testing.AllocsPerRun: no other goroutine's allocations counted
	for run := range 2 {
		for i := range third {
			must(t, db.g.SetData(GraphNode(i), &third[i]))
		}
		err := db.g.RunCtx(m)
		var re *RaceError
		if !errors.As(err, &re) || max(re.Node, re.OtherNode) != 4 || min(re.Node, re.OtherNode) != 2 && min(re.Node, re.OtherNode) != 3 {
			t.Fatalf("run %d of a third set where node 4 writes what nodes 2 writes and 3 reads: %v", run, err)
		}
		// The two checked sets run again, not checked again (nothing
		// allocated): the refused set displaced neither.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for set := range 2 {
			db.point(t, set)
			if err := db.g.RunCtx(m); err != nil {
				t.Fatalf("set %d after the third set's refusal: %v", set, err)
			}
		}
		runtime.ReadMemStats(&after)
		if n := after.Mallocs - before.Mallocs; n != 0 {
			t.Fatalf("%d allocations running the two checked sets after the third set's refusal: checked again", n)
		}
	}
	// A live task (behind a gate) writing what node 3 of set 1 reads.
	w := &Task{Kernel: kRaceSpan, Data: db.sets[1][2], Dependency: gate(t, s)}
	wid, err := s.Add(w)
	must(t, err)
	for _, set := range []int{1, 0, 1} {
		db.point(t, set)
		err := db.g.RunCtx(m)
		var re *RaceError
		switch {
		case set == 0 && err != nil:
			t.Fatalf("set 0 beside a task writing set 1's bytes: %v", err)
		case set == 1 && (!errors.As(err, &re) || re.Other != wid || (re.Node != 2 && re.Node != 3)):
			t.Fatalf("set 1 against a live task writing node 2's output: %v", err)
		}
	}
}

// BenchmarkGraphRaceDoubleBuffer: a run of a 256-node graph (as
// BenchmarkGraphRaceCheck's) re-pointed between two buffer sets each run
// (SetData on every node), with Config.CheckRaces off and on; ns/op is
// per node, SetData included.
func BenchmarkGraphRaceDoubleBuffer(b *testing.B) {
	for _, check := range []string{"0", "1"} {
		b.Run("check="+check, func(b *testing.B) {
			s, m := graphRaceBenchSched(b, check)
			const nodes = 256
			db := newDoubleBuffered(b, s, nodes)
			for set := range 2 {
				db.point(b, set)
				must(b, db.g.RunCtx(m))
			}
			b.ReportAllocs()
			b.ResetTimer()
			frame := 0
			for i := 0; i < b.N; i += nodes {
				db.point(b, frame%2)
				if err := db.g.RunCtx(m); err != nil {
					b.Fatal(err)
				}
				frame++
			}
		})
	}
}
