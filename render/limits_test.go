package render

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestProblemText: every kind of Problem prints what was wrong in words
// with the decoded numbers, and the two kinds of bad state packet differ in
// Field and Value.
func TestProblemText(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	reg := NewRegistry()
	pipe, _ := reg.AddPipeline(Pipeline{Name: "lit"})
	mesh, _ := reg.AddMesh(Mesh{Name: "quad", Vertices: 4})
	imesh, _ := reg.AddMesh(Mesh{Name: "indexed", Vertices: 4, Indices: 6})
	reg.SetInstances(10)
	ok := DrawPacket{Key: 1, Pipeline: pipe, Mesh: mesh, VertexCount: 4, InstanceCount: 1}
	with := func(f func(*DrawPacket)) []byte { d := ok; f(&d); return newRaw().draw(d).bytes() }
	cases := []struct {
		name   string
		stream []byte
		kind   error
		field  string
		value  uint64
		text   string
	}{
		{"unknown pipeline", with(func(d *DrawPacket) { d.Pipeline = 7 }), ErrUnknownPipeline, "pipeline", 7,
			"unknown pipeline: pipeline 7, registered are 1..1"},
		{"unknown mesh", with(func(d *DrawPacket) { d.Mesh = 99 }), ErrUnknownMesh, "mesh", 99,
			"unknown mesh: mesh 99, registered are 1..2"},
		{"no instances", with(func(d *DrawPacket) { d.VertexCount, d.InstanceCount = 3, 0 }), ErrEmptyDraw, "counts", 3,
			"no instances: vertex count 3, instance count 0"},
		{"no vertices", with(func(d *DrawPacket) { d.VertexCount, d.InstanceCount = 0, 5 }), ErrEmptyDraw, "counts", 0,
			"no instances: vertex count 0, instance count 5"},
		{"vertices past mesh", with(func(d *DrawPacket) { d.FirstVertex = 2 }), ErrDrawRange, "vertices", 6,
			"exceeds the mesh: draw reads vertices up to 6, the mesh has 4"},
		{"indices past mesh", with(func(d *DrawPacket) { d.Mesh, d.VertexCount = imesh, 7 }), ErrDrawRange, "indices", 7,
			"exceeds the mesh: draw reads indices up to 7, the mesh has 6"},
		{"instances past limit", with(func(d *DrawPacket) { d.Instance, d.InstanceCount = 9, 2 }), ErrInstanceRange, "instances", 11,
			"limit: draw reads instances up to 11, the limit is 10"},
		{"draw size", newRaw().put(TypeDraw, unsafe.Pointer(&ok), drawSize-8).bytes(), ErrPacketSize, "draw", uint64(drawSize - 8),
			fmt.Sprintf("size for its type: draw packet of %d bytes, want %d", drawSize-8, drawSize)},
		{"state size", newRaw().put(TypeState, unsafe.Pointer(&ok), stateSize+8).bytes(), ErrPacketSize, "state", uint64(stateSize + 8),
			fmt.Sprintf("state packet of %d bytes, want %d", stateSize+8, stateSize)},
		{"job size", newRaw().put(TypeJob, unsafe.Pointer(&ok), 4).bytes(), ErrPacketSize, "job", 4,
			fmt.Sprintf("job packet of 4 bytes, want %d", jobSize)},
		{"state kind", newRaw().state(StatePacket{Kind: 0xffffffff}).bytes(), ErrBadState, "kind", 0xffffffff,
			fmt.Sprintf("invalid state packet: state kind 4294967295, want below %d", NumStates)},
		{"negative width", newRaw().state(StatePacket{Kind: StateViewport, Rect: [4]int32{0, 0, -1, 5}}).bytes(), ErrBadState, "width", ^uint64(0),
			"invalid state packet: width -1, want >= 0"},
		{"negative height", newRaw().state(StatePacket{Kind: StateScissor, Rect: [4]int32{0, 0, 8, -32}}).bytes(), ErrBadState, "height", ^uint64(31),
			"invalid state packet: height -32, want >= 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, err := NewContext(1 << 12)
			must(t, err)
			must(t, ctx.Load(c.stream))
			_, err = r.MergeSort(m, []*RenderContext{ctx}, reg)
			var fe *FrameError
			if !errors.As(err, &fe) || len(fe.Problems) != 1 {
				t.Fatalf("err %v, want one problem", err)
			}
			p := fe.Problems[0]
			if p.Kind != c.kind || p.Field != c.field || p.Value != c.value {
				t.Fatalf("problem %+v, want kind %v field %q value %d", p, c.kind, c.field, c.value)
			}
			want := "context 0 offset 0: render: " + c.kind.Error()[len("render: "):]
			if got := p.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, c.text) {
				t.Fatalf("text %q, want %q ... %q", got, want, c.text)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Fatalf("frame error %q lacks %q", err, c.text)
			}
		})
	}

	// Overflow and corruption.
	full, err := NewContext(DrawRecordSize)
	must(t, err)
	for range 4 {
		_ = full.Draw(&ok)
	}
	corrupt, err := NewContext(1 << 12)
	must(t, err)
	must(t, corrupt.Load(append(newRaw().draw(ok).bytes(), 3, 0, 0, 0)))
	_, err = r.MergeSort(m, []*RenderContext{full, corrupt}, reg)
	var fe *FrameError
	if !errors.As(err, &fe) || len(fe.Problems) != 2 {
		t.Fatalf("err %v, want two problems", err)
	}
	if got := fe.Problems[0].String(); !strings.HasPrefix(got, "context 0: render: context full") || !strings.HasSuffix(got, ": 3 packets dropped") {
		t.Fatalf("overflow text %q", got)
	}
	p := fe.Problems[1]
	if got := p.String(); !strings.HasPrefix(got, fmt.Sprintf("context 1 offset %d: render: corrupt packet stream: ", DrawRecordSize)) ||
		!strings.HasSuffix(got, p.Cause.Error()) {
		t.Fatalf("corruption text %q (cause %v)", got, p.Cause)
	}
}

