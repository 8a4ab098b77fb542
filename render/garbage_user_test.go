package render_test

// A user's view of the renderer with input from elsewhere: contexts loaded
// from captures or peers (RenderContext.Load) may hold garbage. MergeSort
// must return every valid packet, report what it dropped, and Record must
// issue only packets that pass the registry; nothing may panic or hang.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

func userFrame(t *testing.T) (*sched.Scheduler, *sched.Ctx, *render.Renderer, *render.Registry, []render.PipelineID, []render.MeshID) {
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
	r, err := render.New(s, render.Config{MergeGrain: 8, Ranges: 5, MinRange: 2})
	if err != nil {
		t.Fatal(err)
	}
	reg := render.NewRegistry()
	var pipes []render.PipelineID
	var meshes []render.MeshID
	for i := 0; i < 3; i++ {
		p, err := reg.AddPipeline(render.Pipeline{Name: fmt.Sprint("p", i)})
		if err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, p)
		mh, err := reg.AddMesh(render.Mesh{Name: fmt.Sprint("m", i), Vertices: 36, Indices: uint32(i * 12)})
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
func frame(t *testing.T, what string, m *sched.Ctx, r *render.Renderer, reg *render.Registry, ctxs []*render.RenderContext) (render.Stats, error) {
	t.Helper()
	type res struct {
		st    render.Stats
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
		var fe *render.FrameError
		if err != nil && !errors.As(err, &fe) {
			done <- res{fatal: fmt.Sprintf("MergeSort error is not a *FrameError: %v", err)}
			return
		}
		rec := &render.CountingRecorder{Registry: reg}
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
		return render.Stats{}, nil
	}
}

// TestUserRenderGarbage: valid frames, then the same bytes truncated and
// corrupted, and pure noise, loaded into contexts.
func TestUserRenderGarbage(t *testing.T) {
	_, m, r, reg, pipes, meshes := userFrame(t)
	src, err := render.NewContext(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		key, _ := render.Key{Layer: uint8(i % 3), Pipeline: uint16(pipes[i%3]), Depth: render.QuantizeDepth(float32(i))}.Encode()
		d := render.DrawPacket{Key: key, Pipeline: pipes[i%3], Mesh: meshes[i%3], VertexCount: 12, Instance: uint32(i), InstanceCount: 1}
		if err := src.Draw(&d); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := src.SetState(&render.StatePacket{Key: key - 1, Kind: render.StateViewport, Rect: [4]int32{0, 0, 64, 64}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	good := append([]byte(nil), src.Bytes()...)
	ctxs := make([]*render.RenderContext, 3)
	for i := range ctxs {
		ctxs[i], _ = render.NewContext(1 << 14)
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
	for _, d := range []render.DrawPacket{
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
	var fe *render.FrameError
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
	small, _ := render.NewContext(64)
	if err := small.Load(good); err == nil {
		t.Errorf("Load of %d bytes into a 64-byte context accepted", len(good))
	}
	if _, err := render.NewContext(-1); err == nil {
		t.Errorf("NewContext(-1) accepted")
	}
}
