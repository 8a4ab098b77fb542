package main

import (
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// deferredEnd wraps the Vulkan recorder so that render's Record stops
// after the ranges are recorded: EndFrame (primary command buffer,
// submit, present) runs later in the frame's own submit/present task, on
// the main thread, as its own stage.
type deferredEnd struct {
	*gfx.Graphics
	begun bool
	err   error
}

func (d *deferredEnd) BeginFrame(f render.FrameInfo) error {
	err := d.Graphics.BeginFrame(f)
	d.begun = err == nil
	return err
}

func (d *deferredEnd) EndFrame(rangeErr error) error {
	d.err = rangeErr
	return nil
}

// drawing is the render side of the demo.
type drawing struct {
	gfx      *gfx.Graphics // nil: nothing is drawn (no Vulkan)
	deferred *deferredEnd
	cmd      *render.CommandRecorder // the recorder without Vulkan
	renderer *render.Renderer
	reg      *render.Registry
	ctxs     []*render.RenderContext
	visible  []padCount  // per gather job
	pkts     []padPacket // per gather job: the packet being written (not on the stack: it would escape through evstream.Put)

	pipeChar, pipeGround, pipeShadow render.PipelineID
	ground, shadow                   render.MeshID
	indexCount                       uint32
	inFlight                         int // Graphics frames in flight

	sorted     *render.Sorted
	frameErrs  int // frames MergeSort reported problems in
	skipped    int // frames the window could not draw (minimised)
	discarded  int // frames whose ranges failed
	lastRecord render.RecordStats
	lastSort   render.Stats
	drawn      int64 // draws submitted
}

type padCount struct {
	n int64
	_ [56]byte
}

type padPacket struct {
	render.DrawPacket
	_ [64]byte
}

// gatherJobs is how many render contexts the frame's draw packets are
// gathered into: one per gather job.
func gatherJobs(threads, n int) int {
	return max(1, min(4*threads, (n+63)/64))
}

// setupDrawing creates the renderer, the registry and, with a device,
// the Vulkan target, pipelines and meshes: one mesh per character and
// vertex set, each a window of that set's skinned-vertex buffer.
func (a *app) setupDrawing() error {
	dr := &a.draw
	var err error
	if dr.renderer, err = render.New(a.s, render.Config{}); err != nil {
		return err
	}
	dr.reg = render.NewRegistry()
	w := a.w
	jobs := gatherJobs(a.s.Threads(), w.n)
	// Job 0 also draws the scene: the ground and the shadows.
	per := ((w.n+jobs-1)/jobs + sceneDraws) * render.DrawRecordSize
	for range jobs {
		ctx, err := render.NewContext(per)
		if err != nil {
			return err
		}
		dr.ctxs = append(dr.ctxs, ctx)
	}
	dr.visible = make([]padCount, jobs)
	dr.pkts = make([]padPacket, jobs)
	dr.indexCount = uint32(len(a.rig.Mesh.Indices))
	if a.dev == nil || !a.cfg.render {
		dr.cmd = &render.CommandRecorder{}
		if dr.pipeChar, err = dr.reg.AddPipeline(render.Pipeline{Name: "skinned"}); err != nil {
			return err
		}
		if dr.pipeGround, err = dr.reg.AddPipeline(render.Pipeline{Name: "ground"}); err != nil {
			return err
		}
		if dr.pipeShadow, err = dr.reg.AddPipeline(render.Pipeline{Name: "shadow"}); err != nil {
			return err
		}
		for v := range w.vsets {
			for c := range w.n {
				id, err := dr.reg.AddMesh(render.Mesh{Name: "character", Vertices: uint32(w.verts), Indices: dr.indexCount})
				if err != nil {
					return err
				}
				if c == 0 {
					w.vsets[v].meshBase = uint32(id)
				}
			}
		}
		if dr.ground, err = dr.reg.AddMesh(render.Mesh{Name: "ground", Vertices: 4, Indices: 6}); err != nil {
			return err
		}
		dv, di := shadowDisc()
		if dr.shadow, err = dr.reg.AddMesh(render.Mesh{Name: "shadow", Vertices: uint32(len(dv)), Indices: uint32(len(di))}); err != nil {
			return err
		}
		return nil
	}
	opts := gfx.GraphicsOptions{Width: a.cfg.width, Height: a.cfg.height, VSync: a.cfg.vsync, FramesInFlight: dr.inFlight, FenceTimeout: a.fenceTimeout()}
	if a.win != nil {
		opts.Surface = a.win.surface()
	}
	if dr.gfx, err = gfx.NewGraphics(a.dev, opts); err != nil {
		return err
	}
	dr.deferred = &deferredEnd{Graphics: dr.gfx}
	dr.gfx.SetView(sceneView())
	if dr.pipeChar, err = dr.gfx.AddPipeline(dr.reg, gfx.Pipeline{Name: "skinned"}); err != nil {
		return err
	}
	if dr.pipeGround, err = dr.gfx.AddPipeline(dr.reg, gfx.Pipeline{Name: "ground", Cull: gfx.CullNone}); err != nil {
		return err
	}
	// Contact shadows: translucent discs on the ground, one instance per
	// character, drawn after the ground and before the characters (their
	// key's layer) without depth testing, so they never fight the ground's
	// depth.
	if dr.pipeShadow, err = dr.gfx.AddPipeline(dr.reg, gfx.Pipeline{Name: "shadow", Instanced: true, Blend: true, NoDepthTest: true, Cull: gfx.CullNone}); err != nil {
		return err
	}
	idx, err := a.dev.NewBuffer(uint64(4 * len(a.rig.Mesh.Indices)))
	if err != nil {
		return err
	}
	defer idx.Close() // the meshes hold their own references
	if err := idx.Write(0, asBytes(a.rig.Mesh.Indices)); err != nil {
		return err
	}
	for v := range w.vsets {
		vs := &w.vsets[v]
		for c := range w.n {
			id, err := dr.gfx.AddMesh(dr.reg, gfx.Mesh{
				Name:     "character",
				Vertices: vs.skinned.buf, VertexOffset: uint64(c * w.verts * gfx.VertexSize), VertexCount: uint32(w.verts),
				Indices: idx, IndexCount: dr.indexCount,
			})
			if err != nil {
				return err
			}
			if c == 0 {
				vs.meshBase = uint32(id)
			}
		}
	}
	// The ground reaches past the fog's end (camera.set), so it meets the
	// sky-coloured fog at the horizon instead of ending in the picture.
	g := groundExtent(w.halfX, w.halfZ, max(a.rig.Height, 1))
	up := [3]float32{0, 1, 0}
	verts := []gfx.Vertex{{Pos: [3]float32{-g, 0, -g}, Normal: up}, {Pos: [3]float32{-g, 0, g}, Normal: up}, {Pos: [3]float32{g, 0, g}, Normal: up}, {Pos: [3]float32{g, 0, -g}, Normal: up}}
	if dr.ground, err = dr.gfx.NewMesh(dr.reg, "ground", verts, []uint32{0, 1, 2, 0, 2, 3}, nil); err != nil {
		return err
	}
	dv, di := shadowDisc()
	roots, err := clipRoots(a.rig)
	if err != nil {
		return err
	}
	inst := make([]gfx.Instance, w.n)
	r := max(a.rig.Height, 1) * 0.3
	for i := range inst {
		// Under the character's root: its clip holds the root's
		// horizontal position (rig keeps the first frame's), placed
		// by the character's yaw and position.
		p, c := &w.place[i], roots[w.chars[i].clip]
		x := p[0]*c[0] + p[8]*c[1] + p[12]
		z := p[2]*c[0] + p[10]*c[1] + p[14]
		inst[i] = gfx.Instance{Offset: [3]float32{x, 0, z}, Scale: r, Color: [4]float32{0.05, 0.05, 0.04, 0.45}}
	}
	if dr.shadow, err = dr.gfx.NewMesh(dr.reg, "shadow", dv, di, inst); err != nil {
		return err
	}
	return nil
}

// The scene's colours: a hazy sky that the fog fades into, a warm sun from
// the upper front left, a bluish sky light from above and a dim brown light
// bounced from the ground below, so that the upper and lower faces of the
// figures differ and their shapes read.
var (
	skyColour    = [3]float32{0.70, 0.76, 0.82}
	groundColour = [4]float32{0.52, 0.50, 0.40, 1}
)

func sceneView() gfx.View {
	v := gfx.DefaultView()
	v.Clear = [4]float32{skyColour[0], skyColour[1], skyColour[2], 1}
	v.FogColor = skyColour
	v.LightDir = [3]float32{0.45, -0.7, -0.55}
	v.LightColor = [3]float32{1.0, 0.93, 0.82}
	v.Ambient = [3]float32{0.36, 0.40, 0.48}
	v.GroundAmbient = [3]float32{0.20, 0.17, 0.13}
	return v
}

// clipRoots returns, per clip of the rig's blob, the horizontal position
// (x, z) of the skeleton's root at the clip's start: the rig holds the
// root there for the whole clip, so it is where the character stands.
func clipRoots(r *rig.Rig) ([][2]float32, error) {
	n := r.Blob.NumClips()
	j := anim.SampleJob{Blob: r.Blob, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*r.CursorStride),
		CursorStride: r.CursorStride, Poses: make([]float32, n*r.Bones*anim.PoseFloats), Bones: r.Bones}
	for i := range n {
		j.Inputs[i].Clip = r.Blob.Clip(i).Offset()
	}
	if err := j.Run(); err != nil {
		return nil, err
	}
	root := 0
	for b, p := range r.Parents {
		if p < 0 {
			root = b
			break
		}
	}
	out := make([][2]float32, n)
	for i := range out {
		t := j.Poses[(i*r.Bones+root)*anim.PoseFloats+4:] // the translation (rotation, translation, scale)
		out[i] = [2]float32{t[0], t[2]}
	}
	return out, nil
}

