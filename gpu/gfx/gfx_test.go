package gfx

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

var updateGolden = flag.Bool("update", false, "rewrite gpu/gfx/testdata/gfx_golden.png from this run")

// Golden image tolerance: a pixel matches when every channel differs by at
// most goldenTol; the image matches when at least goldenFrac of its pixels
// do (rasterisation rules leave room for edge pixels to differ between
// drivers and LLVM versions).
const (
	goldenTol  = 2
	goldenFrac = 0.995
	goldenPath = "testdata/gfx_golden.png"
	goldenW    = 320
	goldenH    = 240
)

// scene is the test scene registered in a Graphics and a render.Registry.
type scene struct {
	reg                     *render.Registry
	lit, inst, glass, cullN render.PipelineID
	box, boxes              render.MeshID
	chars                   []render.MeshID
	nchar                   uint32 // indices per character
	ctxs                    []*render.RenderContext
}

// buildScene registers the scene: a ground slab and a rotated box (one
// cube mesh), a row of three instanced boxes, two characters skinned on
// the GPU by kernels.SkinLBS (their vertices drawn straight from the
// kernel's output buffer) and a translucent box; fill gathers the draws.
func buildScene(t testing.TB, e *gfxEnv, d *gpu.Device, g *Graphics) *scene {
	t.Helper()
	sc := &scene{reg: render.NewRegistry()}
	var err error
	sc.lit, err = g.AddPipeline(sc.reg, Pipeline{Name: "lit"})
	must(t, err)
	sc.inst, err = g.AddPipeline(sc.reg, Pipeline{Name: "lit-instanced", Instanced: true})
	must(t, err)
	sc.glass, err = g.AddPipeline(sc.reg, Pipeline{Name: "glass", Blend: true})
	must(t, err)
	sc.cullN, err = g.AddPipeline(sc.reg, Pipeline{Name: "lit-nocull", Cull: CullNone})
	must(t, err)

	cv, ci := cube(1)
	sc.box, err = g.NewMesh(sc.reg, "box", cv, ci, nil)
	must(t, err)
	sc.boxes, err = g.NewMesh(sc.reg, "boxes", cv, ci, []Instance{
		{Offset: [3]float32{-2.4, 0, 0}, Scale: 1, Color: [4]float32{1, 0.9, 0.2, 1}},
		{Offset: [3]float32{0, -0.2, 0}, Scale: 0.8, Color: [4]float32{0.3, 1, 0.3, 1}},
		{Offset: [3]float32{2.1, -0.4, 0}, Scale: 0.6, Color: [4]float32{0.2, 0.9, 1, 1}},
	})
	must(t, err)

	// Characters: skinned on the GPU into one buffer; each character is a
	// mesh over its part of that buffer, sharing one index buffer.
	verts, idx := column()
	skinned := skinOnGPU(t, e, d, verts, [][charBones]kernels.Mat4{
		bend([3]float32{0, 0, 1}, 0.7),
		bend([3]float32{0.6, 0, 0.8}, -0.8),
	})
	ib, err := d.NewBuffer(uint64(4 * len(idx)))
	must(t, err)
	t.Cleanup(func() { ib.Close() })
	must(t, ib.Write(0, sched.StreamOf(idx).Bytes))
	for c := range 2 {
		id, err := g.AddMesh(sc.reg, Mesh{Name: fmt.Sprintf("character %d", c),
			Vertices: skinned, VertexOffset: uint64(c*len(verts)) * VertexSize, VertexCount: uint32(len(verts)),
			Indices: ib, IndexCount: uint32(len(idx))})
		must(t, err)
		sc.chars = append(sc.chars, id)
	}
	sc.nchar = uint32(len(idx))
	for range 2 {
		c, err := render.NewContext(64 * render.DrawRecordSize)
		must(t, err)
		sc.ctxs = append(sc.ctxs, c)
	}
	sc.fill(t, false, false)
	return sc
}

