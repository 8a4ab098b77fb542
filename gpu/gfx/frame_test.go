package gfx

import (
	"errors"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/render"
)

// miniScene is one lit pipeline, one instanced pipeline, a cube mesh and
// an instanced cube mesh, in a fresh registry.
type miniScene struct {
	reg        *render.Registry
	lit, inst  render.PipelineID
	box, boxes render.MeshID
}

func newMiniScene(t testing.TB, g *Graphics) *miniScene {
	t.Helper()
	m := &miniScene{reg: render.NewRegistry()}
	var err error
	m.lit, err = g.AddPipeline(m.reg, Pipeline{Name: "lit"})
	must(t, err)
	m.inst, err = g.AddPipeline(m.reg, Pipeline{Name: "inst", Instanced: true})
	must(t, err)
	cv, ci := cube(1)
	m.box, err = g.NewMesh(m.reg, "box", cv, ci, nil)
	must(t, err)
	m.boxes, err = g.NewMesh(m.reg, "boxes", cv, ci, []Instance{{Scale: 1, Color: [4]float32{1, 1, 1, 1}}, {Scale: 0.5, Color: [4]float32{1, 0, 0, 1}}})
	must(t, err)
	return m
}

// boxDraw is a draw of the mini scene's box, big in the middle of an
// identity camera (it covers the centre pixel).
func (m *miniScene) boxDraw() render.DrawPacket {
	return render.DrawPacket{Pipeline: m.lit, Mesh: m.box, VertexCount: 36, InstanceCount: 1,
		Model: scaled(0, 0, 0.5, 0.5, 0.5, 0.25), Color: [4]float32{0.2, 1, 0.2, 1}}
}

// isBox reports whether p is the mini scene's green box (lit by the
// ambient term only under the identity camera).
func isBox(p color.RGBA) bool { return p.G > 20 && int(p.G) > 2*int(p.R) && int(p.G) > 2*int(p.B) }

func newCtx(t testing.TB, n int) *render.RenderContext {
	t.Helper()
	c, err := render.NewContext(n * render.DrawRecordSize)
	must(t, err)
	return c
}

func record(t testing.TB, e *gfxEnv, g *Graphics, reg *render.Registry, ctxs ...*render.RenderContext) error {
	t.Helper()
	sorted, err := e.rr.MergeSort(e.main, ctxs, reg)
	must(t, err)
	_, err = e.rr.Record(e.main, sorted, g)
	return err
}

// TestGfxBadPacketsAreErrors: draws naming handles the Graphics does not
// know (but the render registry does), draws outside their mesh, and
// unknown jobs fail the frame with an error naming the problem; the frame
// is discarded (only the clear colour), nothing crashes, the validation
// layer stays silent, and the next frame draws normally.
func TestGfxBadPacketsAreErrors(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g := newOffscreen(t, d, 64, 48)
	m := newMiniScene(t, g)
	ghostPipe, err := m.reg.AddPipeline(render.Pipeline{Name: "ghost"})
	must(t, err)
	ghostMesh, err := m.reg.AddMesh(render.Mesh{Name: "ghost", Vertices: 24, Indices: 36})
	must(t, err)
	clearRGBA := color.RGBA{26, 26, 31, 255}

	cases := []struct {
		name string
		bad  func(c *render.RenderContext) error
		want error
	}{
		{"unknown pipeline", func(c *render.RenderContext) error {
			dp := m.boxDraw()
			dp.Pipeline = ghostPipe
			return c.Draw(&dp)
		}, ErrUnknownHandle},
		{"unknown mesh", func(c *render.RenderContext) error {
			dp := m.boxDraw()
			dp.Mesh = ghostMesh
			return c.Draw(&dp)
		}, ErrUnknownHandle},
		{"instanced pipeline, mesh without instances", func(c *render.RenderContext) error {
			dp := m.boxDraw()
			dp.Pipeline = m.inst
			return c.Draw(&dp)
		}, ErrBadDraw},
		{"instances beyond the mesh's", func(c *render.RenderContext) error {
			dp := m.boxDraw()
			dp.Pipeline, dp.Mesh, dp.Instance, dp.InstanceCount = m.inst, m.boxes, 1, 2
			return c.Draw(&dp)
		}, ErrBadDraw},
		{"unknown job", func(c *render.RenderContext) error {
			return c.Job(&render.JobPacket{Job: 99})
		}, ErrUnknownJob},
		{"clear job with a bad depth", func(c *render.RenderContext) error {
			j := ClearJob(0, [4]float32{}, 2, 2)
			return c.Job(&j)
		}, nil},
	}
	ctx := newCtx(t, 64)
	for i, c := range cases {
		ctx.Reset()
		good := m.boxDraw()
		must(t, ctx.Draw(&good))
		must(t, c.bad(ctx))
		err := record(t, e, g, m.reg, ctx)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: Record error %v, want one wrapping %v", c.name, err, c.want)
		}
		if gs := g.Stats(); gs.Discarded != i+1 {
			t.Errorf("%s: %d frames discarded, want %d", c.name, gs.Discarded, i+1)
		}
		img, err := g.Image()
		must(t, err)
		if p := img.RGBAAt(32, 24); !near(p, clearRGBA, 1) {
			t.Errorf("%s: a discarded frame shows %v in the middle, want only the clear colour %v", c.name, p, clearRGBA)
		}
	}

	// The next frame draws: the box covers the middle.
	ctx.Reset()
	good := m.boxDraw()
	must(t, ctx.Draw(&good))
	must(t, record(t, e, g, m.reg, ctx))
	img, err := g.Image()
	must(t, err)
	if p := img.RGBAAt(32, 24); !isBox(p) {
		t.Errorf("after the bad frames, the box is not drawn: middle pixel %v", p)
	}
}