// shadowDisc is a unit disc on the ground (y = 0), facing up: a centre and
// 24 rim vertices; the shadow instances scale and place it.
func shadowDisc() ([]gfx.Vertex, []uint32) {
	const seg = 24
	up := [3]float32{0, 1, 0}
	v := []gfx.Vertex{{Normal: up}}
	var idx []uint32
	for i := range seg {
		a := 2 * math.Pi * float64(i) / seg
		v = append(v, gfx.Vertex{Pos: [3]float32{float32(math.Cos(a)), 0, float32(math.Sin(a))}, Normal: up})
		idx = append(idx, 0, uint32(1+i), uint32(1+(i+1)%seg))
	}
	return v, idx
}

// The draws' layers (the sort key's first field): the ground, then the
// shadows on it (no depth test), then the characters.
const (
	layerGround = iota
	layerShadows
	layerCharacters
)

// sceneDraws is the number of draws besides the characters: the ground
// and the shadows (gather job 0 writes them).
const sceneDraws = 2

// shadowIndices is the index count of shadowDisc.
const shadowIndices = 3 * 24

// gatherKernel (kGather) is one gather job: it walks characters [begin,
// end), culls them against the frame's camera and writes one draw packet
// per visible character into its own render context. Params: [0] buffer
// set, [1] job (= context) index.
func gatherKernel(_ *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	w, dr := a.w, &a.draw
	set := &w.sets[d.Params[0]]
	j := int(d.Params[1])
	ctx := dr.ctxs[j]
	ctx.Reset()
	jobs := len(dr.ctxs)
	begin, end := j*w.n/jobs, (j+1)*w.n/jobs
	cam := &set.cam
	vs := &w.vsets[set.vset]
	pkt := &dr.pkts[j].DrawPacket
	var n int64
	for i := begin; i < end; i++ {
		p := w.centre[i]
		if !cam.visible(p, w.radius) {
			continue
		}
		dx, dy, dz := p[0]-cam.eye[0], p[1]-cam.eye[1], p[2]-cam.eye[2]
		depth := float32(math.Sqrt(float64(dx*dx + dy*dy + dz*dz)))
		key, err := render.Key{Layer: layerCharacters, Pipeline: uint16(dr.pipeChar), Depth: render.QuantizeDepth(depth)}.Encode()
		if err != nil {
			return err
		}
		*pkt = render.DrawPacket{Key: key, Pipeline: dr.pipeChar, Mesh: render.MeshID(vs.meshBase + uint32(i)),
			VertexCount: dr.indexCount, Instance: uint32(i), InstanceCount: 1, Model: w.place[i], Color: w.colour[i]}
		if f := w.flash[i]; f > 0 {
			k := 0.7 * float32(f) / flashFrames
			for c := range 3 {
				pkt.Color[c] += (1 - pkt.Color[c]) * k
			}
		}
		if ctx.Draw(pkt) == nil {
			n++
		}
	}
	if j == 0 {
		key, _ := render.Key{Layer: layerGround, Pipeline: uint16(dr.pipeGround), Depth: render.MaxDepth}.Encode()
		*pkt = render.DrawPacket{Key: key, Pipeline: dr.pipeGround, Mesh: dr.ground, VertexCount: 6, InstanceCount: 1,
			Model: [16]float32{0: 1, 5: 1, 10: 1, 15: 1}, Color: groundColour}
		_ = ctx.Draw(pkt)
		key, _ = render.Key{Layer: layerShadows, Pipeline: uint16(dr.pipeShadow), Depth: render.MaxDepth}.Encode()
		*pkt = render.DrawPacket{Key: key, Pipeline: dr.pipeShadow, Mesh: dr.shadow, VertexCount: shadowIndices, InstanceCount: uint32(w.n),
			Model: [16]float32{0: 1, 5: 1, 10: 1, 15: 1}, Color: [4]float32{1, 1, 1, 1}}
		_ = ctx.Draw(pkt)
	}
	dr.visible[j].n = n
	return nil
}

