package render

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/sched"
)

// raw builds a stream with an evstream.Writer, bypassing RenderContext's
// checks, so that tests can plant any record.
type raw struct{ w *evstream.Writer }

func newRaw() raw { return raw{evstream.NewWriter(evstream.NewBuffer(1 << 12))} }

func (r raw) put(t evstream.Type, p unsafe.Pointer, size int) raw {
	if err := r.w.Append(t, unsafe.Slice((*byte)(p), size)); err != nil {
		panic(err)
	}
	return r
}
func (r raw) draw(d DrawPacket) raw   { return r.put(TypeDraw, unsafe.Pointer(&d), drawSize) }
func (r raw) state(s StatePacket) raw { return r.put(TypeState, unsafe.Pointer(&s), stateSize) }
func (r raw) job(j JobPacket) raw     { return r.put(TypeJob, unsafe.Pointer(&j), jobSize) }
func (r raw) bytes() []byte           { return r.w.Bytes() }

// TestInvalidInput enumerates every kind of bad input. Each case puts a
// valid draw, the bad input, and (where the stream stays readable) another
// valid draw into context 1 of two; it checks the packet is dropped and
// counted, the problem is reported with its kind and byte offset, and every
// valid packet still reaches the sorted stream.
func TestInvalidInput(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	reg := NewRegistry()
	pipe, _ := reg.AddPipeline(Pipeline{Name: "lit"})
	mesh, _ := reg.AddMesh(Mesh{Name: "quad", Vertices: 4})
	imesh, _ := reg.AddMesh(Mesh{Name: "indexed", Vertices: 4, Indices: 6})
	reg.SetInstances(10)
	ok := DrawPacket{Key: 1, Pipeline: pipe, Mesh: mesh, VertexCount: 4, InstanceCount: 1}
	with := func(f func(*DrawPacket)) DrawPacket { d := ok; f(&d); return d }
	second := DrawRecordSize // offset of the bad record's header in context 1

	type tc struct {
		name    string
		stream  []byte
		kind    error
		offset  int
		draws   int // valid draws of context 1 that survive
		value   uint64
		invalid int
		corrupt int
	}
	cases := []tc{
		{name: "unknown pipeline", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.Pipeline = 7 })).draw(ok).bytes(),
			kind: ErrUnknownPipeline, offset: second, draws: 2, value: 7, invalid: 1},
		{name: "pipeline zero", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.Pipeline = 0 })).draw(ok).bytes(),
			kind: ErrUnknownPipeline, offset: second, draws: 2, value: 0, invalid: 1},
		{name: "unknown mesh", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.Mesh = 99 })).draw(ok).bytes(),
			kind: ErrUnknownMesh, offset: second, draws: 2, value: 99, invalid: 1},
		{name: "mesh zero", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.Mesh = 0 })).draw(ok).bytes(),
			kind: ErrUnknownMesh, offset: second, draws: 2, invalid: 1},
		{name: "no vertices", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.VertexCount = 0 })).draw(ok).bytes(),
			kind: ErrEmptyDraw, offset: second, draws: 2, invalid: 1},
		{name: "no instances", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.InstanceCount = 0 })).draw(ok).bytes(),
			kind: ErrEmptyDraw, offset: second, draws: 2, value: 4, invalid: 1},
		{name: "vertices past mesh", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.FirstVertex = 1 })).draw(ok).bytes(),
			kind: ErrDrawRange, offset: second, draws: 2, value: 5, invalid: 1},
		{name: "vertex overflow", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.FirstVertex = 0xffffffff })).draw(ok).bytes(),
			kind: ErrDrawRange, offset: second, draws: 2, value: 0xffffffff + 4, invalid: 1},
		{name: "indices past mesh", stream: newRaw().draw(with(func(d *DrawPacket) { d.Mesh, d.VertexCount = imesh, 6 })).
			draw(with(func(d *DrawPacket) { d.Mesh, d.VertexCount = imesh, 7 })).draw(ok).bytes(),
			kind: ErrDrawRange, offset: second, draws: 2, value: 7, invalid: 1},
		{name: "instances past limit", stream: newRaw().draw(ok).draw(with(func(d *DrawPacket) { d.Instance = 9; d.InstanceCount = 2 })).draw(ok).bytes(),
			kind: ErrInstanceRange, offset: second, draws: 2, value: 11, invalid: 1},
		{name: "draw too short", stream: newRaw().draw(ok).put(TypeDraw, unsafe.Pointer(&ok), drawSize-8).draw(ok).bytes(),
			kind: ErrPacketSize, offset: second, draws: 2, value: uint64(drawSize - 8), invalid: 1},
		{name: "state too long", stream: newRaw().draw(ok).put(TypeState, unsafe.Pointer(&ok), stateSize+8).draw(ok).bytes(),
			kind: ErrPacketSize, offset: second, draws: 2, value: uint64(stateSize + 8), invalid: 1},
		{name: "job too short", stream: newRaw().draw(ok).put(TypeJob, unsafe.Pointer(&ok), 4).draw(ok).bytes(),
			kind: ErrPacketSize, offset: second, draws: 2, value: 4, invalid: 1},
		{name: "state kind", stream: newRaw().draw(ok).state(StatePacket{Kind: NumStates}).draw(ok).bytes(),
			kind: ErrBadState, offset: second, draws: 2, value: uint64(NumStates), invalid: 1},
		{name: "state negative size", stream: newRaw().draw(ok).state(StatePacket{Kind: StateScissor, Rect: [4]int32{0, 0, -1, 5}}).draw(ok).bytes(),
			kind: ErrBadState, offset: second, draws: 2, value: ^uint64(0), invalid: 1},
		{name: "truncated header", stream: append(newRaw().draw(ok).draw(ok).bytes(), 3, 0, 0, 0),
			kind: ErrCorrupt, offset: 2 * DrawRecordSize, draws: 2, corrupt: 1},
		{name: "truncated payload", stream: newRaw().draw(ok).draw(ok).bytes()[:2*DrawRecordSize-9],
			kind: ErrCorrupt, offset: second, draws: 1, corrupt: 1},
		{name: "type zero", stream: append(newRaw().draw(ok).bytes(), make([]byte, 64)...),
			kind: ErrCorrupt, offset: second, draws: 1, corrupt: 1},
		{name: "dirty padding", stream: func() []byte {
			b := newRaw().draw(ok).put(FirstAppType, unsafe.Pointer(&ok), 3).draw(ok).bytes()
			b[second+evstream.HeaderSize+5] = 1
			return b
		}(), kind: ErrCorrupt, offset: second + evstream.HeaderSize + 5, draws: 1, corrupt: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good, err := NewContext(1 << 12)
			must(t, err)
			must(t, good.Draw(&ok))
			bad, err := NewContext(1 << 12)
			must(t, err)
			must(t, bad.Load(c.stream))
			sorted, err := r.MergeSort(m, []*RenderContext{good, bad}, reg)
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v, want *FrameError", err)
			}
			if !errors.Is(err, c.kind) || len(fe.Problems) != 1 || fe.Omitted != 0 {
				t.Fatalf("err %v, want one %v", err, c.kind)
			}
			p := fe.Problems[0]
			if p.Context != 1 || p.Offset != c.offset || p.Kind != c.kind || (c.corrupt == 0 && p.Value != c.value) {
				t.Fatalf("problem %+v, want context 1 offset %d value %d", p, c.offset, c.value)
			}
			if c.corrupt > 0 {
				var se *evstream.Error
				if !errors.As(err, &se) || se.Offset != c.offset {
					t.Fatalf("corruption cause %v", p.Cause)
				}
			}
			st := sorted.Stats()
			if st.Invalid != c.invalid || st.Corrupt != c.corrupt || st.Draws != 1+c.draws || sorted.Len() != 1+c.draws || fe.Stats != st {
				t.Fatalf("stats %+v (error's %+v)", st, fe.Stats)
			}
			if !strings.Contains(err.Error(), "context 1") {
				t.Fatalf("message %q does not name the context", err)
			}
			// What survived records cleanly.
			rec := CountingRecorder{Registry: reg}
			_, err = r.Record(m, sorted, &rec)
			must(t, err)
		})
	}
}

