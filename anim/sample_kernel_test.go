package anim_test

import (
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// bytesOf is s's memory as bytes (a stream's Bytes over typed data).
func bytesOf[T any](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// crowd is n characters on the CMU clips, each at its own time, with a
// CPU job and the GPU's own cursors and poses.
type crowd struct {
	bl       *anim.Blob
	cpu      anim.SampleJob // CPU reference, run through sampleKernelCPU
	gpuCur   []uint32
	gpuPoses []float32
	start    []float32
	durs     []float32
	rng      *rand.Rand
}

func newCrowd(tb testing.TB, bl *anim.Blob, n, bones int, seed int64) *crowd {
	c := &crowd{bl: bl, rng: rand.New(rand.NewSource(seed))}
	stride := 0
	for i := range bl.NumClips() {
		stride = max(stride, bl.Clip(i).CursorWords())
	}
	c.cpu = anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*stride),
		CursorStride: stride, Poses: make([]float32, n*bones*anim.PoseFloats), Bones: bones}
	c.gpuCur = make([]uint32, n*stride)
	c.gpuPoses = make([]float32, n*bones*anim.PoseFloats)
	for i := range n {
		cv := bl.Clip(c.rng.Intn(bl.NumClips()))
		c.cpu.Inputs[i].Clip = cv.Offset()
		c.durs = append(c.durs, cv.Duration())
		c.start = append(c.start, c.rng.Float32()*cv.Duration())
	}
	return c
}

// play puts every character at its start plus t, looping.
func (c *crowd) play(t float32) {
	for i := range c.cpu.Inputs {
		x := c.start[i] + t
		for x >= c.durs[i] && c.durs[i] > 0 {
			x -= c.durs[i]
		}
		c.cpu.Inputs[i].Time = x
	}
}

// seek puts every character at a random time (some outside the clip).
func (c *crowd) seek() {
	for i := range c.cpu.Inputs {
		c.cpu.Inputs[i].Time = c.rng.Float32()*(c.durs[i]+1) - 0.5
	}
}

// advance moves the crowd on to frame: a random seek when mode is
// "seek", else forward playback at 60 Hz.
func (c *crowd) advance(mode string, frame int) {
	if mode == "seek" {
		c.seek()
	} else {
		c.play(float32(frame) / 60)
	}
}

// runCPU samples the crowd with the kernel's CPU function (kernels.Transform layout).
func (c *crowd) runCPU(tb testing.TB) {
	tb.Helper()
	runKernelCPU(tb, c.cpu, 0)
}

// runKernelCPU samples job j with the kernel's CPU function, all its
// characters, in place (into j's cursors and poses); flags as TaskData's.
func runKernelCPU(tb testing.TB, j anim.SampleJob, flags uint32) {
	tb.Helper()
	d, err := j.TaskData(flags)
	if err != nil {
		tb.Fatal(err)
	}
	d.Begin, d.End = 0, d.Elements
	if err := sampleKernelCPU(nil, &d); err != nil {
		tb.Fatal(err)
	}
}