// sortKernel (kSort) merges the frame's render contexts into one stream
// ordered by sort key (render.Renderer.MergeSort: parse tasks and radix
// passes, helped by this thread).
func sortKernel(c *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	dr := &a.draw
	sorted, err := dr.renderer.MergeSort(c, dr.ctxs, dr.reg)
	if err != nil {
		var fe *render.FrameError
		if !errors.As(err, &fe) {
			return err
		}
		dr.frameErrs++ // dropped packets are counted; the frame goes on
	}
	dr.sorted = sorted
	dr.lastSort = sorted.Stats()
	return nil
}

// recordKernel (kRecord) records the sorted stream in parallel ranges
// (render.Renderer.Record): secondary command buffers with Vulkan, a CPU
// command list without. Params[0]: buffer set.
func recordKernel(c *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	dr := &a.draw
	set := &a.w.sets[d.Params[0]]
	if dr.sorted == nil {
		return nil
	}
	var rec render.Recorder
	if dr.gfx != nil {
		v := dr.gfx.View()
		v.ViewProj = set.cam.viewProj
		v.Eye, v.FogDensity = set.cam.eye, set.cam.fog
		dr.gfx.SetView(v)
		dr.deferred.begun, dr.deferred.err = false, nil
		rec = dr.deferred
	} else {
		dr.cmd.ViewProj = set.cam.viewProj
		rec = dr.cmd
	}
	st, err := dr.renderer.Record(c, dr.sorted, rec)
	dr.lastRecord = st
	if errors.Is(err, gfx.ErrFrameSkipped) {
		dr.skipped++
		return nil
	}
	if err != nil && dr.deferred != nil && dr.deferred.begun {
		// A range failed: EndFrame submits the frame discarded (clear
		// only) and the run goes on; the count is reported.
		dr.discarded++
		return nil
	}
	return err
}

