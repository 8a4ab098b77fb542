//go:build cgo

package anim_test

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// The GPU tests (this file and uniform_gpu_test.go) build only with cgo,
// which package gpu's Vulkan binding needs: without the constraint a
// cgo-less build of anim's tests (make test vets the runtime for arm64
// with CGO_ENABLED=0, proving that it needs no cgo) would fail on that
// binding instead of leaving the GPU tests out.

// Agreement of the GPU sampler with the CPU's: every pose component within
// gpuPoseTol (absolute: metres for translations, unit-quaternion components
// for rotations). With `precise` arithmetic lavapipe is bit-exact (the tests
// log the measured maximum); other drivers may round sqrt or division
// within their allowed ULPs, which this bound covers.
const gpuPoseTol = 1e-5

var shared gputest.Shared

// sampleID is the sampling kernel's ID in the registries sampleRegistry
// builds. The registry hands it out; every such registry is built the
// same way, so each hands out the same ID, and sampleRegistry checks it.
var sampleID sched.KernelID

// sampleRegistry registers package kernels' kernels and the sampling kernel.
func sampleRegistry(tb testing.TB) *sched.Registry {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		tb.Fatal(err)
	}
	id, err := anim.RegisterSampleKernel(reg)
	if err != nil {
		tb.Fatal(err)
	}
	if sampleID == 0 {
		sampleID = id
	} else if id != sampleID {
		tb.Fatalf("sampling kernel registered under %d, and under %d in an earlier registry", id, sampleID)
	}
	return reg
}

// openGPU returns the shared validated device, its pipelines compiled.
func openGPU(tb testing.TB) (*gpu.Device, *gputest.Log) {
	tb.Helper()
	return shared.Get(tb, "default", gpu.Options{}, func(d *gpu.Device) error {
		t0 := time.Now()
		if err := d.PreparePipelines(sampleRegistry(tb)); err != nil {
			return fmt.Errorf("compiling the pipelines: %w", err)
		}
		tb.Logf("device %q: pipelines ready in %v", d.Name(), time.Since(t0).Round(time.Millisecond))
		return nil
	})
}

func TestMain(m *testing.M) { os.Exit(gputest.Main(m, &shared)) }

// dispatchTimer is an Observer that sums the GPU dispatch time of the
// sampling kernel's tasks (the executor's timestamps).
type dispatchTimer struct {
	reg  *sched.Registry // to tell the sampling kernel's IDs (and its variants') by name
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	ns   int64
}

func newDispatchTimer(reg *sched.Registry) *dispatchTimer {
	o := &dispatchTimer{reg: reg}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *dispatchTimer) TaskRan(ev *sched.RunEvent) {
	if k := o.reg.Lookup(ev.Kernel); ev.Where != sched.GPU || k == nil || k.Name != anim.SampleKernelName {
		return
	}
	o.mu.Lock()
	o.n++
	o.ns += ev.Stop - ev.Start
	o.mu.Unlock()
	o.cond.Broadcast()
}

// wait blocks until n sampling dispatches were reported and returns their
// summed dispatch time (the executor reports after a task's Done).
func (o *dispatchTimer) wait(tb testing.TB, n int) time.Duration {
	deadline := time.Now().Add(10 * time.Second)
	timer := time.AfterFunc(10*time.Second, o.cond.Broadcast)
	defer timer.Stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.n < n {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d GPU dispatches reported", o.n, n)
		}
		o.cond.Wait()
	}
	return time.Duration(o.ns)
}

// gpuEnv is a scheduler with the GPU executor attached.
type gpuEnv struct {
	dev  *gpu.Device
	exec *gpu.Executor
	s    *sched.Scheduler
	main *sched.Ctx
	obs  *dispatchTimer
}

func newGPUEnv(tb testing.TB) *gpuEnv { return newGPUEnvWith(tb, sampleRegistry(tb)) }

