package main

import (
	"fmt"
	"math"
	"math/rand"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Kernel IDs of the demo: a block that package kernels (below
// kernels.FirstFree), render (render.DefaultKernelBase) and the others
// leave free.
const (
	kernelBase sched.KernelID = 0x0300
	kSample                   = kernelBase + iota - 1
	kEvents
	kGather
	kSort
	kRecord
	kPresent
	kSkinSPU // kernels.SkinLBS again, with an SPU binding: vertices streamed per item
)

// Event types of the animation system's stream (evstream records whose
// payload is footEvent). Consumers skip types they do not know.
const (
	evFootDown evstream.Type = 1
	evFootUp   evstream.Type = 2
)

// footEvent is the payload of evFootDown and evFootUp.
type footEvent struct {
	Char uint32
	Bone uint16
	_    uint16
	Time float32 // clip time of the contact change, seconds
	_    uint32
}

// character is the constant per-character input of the sample kernel
// (stream In[0]).
type character struct {
	clipOff uint32  // anim.SampleInput.Clip
	clip    uint32  // index into the rig's clips
	dur     float32 // clip duration, s
	speed   float32 // playback speed
	phase   float32 // of the procedural bones, radians
	_       [3]uint32
}

// clock is the per-character playback state (stream Out[2], read and
// written by the sample kernel only).
type clock struct {
	time float32 // clip time
	_    float32
	age  float64 // seconds played since the start (procedural motion)
}

// dual is memory both a CPU kernel and a GPU task can name: a gpu.Buffer
// (nil without a device) and host bytes (the buffer's mapping when the
// device memory is host-visible, else a Go slice).
type dual struct {
	buf    *gpu.Buffer
	host   []byte
	mapped bool // host is buf's own mapping: writing it needs no upload
}

// stream names d for a task placed as where says: host bytes for CPU
// workers and the SPU executor, the device buffer alone for the GPU
// (GPU-resident: no copies), both (a host mirror) for Auto, whose placement
// is decided later.
func (d *dual) stream(where sched.Affinity, stride, count uint32) sched.Stream {
	s := sched.Stream{Stride: stride, Count: count}
	switch where {
	case sched.GPU:
		s.Buffer = d.buf.ID()
	case sched.Auto:
		s.Bytes = d.host
		if d.buf != nil {
			s.Buffer = d.buf.ID()
		}
	default:
		s.Bytes = d.host
	}
	return s
}

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// frameSet is one buffer set of the frame pipeline: what a frame's
// stages hand each other. There is one set per pipeline stage; frame f
// uses set f % sets, so that only one stage touches a set at a time.
type frameSet struct {
	frame   int
	dt      float32
	cam     camera
	local   []kernels.Transform // sample -> local-to-model (host: sampled on the CPU)
	model   dual                // local-to-model output (unused afterwards)
	palette dual                // local-to-model -> skin: model * inverse bind
	events  []evstream.Writer   // sample -> events, one writer per scheduler thread
	vset    int                 // the vertex set skin writes and the frame draws
}

// vertexSet is one skinned-vertex buffer (the vertex buffer the frame's
// draws read), with one registered mesh per character.
type vertexSet struct {
	skinned  dual
	meshBase uint32 // render.MeshID of character 0; character c is meshBase+c
}

// world is the crowd's state.
type world struct {
	n, bones, verts, stride int
	rig                     *rig.Rig
	chars                   []character
	clocks                  []clock
	inputs                  []anim.SampleInput
	cursors                 []uint32
	views                   []anim.ClipView
	extras                  []rig.Extra
	place                   [][16]float32 // character to world (column-major)
	centre                  [][3]float32  // bounding sphere centres
	radius                  float32
	colour                  [][4]float32
	flash                   []uint8
	halfX, halfZ            float32

	// Static skinning inputs.
	parents, invBind, bindVerts dual
	spuVerts                    []kernels.SkinVertex // spu: G copies of the mesh, palette bases 0, B, 2B...

	sets  []frameSet
	vsets []vertexSet

	// Per scheduler thread: sample scratch.
	jobs  []anim.SampleJob
	poses [][]float32

	// Event consumption (render stage: one frame at a time).
	footsteps, footUps, unknownEvents, droppedEvents int64
}

// flashFrames is how long a character's colour flashes after a footstep.
const flashFrames = 6

func newWorld(r *rig.Rig, n int, seed int64, threads int) *world {
	w := &world{n: n, bones: r.Bones, verts: len(r.Mesh.Vertices), stride: r.CursorStride, rig: r, extras: r.Extras, radius: r.Radius}
	rng := rand.New(rand.NewSource(seed))
	w.chars = make([]character, n)
	w.clocks = make([]clock, n)
	w.inputs = make([]anim.SampleInput, n)
	w.cursors = make([]uint32, n*w.stride)
	for i := range r.Blob.NumClips() {
		w.views = append(w.views, r.Blob.Clip(i))
	}
	spacing := float32(1.5)
	if r.Height > 0 {
		spacing = max(1.0, r.Height*1.1)
	}
	var pos [][3]float32
	pos, w.halfX, w.halfZ = crowdLayout(n, spacing)
	w.place = make([][16]float32, n)
	w.centre = make([][3]float32, n)
	w.colour = make([][4]float32, n)
	w.flash = make([]uint8, n)
	for i := range n {
		ci := rng.Intn(len(r.Clips))
		c := r.Clips[ci]
		w.chars[i] = character{clipOff: c.Offset, clip: uint32(ci), dur: c.Duration, speed: 0.8 + 0.45*rng.Float32(), phase: 2 * math.Pi * rng.Float32()}
		w.clocks[i].time = rng.Float32() * c.Duration
		yaw := (rng.Float64() - 0.5) * 1.2
		s, co := float32(math.Sin(yaw)), float32(math.Cos(yaw))
		p := pos[i]
		p[0] += (rng.Float32() - 0.5) * spacing * 0.3
		p[2] += (rng.Float32() - 0.5) * spacing * 0.3
		w.place[i] = [16]float32{co, 0, -s, 0, 0, 1, 0, 0, s, 0, co, 0, p[0], p[1], p[2], 1}
		w.centre[i] = [3]float32{p[0], p[1] + r.Height*0.4, p[2]}
		w.colour[i] = hsv(rng.Float64(), 0.45+0.3*rng.Float64(), 0.75+0.2*rng.Float64())
	}
	w.jobs = make([]anim.SampleJob, threads)
	w.poses = make([][]float32, threads)
	for t := range threads {
		w.poses[t] = make([]float32, w.bones*anim.PoseFloats)
		w.jobs[t] = anim.SampleJob{Blob: r.Blob, CursorStride: w.stride, Poses: w.poses[t], Bones: w.bones}
	}
	return w
}

func hsv(h, s, v float64) [4]float32 {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return [4]float32{float32(r), float32(g), float32(b), 1}
}

// alloc makes a dual of size bytes: a device buffer (when dev != nil and
// the buffer is wanted) whose mapping is the host view when there is one.
func alloc(dev *gpu.Device, size int, wantBuf bool) (dual, error) {
	var d dual
	if dev != nil && wantBuf {
		b, err := dev.NewBuffer(uint64(size))
		if err != nil {
			return d, err
		}
		d.buf = b
		if m := b.Mapped(); m != nil {
			d.host, d.mapped = m[:size:size], true
			return d, nil
		}
	}
	d.host = make([]byte, size)
	return d, nil
}

// sampleKernel is the demo's sampling kernel (kSample, streaming over
// characters): for each character it advances the playback clock, samples
// the clip with anim's CPU sampler (anim.SampleJob), converts the local
// pose to kernels.Transform (anim writes translation, rotation, scale;
// the kernels read rotation, translation, scale), drives the procedural
// bones, and writes the clip's events crossed by this step into the
// calling thread's event stream.
//
//	In[0]  character (32 B)       constant per character
//	Out[0] local pose, B x Transform (B*48 B per character)
//	Out[1] cursors, CursorStride words per character (read and written)
//	Out[2] clock (16 B), read and written
//	Params[0] buffer set, Params[1] time step (float32 bits)
func sampleKernel(c *sched.Ctx, d *sched.TaskData) error {
	return d.Data.(*app).w.sample(c, d)
}

func (w *world) sample(c *sched.Ctx, d *sched.TaskData) error {
	set := &w.sets[d.Params[0]]
	dt := math.Float32frombits(d.Params[1])
	th := c.Index()
	job := &w.jobs[th]
	pose := w.poses[th]
	ev := &set.events[th]
	chars := sched.View[character](d.In[0])
	local := sched.View[kernels.Transform](d.Out[0])
	cursors := sched.View[uint32](d.Out[1])
	clocks := sched.View[clock](d.Out[2])
	B, st := w.bones, w.stride
	if len(chars) < int(d.End) || len(local) < int(d.End)*B || len(cursors) < int(d.End)*st || len(clocks) < int(d.End) {
		return fmt.Errorf("crowd: sample: streams too short for items [%d,%d)", d.Begin, d.End)
	}
	for i := int(d.Begin); i < int(d.End); i++ {
		ch := &chars[i]
		ck := &clocks[i]
		t0 := ck.time
		adv := dt * ch.speed
		t1 := t0 + adv
		wrapped := false
		for t1 >= ch.dur && ch.dur > 0 {
			t1 -= ch.dur
			wrapped = true
		}
		ck.time = t1
		ck.age += float64(adv)
		w.inputs[i] = anim.SampleInput{Clip: ch.clipOff, Time: t1}
		job.Inputs = w.inputs[i : i+1]
		job.Cursors = cursors[i*st : (i+1)*st]
		if err := job.Run(); err != nil {
			return err
		}
		out := local[i*B : (i+1)*B]
		for b := range out {
			p := pose[b*anim.PoseFloats : b*anim.PoseFloats+anim.PoseFloats]
			o := &out[b]
			o.Trans = [3]float32{p[0], p[1], p[2]}
			o.Rot = [4]float32{p[4], p[5], p[6], p[7]}
			o.Scale = [3]float32{p[8], p[9], p[10]}
		}
		w.procedural(out, ck.age, ch.phase)
		if adv > 0 && len(w.views) > int(ch.clip) {
			cv := w.views[ch.clip]
			if !wrapped {
				emitEvents(ev, cv, uint32(i), t0, t1)
			} else {
				emitEvents(ev, cv, uint32(i), t0, ch.dur+1)
				emitEvents(ev, cv, uint32(i), 0, t1)
			}
		}
	}
	return nil
}

func emitEvents(w *evstream.Writer, cv anim.ClipView, char uint32, t0, t1 float32) {
	i, j := cv.EventRange(t0, t1)
	for ; i < j; i++ {
		e := cv.Event(i)
		t := evFootUp
		if e.Type == anim.EventFootDown {
			t = evFootDown
		}
		p := footEvent{Char: char, Bone: e.Bone, Time: e.Time}
		_ = evstream.Put(w, t, &p) // a full stream drops and counts
	}
}

// procedural sets the local rotation of the extra bones: rest rotation
// times a rotation about the bone's axis by Amp*sin(Omega*age + phase -
// Lag), so each chain sways with a wave running down it. The bones are
// otherwise ordinary: sampled (their rest pose is the clip's default
// pose), transformed and skinned like the motion-captured ones.
func (w *world) procedural(out []kernels.Transform, age float64, phase float32) {
	for k := range w.extras {
		e := &w.extras[k]
		x := float64(e.Omega)*age + float64(phase-e.Lag)
		x -= 2 * math.Pi * math.Floor(x*(1/(2*math.Pi)))
		a := 0.5 * e.Amp * fastSin(float32(x)-math.Pi)
		a2 := a * a
		s := a * (1 - a2*(1.0/6))
		c := 1 - a2*(0.5-a2*(1.0/24))
		q := [4]float32{e.Axis[0] * s, e.Axis[1] * s, e.Axis[2] * s, c}
		r := &e.Rest
		out[e.Bone].Rot = [4]float32{
			r[3]*q[0] + r[0]*q[3] + r[1]*q[2] - r[2]*q[1],
			r[3]*q[1] - r[0]*q[2] + r[1]*q[3] + r[2]*q[0],
			r[3]*q[2] + r[0]*q[1] - r[1]*q[0] + r[2]*q[3],
			r[3]*q[3] - r[0]*q[0] - r[1]*q[1] - r[2]*q[2],
		}
	}
}

// fastSin approximates sin(x) for x in [-pi, pi] within 2e-4.
func fastSin(x float32) float32 {
	const halfPi = math.Pi / 2
	if x > halfPi {
		x = math.Pi - x
	} else if x < -halfPi {
		x = -math.Pi - x
	}
	x2 := x * x
	return x * (1 + x2*(-1.0/6+x2*(1.0/120-x2*(1.0/5040))))
}

// eventsKernel (kEvents) consumes frame's footstep events: it counts them
// and flashes the stepping character's colour. Params[0]: buffer set.
func eventsKernel(_ *sched.Ctx, d *sched.TaskData) error {
	w := d.Data.(*app).w
	set := &w.sets[d.Params[0]]
	for i := range w.flash {
		if w.flash[i] > 0 {
			w.flash[i]--
		}
	}
	for t := range set.events {
		wr := &set.events[t]
		w.droppedEvents += int64(wr.Dropped())
		rd := evstream.NewReader(wr.Bytes())
		for rd.Next() {
			switch rd.Type() {
			case evFootDown:
				e, err := evstream.View[footEvent](rd.Payload())
				if err != nil || int(e.Char) >= len(w.flash) {
					w.unknownEvents++
					continue
				}
				w.footsteps++
				w.flash[e.Char] = flashFrames
			case evFootUp:
				w.footUps++
			default:
				w.unknownEvents++ // not ours: skipped by its size
			}
		}
		if err := rd.Err(); err != nil {
			return fmt.Errorf("crowd: event stream of thread %d: %w", t, err)
		}
	}
	return nil
}