// TestOverflow: a full context drops, counts and reports; the packets that
// fit are sorted.
func TestOverflow(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	sc := newScene(t, 3, 10*DrawRecordSize)
	rng := rand.New(rand.NewPCG(6, 6))
	for i, c := range sc.ctxs {
		for j := range 10 + 5*i {
			d := sc.draw(rng)
			err := c.Draw(&d)
			if (j >= 10) != errors.Is(err, ErrOverflow) {
				t.Fatalf("ctx %d draw %d: %v", i, j, err)
			}
		}
		if c.Dropped() != 5*i || c.Packets() != 10 || c.Len() != c.Cap() {
			t.Fatalf("ctx %d dropped %d, holds %d", i, c.Dropped(), c.Packets())
		}
	}
	if !errors.Is(ErrOverflow, evstream.ErrFull) {
		t.Fatal("ErrOverflow does not wrap evstream.ErrFull")
	}
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	var fe *FrameError
	if !errors.As(err, &fe) || !errors.Is(err, ErrOverflow) {
		t.Fatalf("err %v", err)
	}
	if sorted.Len() != 30 || fe.Stats.Overflow != 15 || len(fe.Problems) != 2 {
		t.Fatalf("%d sorted, %+v", sorted.Len(), fe)
	}
	for k, p := range fe.Problems {
		if p.Context != k+1 || p.Offset != -1 || p.Value != uint64(5*(k+1)) {
			t.Fatalf("problem %+v", p)
		}
	}
	checkAgainst(t, sorted, reference(sc.ctxs))
	// Reset clears the count: the next frame is clean.
	for _, c := range sc.ctxs {
		c.Reset()
	}
	if _, err := r.MergeSort(m, sc.ctxs, sc.reg); err != nil {
		t.Fatal(err)
	}
}