// taskDataWith is the task data of job j with its cursors and poses
// replaced by cur and poses (the GPU's own, beside the CPU reference's).
func taskDataWith(tb testing.TB, j anim.SampleJob, cur []uint32, poses []float32, flags uint32) sched.TaskData {
	tb.Helper()
	j.Cursors, j.Poses = cur, poses
	d, err := j.TaskData(flags)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// Registration: the ID, the declaration checked against the SPIR-V by
// kernels.Check, and the pose layout that kernels.LocalToModel reads.
func TestSampleKernelRegistration(t *testing.T) {
	k, err := anim.SampleKernel()
	if err != nil {
		t.Fatal(err)
	}
	if err := kernels.Check(&k); err != nil {
		t.Fatal(err)
	}
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	id, err := anim.RegisterSampleKernel(reg)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := anim.RegisterSampleKernel(reg); err != nil || again != id {
		t.Errorf("registering twice = %d, %v; want the first ID %d again", again, err, id)
	}
	if got := reg.Lookup(id); got == nil || got.Name != anim.SampleKernelName {
		t.Fatalf("lookup: %+v", got)
	}
	var x kernels.Transform
	if unsafe.Sizeof(x) != 4*anim.PoseFloats || unsafe.Offsetof(x.Rot) != 0 || unsafe.Offsetof(x.Trans) != 16 || unsafe.Offsetof(x.Scale) != 32 {
		t.Fatalf("kernels.Transform layout changed: size %d, rot %d, trans %d, scale %d",
			unsafe.Sizeof(x), unsafe.Offsetof(x.Rot), unsafe.Offsetof(x.Trans), unsafe.Offsetof(x.Scale))
	}
	if unsafe.Sizeof(anim.SampleInput{}) != 8 {
		t.Fatal("SampleInput is not 8 bytes")
	}
	// What kernels' own TestSPIRVShippedShaders checks of its shaders.
	m, err := kernels.ParseSPIRV(bind.Of(&k).SPIRV)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 0x00010000 || len(m.EntryPoints) != 1 || m.EntryPoints[0] != (kernels.SPIRVEntryPoint{Model: kernels.ModelGLCompute, Name: "main"}) ||
		m.LocalSizeXSpecID != 0 || m.PushConstantBytes != bind.PushConstantSize {
		t.Errorf("SPIR-V: version %#x, entry points %v, local size spec id %d, push constants %d bytes",
			m.Version, m.EntryPoints, m.LocalSizeXSpecID, m.PushConstantBytes)
	}
	var bindings []uint32
	for _, r := range m.Resources {
		if r.Kind != kernels.ResourceStorage || r.Set != 0 {
			t.Errorf("resource %+v", r)
		}
		bindings = append(bindings, r.Binding)
	}
	if !slices.Equal(bindings, []uint32{0, 1, 2, 4, 5}) {
		t.Errorf("bindings %v, want 0 1 2 4 5", bindings)
	}
}

// The CPU implementation equals SampleJob (converted to kernels.Transform,
// over split ranges, with the cursors in place
// or copied from a separate input, and allocates nothing.
func TestSampleKernelCPU(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	const n, bones = 37, 33
	c := newCrowd(t, bl, n, bones, 1)
	c.play(0.3)
	want := c.cpu
	want.Cursors = slices.Clone(c.cpu.Cursors)
	want.Poses = slices.Clone(c.cpu.Poses)
	if err := want.Run(); err != nil {
		t.Fatal(err)
	}
	for _, flags := range []uint32{0, anim.SampleInPlace} {
		for _, separate := range []bool{false, true} {
			j := c.cpu
			j.Cursors = make([]uint32, len(c.cpu.Cursors))
			j.Poses = make([]float32, len(c.cpu.Poses))
			d, err := j.TaskData(flags)
			if err != nil {
				t.Fatal(err)
			}
			out := j.Cursors
			if separate {
				out = make([]uint32, len(j.Cursors))
				for k := range out {
					out[k] = 0xdeadbeef
				}
				d.Out[1].Bytes = bytesOf(out)
			}
			for _, r := range [][2]uint32{{0, 5}, {5, 5}, {5, 30}, {30, n}} {
				d.Begin, d.End = r[0], r[1]
				if err := sampleKernelCPU(nil, &d); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(out, want.Cursors) {
				t.Errorf("flags %d separate %v: cursors differ from SampleJob's", flags, separate)
			}
			for k := 0; k < len(j.Poses); k += anim.PoseFloats {
				p, w := j.Poses[k:k+anim.PoseFloats], want.Poses[k:k+anim.PoseFloats]
				if !slices.Equal(p, w) {
					t.Fatalf("flags %d separate %v: float %d: %v, want %v", flags, separate, k, p, w)
				}
			}
		}
	}
	d, err := c.cpu.TaskData(0)
	if err != nil {
		t.Fatal(err)
	}
	d.Begin, d.End = 0, n
	frame := 0
	if a := testing.AllocsPerRun(50, func() {
		frame++
		c.play(float32(frame) / 60)
		if err := sampleKernelCPU(nil, &d); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per call", a)
	}
}

// Bad task data is an error, never a panic.
func TestSampleKernelCPUErrors(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	c := newCrowd(t, bl, 4, 31, 2)
	sk := animtest.SynthSkeleton()
	cc, err := offline.Compress(sk, animtest.SynthClip(60, 30, 0), offline.CompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := animtest.Blob(t, sk, cc)
	cases := []struct {
		name, want string
		mut        func(d *sched.TaskData)
	}{
		{"no blob", "Data must be", func(d *sched.TaskData) { d.Data = nil }},
		{"other blob", "Data must be", func(d *sched.TaskData) { d.Data = other }},
		{"blob copy", "Data must be", func(d *sched.TaskData) { d.In[0].Bytes = slices.Clone(d.In[0].Bytes) }},
		{"no bones", "Params[0]", func(d *sched.TaskData) { d.Params[0] = 0 }},
		{"flags", "flags", func(d *sched.TaskData) { d.Params[2] = 8 }},
		{"pose stride", "stride", func(d *sched.TaskData) { d.Out[0].Stride -= 48 }},
		{"cursor stride", "stride", func(d *sched.TaskData) { d.Params[1]++ }},
		{"device-only cursors", "no host memory", func(d *sched.TaskData) { d.In[2].Bytes, d.In[2].Buffer = nil, 7 }},
		{"not a clip", "not a clip", func(d *sched.TaskData) { sched.View[anim.SampleInput](d.In[1])[2].Clip += 4 }},
	}
	for _, tc := range cases {
		d, err := c.cpu.TaskData(0)
		if err != nil {
			t.Fatal(err)
		}
		d.In[1] = sched.StreamOf(slices.Clone(c.cpu.Inputs))
		tc.mut(&d)
		d.Begin, d.End = 0, d.Elements
		if err := sampleKernelCPU(nil, &d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	j := c.cpu
	j.Bones = 0
	if _, err := j.TaskData(0); err == nil {
		t.Error("TaskData of an invalid job succeeded")
	}
}

// A cursor whose header matches its clip and segment but whose slots hold
// anything must not crash the CPU sampler (it did: a negative format.RecipTable
// index, an unmasked ring head, a divisor that overflowed to zero).
func TestSampleScribbledSlots(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	c := bl.Clip(1)
	rng := rand.New(rand.NewSource(7))
	j := anim.SampleJob{Blob: bl, Inputs: []anim.SampleInput{{Clip: c.Offset()}}, Cursors: make([]uint32, c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, 31*anim.PoseFloats), Bones: 31}
	for range 1500 {
		tm := rng.Float32() * c.Duration()
		j.Inputs[0].Time = tm
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		for i := anim.CursorHeaderWords; i < len(j.Cursors); i++ {
			if rng.Intn(3) == 0 {
				j.Cursors[i] = rng.Uint32()
				if rng.Intn(2) == 0 {
					j.Cursors[i] &= 0xff
				}
			}
		}
		j.Inputs[0].Time = tm + rng.Float32()*0.1
		if err := j.Run(); err != nil {
			t.Fatal(err)
		}
		clear(j.Cursors)
	}
}

// sampleKernelCPU runs the sampling kernel's CPU implementation (the one
// the scheduler runs on a CPU worker), as anim.SampleKernel registers it.
func sampleKernelCPU(c *sched.Ctx, d *sched.TaskData) error {
	k, err := sampleKernel()
	if err != nil {
		return err
	}
	return k.CPU(c, d)
}

var sampleKernel = sync.OnceValues(anim.SampleKernel)