// presentKernel (kPresent, pinned to the main thread) submits the frame:
// the primary command buffer executing the recorded ranges, then the
// present (window) or the copy into the read-back buffer (offscreen).
// Params[0]: buffer set.
func presentKernel(_ *sched.Ctx, d *sched.TaskData) error {
	a := d.Data.(*app)
	dr := &a.draw
	set := &a.w.sets[d.Params[0]]
	if dr.gfx == nil || !dr.deferred.begun {
		return nil
	}
	vs := &a.w.vsets[set.vset]
	if !vs.skinned.mapped && a.skinWhere != sched.GPU {
		// CPU-skinned vertices in Go memory (a device without
		// host-visible memory): upload them.
		if err := vs.skinned.buf.Write(0, vs.skinned.host); err != nil {
			return err
		}
	}
	dr.deferred.begun = false
	if err := dr.gfx.EndFrame(dr.deferred.err); err != nil {
		return err
	}
	dr.drawn += int64(dr.lastRecord.Draws)
	return nil
}

// writePNG writes the last submitted frame of the offscreen target.
func (a *app) writePNG(path string) error {
	img, err := a.draw.gfx.Image()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "wrote %s (%dx%d, the last frame)\n", absPath(path), img.Rect.Dx(), img.Rect.Dy())
	return nil
}