// TestMergeTasksBound: New rejects Config.MergeTasks above MaxMergeTasks,
// naming the field and the bound, and accepts MaxMergeTasks.
func TestMergeTasksBound(t *testing.T) {
	s, _ := newSched(t, 1)
	_, err := New(s, Config{MergeTasks: MaxMergeTasks + 1})
	if err == nil || !strings.Contains(err.Error(), "MergeTasks") || !strings.Contains(err.Error(), fmt.Sprint(MaxMergeTasks)) {
		t.Fatalf("MergeTasks %d: err %v, want one naming MergeTasks and %d", MaxMergeTasks+1, err, MaxMergeTasks)
	}
	r, err := New(s, Config{MergeTasks: MaxMergeTasks})
	must(t, err)
	if r.cfg.MergeTasks != MaxMergeTasks {
		t.Fatalf("MergeTasks %d, want %d", r.cfg.MergeTasks, MaxMergeTasks)
	}
}

// TestTaskCounts: passes >= 1 use the most blocks that are at most
// MergeTasks, at most one per grain of items, and few enough that
// blocks*blocks*minItemsPerCount <= n; pass 0 one task per context, at
// most max(blocks, n/(minItemsPerCount*blocks)), so that both count
// matrices stay linear in n.
func TestTaskCounts(t *testing.T) {
	for _, n := range []int{1, 2, 63, 64, 255, 256, 4095, 4096, 65536, 1 << 20, 1<<32 - 1} {
		for _, nctx := range []int{1, 8, 4096, MaxContexts} {
			for _, grain := range []int{1, 7, 4096} {
				for _, tasks := range []int{1, 3, 64, MaxMergeTasks} {
					b, runs := taskCounts(n, nctx, grain, tasks)
					if b < 1 || b > tasks || b > (n+grain-1)/grain && b > 1 || b > 1 && b*b*minItemsPerCount > n {
						t.Fatalf("taskCounts(%d, %d, %d, %d): %d blocks", n, nctx, grain, tasks, b)
					}
					if c := b + 1; c <= tasks && c <= (n+grain-1)/grain && c*c*minItemsPerCount <= n {
						t.Fatalf("taskCounts(%d, %d, %d, %d): %d blocks, but %d fit", n, nctx, grain, tasks, b, c)
					}
					if runs < 1 || runs > nctx || runs > b && runs*b*minItemsPerCount > n {
						t.Fatalf("taskCounts(%d, %d, %d, %d): %d runs for %d blocks", n, nctx, grain, tasks, runs, b)
					}
					if runs < nctx && runs < b {
						t.Fatalf("taskCounts(%d, %d, %d, %d): %d runs, fewer than the %d blocks", n, nctx, grain, tasks, runs, b)
					}
				}
			}
		}
	}
}

// TestMergeSortScratchLinear: with the most tasks, the finest grain and
// many contexts, the sort's count matrices stay within 32 bytes per item
// (not the square of MergeTasks, nor the contexts times the tasks), and the
// result, with several contexts per first-pass task, equals the reference.
func TestMergeSortScratchLinear(t *testing.T) {
	s, m := newSched(t, 3)
	for _, tc := range []struct{ nctx, each int }{{1, 1 << 16}, {3000, 3}, {300, 200}} {
		r := newRenderer(t, s, Config{MergeGrain: 1, MergeTasks: MaxMergeTasks})
		sc := newScene(t, tc.nctx, (tc.each+1)*DrawRecordSize)
		rng := rand.New(rand.NewPCG(uint64(tc.nctx), 3))
		sizes := make([]int, tc.nctx)
		n := 0
		for i := range sizes {
			sizes[i] = rng.IntN(tc.each + 1)
			n += sizes[i]
		}
		sc.fill(t, rng, sizes)
		got, err := r.MergeSort(m, sc.ctxs, sc.reg)
		must(t, err)
		t.Run(fmt.Sprintf("%dx%d", tc.nctx, tc.each), func(t *testing.T) {
			checkAgainst(t, got, reference(sc.ctxs))
			// (Lengths: grow adds a quarter of slack to every buffer alike.)
			counts := (len(r.rx.nh[0]) + len(r.rx.nh[1])) * int(unsafe.Sizeof([256]uint32{}))
			if counts > 32*n {
				t.Fatalf("%d items, %d blocks: count matrices take %d bytes, more than 32 per item", n, r.rx.blocks, counts)
			}
			if r.rx.blocks < 2 || tc.nctx > 1 && r.rx.runs < 2 {
				t.Fatalf("%d items sorted in %d blocks, %d runs: the test does not exercise several", n, r.rx.blocks, r.rx.runs)
			}
			if tc.nctx > 1 && r.rx.runs == tc.nctx {
				t.Fatalf("%d contexts of %d items in as many runs: the test does not exercise grouping", tc.nctx, n)
			}
		})
	}
}