// fill gathers the scene's draws into its two contexts. cullNone draws
// the opaque single meshes with a pipeline that culls nothing; farFirst
// inverts the opaque draws' depth in their keys (back to front).
func (sc *scene) fill(t testing.TB, cullNone, farFirst bool) {
	t.Helper()
	lit := sc.lit
	if cullNone {
		lit = sc.cullN
	}
	type obj struct {
		pipe    render.PipelineID
		mesh    render.MeshID
		count   uint32
		inst    uint32
		model   [16]float32
		color   [4]float32
		transl  bool
		context int
	}
	objs := []obj{
		{lit, sc.box, 36, 1, scaled(0, -0.1, 0, 5, 0.1, 3), [4]float32{0.55, 0.55, 0.55, 1}, false, 0},
		{lit, sc.box, 36, 1, trs(0, 0.5, -1.5, 0.785, 0.5), [4]float32{1, 0.5, 0.1, 1}, false, 1},
		{sc.inst, sc.boxes, 36, 3, trs(0, 0.3, 1.6, 0.3, 0.3), [4]float32{1, 1, 1, 1}, false, 0},
		{lit, sc.chars[0], sc.nchar, 1, translate(-2.6, 0, -0.3), [4]float32{0.9, 0.2, 0.2, 1}, false, 1},
		{lit, sc.chars[1], sc.nchar, 1, translate(2.6, 0, -0.3), [4]float32{0.25, 0.35, 1, 1}, false, 0},
		{sc.glass, sc.box, 36, 1, trs(0.7, 1.5, 0.2, 0.5, 0.55), [4]float32{0.9, 0.3, 1, 0.45}, true, 1},
	}
	for _, c := range sc.ctxs {
		c.Reset()
	}
	for _, o := range objs {
		dist := eyeDist(o.model)
		if farFirst && !o.transl {
			dist = 100 - dist
		}
		dp := render.DrawPacket{Key: drawKey(t, o.pipe, dist, o.transl), Pipeline: o.pipe, Mesh: o.mesh,
			VertexCount: o.count, InstanceCount: o.inst, Model: o.model, Color: o.color}
		must(t, sc.ctxs[o.context].Draw(&dp))
	}
}

// renderScene records and submits one frame of the scene through the
// render package's merge-n-sort and parallel display-list building.
func renderScene(t testing.TB, e *gfxEnv, g *Graphics, sc *scene) render.RecordStats {
	t.Helper()
	sorted, err := e.rr.MergeSort(e.main, sc.ctxs, sc.reg)
	must(t, err)
	st, err := e.rr.Record(e.main, sorted, g)
	must(t, err)
	return st
}

func newOffscreen(t testing.TB, d *gpu.Device, w, h int) *Graphics {
	t.Helper()
	g, err := NewGraphics(d, GraphicsOptions{Width: w, Height: h})
	must(t, err)
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Graphics.Close: %v", err)
		}
	})
	return g
}

func sceneView() View {
	v := DefaultView()
	v.ViewProj = camera(goldenW, goldenH)
	return v
}

// TestGfxGolden renders the scene offscreen through the real Recorder
// (render.Renderer.MergeSort and Record on a 2-worker scheduler, 3 ranges
// recorded into secondary command buffers) and compares it with
// testdata/gfx_golden.png (go test ./gpu/gfx -run TestGfxGolden -update
// rewrites it).
func TestGfxGolden(t *testing.T) {
	t.Run("direct", func(t *testing.T) { testGfxGolden(t, false) })
	// Staging: vertex, index and instance buffers in device-local memory
	// the host cannot map (uploads and the skinning kernel's inputs go
	// through copies), as on a discrete GPU: the same image.
	t.Run("staging", func(t *testing.T) { testGfxGolden(t, true) })
}

