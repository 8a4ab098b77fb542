package render

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
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

type producerDraw struct {
	key SortKey
	id  uint32
}

// producerFrame fills one context per producer, the producers running
// concurrently on goroutines (each context owned by one), with draws
// whose keys come from a small set (many duplicates); sizes[i] draws in
// context i (0: an empty context). It returns the contexts and the
// expected order: the stable sort of the concatenation.
func producerFrame(t *testing.T, sizes []int, keys int, seed uint64, pipe PipelineID, mesh MeshID) ([]*RenderContext, []producerDraw) {
	t.Helper()
	ctxs := make([]*RenderContext, len(sizes))
	per := make([][]producerDraw, len(sizes))
	var wg sync.WaitGroup
	for i, n := range sizes {
		c, err := NewContext(max(n, 1) * DrawRecordSize)
		if err != nil {
			t.Fatal(err)
		}
		ctxs[i] = c
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for k := 0; k < n; k++ {
				d := DrawPacket{
					Key:      SortKey(rng.Uint64N(uint64(keys))) * 0x0101010101010101,
					Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1,
					Instance: uint32(i)<<20 | uint32(k),
				}
				if err := c.Draw(&d); err != nil {
					t.Errorf("context %d draw %d: %v", i, k, err)
					return
				}
				per[i] = append(per[i], producerDraw{d.Key, d.Instance})
			}
		})
	}
	wg.Wait()
	var all []producerDraw
	for _, p := range per {
		all = append(all, p...)
	}
	slices.SortStableFunc(all, func(a, b producerDraw) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return ctxs, all
}

// TestMergeSortStableProducers merges frames of empty contexts, one-packet
// contexts, contexts full of equal keys and large ones (200 000 packets),
// filled by concurrent producers, with small and default grains, and
// checks that the sorted stream is the stable sort of the concatenation
// the doc promises, packet for packet.
func TestMergeSortStableProducers(t *testing.T) {
	reg := sched.NewRegistry()
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	handles := NewRegistry()
	pipe, _ := handles.AddPipeline(Pipeline{Name: "p"})
	mesh, _ := handles.AddMesh(Mesh{Name: "m", Vertices: 3})
	big := 200000
	if testing.Short() {
		big = 20000
	}
	frames := []struct {
		name  string
		sizes []int
		keys  int
	}{
		{"no contexts", nil, 4},
		{"all empty", []int{0, 0, 0}, 4},
		{"empty between", []int{0, 5, 0, 0, 7, 0}, 3},
		{"one packet", []int{1}, 1},
		{"one key everywhere", []int{300, 0, 1000, 1, 4096}, 1},
		{"two keys", []int{5000, 5000, 5000}, 2},
		{"many contexts", make([]int, 300), 50},
		{"huge", []int{big, 3, big / 2, 0, big}, 257},
	}
	for i := range frames[6].sizes {
		frames[6].sizes[i] = i % 7
	}
	for _, cfg := range []Config{{}, {MergeGrain: 1, MergeTasks: 7}, {MergeGrain: 100, MergeTasks: 1}} {
		r, err := New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range frames {
			ctxs, want := producerFrame(t, f.sizes, f.keys, uint64(fi), pipe, mesh)
			sorted, err := r.MergeSort(main, ctxs, handles)
			if err != nil {
				t.Fatalf("%s (%+v): %v", f.name, cfg, err)
			}
			if sorted.Len() != len(want) || sorted.Stats().Draws != len(want) {
				t.Fatalf("%s (%+v): %d packets (%d draws), want %d", f.name, cfg, sorted.Len(), sorted.Stats().Draws, len(want))
			}
			for i, w := range want {
				d := sorted.Draw(i)
				if d == nil || sorted.Key(i) != w.key || d.Instance != w.id {
					t.Fatalf("%s (%+v): packet %d is %v %+v, want key %v id %#x (stable order)", f.name, cfg, i, sorted.Key(i), d, w.key, w.id)
				}
				if c, _ := sorted.Source(i); c != int(w.id>>20) {
					t.Fatalf("%s (%+v): packet %d from context %d, want %d", f.name, cfg, i, c, w.id>>20)
				}
			}
		}
	}
}

// TestMergeSortOddContexts: a nil context in the list and the same
// context listed twice are refused or counted, never a crash; a context
// that overflowed reports its drops.
func TestMergeSortOddContexts(t *testing.T) {
	reg := sched.NewRegistry()
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, _ := s.RegisterThread("main")
	handles := NewRegistry()
	pipe, _ := handles.AddPipeline(Pipeline{Name: "p"})
	mesh, _ := handles.AddMesh(Mesh{Name: "m", Vertices: 3})
	r, err := New(s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctxs, want := producerFrame(t, []int{4, 6}, 3, 9, pipe, mesh)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("nil context: panic %v", p)
			}
		}()
		_, err := r.MergeSort(main, []*RenderContext{ctxs[0], nil, ctxs[1]}, handles)
		t.Logf("nil context: %v", err)
		if err == nil {
			t.Errorf("nil context: no error")
		}
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("context twice: panic %v", p)
			}
		}()
		sorted, err := r.MergeSort(main, []*RenderContext{ctxs[0], ctxs[1], ctxs[0]}, handles)
		t.Logf("context listed twice: %v", err)
		if err == nil && sorted.Len() != len(want)+4 {
			t.Errorf("context listed twice: %d packets, want %d (or an error)", sorted.Len(), len(want)+4)
		}
	}()
	small, _ := NewContext(2 * DrawRecordSize)
	for k := 0; k < 5; k++ {
		d := DrawPacket{Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1, Instance: uint32(k)}
		err := small.Draw(&d)
		if (k < 2) != (err == nil) {
			t.Errorf("draw %d into a 2-draw context: %v", k, err)
		}
	}
	sorted, err := r.MergeSort(main, []*RenderContext{small}, handles)
	if sorted == nil || sorted.Len() != 2 || sorted.Stats().Overflow != 3 || err == nil {
		t.Errorf("overflowed context: sorted %v, err %v", sorted, err)
	} else {
		t.Logf("overflow: %v", err)
	}
}