// TestGfxStatesAndJobs: viewport and scissor states (a zero-area viewport
// skips draws, a negative scissor origin is clipped) and a clear job, with
// the validation layer silent.
func TestGfxStatesAndJobs(t *testing.T) {
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
	at := func(x, y int) color.RGBA {
		img, err := g.Image()
		must(t, err)
		return img.RGBAAt(x, y)
	}

	// Layer 0: clear to red; layer 1: the box in the left half only
	// (scissor from x = -10, 42 wide: pixels 0..31).
	ctx.Reset()
	cj := ClearJob(key(0), [4]float32{1, 0, 0, 1}, 1, 3)
	must(t, ctx.Job(&cj))
	must(t, ctx.SetState(&render.StatePacket{Key: key(1), Kind: render.StateScissor, Rect: [4]int32{-10, 0, 42, 48}}))
	b := m.boxDraw()
	b.Key = key(1) | 1
	must(t, ctx.Draw(&b))
	must(t, record(t, e, g, m.reg, ctx))
	if p := at(63, 47); p != (color.RGBA{255, 0, 0, 255}) {
		t.Errorf("corner after the clear job: %v, want red", p)
	}
	if l, r := at(28, 24), at(36, 24); !isBox(l) || r != (color.RGBA{255, 0, 0, 255}) {
		t.Errorf("scissored box: left of the cut %v (want the box), right %v (want red)", l, r)
	}

	// A zero-area viewport: the draws after it are skipped.
	ctx.Reset()
	must(t, ctx.SetState(&render.StatePacket{Key: key(0), Kind: render.StateViewport}))
	b.Key = key(1)
	must(t, ctx.Draw(&b))
	must(t, record(t, e, g, m.reg, ctx))
	if p := at(32, 24); !near(p, color.RGBA{26, 26, 31, 255}, 1) {
		t.Errorf("draw after a zero-area viewport: middle %v, want the clear colour", p)
	}
}

