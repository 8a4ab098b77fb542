package gfx

import (
	"bytes"
	"errors"
	"image"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// withinTimeout fails the test when f does not return within 10 s.
func withinTimeout(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s", what)
	}
}

// TestGfxStateRectsBeyondLimits: viewport and scissor rectangles that a
// packet may hold but Vulkan forbids (a viewport beyond the device's
// viewport bounds, a scissor whose offset plus extent overflows int32)
// never reach Vulkan: the frame draws or fails with an error, and the
// validation layer stays silent (gfxDevice's cleanup fails the test on
// any message).
func TestGfxStateRectsBeyondLimits(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g := newOffscreen(t, d, 64, 48)
	m := newMiniScene(t, g)
	ctx := newCtx(t, 64)
	key := func(layer uint8) render.SortKey {
		k, err := render.Key{Layer: layer}.Encode()
		must(t, err)
		return k
	}
	big := int32(math.MaxInt32 - 10)
	for _, c := range []struct {
		s   render.StatePacket
		box bool // whether the box still covers the middle pixel
	}{
		{render.StatePacket{Kind: render.StateViewport, Rect: [4]int32{100000, 0, 64, 48}}, false},
		{render.StatePacket{Kind: render.StateViewport, Rect: [4]int32{-100000, 0, 64, 48}}, false},
		{render.StatePacket{Kind: render.StateViewport, Rect: [4]int32{0, 100000, 64, 48}}, false},
		{render.StatePacket{Kind: render.StateViewport, Rect: [4]int32{big, big, big, big}}, false},
		{render.StatePacket{Kind: render.StateViewport, Rect: [4]int32{0, 0, 64, 48}}, true},
		{render.StatePacket{Kind: render.StateScissor, Rect: [4]int32{big, 0, 64, 48}}, false},
		{render.StatePacket{Kind: render.StateScissor, Rect: [4]int32{0, big, 64, big}}, false},
		{render.StatePacket{Kind: render.StateScissor, Rect: [4]int32{math.MinInt32, math.MinInt32, math.MaxInt32, math.MaxInt32}}, false},
		{render.StatePacket{Kind: render.StateScissor, Rect: [4]int32{-1000000, -1000000, 2000000, 2000000}}, true},
		{render.StatePacket{Kind: render.StateScissor, Rect: [4]int32{0, 0, big, big}}, true},
	} {
		ctx.Reset()
		s := c.s
		s.Key = key(0)
		must(t, ctx.SetState(&s))
		b := m.boxDraw()
		b.Key = key(1)
		must(t, ctx.Draw(&b))
		var err error
		withinTimeout(t, "Record", func() { err = record(t, e, g, m.reg, ctx) })
		if err != nil {
			t.Errorf("state %v %v: Record: %v", s.Kind, s.Rect, err)
			continue
		}
		img, err := g.Image()
		must(t, err)
		if p := img.RGBAAt(32, 24); isBox(p) != c.box {
			t.Errorf("state %v %v: middle pixel %v, box drawn there: %v, want %v", s.Kind, s.Rect, p, isBox(p), c.box)
		}
	}
}

// TestGfxEmptyAndRepeatedShapes: a frame with no packets at all, a frame
// recorded by hand with zero ranges, Close twice, every method after Close.
func TestGfxEmptyAndRepeatedShapes(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g, err := NewGraphics(d, GraphicsOptions{Width: 1, Height: 1, FramesInFlight: MaxFramesInFlight})
	must(t, err)
	m := newMiniScene(t, g)
	for range 2 * MaxFramesInFlight {
		withinTimeout(t, "Record of an empty frame", func() { must(t, record(t, e, g, m.reg, newCtx(t, 1))) })
	}
	must(t, g.BeginFrame(render.FrameInfo{Ranges: 0, Threads: 1}))
	must(t, g.EndFrame(nil))
	img, err := g.Image()
	must(t, err)
	if img.Rect.Dx() != 1 || img.Rect.Dy() != 1 {
		t.Fatalf("image %v", img.Rect)
	}
	// ReadPixels into a sub-image (Rect not at the origin).
	big := image.NewRGBA(image.Rect(0, 0, 4, 4))
	must(t, g.ReadPixels(big.SubImage(image.Rect(2, 2, 3, 3)).(*image.RGBA)))
	if big.RGBAAt(2, 2) != img.RGBAAt(0, 0) || big.RGBAAt(0, 0) != (img.RGBAAt(0, 0)) && big.RGBAAt(0, 0).A != 0 {
		t.Errorf("ReadPixels into a sub-image: %v, want %v (and nothing else written)", big.RGBAAt(2, 2), img.RGBAAt(0, 0))
	}
	if g.Stats().Frames != 2*MaxFramesInFlight+1 {
		t.Errorf("stats %+v", g.Stats())
	}
	must(t, g.Close())
	must(t, g.Close())
	for name, err := range map[string]error{
		"Wait":        g.Wait(),
		"ReadPixels":  g.ReadPixels(img),
		"BeginFrame":  g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}),
		"EndFrame":    g.EndFrame(nil),
		"Begin":       g.Begin(0, render.Range{}),
		"End":         g.End(0, render.Range{}),
		"AddPipeline": func() error { _, err := g.AddPipeline(nil, Pipeline{}); return err }(),
		"NewMesh":     func() error { _, err := g.NewMesh(nil, "x", []Vertex{{}}, nil, nil); return err }(),
	} {
		if !errors.Is(err, gpu.ErrClosed) {
			t.Errorf("%s after Close: %v, want gpu.ErrClosed", name, err)
		}
	}
	dp := m.boxDraw()
	g.BindPipeline(0, m.lit)
	g.BindMesh(0, m.box)
	g.Draw(0, &dp)
	g.SetState(0, &render.StatePacket{})
	g.Job(0, &render.JobPacket{Job: JobClear})
}

