package render_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

type advDraw struct {
	key render.SortKey
	id  uint32
}

// userFrame fills one context per producer, the producers running
// concurrently on goroutines (each context owned by one), with draws
// whose keys come from a small set (many duplicates); sizes[i] draws in
// context i (0: an empty context). It returns the contexts and the
// expected order: the stable sort of the concatenation.
func advFrame(t *testing.T, sizes []int, keys int, seed uint64, pipe render.PipelineID, mesh render.MeshID) ([]*render.RenderContext, []advDraw) {
	t.Helper()
	ctxs := make([]*render.RenderContext, len(sizes))
	per := make([][]advDraw, len(sizes))
	var wg sync.WaitGroup
	for i, n := range sizes {
		c, err := render.NewContext(max(n, 1) * render.DrawRecordSize)
		if err != nil {
			t.Fatal(err)
		}
		ctxs[i] = c
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for k := 0; k < n; k++ {
				d := render.DrawPacket{
					Key:      render.SortKey(rng.Uint64N(uint64(keys))) * 0x0101010101010101,
					Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1,
					Instance: uint32(i)<<20 | uint32(k),
				}
				if err := c.Draw(&d); err != nil {
					t.Errorf("context %d draw %d: %v", i, k, err)
					return
				}
				per[i] = append(per[i], advDraw{d.Key, d.Instance})
			}
		})
	}
	wg.Wait()
	var all []advDraw
	for _, p := range per {
		all = append(all, p...)
	}
	slices.SortStableFunc(all, func(a, b advDraw) int {
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

// TestUserMergeSortStable merges frames of empty contexts, one-packet
// contexts, contexts full of equal keys and large ones (200 000 packets),
// filled by concurrent producers, with small and default grains, and
// checks that the sorted stream is the stable sort of the concatenation
// the doc promises, packet for packet.
func TestUserMergeSortStable(t *testing.T) {
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
	handles := render.NewRegistry()
	pipe, _ := handles.AddPipeline(render.Pipeline{Name: "p"})
	mesh, _ := handles.AddMesh(render.Mesh{Name: "m", Vertices: 3})
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
	for _, cfg := range []render.Config{{}, {MergeGrain: 1, MergeTasks: 7}, {MergeGrain: 100, MergeTasks: 1}} {
		r, err := render.New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range frames {
			ctxs, want := advFrame(t, f.sizes, f.keys, uint64(fi), pipe, mesh)
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

// TestUserMergeSortOddContexts: a nil context in the list and the same
// context listed twice are refused or counted, never a crash; a context
// that overflowed reports its drops.
func TestUserMergeSortOddContexts(t *testing.T) {
	reg := sched.NewRegistry()
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, _ := s.RegisterThread("main")
	handles := render.NewRegistry()
	pipe, _ := handles.AddPipeline(render.Pipeline{Name: "p"})
	mesh, _ := handles.AddMesh(render.Mesh{Name: "m", Vertices: 3})
	r, err := render.New(s, render.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctxs, want := advFrame(t, []int{4, 6}, 3, 9, pipe, mesh)
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("nil context: panic %v", p)
			}
		}()
		_, err := r.MergeSort(main, []*render.RenderContext{ctxs[0], nil, ctxs[1]}, handles)
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
		sorted, err := r.MergeSort(main, []*render.RenderContext{ctxs[0], ctxs[1], ctxs[0]}, handles)
		t.Logf("context listed twice: %v", err)
		if err == nil && sorted.Len() != len(want)+4 {
			t.Errorf("context listed twice: %d packets, want %d (or an error)", sorted.Len(), len(want)+4)
		}
	}()
	small, _ := render.NewContext(2 * render.DrawRecordSize)
	for k := 0; k < 5; k++ {
		d := render.DrawPacket{Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1, Instance: uint32(k)}
		err := small.Draw(&d)
		if (k < 2) != (err == nil) {
			t.Errorf("draw %d into a 2-draw context: %v", k, err)
		}
	}
	sorted, err := r.MergeSort(main, []*render.RenderContext{small}, handles)
	if sorted == nil || sorted.Len() != 2 || sorted.Stats().Overflow != 3 || err == nil {
		t.Errorf("overflowed context: sorted %v, err %v", sorted, err)
	} else {
		t.Logf("overflow: %v", err)
	}
}