// TestGfxProtocolMisuse: recorder calls out of protocol return errors or
// do nothing; none crashes.
func TestGfxProtocolMisuse(t *testing.T) {
	d, _ := gfxDevice(t)
	g := newOffscreen(t, d, 16, 16)
	m := newMiniScene(t, g)
	dp := m.boxDraw()
	if err := g.Begin(0, render.Range{}); err == nil {
		t.Error("Begin outside a frame succeeded")
	}
	g.Draw(0, &dp)
	g.BindPipeline(-1, 1)
	g.BindMesh(99, 1)
	if err := g.EndFrame(nil); err == nil {
		t.Error("EndFrame outside a frame succeeded")
	}
	if err := g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 0}); err == nil {
		t.Error("BeginFrame with 0 threads succeeded")
	}
	if err := g.ReadPixels(image.NewRGBA(image.Rect(0, 0, 16, 16))); err == nil {
		t.Error("ReadPixels before any frame succeeded")
	}
	// A frame recorded by hand: worker 1 twice, a range out of bounds, a
	// draw without binds.
	must(t, g.BeginFrame(render.FrameInfo{Ranges: 2, Threads: 2}))
	if err := g.Begin(0, render.Range{Index: 5}); err == nil {
		t.Error("Begin of range 5 of 2 succeeded")
	}
	must(t, g.Begin(1, render.Range{Index: 0}))
	if err := g.Begin(1, render.Range{Index: 1}); err == nil {
		t.Error("Begin on a busy worker succeeded")
	}
	g.Draw(1, &dp)
	if err := g.End(1, render.Range{Index: 0}); !errors.Is(err, ErrBadDraw) {
		t.Errorf("End after a draw with nothing bound: %v, want ErrBadDraw", err)
	}
	must(t, g.Begin(0, render.Range{Index: 1}))
	g.BindPipeline(0, m.lit)
	g.BindMesh(0, m.box)
	g.Draw(0, &dp)
	must(t, g.End(0, render.Range{Index: 1}))
	must(t, g.EndFrame(errors.New("range 0 failed")))
	if gs := g.Stats(); gs.Frames != 1 || gs.Discarded != 1 {
		t.Errorf("stats %+v, want 1 frame, discarded", gs)
	}
	if err := g.ReadPixels(image.NewRGBA(image.Rect(0, 0, 8, 8))); err == nil {
		t.Error("ReadPixels into an image of the wrong size succeeded")
	}
	// Registration errors.
	if _, err := g.AddMesh(nil, Mesh{Name: "empty"}); !errors.Is(err, gpu.ErrBadStream) {
		t.Errorf("AddMesh without vertices: %v", err)
	}
	if _, err := g.AddPipeline(nil, Pipeline{Name: "junk", VertexSPIRV: []byte("not spir-v at all")}); !errors.Is(err, gpu.ErrBadBinding) {
		t.Errorf("AddPipeline with junk SPIR-V: %v", err)
	}
	if _, err := g.NewMesh(nil, "bad index", []Vertex{{}}, []uint32{3}, nil); err == nil {
		t.Error("NewMesh with an index beyond the vertices succeeded")
	}
	if _, err := g.AddPipeline(m.reg, Pipeline{Name: "dup"}); err != nil {
		t.Errorf("AddPipeline: %v", err)
	}
	// A registry whose IDs collide with the Graphics' own.
	if _, err := g.AddPipeline(render.NewRegistry(), Pipeline{Name: "collides"}); err == nil || !strings.Contains(err.Error(), "already uses") {
		t.Errorf("AddPipeline with a second registry: %v, want an ID collision error", err)
	}
}

// TestGfxFramesInFlight: with 1, 2 and 3 frames in flight, each frame's
// view (here its clear colour) reaches that frame's pixels, and the
// frames' resources are reused without validation messages.
func TestGfxFramesInFlight(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	for _, n := range []int{1, 2, 3} {
		g, err := NewGraphics(d, GraphicsOptions{Width: 32, Height: 32, FramesInFlight: n})
		must(t, err)
		m := newMiniScene(t, g)
		ctx := newCtx(t, 64)
		dp := m.boxDraw()
		must(t, ctx.Draw(&dp))
		for f := range 7 {
			v := DefaultView()
			v.Clear = [4]float32{float32(f) / 8, 0, 0, 1}
			g.SetView(v)
			must(t, record(t, e, g, m.reg, ctx))
			img, err := g.Image()
			must(t, err)
			if p, want := img.RGBAAt(0, 0), uint8(math.Round(255*float64(f)/8)); int(p.R)-int(want) > 1 || int(want)-int(p.R) > 1 {
				t.Errorf("%d in flight, frame %d: corner %v, want red %d", n, f, p, want)
			}
		}
		if gs := g.Stats(); gs.Frames != 7 || gs.Draws != 7 {
			t.Errorf("%d in flight: stats %+v", n, gs)
		}
		must(t, g.Close())
	}
}