// TestGfxFenceTimeoutRecovers: a FenceTimeout too short for a frame makes
// BeginFrame fail with gpu.ErrTimeout, not hang; once the GPU caught up,
// frames go on.
func TestGfxFenceTimeoutRecovers(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g, err := NewGraphics(d, GraphicsOptions{Width: 256, Height: 256, FramesInFlight: 1, FenceTimeout: time.Nanosecond})
	must(t, err)
	defer func() { must(t, g.Close()) }()
	m := newMiniScene(t, g)
	ctx := newCtx(t, 512)
	for i := range 400 {
		dp := m.boxDraw()
		dp.Model[12] = float32(i%20)/20 - 0.5
		must(t, ctx.Draw(&dp))
	}
	timeouts, frames := 0, 0
	for range 20 {
		var err error
		withinTimeout(t, "Record", func() { err = record(t, e, g, m.reg, ctx) })
		switch {
		case err == nil:
			frames++
		case errors.Is(err, gpu.ErrTimeout):
			timeouts++
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("Record: %v, want nil or gpu.ErrTimeout", err)
		}
	}
	t.Logf("%d frames, %d timeouts", frames, timeouts)
	if frames == 0 {
		t.Error("no frame after the timeouts")
	}
	for g.Wait() != nil {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGfxPipelineShaderStageMismatch: custom shaders of the wrong stage
// (the fragment shader passed as the vertex shader and the other way
// round, a compute shader) are refused with gpu.ErrBadBinding before they
// reach the driver; the validation layer stays silent.
func TestGfxPipelineShaderStageMismatch(t *testing.T) {
	d, _ := gfxDevice(t)
	g := newOffscreen(t, d, 16, 16)
	comp, err := os.ReadFile("../testdata/saxpy.spv")
	must(t, err)
	for _, c := range []struct {
		name string
		p    Pipeline
		want string // in the message: the stage and what it got
	}{
		{"fragment as vertex", Pipeline{Name: "swap-v", VertexSPIRV: litFragSPV}, "vertex shader: entry point \"main\" is a Fragment shader, want Vertex"},
		{"vertex as fragment", Pipeline{Name: "swap-f", FragmentSPIRV: litVertSPV}, "fragment shader: entry point \"main\" is a Vertex shader, want Fragment"},
		{"compute as vertex", Pipeline{Name: "comp-v", VertexSPIRV: comp}, "is a GLCompute shader, want Vertex"},
		{"compute as fragment", Pipeline{Name: "comp-f", FragmentSPIRV: comp}, "is a GLCompute shader, want Fragment"},
		{"no main", Pipeline{Name: "no-main", VertexSPIRV: bytes.ReplaceAll(litVertSPV, []byte("main"), []byte("mair"))}, "no entry point \"main\""},
	} {
		var err error
		withinTimeout(t, "AddPipeline", func() { _, err = g.AddPipeline(nil, c.p) })
		if !errors.Is(err, gpu.ErrBadBinding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: AddPipeline: %v, want gpu.ErrBadBinding saying %q", c.name, err, c.want)
		}
	}
	// The built-in shaders passed explicitly are accepted.
	if _, err := g.AddPipeline(nil, Pipeline{Name: "explicit", VertexSPIRV: litVertSPV, FragmentSPIRV: litFragSPV}); err != nil {
		t.Errorf("explicit built-in shaders: %v", err)
	}
}

// TestGfxPipelineShaderInterfaceMismatch: custom shaders that break the
// documented interface in ways the SPIR-V states (a descriptor the shared
// layout lacks, a push-constant block larger than the 80 bytes of
// render.DrawPacket.PushConstants) fail AddPipeline with
// gpu.ErrBadBinding naming the descriptor or the size; none crashes or
// reaches the validation layer.
func TestGfxPipelineShaderInterfaceMismatch(t *testing.T) {
	d, _ := gfxDevice(t)
	g := newOffscreen(t, d, 16, 16)
	const head = "#version 450\nlayout(location = 0) in vec3 inPos;\nlayout(location = 1) in vec3 inNormal;\n"
	const frame = "layout(set = 0, binding = 0) uniform Frame { mat4 viewProj; } frame;\n"
	const pc = "layout(push_constant) uniform PC { mat4 model; vec4 color; } pc;\n"
	// The outputs the built-in fragment shader reads.
	const outs = "layout(location = 0) out vec3 vNormal;\nlayout(location = 1) out vec4 vColor;\nlayout(location = 2) out vec3 vWorld;\n"
	const tail = "vNormal = inNormal; vColor = pc.color; vWorld = inPos; }"
	for _, c := range []struct{ name, src, want string }{
		{"binding 1", head + outs + pc + "layout(set = 0, binding = 1) uniform Extra { mat4 m; } extra;\n" +
			"void main() { gl_Position = extra.m * pc.model * vec4(inPos, 1.0); " + tail, "set 0 binding 1"},
		{"set 1", head + outs + pc + "layout(set = 1, binding = 0) uniform Extra { mat4 m; } extra;\n" +
			"void main() { gl_Position = extra.m * pc.model * vec4(inPos, 1.0); " + tail, "set 1 binding 0"},
		{"push constants of 144 bytes", head + outs + frame + "layout(push_constant) uniform PC { mat4 model; mat4 more; vec4 color; } pc;\n" +
			"void main() { gl_Position = frame.viewProj * pc.more * pc.model * vec4(inPos, 1.0); " + tail, "144 bytes"},
	} {
		code := glslc.Compile(t, "vert", c.src)
		var err error
		withinTimeout(t, "AddPipeline", func() { _, err = g.AddPipeline(nil, Pipeline{Name: c.name, VertexSPIRV: code}) })
		if !errors.Is(err, gpu.ErrBadBinding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: AddPipeline: %v, want gpu.ErrBadBinding saying %q", c.name, err, c.want)
		}
	}
	// The same interface, kept: accepted, and silent.
	good := glslc.Compile(t, "vert", head+outs+frame+pc+"void main() { gl_Position = frame.viewProj * pc.model * vec4(inPos, 1.0); "+tail)
	if _, err := g.AddPipeline(nil, Pipeline{Name: "custom", VertexSPIRV: good}); err != nil {
		t.Errorf("a custom vertex shader that keeps the interface: %v", err)
	}
}

// TestGfxMeshBufferClosedWhileRegistered: Mesh's docs say closing a
// buffer while its mesh is registered is safe (the Graphics holds a
// reference): the mesh still draws, 16-bit indices at an offset included,
// and the memory is freed when the Graphics closes (the validation layer
// reports leaks at vkDestroyDevice).
func TestGfxMeshBufferClosedWhileRegistered(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g, err := NewGraphics(d, GraphicsOptions{Width: 64, Height: 48})
	must(t, err)
	reg := render.NewRegistry()
	lit, err := g.AddPipeline(reg, Pipeline{Name: "lit"})
	must(t, err)
	cv, ci := cube(1)
	vb, err := d.NewBuffer(uint64(len(cv)) * VertexSize)
	must(t, err)
	must(t, vb.Write(0, sched.StreamOf(cv).Bytes))
	ix16 := make([]uint16, 3+len(ci)) // 3 junk indices, then the cube's from byte 6
	for i, v := range ci {
		ix16[3+i] = uint16(v)
	}
	ib, err := d.NewBuffer(uint64(2 * len(ix16)))
	must(t, err)
	must(t, ib.Write(0, sched.StreamOf(ix16).Bytes))
	box, err := g.AddMesh(reg, Mesh{Name: "box16", Vertices: vb, VertexCount: uint32(len(cv)),
		Indices: ib, IndexOffset: 6, IndexCount: uint32(len(ci)), Index16: true})
	must(t, err)
	vb.Close()
	ib.Close()
	ctx := newCtx(t, 8)
	dp := render.DrawPacket{Pipeline: lit, Mesh: box, VertexCount: 36, InstanceCount: 1,
		Model: scaled(0, 0, 0.5, 0.5, 0.5, 0.25), Color: [4]float32{0.2, 1, 0.2, 1}}
	must(t, ctx.Draw(&dp))
	for range 3 {
		must(t, record(t, e, g, reg, ctx))
	}
	img, err := g.Image()
	must(t, err)
	if p := img.RGBAAt(32, 24); !isBox(p) {
		t.Errorf("mesh of closed buffers: middle pixel %v, want the box", p)
	}
	// A closed buffer cannot be registered again.
	if _, err := g.AddMesh(nil, Mesh{Name: "odd", Vertices: vb, VertexCount: 1}); !errors.Is(err, gpu.ErrBadStream) {
		t.Errorf("AddMesh of a closed buffer: %v, want gpu.ErrBadStream", err)
	}
	must(t, g.Close())
}
