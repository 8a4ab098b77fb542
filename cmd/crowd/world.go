package main

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Kernel IDs of the demo: fixed IDs, the program's own choice, above
// package kernels' and below sched.FirstHandedID, so that no ID the
// registry hands out (to anim's sampler, to render's kernels) can meet
// them whatever the order of registration.
const (
	kernelBase sched.KernelID = 0x00c0
	kClock                    = kernelBase + iota - 1
	kProcedural
	kEvents
	kGather
	kSort
	kRecord
	kPresent
	kSkinSPU // kernels.SkinLBS again, with an SPU binding: vertices streamed per item
	kMark    // times the completion of a phase that ran off the CPU workers
	kStamp   // a frame graph's phase boundary (graph.go)
)

// The demo's IDs stay fixed: this constant overflows (a compile error)
// if they reach the handed-out range.
const _ = sched.FirstHandedID - kStamp - 1

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

// asBytes returns the bytes of a slice of plain values.
func asBytes[T any](s []T) []byte { return sched.StreamOf(s).Bytes }

// frameSet is one buffer set of the frame pipeline: what a frame's
// stages hand each other. There is one set per pipeline stage; frame f
// uses set f % sets, so that only one stage touches a set at a time.
type frameSet struct {
	frame   int
	dt      float32
	cam     camera
	local   dual              // sample -> local-to-model: B x kernels.Transform per character
	model   dual              // local-to-model output (unused afterwards)
	palette dual              // local-to-model -> skin: model * inverse bind
	events  []evstream.Writer // sample -> events, one writer per scheduler thread
	vset    int               // the vertex set skin writes and the frame draws
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
	cursors                 dual // the sampler's cursors, CursorStride words per character
	blob                    *anim.Blob
	blobMem                 dual // the blob's bytes (on the device for GPU sampling)
	views                   []anim.ClipView
	extras                  []rig.Extra
	procBones               []procBone
	procChains              []procChain
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
		// Clothing colours: every hue, muted, mid to light.
		w.colour[i] = hsv(rng.Float64(), 0.25+0.3*rng.Float64(), 0.6+0.3*rng.Float64())
	}
	w.setupProcedural()
	w.blob = r.Blob
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

// clockKernel (kClock, streaming over characters) advances each
// character's playback clock by its speed, writes the anim sampler's
// input (clip, time) and writes the clip events the step crossed into the
// animation system's event stream: one evstream.Writer per scheduler
// thread, so that the pieces of a split task write without locks.
//
//	In[0]  character (32 B)       constant per character
//	Out[0] clock (16 B)           read and written
//	Out[1] anim.SampleInput (8 B) the sampler's input
//	Params[0] buffer set, Params[1] time step (float32 bits)
func clockKernel(c *sched.Ctx, d *sched.TaskData) error {
	return d.Data.(*app).w.clock(c.Index(), d)
}