// TestProblemsBounded: a context full of bad draws reports a bounded list
// and counts the rest.
func TestProblemsBounded(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	c, _ := NewContext(1 << 16)
	d := DrawPacket{Pipeline: 5, Mesh: 5, VertexCount: 1, InstanceCount: 1}
	for range 100 {
		must(t, c.Draw(&d))
	}
	sorted, err := r.MergeSort(m, []*RenderContext{c}, NewRegistry())
	var fe *FrameError
	if !errors.As(err, &fe) || len(fe.Problems) != MaxProblemsPerContext || fe.Omitted != 100-MaxProblemsPerContext || sorted.Len() != 0 || fe.Stats.Invalid != 100 {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "more)") {
		t.Fatalf("message %q", err)
	}
}

func TestUnknownTypesSkipped(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	sc := newScene(t, 2, 1<<14)
	sc.apps = 500
	sc.fill(t, rand.New(rand.NewPCG(8, 8)), counts(2, 100))
	// Types reserved for future render packets are skipped too.
	raw := append(append([]byte{}, sc.ctxs[1].Bytes()...), newRaw().put(FirstAppType-1, unsafe.Pointer(&sc), 8).bytes()...)
	must(t, sc.ctxs[1].Load(raw))
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	st := sorted.Stats()
	if st.Unknown < 50 || st.Unknown+st.Packets != 201 {
		t.Fatalf("%+v", st)
	}
	checkAgainst(t, sorted, reference(sc.ctxs))
}

