package render

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRadixPasses: keys that differ only in chosen bits (so only some
// passes run), including none, the top and bottom bits and the largest key,
// sort exactly like SortStableFunc.
func TestRadixPasses(t *testing.T) {
	s, m := newSched(t, 3)
	rng := rand.New(rand.NewPCG(7, 8))
	masks := []SortKey{0, 1, 0xff, 0x100, 1 << 63, 0xff << 56, ^SortKey(0), 0x0000_00ff_0000_ff00, 0x8000_0000_0000_0001}
	for _, cfg := range []Config{{}, {MergeGrain: 1, MergeTasks: 3}, {MergeGrain: 7, MergeTasks: 16}} {
		r := newRenderer(t, s, cfg)
		for _, mask := range masks {
			for _, n := range []int{0, 1, 2, 50, 3000} {
				sc := newScene(t, 1+rng.IntN(5), 1<<20)
				base := SortKey(rng.Uint64()) &^ mask
				for i := range n {
					d := sc.draw(rng)
					d.Key = base | SortKey(rng.Uint64())&mask
					if i%7 == 0 {
						d.Key = base | mask // the largest key, and ties
					}
					must(t, sc.ctxs[rng.IntN(len(sc.ctxs))].Draw(&d))
				}
				got, err := r.MergeSort(m, sc.ctxs, sc.reg)
				must(t, err)
				t.Run(fmt.Sprintf("%+v/%#x/%d", cfg, uint64(mask), n), func(t *testing.T) {
					checkAgainst(t, got, reference(sc.ctxs))
				})
			}
		}
	}
}

// TestMergeSortMatchesReference: MergeSort equals slices.SortStableFunc on
// the concatenation of the contexts, over random scenes of every shape.
func TestMergeSortMatchesReference(t *testing.T) {
	for _, workers := range []int{1, 3} {
		s, m := newSched(t, workers)
		for _, cfg := range []Config{{}, {MergeGrain: 1, MergeTasks: 7}, {MergeGrain: 100}} {
			r := newRenderer(t, s, cfg)
			rng := rand.New(rand.NewPCG(uint64(workers), 11))
			for trial := range 40 {
				nctx := rng.IntN(10)
				sc := newScene(t, nctx, 1<<16)
				sc.states, sc.jobs, sc.apps = 20, 20, 20
				sc.depths = 1 + rng.IntN(64)
				n := make([]int, nctx)
				for i := range n {
					switch rng.IntN(4) {
					case 0: // empty context
					case 1:
						n[i] = rng.IntN(50)
					default:
						n[i] = rng.IntN(500)
					}
				}
				sc.fill(t, rng, n)
				got, err := r.MergeSort(m, sc.ctxs, sc.reg)
				must(t, err)
				t.Run(fmt.Sprintf("w%d/%+v/%d", workers, cfg, trial), func(t *testing.T) {
					checkAgainst(t, got, reference(sc.ctxs))
					st := got.Stats()
					if st.Draws+st.States+st.Jobs != st.Packets || st.Invalid != 0 || st.Corrupt != 0 || st.Contexts != nctx {
						t.Fatalf("stats %+v", st)
					}
				})
			}
		}
	}
}

// TestMergeSortStable: all keys equal, so the output is exactly context
// order then submission order.
func TestMergeSortStable(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{MergeGrain: 10})
	sc := newScene(t, 5, 1<<16)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range sc.ctxs {
		for range 100 {
			d := sc.draw(rng)
			d.Key = 42
			must(t, c.Draw(&d))
		}
	}
	got, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	for i := range got.Len() {
		c, off := got.Source(i)
		if c != i/100 || off != (i%100)*DrawRecordSize+8 {
			t.Fatalf("packet %d from ctx %d off %d", i, c, off)
		}
	}
}

func TestMergeSortZeroAllocs(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{MergeGrain: 256})
	sc := newScene(t, 8, 1<<20)
	sc.states, sc.jobs, sc.apps = 10, 10, 10
	sc.fill(t, rand.New(rand.NewPCG(1, 2)), counts(8, 2000))
	_, err := r.MergeSort(m, sc.ctxs, sc.reg) // warm up: scratch grows
	must(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := r.MergeSort(m, sc.ctxs, sc.reg); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("MergeSort: %v allocs per frame in steady state", allocs)
	}
}

func TestMergeSortEmpty(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	got, err := r.MergeSort(m, nil, NewRegistry())
	must(t, err)
	if got.Len() != 0 {
		t.Fatal("packets from nothing")
	}
	var rec CountingRecorder
	st, err := r.Record(m, got, &rec)
	must(t, err)
	if st.Ranges != 0 {
		t.Fatalf("%+v", st)
	}
}
