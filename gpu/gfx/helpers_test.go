package gfx

import (
	"math"
	"sync"
	"testing"

	"github.com/go-gl/mathgl/mgl32"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// gfxLog collects every debug-report message of a graphics test device.
type gfxLog struct {
	mu   sync.Mutex
	msgs []gpu.Message
}

func (l *gfxLog) add(m gpu.Message) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
}

func (l *gfxLog) all() []gpu.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]gpu.Message(nil), l.msgs...)
}

// gfxDevice opens a device of its own with validation for one graphics
// test. Cleanup closes it and fails the test on any debug-report message
// (error, warning or performance warning), including the leak reports of
// vkDestroyDevice: a Vulkan object left behind fails the test.
func gfxDevice(t testing.TB) (*gpu.Device, *gfxLog) {
	t.Helper()
	return gfxDeviceOpts(t, gpu.Options{})
}

// gfxDeviceOpts is gfxDevice with options (ForceStaging: the memory path
// of discrete GPUs).
func gfxDeviceOpts(t testing.TB, opts gpu.Options) (*gpu.Device, *gfxLog) {
	t.Helper()
	log := &gfxLog{}
	opts.OnMessage = log.add
	d := openTestDevice(t, opts)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("gpu.Device.Close: %v", err)
		}
		for _, m := range log.all() {
			t.Errorf("validation: %v", m)
		}
	})
	return d, log
}

// gfxEnv is a scheduler (2 workers, the kernels package's kernels, a GPU
// executor) with its main thread and a render.Renderer.
type gfxEnv struct {
	s    *sched.Scheduler
	main *sched.Ctx
	exec *gpu.Executor
	rr   *render.Renderer
}

func newGfxEnv(t testing.TB, d *gpu.Device, workers int, rc render.Config) *gfxEnv {
	t.Helper()
	reg := sched.NewRegistry()
	must(t, kernels.Register(reg))
	exec, err := gpu.NewExecutor(d, gpu.ExecutorOptions{})
	must(t, err)
	s, err := sched.New(sched.Config{Workers: workers, Kernels: reg})
	if err != nil {
		exec.Close()
		t.Fatal(err)
	}
	must(t, s.AttachExecutor(sched.ExecGPU, exec))
	m, err := s.RegisterThread("main")
	must(t, err)
	rr, err := render.New(s, rc)
	must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sched Close: %v", err)
		}
	})
	return &gfxEnv{s: s, main: m, exec: exec, rr: rr}
}

// cube returns a cube of half-size h centred on the origin: 24 vertices
// (flat normals), 36 indices, counter-clockwise seen from outside.
func cube(h float32) ([]Vertex, []uint32) {
	type face struct{ n, u, v [3]float32 } // u × v = n
	faces := []face{
		{[3]float32{1, 0, 0}, [3]float32{0, 1, 0}, [3]float32{0, 0, 1}},
		{[3]float32{-1, 0, 0}, [3]float32{0, 0, 1}, [3]float32{0, 1, 0}},
		{[3]float32{0, 1, 0}, [3]float32{0, 0, 1}, [3]float32{1, 0, 0}},
		{[3]float32{0, -1, 0}, [3]float32{1, 0, 0}, [3]float32{0, 0, 1}},
		{[3]float32{0, 0, 1}, [3]float32{1, 0, 0}, [3]float32{0, 1, 0}},
		{[3]float32{0, 0, -1}, [3]float32{0, 1, 0}, [3]float32{1, 0, 0}},
	}
	var vs []Vertex
	var ix []uint32
	for _, f := range faces {
		base := uint32(len(vs))
		for _, c := range [4][2]float32{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}} {
			var p [3]float32
			for k := range p {
				p[k] = h * (f.n[k] + c[0]*f.u[k] + c[1]*f.v[k])
			}
			vs = append(vs, Vertex{Pos: p, Normal: f.n})
		}
		ix = append(ix, base, base+1, base+2, base, base+2, base+3)
	}
	return vs, ix
}

// Character geometry: a square column 0.5 wide and 2 high, in 8 segments,
// with a joint at height 1 (bone 0 below, bone 1 above, blended over
// 0.75..1.25).
const (
	charHalf  = 0.25
	charSegs  = 8
	charH     = 2.0
	charJoint = 1.0
	charBones = 2
)