// TestGfxFrameAllocs: a frame of 2000 draws recorded through
// render.Renderer.Record into secondary command buffers, submitted and
// read back, allocates nothing in steady state.
func TestGfxFrameAllocs(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 1, render.Config{MinRange: 64})
	g := newOffscreen(t, d, 64, 64)
	m := newMiniScene(t, g)
	ctxs := randomDraws(t, m, 4, 500)
	sorted, err := e.rr.MergeSort(e.main, ctxs, m.reg)
	must(t, err)
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	frame := func() {
		if _, err := e.rr.Record(e.main, sorted, g); err != nil {
			t.Fatal(err)
		}
		if err := g.ReadPixels(img); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		frame() // grow the per-worker state and secondaries
	}
	if a := testing.AllocsPerRun(20, frame); a != 0 {
		t.Errorf("%v allocations per frame of %d draws, want 0", a, sorted.Len())
	}
	if gs := g.Stats(); gs.Draws != 25*2000 {
		t.Errorf("stats %+v, want %d draws", gs, 25*2000)
	}
}

// randomDraws fills nctx contexts with per draws each of the mini scene's
// box and instanced boxes, at random places.
func randomDraws(t testing.TB, m *miniScene, nctx, per int) []*render.RenderContext {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var ctxs []*render.RenderContext
	for range nctx {
		c := newCtx(t, per+1)
		for range per {
			dp := render.DrawPacket{Pipeline: m.lit, Mesh: m.box, VertexCount: 36, InstanceCount: 1,
				Color: [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), 1}}
			if rng.IntN(4) == 0 {
				dp.Pipeline, dp.Mesh, dp.InstanceCount = m.inst, m.boxes, 2
			}
			x, y, z := rng.Float32()*2-1, rng.Float32()*2-1, rng.Float32()*0.5+0.25
			dp.Model = trs(x, y, z, rng.Float32()*3, 0.05)
			dp.Key = drawKey(t, dp.Pipeline, z, false)
			must(t, c.Draw(&dp))
		}
		ctxs = append(ctxs, c)
	}
	return ctxs
}

// TestGfxValidationIsOn checks that the tests' silence means something:
// the validation layer reports a mistake recorded into a secondary command
// buffer behind the Recorder's back (a zero-width viewport), and, at the
// device's Close, an object left behind (a semaphore made behind the
// Graphics' back: the Graphics itself, still open, is closed by the
// device's Close and leaves nothing).
func TestGfxValidationIsOn(t *testing.T) {
	log := &gfxLog{}
	d := openTestDevice(t, gpu.Options{OnMessage: log.add})
	g, err := NewGraphics(d, GraphicsOptions{Width: 16, Height: 16})
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	must(t, g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}))
	must(t, g.Begin(0, render.Range{Index: 0, Count: 1}))
	g.t.State(g.workers[0].cb, 0, 0, 0, 0, 16) // VUID-VkViewport-width-01770
	must(t, g.End(0, render.Range{Index: 0, Count: 1}))
	must(t, g.EndFrame(nil))
	must(t, g.Wait())
	if n := len(log.all()); n == 0 {
		t.Error("the validation layer did not report a zero-width viewport")
	}
	if _, r := g.t.Semaphore(); r != vk.Success {
		t.Fatalf("vkCreateSemaphore: %v", r)
	}
	n := len(log.all())
	if err := d.Close(); err != nil {
		t.Errorf("gpu.Device.Close: %v", err)
	}
	leaks := 0
	for _, m := range log.all()[n:] {
		if strings.Contains(m.Text, "has not been destroyed") || strings.Contains(m.Text, "00378") {
			leaks++
		}
	}
	t.Logf("%d messages for the viewport, %d leak reports", n, leaks)
	if leaks != 1 {
		t.Errorf("closing the device with a semaphore left behind and a Graphics open: %d leak reports, want 1 (the semaphore); messages: %v", leaks, log.all()[n:])
	}
	if err := g.Close(); err != nil {
		t.Errorf("Graphics.Close after gpu.Device.Close (which closed it): %v", err)
	}
}