// TestUsageErrors: misuse of the API is an error, never a panic.
func TestUsageErrors(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{})
	reg := NewRegistry()
	c, _ := NewContext(64)
	s2, m2 := newSched(t, 0)
	checks := map[string]error{}
	_, checks["nil context"] = r.MergeSort(m, []*RenderContext{c, nil}, reg)
	_, checks["nil registry"] = r.MergeSort(m, []*RenderContext{c}, nil)
	_, checks["nil ctx"] = r.MergeSort(nil, nil, reg)
	_, checks["foreign thread"] = r.MergeSort(m2, nil, reg)
	_, checks["too many contexts"] = r.MergeSort(m, make([]*RenderContext, MaxContexts+1), reg)
	_, checks["record nil"] = r.Record(m, nil, &CountingRecorder{})
	_, checks["record nil recorder"] = r.Record(m, &Sorted{}, nil)
	_, checks["record foreign"] = r.Record(m2, &Sorted{}, &CountingRecorder{})
	_, checks["negative capacity"] = NewContext(-1)
	checks["load too big"] = c.Load(make([]byte, 65))
	checks["reserved type"] = c.Append(TypeDraw, nil)
	_, checks["nil scheduler"] = New(nil, Config{})
	_, checks["negative config"] = New(s, Config{Ranges: -1})
	// Another library took the owner name "render" in s2's registry with
	// kernels of its own: New must refuse to share them.
	_, err := s2.Kernels().RegisterBlock("render", []sched.Kernel{{Name: "other", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}})
	must(t, err)
	_, checks["kernel block taken"] = New(s2, Config{})
	sorted, err := r.MergeSort(m, []*RenderContext{c}, reg)
	must(t, err)
	c.Reset()
	if sorted.Valid() {
		t.Error("Sorted valid after its context was reset")
	}
	_, checks["stale sorted"] = r.Record(m, sorted, &CountingRecorder{})
	if !errors.Is(checks["stale sorted"], ErrStale) {
		t.Errorf("stale: %v", checks["stale sorted"])
	}
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	must(t, c.Load(make([]byte, 5)))
	if err := c.Draw(&DrawPacket{}); err == nil || errors.Is(err, ErrOverflow) {
		t.Errorf("append after a misaligned load: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	var g Registry
	if _, ok := g.Pipeline(0); ok {
		t.Fatal("pipeline 0")
	}
	p, err := g.AddPipeline(Pipeline{Name: "a"})
	must(t, err)
	m, err := g.AddMesh(Mesh{Name: "b", Vertices: 3})
	must(t, err)
	if pp, ok := g.Pipeline(p); !ok || pp.Name != "a" || g.Pipelines() != 1 {
		t.Fatal("pipeline lookup")
	}
	if mm, ok := g.Mesh(m); !ok || mm.Vertices != 3 || g.Meshes() != 1 {
		t.Fatal("mesh lookup")
	}
	if _, ok := g.Mesh(m + 1); ok {
		t.Fatal("mesh 2")
	}
	for range MaxPipelines - 1 {
		_, err = g.AddPipeline(Pipeline{})
		must(t, err)
	}
	if _, err := g.AddPipeline(Pipeline{}); err == nil {
		t.Fatal("registry beyond the key's pipeline field")
	}
}

// TestContextZeroAllocs: submitting, including dropping on overflow, never
// allocates.
func TestContextZeroAllocs(t *testing.T) {
	c, err := NewContext(100 * DrawRecordSize)
	must(t, err)
	d := DrawPacket{Pipeline: 1, Mesh: 1, VertexCount: 3, InstanceCount: 1}
	st := StatePacket{Kind: StateViewport}
	j := JobPacket{Job: 1}
	payload := []byte("marker")
	allocs := testing.AllocsPerRun(50, func() {
		c.Reset()
		for range 200 { // half of these overflow
			_ = c.Draw(&d)
			_ = c.SetState(&st)
			_ = c.Job(&j)
			_ = c.Append(FirstAppType, payload)
		}
	})
	if allocs != 0 || c.Dropped() == 0 {
		t.Fatalf("%v allocs per frame (dropped %d)", allocs, c.Dropped())
	}
}

// TestSubmitNil: Draw, SetState and Job of a nil packet are errors
// (evstream.ErrNilValue) that submit nothing, never a panic.
func TestSubmitNil(t *testing.T) {
	c, err := NewContext(1024)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"Draw":     func() error { return c.Draw(nil) },
		"SetState": func() error { return c.SetState(nil) },
		"Job":      func() error { return c.Job(nil) },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(nil) panicked: %v", name, r)
				}
			}()
			if err := f(); !errors.Is(err, evstream.ErrNilValue) {
				t.Errorf("%s(nil) = %v, want evstream.ErrNilValue", name, err)
			}
		}()
	}
	if c.Packets() != 0 || c.Len() != 0 || c.Dropped() != 0 {
		t.Errorf("after nil submissions: %d packets, %d bytes, %d dropped", c.Packets(), c.Len(), c.Dropped())
	}
}