func testGfxGolden(t *testing.T, staging bool) {
	d, _ := gfxDeviceOpts(t, gpu.Options{ForceStaging: staging})
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 3, MinRange: 1})
	g := newOffscreen(t, d, goldenW, goldenH)
	g.SetView(sceneView())
	sc := buildScene(t, e, d, g)
	st := renderScene(t, e, g, sc)
	if st.Ranges != 3 || st.Draws != 6 {
		t.Errorf("record stats %+v, want 3 ranges and 6 draws", st)
	}
	img, err := g.Image()
	must(t, err)
	if gs := g.Stats(); gs.Frames != 1 || gs.Draws != 6 || gs.Discarded != 0 {
		t.Errorf("Graphics stats %+v", gs)
	}

	// Sanity checks that hold whatever the golden says.
	bg := img.RGBAAt(2, 2)
	if want := (color.RGBA{26, 26, 31, 255}); !near(bg, want, 1) {
		t.Errorf("background %v, want the clear colour %v", bg, want)
	}

	var buf bytes.Buffer
	must(t, g.WritePNG(&buf))
	if dec, err := png.Decode(&buf); err != nil || dec.Bounds() != img.Bounds() {
		t.Errorf("WritePNG: decoding gives %v, %v", dec.Bounds(), err)
	}
	if *updateGolden && !staging {
		writePNG(t, goldenPath, img)
		t.Logf("wrote %s", goldenPath)
		return
	}
	want := readPNG(t, goldenPath)
	bad, worst := diffImages(img, want, goldenTol)
	total := goldenW * goldenH
	if float64(total-bad) < goldenFrac*float64(total) {
		out := filepath.Join(t.TempDir(), "gfx_got.png")
		writePNG(t, out, img)
		t.Fatalf("%d of %d pixels differ by more than %d (worst %d), more than %.1f%%; got image: %s",
			bad, total, goldenTol, worst, 100*(1-goldenFrac), out)
	}
	t.Logf("%d of %d pixels differ by more than %d (worst %d)", bad, total, goldenTol, worst)
}

// TestGfxCullingAndDepth: the closed meshes render the same with back-face
// culling as without (so the winding is right), and the same whatever the
// draw order (so depth testing, not the order, decides).
func TestGfxCullingAndDepth(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	g := newOffscreen(t, d, 160, 120)
	v := DefaultView()
	v.ViewProj = camera(160, 120)
	g.SetView(v)
	sc := buildScene(t, e, d, g)
	shot := func(cullNone, farFirst bool) *image.RGBA {
		sc.fill(t, cullNone, farFirst)
		renderScene(t, e, g, sc)
		img, err := g.Image()
		must(t, err)
		return img
	}
	base := shot(false, false)
	for _, c := range []struct {
		name               string
		cullNone, farFirst bool
	}{{"no culling", true, false}, {"far to near", false, true}} {
		img := shot(c.cullNone, c.farFirst)
		if bad, worst := diffImages(img, base, 0); bad > 0 {
			t.Errorf("%s: %d pixels differ (worst %d)", c.name, bad, worst)
		}
	}
}

func near(a, b color.RGBA, tol int) bool {
	d := func(x, y uint8) int { return max(int(x)-int(y), int(y)-int(x)) }
	return d(a.R, b.R) <= tol && d(a.G, b.G) <= tol && d(a.B, b.B) <= tol && d(a.A, b.A) <= tol
}

// diffImages counts the pixels whose channels differ by more than tol and
// returns the largest channel difference.
func diffImages(a, b *image.RGBA, tol int) (bad, worst int) {
	if a.Rect != b.Rect {
		return a.Rect.Dx() * a.Rect.Dy(), 255
	}
	for y := a.Rect.Min.Y; y < a.Rect.Max.Y; y++ {
		for x := a.Rect.Min.X; x < a.Rect.Max.X; x++ {
			p, q := a.RGBAAt(x, y), b.RGBAAt(x, y)
			m := 0
			for _, dd := range [4]int{int(p.R) - int(q.R), int(p.G) - int(q.G), int(p.B) - int(q.B), int(p.A) - int(q.A)} {
				m = max(m, dd, -dd)
			}
			worst = max(worst, m)
			if m > tol {
				bad++
			}
		}
	}
	return bad, worst
}

func writePNG(t testing.TB, path string, img image.Image) {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	if err := png.Encode(f, img); err != nil {
		f.Close()
		t.Fatal(err)
	}
	must(t, f.Close())
}

func readPNG(t testing.TB, path string) *image.RGBA {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is missing: run go test ./gpu/gfx -run TestGfxGolden -update", path)
	}
	must(t, err)
	defer f.Close()
	m, err := png.Decode(f)
	must(t, err)
	if rgba, ok := m.(*image.RGBA); ok {
		return rgba
	}
	out := image.NewRGBA(m.Bounds())
	for y := m.Bounds().Min.Y; y < m.Bounds().Max.Y; y++ {
		for x := m.Bounds().Min.X; x < m.Bounds().Max.X; x++ {
			out.Set(x, y, m.At(x, y))
		}
	}
	return out
}