// clock is the clock kernel on scheduler thread th.
func (w *world) clock(th int, d *sched.TaskData) error {
	set := &w.sets[d.Params[0]]
	dt := math.Float32frombits(d.Params[1])
	ev := &set.events[th]
	chars := sched.View[character](d.In[0])
	clocks := sched.View[clock](d.Out[0])
	inputs := sched.View[anim.SampleInput](d.Out[1])
	if len(chars) < int(d.End) || len(clocks) < int(d.End) || len(inputs) < int(d.End) {
		return fmt.Errorf("crowd: clock: streams too short for items [%d,%d)", d.Begin, d.End)
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
		inputs[i] = anim.SampleInput{Clip: ch.clipOff, Time: t1}
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

// proceduralKernel (kProcedural, streaming over characters) drives the
// extra bones of the sampled poses (see world.procedural). It runs on the
// CPU after anim's sampling kernel, wherever that ran: the poses are host
// memory, or the mapping of the GPU-resident pose buffer.
//
//	In[0]  character (32 B)  its phase
//	In[1]  clock (16 B)      its age
//	Out[0] local pose, B x kernels.Transform per character: the extra
//	       bones' rotations are written, nothing else
func proceduralKernel(_ *sched.Ctx, d *sched.TaskData) error {
	w := d.Data.(*app).w
	chars := sched.View[character](d.In[0])
	clocks := sched.View[clock](d.In[1])
	local := sched.View[kernels.Transform](d.Out[0])
	B := w.bones
	if len(chars) < int(d.End) || len(clocks) < int(d.End) || len(local) < int(d.End)*B {
		return fmt.Errorf("crowd: procedural: streams too short for items [%d,%d)", d.Begin, d.End)
	}
	for i := int(d.Begin); i < int(d.End); i++ {
		w.procedural(local[i*B:(i+1)*B], clocks[i].age, chars[i].phase)
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

// procChain is a run of extra bones that share a frequency (one chain):
// the chain's phase is evaluated once per character, each link's wave is
// then the phase shifted by the link's lag, a rotation of (sin, cos).
type procChain struct {
	first, n int
	omega    float64
}

// procBone is an extra bone's precomputed motion.
type procBone struct {
	bone           int
	halfAmp        float32
	cosLag, sinLag float32
	axis           [3]float32
	rest           [4]float32
	identity       bool // rest rotation is the identity (BVH skeletons)
}

// setupProcedural groups the rig's extra bones into chains.
func (w *world) setupProcedural() {
	w.procBones = w.procBones[:0]
	w.procChains = w.procChains[:0]
	for i, e := range w.extras {
		sl, cl := math.Sincos(float64(e.Lag))
		w.procBones = append(w.procBones, procBone{
			bone: e.Bone, halfAmp: e.Amp / 2, cosLag: float32(cl), sinLag: float32(sl), axis: e.Axis, rest: e.Rest,
			identity: e.Rest == [4]float32{0, 0, 0, 1},
		})
		if n := len(w.procChains); n > 0 && w.procChains[n-1].omega == float64(e.Omega) && w.procChains[n-1].first+w.procChains[n-1].n == i {
			w.procChains[n-1].n++
		} else {
			w.procChains = append(w.procChains, procChain{first: i, n: 1, omega: float64(e.Omega)})
		}
	}
}

// procedural sets the local rotation of the extra bones: rest rotation
// times a rotation about the bone's axis by Amp*sin(Omega*age + phase -
// Lag), so each chain sways with a wave running down it. The bones are
// otherwise ordinary: sampled (their rest pose is the clip's default
// pose), transformed and skinned like the motion-captured ones.
func (w *world) procedural(out []kernels.Transform, age float64, phase float32) {
	for _, ch := range w.procChains {
		x := ch.omega*age + float64(phase)
		x -= 2 * math.Pi * math.Floor(x*(1/(2*math.Pi)))
		// sin and cos of x, x in [0, 2pi).
		s0 := -fastSin(float32(x) - math.Pi)
		y := float32(x) + math.Pi/2
		if y > 2*math.Pi {
			y -= 2 * math.Pi
		}
		c0 := -fastSin(y - math.Pi)
		for k := ch.first; k < ch.first+ch.n; k++ {
			p := &w.procBones[k]
			a := p.halfAmp * (s0*p.cosLag - c0*p.sinLag) // half the angle: sin(x - lag)
			a2 := a * a
			s := a * (1 - a2*(1.0/6))
			c := 1 - a2*(0.5-a2*(1.0/24))
			q := [4]float32{p.axis[0] * s, p.axis[1] * s, p.axis[2] * s, c}
			if p.identity {
				out[p.bone].Rot = q
				continue
			}
			r := &p.rest
			out[p.bone].Rot = [4]float32{
				r[3]*q[0] + r[0]*q[3] + r[1]*q[2] - r[2]*q[1],
				r[3]*q[1] - r[0]*q[2] + r[1]*q[3] + r[2]*q[0],
				r[3]*q[2] + r[0]*q[1] - r[1]*q[0] + r[2]*q[3],
				r[3]*q[3] - r[0]*q[0] - r[1]*q[1] - r[2]*q[2],
			}
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