// Input from elsewhere: contexts loaded from captures or peers
// (RenderContext.Load) may hold garbage. MergeSort must return every valid
// packet, report what it dropped, and Record must
// issue only packets that pass the registry; nothing may panic or hang.

func garbageFrame(t *testing.T) (*sched.Scheduler, *sched.Ctx, *Renderer, *Registry, []PipelineID, []MeshID) {
	t.Helper()
	s, err := sched.New(sched.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(s, Config{MergeGrain: 8, Ranges: 5, MinRange: 2})
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	var pipes []PipelineID
	var meshes []MeshID
	for i := 0; i < 3; i++ {
		p, err := reg.AddPipeline(Pipeline{Name: fmt.Sprint("p", i)})
		if err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, p)
		mh, err := reg.AddMesh(Mesh{Name: fmt.Sprint("m", i), Vertices: 36, Indices: uint32(i * 12)})
		if err != nil {
			t.Fatal(err)
		}
		meshes = append(meshes, mh)
	}
	reg.SetInstances(100)
	return s, m, r, reg, pipes, meshes
}

// frame runs MergeSort and Record under a watchdog, turning panics into
// failures, and checks what reached the recorder.
func frame(t *testing.T, what string, m *sched.Ctx, r *Renderer, reg *Registry, ctxs []*RenderContext) (Stats, error) {
	t.Helper()
	type res struct {
		st    Stats
		err   error
		fatal string
	}
	done := make(chan res, 1)
	go func() {
		// The main thread's Ctx is used from this goroutine only while the
		// test goroutine waits, never at once.
		defer func() {
			if p := recover(); p != nil {
				done <- res{fatal: fmt.Sprintf("panic: %v\n%s", p, debug.Stack())}
			}
		}()
		sorted, err := r.MergeSort(m, ctxs, reg)
		if sorted == nil {
			done <- res{fatal: fmt.Sprintf("MergeSort returned no stream: %v", err)}
			return
		}
		var fe *FrameError
		if err != nil && !errors.As(err, &fe) {
			done <- res{fatal: fmt.Sprintf("MergeSort error is not a *FrameError: %v", err)}
			return
		}
		rec := &CountingRecorder{Registry: reg}
		rs, rerr := r.Record(m, sorted, rec)
		if rerr != nil {
			done <- res{fatal: fmt.Sprintf("Record of the valid packets failed: %v", rerr)}
			return
		}
		st := sorted.Stats()
		if rs.Draws != st.Draws || rs.Jobs != st.Jobs {
			done <- res{fatal: fmt.Sprintf("recorded %d draws %d jobs, sorted %d draws %d jobs", rs.Draws, rs.Jobs, st.Draws, st.Jobs)}
			return
		}
		for i := 0; i < sorted.Len(); i++ {
			if d := sorted.Draw(i); d != nil {
				for _, v := range d.Model {
					_ = math.IsNaN(float64(v)) // any bits are data, not an error
				}
			}
		}
		done <- res{st: st, err: err}
	}()
	select {
	case x := <-done:
		if x.fatal != "" {
			t.Fatalf("%s: %s", what, x.fatal)
		}
		return x.st, x.err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: MergeSort/Record did not return in 30 s", what)
		return Stats{}, nil
	}
}