func newGPUEnvWith(tb testing.TB, reg *sched.Registry) *gpuEnv {
	tb.Helper()
	dev, log := openGPU(tb)
	obs := newDispatchTimer(reg)
	s, exec, m := gputest.Sched(tb, dev, log, sched.Config{Kernels: reg, Observer: obs}, gpu.ExecutorOptions{})
	return &gpuEnv{dev: dev, exec: exec, s: s, main: m, obs: obs}
}

// run adds a task and waits for it.
func (e *gpuEnv) run(tb testing.TB, task sched.Task) {
	tb.Helper()
	id, err := e.main.Add(&task)
	if err != nil {
		tb.Fatalf("kernel %d: Add: %v", task.Kernel, err)
	}
	if err := e.main.Wait(id); err != nil {
		tb.Fatalf("kernel %d on %v: %v", task.Kernel, task.Affinity, err)
	}
}

// newBuffer makes a GPU-resident buffer holding p (zeros when p is nil).
func newBuffer(tb testing.TB, dev *gpu.Device, size int, p []byte) *gpu.Buffer {
	tb.Helper()
	b, err := dev.NewBuffer(uint64(size))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	if p == nil {
		p = make([]byte, size)
	}
	if err := b.Write(0, p); err != nil {
		tb.Fatal(err)
	}
	return b
}

// gpuTask is the GPU's task: the CPU job's inputs, its own cursors and poses.
func (c *crowd) gpuTask(tb testing.TB) sched.Task {
	tb.Helper()
	return sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: taskDataWith(tb, c.cpu, c.gpuCur, c.gpuPoses, 0)}
}

// poseDiff compares two kernels.Transform-layout pose arrays and returns
// the largest difference and how many floats differ at all; it fails the
// test beyond gpuPoseTol.
func poseDiff(tb testing.TB, what string, got, want []float32, bones int) (maxd float64, differ int) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d floats, want %d", what, len(got), len(want))
	}
	for k := range got {
		if math.Float32bits(got[k]) == math.Float32bits(want[k]) {
			continue
		}
		differ++
		d := math.Abs(float64(got[k]) - float64(want[k]))
		if !(d <= gpuPoseTol) {
			ch, b, f := k/(bones*anim.PoseFloats), k/anim.PoseFloats%bones, k%anim.PoseFloats
			tb.Fatalf("%s: character %d bone %d float %d: gpu %v, cpu %v (tolerance %g)", what, ch, b, f, got[k], want[k], gpuPoseTol)
		}
		maxd = max(maxd, d)
	}
	return maxd, differ
}

// The GPU sampler equals the CPU's within gpuPoseTol for many characters,
// each at its own time on one of the CMU clips, over consecutive frames of
// forward playback (cursors kept from frame to frame) and after random
// seeks, with host streams (cursors uploaded and read back: they must then
// equal the CPU's word for word) and with the blob and the cursors
// resident on the GPU (SampleInPlace: they never leave it).
func TestSampleGPUMatchesCPU(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	e := newGPUEnv(t)
	const n, bones = 300, 33
	for _, resident := range []bool{false, true} {
		t.Run(fmt.Sprintf("resident=%v", resident), func(t *testing.T) {
			c := newCrowd(t, bl, n, bones, 3)
			stride := c.cpu.CursorStride
			var blobBuf, curBuf *gpu.Buffer
			if resident {
				blobBuf = newBuffer(t, e.dev, len(bl.Bytes()), bl.Bytes())
				curBuf = newBuffer(t, e.dev, 4*n*stride, nil)
			}
			var maxd float64
			differ, frames := 0, 0
			for frame := range 16 {
				what := fmt.Sprintf("frame %d, forward", frame)
				switch {
				case frame < 10:
					c.play(float32(frame) / 60)
				case frame%2 == 0:
					what = fmt.Sprintf("frame %d, after a seek", frame)
					c.seek()
				default:
					c.play(float32(frame) / 30)
				}
				c.runCPU(t)
				task := c.gpuTask(t)
				if resident {
					task.Data.In[0] = blobBuf.Stream(4, uint32(len(bl.Words())), 0)
					task.Data.In[2] = curBuf.Stream(uint32(4*stride), n, 0)
					task.Data.Out[1] = task.Data.In[2]
					task.Data.Params[2] |= anim.SampleInPlace
				}
				clear(c.gpuPoses)
				e.run(t, task)
				m, df := poseDiff(t, what, c.gpuPoses, c.cpu.Poses, bones)
				maxd, differ = max(maxd, m), differ+df
				frames++
				if !resident && !slices.Equal(c.gpuCur, c.cpu.Cursors) {
					t.Fatalf("%s: GPU cursors differ from the CPU's", what)
				}
			}
			if resident {
				got := make([]uint32, n*stride)
				if err := curBuf.Read(0, bytesOf(got)); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, c.cpu.Cursors) {
					t.Error("GPU-resident cursors differ from the CPU's after the last frame")
				}
			}
			t.Logf("%d characters x %d frames: %d of %d floats differ from the CPU's, by at most %.3g (tolerance %g)",
				n, frames, differ, frames*len(c.gpuPoses), maxd, gpuPoseTol)
		})
	}
}