// column returns the character's bind-pose vertices and indices.
func column() ([]kernels.SkinVertex, []uint32) {
	var vs []kernels.SkinVertex
	var ix []uint32
	weights := func(y float32) [4]float32 {
		w1 := min(max((y-(charJoint-0.25))/0.5, 0), 1)
		return [4]float32{1 - w1, w1, 0, 0}
	}
	vert := func(p, n [3]float32) {
		vs = append(vs, kernels.SkinVertex{Pos: p, Normal: n, Joints: kernels.PackJoints(0, 1, 0, 0), Weights: weights(p[1])})
	}
	// Sides: normal n, horizontal tangent u with u × y = n.
	for _, s := range []struct{ n, u [3]float32 }{
		{[3]float32{1, 0, 0}, [3]float32{0, 0, -1}},
		{[3]float32{-1, 0, 0}, [3]float32{0, 0, 1}},
		{[3]float32{0, 0, 1}, [3]float32{1, 0, 0}},
		{[3]float32{0, 0, -1}, [3]float32{-1, 0, 0}},
	} {
		base := uint32(len(vs))
		for i := 0; i <= charSegs; i++ {
			y := float32(i) * charH / charSegs
			for _, c := range []float32{-1, 1} {
				vert([3]float32{charHalf * (s.n[0] + c*s.u[0]), y, charHalf * (s.n[2] + c*s.u[2])}, s.n)
			}
		}
		for i := uint32(0); i < charSegs; i++ {
			a, b, c, d := base+2*i, base+2*i+1, base+2*i+3, base+2*i+2
			ix = append(ix, a, b, c, a, c, d)
		}
	}
	// Caps: top (+y) and bottom (-y), as cube faces.
	for _, f := range []struct {
		y    float32
		n, u [3]float32
		v    [3]float32
	}{
		{charH, [3]float32{0, 1, 0}, [3]float32{0, 0, 1}, [3]float32{1, 0, 0}},
		{0, [3]float32{0, -1, 0}, [3]float32{1, 0, 0}, [3]float32{0, 0, 1}},
	} {
		base := uint32(len(vs))
		for _, c := range [4][2]float32{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}} {
			p := [3]float32{charHalf * (c[0]*f.u[0] + c[1]*f.v[0]), f.y, charHalf * (c[0]*f.u[2] + c[1]*f.v[2])}
			vert(p, f.n)
		}
		ix = append(ix, base, base+1, base+2, base, base+2, base+3)
	}
	return vs, ix
}

// bend returns the palette of one character: bone 0 the identity, bone 1
// a rotation by angle (radians) about axis through the joint.
func bend(axis [3]float32, angle float64) [charBones]kernels.Mat4 {
	q := kernels.AxisAngle(axis, angle)
	r := kernels.RigidMatrix(q, [3]float32{})
	j := [3]float32{0, charJoint, 0}
	rj := r.TransformVector(j)
	return [charBones]kernels.Mat4{kernels.Identity(), kernels.RigidMatrix(q, [3]float32{j[0] - rj[0], j[1] - rj[1], j[2] - rj[2]})}
}

// skinOnGPU skins len(pal) characters with kernels.SkinLBS on the GPU
// executor, writing their vertices into a new GPU buffer (character c's
// vertices from byte c*len(verts)*24): the vertex buffer that graphics
// then binds in place.
func skinOnGPU(t testing.TB, e *gfxEnv, d *gpu.Device, verts []kernels.SkinVertex, pal [][charBones]kernels.Mat4) *gpu.Buffer {
	t.Helper()
	nv, nc := uint32(len(verts)), uint32(len(pal))
	out, err := d.NewBuffer(uint64(nv*nc) * VertexSize)
	must(t, err)
	t.Cleanup(func() { out.Close() })
	flat := make([]kernels.Mat4, 0, len(pal)*charBones)
	for _, p := range pal {
		flat = append(flat, p[:]...)
	}
	task := sched.Task{Kernel: kernels.SkinLBS, Affinity: sched.GPU}
	task.Data.Elements = nv * nc
	task.Data.In[0] = sched.StreamOf(verts)
	task.Data.In[1] = sched.StreamOf(flat)
	task.Data.Out[0] = out.Stream(VertexSize, nv*nc, 0)
	task.Data.Params[0] = nv
	task.Data.Params[1] = charBones
	id, err := e.main.Add(&task)
	must(t, err)
	must(t, e.main.Wait(id))
	return out
}

// camera returns the view-projection matrix of the test scenes.
func camera(w, h int) [16]float32 {
	p := mgl32.Perspective(mgl32.DegToRad(40), float32(w)/float32(h), 0.5, 50)
	v := mgl32.LookAtV(mgl32.Vec3{1.5, 4, 9}, mgl32.Vec3{0, 0.8, 0}, mgl32.Vec3{0, 1, 0})
	return mgl32.Mat4(VulkanClip(p)).Mul4(v)
}

func translate(x, y, z float32) [16]float32 { return mgl32.Translate3D(x, y, z) }

func trs(x, y, z, yaw, s float32) [16]float32 {
	return mgl32.Translate3D(x, y, z).Mul4(mgl32.HomogRotate3DY(yaw)).Mul4(mgl32.Scale3D(s, s, s))
}

func scaled(x, y, z, sx, sy, sz float32) [16]float32 {
	return mgl32.Translate3D(x, y, z).Mul4(mgl32.Scale3D(sx, sy, sz))
}

// drawKey is the sort key of a draw at view distance dist.
func drawKey(t testing.TB, p render.PipelineID, dist float32, translucent bool) render.SortKey {
	k, err := render.Key{Pipeline: uint16(p), Depth: render.QuantizeDepth(dist), Translucent: translucent}.Encode()
	must(t, err)
	return k
}

// eyeDist is the distance from the test camera's eye to the point.
func eyeDist(m [16]float32) float32 {
	dx, dy, dz := m[12]-1.5, m[13]-4, m[14]-9
	return float32(math.Sqrt(float64(dx*dx + dy*dy + dz*dz)))
}