// TestLoadGarbage: valid frames, then the same bytes truncated and
// corrupted, and pure noise, loaded into contexts.
func TestLoadGarbage(t *testing.T) {
	_, m, r, reg, pipes, meshes := garbageFrame(t)
	src, err := NewContext(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		key, _ := Key{Layer: uint8(i % 3), Pipeline: uint16(pipes[i%3]), Depth: QuantizeDepth(float32(i))}.Encode()
		d := DrawPacket{Key: key, Pipeline: pipes[i%3], Mesh: meshes[i%3], VertexCount: 12, Instance: uint32(i), InstanceCount: 1}
		if err := src.Draw(&d); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := src.SetState(&StatePacket{Key: key - 1, Kind: StateViewport, Rect: [4]int32{0, 0, 64, 64}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	good := append([]byte(nil), src.Bytes()...)
	ctxs := make([]*RenderContext, 3)
	for i := range ctxs {
		ctxs[i], _ = NewContext(1 << 14)
		if err := ctxs[i].Load(good); err != nil {
			t.Fatal(err)
		}
	}
	st, err := frame(t, "valid", m, r, reg, ctxs)
	if err != nil || st.Draws != 180 || st.Invalid != 0 || st.Corrupt != 0 {
		t.Fatalf("valid frame: %+v, %v", st, err)
	}
	// Draws that name what the registry does not have are dropped and
	// reported, never recorded.
	bad := ctxs[2]
	bad.Reset()
	for _, d := range []DrawPacket{
		{Pipeline: 999, Mesh: meshes[0], VertexCount: 3, InstanceCount: 1},
		{Pipeline: pipes[0], Mesh: 999, VertexCount: 3, InstanceCount: 1},
		{Pipeline: pipes[0], Mesh: meshes[0], VertexCount: 37, InstanceCount: 1},
		{Pipeline: pipes[0], Mesh: meshes[0], FirstVertex: math.MaxUint32, VertexCount: 2, InstanceCount: 1},
		{Pipeline: pipes[0], Mesh: meshes[0], VertexCount: 3, Instance: 99, InstanceCount: 2},
		{Pipeline: pipes[0], Mesh: meshes[0], VertexCount: 3, Instance: math.MaxUint32, InstanceCount: 2},
		{Pipeline: pipes[1], Mesh: meshes[1], VertexCount: 13, InstanceCount: 1}, // 12 indices
	} {
		if err := bad.Draw(&d); err != nil {
			continue // refused at once is fine too
		}
	}
	st, err = frame(t, "bad handles", m, r, reg, ctxs)
	var fe *FrameError
	t.Logf("bad draws: %d accepted by the context, stats %+v", bad.Packets(), st)
	if bad.Packets() > 0 && (!errors.As(err, &fe) || st.Invalid != bad.Packets()) {
		t.Errorf("bad draws: %d in the context, stats %+v, err %v", bad.Packets(), st, err)
	}
	// Truncations and corruption of the good bytes in context 1, beside two
	// good contexts.
	if err := ctxs[2].Load(good); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		b := append([]byte(nil), good...)
		switch i % 3 {
		case 0:
			b = b[:rng.IntN(len(b))]
		case 1:
			for k := 0; k < 1+rng.IntN(8); k++ {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		case 2:
			b = b[:rng.IntN(len(b)/4+1)*4]
			for j := range b {
				if rng.IntN(50) == 0 {
					b[j] = 0xff
				}
			}
		}
		if err := ctxs[1].Load(b); err != nil {
			t.Fatal(err)
		}
		st, _ := frame(t, fmt.Sprint("corrupt ", i), m, r, reg, ctxs)
		if st.Draws < 120 {
			t.Fatalf("corrupt %d: only %d draws kept; the two good contexts hold 120", i, st.Draws)
		}
	}
	// Noise.
	for i := 0; i < 50; i++ {
		n := make([]byte, rng.IntN(2048))
		for j := range n {
			n[j] = byte(rng.Uint32())
		}
		if err := ctxs[1].Load(n); err != nil {
			t.Fatal(err)
		}
		frame(t, fmt.Sprint("noise ", i), m, r, reg, ctxs)
	}
	// Load larger than the capacity is refused.
	small, _ := NewContext(64)
	if err := small.Load(good); err == nil {
		t.Errorf("Load of %d bytes into a 64-byte context accepted", len(good))
	}
	if _, err := NewContext(-1); err == nil {
		t.Errorf("NewContext(-1) accepted")
	}
}