// The rarer paths of the format on the GPU: a clip with a discontinuity
// (two points at one time), a rotation that turns so fast that no
// component can be dropped (all four stored), a one-frame clip without
// animated tracks, a clip whose discontinuities are at its last frame
// (end pairs, some characters sampling it exactly at its duration), in blobs concatenated byte-wise after the CMU blob
// (clip offsets past the first blob) and a pose stride above the clips'
// bones. Forward and seeking, the GPU equals the CPU.
func TestSampleGPURareFormatPaths(t *testing.T) {
	cmu := animtest.CMU(t, offline.CompressOptions{})
	sk := animtest.SynthSkeleton()
	var ccs []*offline.CompressedClip
	for _, c := range []*offline.Clip{animtest.SpinClip(240, 100), animtest.SynthClip(1, 30, 0), animtest.SynthClip(61, 30, 60)} {
		cc, err := offline.Compress(sk, c, offline.CompressOptions{SegmentSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	synth, _ := animtest.Blob(t, sk, ccs[0], ccs[1:]...)
	bl, err := anim.Load(slices.Concat(cmu.Bytes(), synth.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if bl.NumClips() != 5 {
		t.Fatalf("%d clips", bl.NumClips())
	}
	e := newGPUEnv(t)
	const n, bones = 160, 32
	c := newCrowd(t, bl, n, bones, 6)
	for i := range n { // half the crowd on the synthetic clips
		if i%2 == 0 {
			cv := bl.Clip(2 + i/2%3)
			c.cpu.Inputs[i].Clip, c.durs[i] = cv.Offset(), cv.Duration()
			c.start[i] = c.rng.Float32() * cv.Duration()
		}
	}
	stride := c.cpu.CursorStride
	seen := map[string]int{}
	for frame := range 14 {
		if frame%5 == 4 {
			c.seek()
		} else {
			c.play(float32(frame) / 30)
		}
		for i := 4; i < n; i += 12 { // on the end-pair clip (i/2%3 == 2): at its end
			c.cpu.Inputs[i].Time = c.durs[i]
		}
		c.runCPU(t)
		e.run(t, c.gpuTask(t))
		poseDiff(t, fmt.Sprintf("frame %d", frame), c.gpuPoses, c.cpu.Poses, bones)
		if !slices.Equal(c.gpuCur, c.cpu.Cursors) {
			t.Fatalf("frame %d: GPU cursors differ from the CPU's", frame)
		}
		for i, in := range c.cpu.Inputs {
			cv, _ := bl.ClipAt(in.Clip)
			for s := range cv.AnimatedTracks() {
				params := c.cpu.Cursors[i*stride+anim.CursorHeaderWords+s*anim.CursorSlotWords+format.SlParams]
				kind := bl.Words()[int(in.Clip)/4+int(bl.Words()[int(in.Clip)/4+format.ChTracks])/4+s*format.TrackDescWords] >> 16
				if kind == uint32(offline.TrackRotation) && params&7 == format.ModeAll {
					seen["all four rotation components"]++
				}
				if params>>3&1 != 0 {
					seen["discontinuity"]++
				}
				if params&format.ParamEndPair != 0 {
					seen["end pair"]++
					if in.Time == cv.Duration() {
						seen["end pair at the clip's end"]++
					}
				}
			}
			if cv.AnimatedTracks() == 0 {
				seen["no animated tracks"]++
			}
		}
	}
	for _, what := range []string{"all four rotation components", "discontinuity", "no animated tracks", "end pair", "end pair at the clip's end"} {
		if seen[what] == 0 {
			t.Errorf("no character sampled a segment with %s", what)
		}
	}
	t.Logf("track segments sampled: %v", seen)
}

// Characters that the shader must not trust: scribbled cursors (any
// content), an offset that names no clip, and a short pose stride give no
// crash, hang or validation message; valid characters in the same
// dispatch are unaffected.
func TestSampleGPUBadData(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	e := newGPUEnv(t)
	const n, bones = 64, 31
	c := newCrowd(t, bl, n, bones, 4)
	stride := c.cpu.CursorStride
	rng := rand.New(rand.NewSource(9))
	c.play(1)
	c.runCPU(t)
	task := c.gpuTask(t)
	e.run(t, task)
	for round := range 4 {
		for i := range n / 2 { // the first half's cursors: scribbled slots
			cur := c.gpuCur[i*stride : (i+1)*stride]
			for k := anim.CursorHeaderWords; k < len(cur); k++ {
				if rng.Intn(3) == 0 {
					cur[k] = rng.Uint32()
					if rng.Intn(2) == 0 {
						cur[k] &= 0xff
					}
				}
			}
			if round%2 == 1 {
				for k := range anim.CursorHeaderWords {
					cur[k] = rng.Uint32()
				}
			}
		}
		c.play(1 + float32(round+1)/60)
		c.runCPU(t)
		e.run(t, c.gpuTask(t))
		// The second half kept valid cursors: exact.
		h := n / 2 * bones * anim.PoseFloats
		poseDiff(t, fmt.Sprintf("round %d, valid characters", round), c.gpuPoses[h:], c.cpu.Poses[h:], bones)
	}
	// Bad clip offsets and a pose stride below the clip's bones: identity.
	d := taskDataWith(t, c.cpu, c.gpuCur, c.gpuPoses, 0)
	in := slices.Clone(c.cpu.Inputs)
	in[0].Clip = 0
	in[1].Clip = 4
	in[2].Clip = uint32(len(bl.Bytes())) + 64
	in[3].Clip = 0xfffffffc
	d.In[1] = sched.StreamOf(in)
	e.run(t, sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: d})
	id := []float32{0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}
	for i := range 4 {
		for b := range bones {
			p := c.gpuPoses[(i*bones+b)*anim.PoseFloats:][:anim.PoseFloats]
			if !slices.Equal(p, id) {
				t.Fatalf("character %d (clip %d) bone %d: %v, want the identity", i, in[i].Clip, b, p)
			}
		}
	}
	d.Params[0] = 30 // clips have 31 bones
	d.Out[0].Stride = 30 * 48
	e.run(t, sched.Task{Kernel: sampleID, Affinity: sched.GPU, Data: d})
	for k := 0; k < n*30*anim.PoseFloats; k += anim.PoseFloats {
		if !slices.Equal(c.gpuPoses[k:k+anim.PoseFloats], id) {
			t.Fatalf("pose stride 30: float %d: %v, want the identity", k, c.gpuPoses[k:k+anim.PoseFloats])
		}
	}
}

// GPU sampling feeds kernels.LocalToModel on the GPU through a
// GPU-resident pose buffer (no round trip); the model matrices equal the
// CPU chain's (sampleKernelCPU, then LocalToModel's CPU kernel) within
// LocalToModel's own tolerance, |gpu-cpu| <= 1e-4*max(1,|cpu|).
func TestSampleGPUToLocalToModel(t *testing.T) {
	bl := animtest.CMU(t, offline.CompressOptions{})
	e := newGPUEnv(t)
	const n, bones = 200, 31
	c := newCrowd(t, bl, n, bones, 5)
	stride := c.cpu.CursorStride
	parents := bl.Clip(0).Skeleton().Parents(nil)
	if !slices.Equal(parents, bl.Clip(1).Skeleton().Parents(nil)) {
		t.Fatal("the CMU clips have different skeletons")
	}
	blobBuf := newBuffer(t, e.dev, len(bl.Bytes()), bl.Bytes())
	curBuf := newBuffer(t, e.dev, 4*n*stride, nil)
	poseBuf := newBuffer(t, e.dev, n*bones*48, nil)
	l2m := e.s.Kernels().Lookup(kernels.LocalToModel)
	cpuModel := make([]kernels.Mat4, n*bones)
	gpuModel := make([]kernels.Mat4, n*bones)
	var worst float64
	for frame := range 6 {
		if frame < 4 {
			c.play(float32(frame) / 60)
		} else {
			c.seek()
		}
		// CPU chain.
		c.runCPU(t)
		var cd sched.TaskData
		cd.Params[0] = bones
		cd.Elements, cd.Begin, cd.End = n, 0, n
		cd.In[0] = sched.Stream{Bytes: bytesOf(c.cpu.Poses), Stride: bones * 48, Count: n}
		cd.In[1] = sched.StreamOf(parents)
		cd.Out[0] = sched.Stream{Bytes: bytesOf(cpuModel), Stride: bones * 64, Count: n}
		if err := l2m.CPU(nil, &cd); err != nil {
			t.Fatal(err)
		}
		// GPU chain: sample into poseBuf, then local-to-model from it.
		st := c.gpuTask(t)
		st.Data.In[0] = blobBuf.Stream(4, uint32(len(bl.Words())), 0)
		st.Data.In[2] = curBuf.Stream(uint32(4*stride), n, 0)
		st.Data.Out[1] = st.Data.In[2]
		st.Data.Out[0] = poseBuf.Stream(bones*48, n, 0)
		st.Data.Params[2] |= anim.SampleInPlace
		id1, err := e.main.Add(&st)
		if err != nil {
			t.Fatal(err)
		}
		lt := sched.Task{Kernel: kernels.LocalToModel, Affinity: sched.GPU, Dependency: id1}
		lt.Data.Params[0] = bones
		lt.Data.Elements = n
		lt.Data.In[0] = poseBuf.Stream(bones*48, n, 0)
		lt.Data.In[1] = sched.StreamOf(parents)
		lt.Data.Out[0] = sched.Stream{Bytes: bytesOf(gpuModel), Stride: bones * 64, Count: n}
		id2, err := e.main.Add(&lt)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.main.Wait(id2); err != nil {
			t.Fatal(err)
		}
		for i := range cpuModel {
			for k := range 16 {
				g, w := float64(gpuModel[i][k]), float64(cpuModel[i][k])
				d := math.Abs(g - w)
				if !(d <= 1e-4*math.Max(1, math.Abs(w))) {
					t.Fatalf("frame %d: character %d bone %d matrix element %d: gpu %v, cpu %v", frame, i/bones, i%bones, k, g, w)
				}
				worst = max(worst, d/math.Max(1, math.Abs(w)))
			}
		}
	}
	t.Logf("model matrices: largest |gpu-cpu|/max(1,|cpu|) = %.3g", worst)
}

// BenchmarkSampleGPU samples a crowd of CMU characters (31 bones; the
// clips compressed at 0.01 cm with each codec) each at its own time on
// lavapipe, and reports the GPU dispatch time alone
// (ns/bone: per bone per pose, from the executor's timestamps) and the
// whole round trip per frame (wall-ns/bone: submit, dispatch, fence,
// copies). The CPU figure of the same crowd on one goroutine (the kernel's
// CPU function) runs beside it. Playback is forward at 60 Hz, or a random
// seek every frame ("seek": the cost of sampling without persistent
// cursors, every pose decoded from its segment's start). Cursors are:
//
//	device  GPU-resident, updated in place (SampleInPlace): never copied
//	copy    GPU-resident, but the shader copies them from input 2 to
//	        output 1 first (the price of not knowing they alias)
//	host    host slices: uploaded, copied and read back every frame
//
// local=N is the workgroup size (the registered one is SampleLocalSize).
func BenchmarkSampleGPU(b *testing.B) {
	k, err := anim.SampleKernel()
	if err != nil {
		b.Fatal(err)
	}
	locals := []uint32{8, 16, 32, 64}
	reg := sampleRegistry(b)
	variants := make([]sched.Kernel, len(locals))
	for i, ls := range locals {
		kk := k
		bb := *bind.Of(&k)
		bb.LocalSize = ls
		kk.GPU = &bb
		variants[i] = kk
	}
	firstVariant, err := reg.RegisterBlock("anim.local-size-variants", variants)
	if err != nil {
		b.Fatal(err)
	}
	e := newGPUEnvWith(b, reg)
	const bones = 31
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		var bl *anim.Blob
		blob := func(b *testing.B) *anim.Blob {
			if bl == nil {
				bl = animtest.CMU(b, offline.CompressOptions{Tolerance: 0.01 / 100, Codec: codec}) // 0.01 cm
			}
			return bl
		}
		for _, n := range []int{64, 1024} {
			for _, mode := range []string{"forward60Hz", "seek"} {
				b.Run(fmt.Sprintf("%v/chars=%d/%s/cpu", codec, n, mode), func(b *testing.B) {
					c := newCrowd(b, blob(b), n, bones, 1)
					d, err := c.cpu.TaskData(0)
					if err != nil {
						b.Fatal(err)
					}
					d.Begin, d.End = 0, uint32(n)
					frame := 0
					for b.Loop() {
						frame++
						c.advance(mode, frame)
						if err := sampleKernelCPU(nil, &d); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n*bones)), "ns/bone")
				})
				for _, curs := range []string{"device", "copy", "host"} {
					for i, ls := range locals {
						if ls != anim.SampleLocalSize && curs != "device" {
							continue
						}
						b.Run(fmt.Sprintf("%v/chars=%d/%s/gpu/cursors=%s/local=%d", codec, n, mode, curs, ls), func(b *testing.B) {
							bl := blob(b)
							c := newCrowd(b, bl, n, bones, 1)
							stride := c.cpu.CursorStride
							blobBuf := newBuffer(b, e.dev, len(bl.Bytes()), bl.Bytes())
							curBuf := newBuffer(b, e.dev, 4*n*stride, nil)
							poseBuf := newBuffer(b, e.dev, n*bones*48, nil)
							task := c.gpuTask(b)
							task.Kernel = firstVariant + sched.KernelID(i)
							task.Data.In[0] = blobBuf.Stream(4, uint32(len(bl.Words())), 0)
							task.Data.Out[0] = poseBuf.Stream(bones*48, uint32(n), 0)
							switch curs {
							case "device":
								task.Data.In[2] = curBuf.Stream(uint32(4*stride), uint32(n), 0)
								task.Data.Out[1] = task.Data.In[2]
								task.Data.Params[2] |= anim.SampleInPlace
							case "copy":
								task.Data.In[2] = curBuf.Stream(uint32(4*stride), uint32(n), 0)
								task.Data.Out[1] = task.Data.In[2]
							}
							// Warm up (the first dispatch of a pipeline compiles
							// it: 150 ms here) and wait for its report.
							e.obs.mu.Lock()
							n0 := e.obs.n
							e.obs.mu.Unlock()
							c.play(0)
							e.run(b, task)
							e.obs.wait(b, n0+1)
							e.obs.mu.Lock()
							n0, ns0 := e.obs.n, e.obs.ns
							e.obs.mu.Unlock()
							frame := 0
							for b.Loop() {
								frame++
								c.advance(mode, frame)
								e.run(b, task)
							}
							wall := b.Elapsed()
							disp := e.obs.wait(b, n0+b.N) - time.Duration(ns0)
							poses := float64(b.N) * float64(n*bones)
							b.ReportMetric(float64(disp.Nanoseconds())/poses, "ns/bone")
							b.ReportMetric(float64(wall.Nanoseconds())/poses, "wall-ns/bone")
						})
					}
				}
			}
		}
	}
}
