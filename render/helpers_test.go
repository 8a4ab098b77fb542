package render

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/sched"
)

// newSched returns a scheduler with the given workers (0: default) and its
// registered main thread.
func newSched(t testing.TB, workers int) (*sched.Scheduler, *sched.Ctx) {
	t.Helper()
	s, err := sched.New(sched.Config{Workers: workers})
	must(t, err)
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s, m
}

func newRenderer(t testing.TB, s *sched.Scheduler, cfg Config) *Renderer {
	t.Helper()
	r, err := New(s, cfg)
	must(t, err)
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// scene is a registry and a set of contexts filled with random packets.
type scene struct {
	reg    *Registry
	pipes  []PipelineID
	meshes []MeshID
	ctxs   []*RenderContext
	// mix: per mille of states, jobs and application packets among packets.
	states, jobs, apps int
	// depths is how many distinct depths keys use (few: many ties).
	depths int
}

const meshVerts = 1000

func newScene(t testing.TB, nctx, capacity int) *scene {
	t.Helper()
	sc := &scene{reg: NewRegistry(), depths: 16}
	for i := range 12 {
		p, err := sc.reg.AddPipeline(Pipeline{Name: "p"})
		must(t, err)
		sc.pipes = append(sc.pipes, p)
		m, err := sc.reg.AddMesh(Mesh{Name: "m", Vertices: meshVerts, Indices: uint32(i%2) * 3 * meshVerts})
		must(t, err)
		sc.meshes = append(sc.meshes, m)
	}
	for range nctx {
		c, err := NewContext(capacity)
		must(t, err)
		sc.ctxs = append(sc.ctxs, c)
	}
	return sc
}

func (sc *scene) key(rng *rand.Rand, pipe PipelineID) SortKey {
	k := Key{
		Layer:       uint8(rng.IntN(3)),
		Translucent: rng.IntN(4) == 0,
		Pipeline:    uint16(pipe),
		Depth:       uint32(rng.IntN(sc.depths)),
	}
	if k.Layer == 2 {
		k.Sequence = uint16(rng.IntN(8)) // an ordered pass
	}
	s, err := k.Encode()
	if err != nil {
		panic(err)
	}
	return s
}

// fill resets every context and submits n[i] packets to context i.
func (sc *scene) fill(t testing.TB, rng *rand.Rand, n []int) {
	for i, c := range sc.ctxs {
		c.Reset()
		for range n[i] {
			var err error
			switch x := rng.IntN(1000); {
			case x < sc.states:
				s := StatePacket{Kind: StateKind(rng.IntN(int(NumStates))), Rect: [4]int32{int32(rng.IntN(9)), 0, 640, 480}}
				s.Key = sc.key(rng, 0)
				err = c.SetState(&s)
			case x < sc.states+sc.jobs:
				j := JobPacket{Job: uint32(rng.IntN(5))}
				j.Key = sc.key(rng, 0)
				err = c.Job(&j)
			case x < sc.states+sc.jobs+sc.apps:
				err = c.Append(FirstAppType+evstream.Type(rng.IntN(3)), make([]byte, rng.IntN(20)))
			default:
				d := sc.draw(rng)
				err = c.Draw(&d)
			}
			if err != nil && err != ErrOverflow {
				t.Fatal(err)
			}
		}
	}
}

func (sc *scene) draw(rng *rand.Rand) DrawPacket {
	p := sc.pipes[rng.IntN(len(sc.pipes))]
	d := DrawPacket{
		Pipeline:      p,
		Mesh:          sc.meshes[rng.IntN(len(sc.meshes))],
		FirstVertex:   uint32(rng.IntN(10)),
		VertexCount:   uint32(1 + rng.IntN(900)),
		Instance:      uint32(rng.IntN(1000)),
		InstanceCount: 1,
		Color:         [4]float32{1, 0.5, 0.25, 1},
	}
	for i := range 4 {
		d.Model[5*i] = 1
	}
	d.Model[12] = float32(rng.IntN(100))
	d.Key = sc.key(rng, p)
	return d
}

func counts(n, each int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = each
	}
	return c
}

// ref is a packet location: the reference order is checked against it.
type ref struct {
	key SortKey
	ctx int
	off int
}

// reference returns the expected order: every known packet of every context
// in context then submission order, sorted with slices.SortStableFunc.
// It assumes the contexts hold only valid packets.
func reference(ctxs []*RenderContext) []ref {
	var out []ref
	for i, c := range ctxs {
		rd := evstream.NewReader(c.Bytes())
		for rd.Next() {
			switch rd.Type() {
			case TypeDraw, TypeState, TypeJob:
				out = append(out, ref{SortKey(binary.NativeEndian.Uint64(rd.Payload())), i, rd.PayloadOffset()})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b ref) int { return cmp.Compare(a.key, b.key) })
	return out
}

func checkAgainst(t testing.TB, s *Sorted, want []ref) {
	t.Helper()
	if s.Len() != len(want) {
		t.Fatalf("sorted %d packets, reference %d", s.Len(), len(want))
	}
	for i, w := range want {
		c, off := s.Source(i)
		if c != w.ctx || off != w.off || s.Key(i) != w.key {
			t.Fatalf("packet %d: ctx %d off %d key %v; want ctx %d off %d key %v", i, c, off, s.Key(i), w.ctx, w.off, w.key)
		}
	}
}
