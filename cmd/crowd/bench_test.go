package main

import (
	"errors"
	"math"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// benchWorld builds a world of n characters on the 90-bone CMU rig
// (clips as the demo ships them: at -clip-rate and 0.1 cm, compressed
// once into the test cache) without a scheduler: the
// kernels are called directly on one goroutine, so these are single-core
// costs (the demo splits them over every scheduler thread).
func benchWorld(b *testing.B, n int) *world {
	b.Helper()
	r, err := rig.Build(rig.Options{Bones: defaultBones, Tolerance: 0.001, Rate: benchClipRate, CacheDir: cacheDir})
	if err != nil {
		b.Skip(err)
	}
	w := newWorld(r, n, 1, 1)
	w.sets = make([]frameSet, 1)
	w.sets[0].local = dual{host: make([]byte, 48*n*w.bones)}
	w.sets[0].events = make([]evstream.Writer, 1)
	w.sets[0].events[0].Init(evstream.NewBuffer(1 << 20))
	w.cursors = dual{host: make([]byte, 4*n*w.stride)}
	w.blobMem = dual{host: w.blob.Bytes()}
	return w
}

// benchClipRate is the clips' rate in the benchmarks: the demo's default,
// or the source's with VKJOBS_CLIP_RATE=0.
var benchClipRate = func() float64 {
	if os.Getenv("VKJOBS_CLIP_RATE") == "0" {
		return 0
	}
	return defaultClipRate
}()

// threadCPU measures the calling thread's CPU time, so that a benchmark
// can report its cost on a loaded machine (wall time includes the time
// other processes held the core).
type threadCPU struct{ t0 int64 }

const rusageThread = 1 // RUSAGE_THREAD (Linux)

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func startCPU() threadCPU {
	runtime.LockOSThread()
	return threadCPU{cpuNow()}
}

func (c threadCPU) report(b *testing.B) {
	d := cpuNow() - c.t0
	runtime.UnlockOSThread()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/frame")
	b.ReportMetric(float64(d)/float64(b.N)/1e6, "cpu-ms/frame")
}

// sampleTasks returns the frame's clock, sampling and procedural tasks'
// data on w's host memory.
func sampleTasks(w *world, dt float32) (clk, smp, proc sched.TaskData) {
	n := uint32(w.n)
	for _, d := range []*sched.TaskData{&clk, &smp, &proc} {
		d.Elements, d.Begin, d.End = n, 0, n
	}
	clk.Params[1] = math.Float32bits(dt)
	clk.In[0] = sched.StreamOf(w.chars)
	clk.Out[0] = sched.StreamOf(w.clocks)
	clk.Out[1] = sched.StreamOf(w.inputs)
	smp.Data = w.blob
	smp.Params[0], smp.Params[1] = uint32(w.bones), uint32(w.stride)
	smp.In[0] = w.blobMem.stream(sched.AnyWorker, 4, uint32(len(w.blob.Words())))
	smp.In[1] = sched.StreamOf(w.inputs)
	smp.In[2] = w.cursors.stream(sched.AnyWorker, uint32(4*w.stride), n)
	smp.Out[0] = w.sets[0].local.stream(sched.AnyWorker, uint32(48*w.bones), n)
	smp.Out[1] = smp.In[2]
	proc.Data = &app{w: w}
	proc.In[0] = sched.StreamOf(w.chars)
	proc.In[1] = sched.StreamOf(w.clocks)
	proc.Out[0] = smp.Out[0]
	return clk, smp, proc
}

// BenchmarkSample samples 1000 characters x 90 bones at 60 Hz on one
// goroutine: the clocks and events, anim's sampling kernel (its CPU
// function) and the procedural bones.
func BenchmarkSample(b *testing.B) {
	w := benchWorld(b, 1000)
	clk, smp, proc := sampleTasks(w, 1.0/60)
	k, err := anim.SampleKernel()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c := startCPU()
	for b.Loop() {
		w.sets[0].events[0].Reset()
		if err := w.clock(0, &clk); err != nil {
			b.Fatal(err)
		}
		if err := k.CPU(nil, &smp); err != nil {
			b.Fatal(err)
		}
		if err := proceduralKernel(nil, &proc); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b)
}

// BenchmarkProcedural is the procedural bones' share of BenchmarkSample.
func BenchmarkProcedural(b *testing.B) {
	w := benchWorld(b, 1000)
	local := sched.View[kernels.Transform](w.sets[0].local.stream(sched.AnyWorker, 48, 1))
	b.ReportAllocs()
	age := 0.0
	c := startCPU()
	for b.Loop() {
		age += 1.0 / 60
		for i := range w.n {
			w.procedural(local[i*w.bones:(i+1)*w.bones], age, w.chars[i].phase)
		}
	}
	c.report(b)
}

// BenchmarkLocalToModel runs kernels.LocalToModelSkin's CPU function over
// 1000 x 90 bones on one goroutine.
func BenchmarkLocalToModel(b *testing.B) {
	w := benchWorld(b, 1000)
	clk, smp, proc := sampleTasks(w, 1.0/60)
	sk, err := anim.SampleKernel()
	if err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(w.clock(0, &clk), sk.CPU(nil, &smp), proceduralKernel(nil, &proc)); err != nil {
		b.Fatal(err)
	}
	k, err := kernels.Definition(kernels.LocalToModelSkin)
	if err != nil {
		b.Fatal(err)
	}
	nb, n := uint32(w.bones), uint32(w.n)
	model := make([]kernels.Mat4, w.n*w.bones)
	pal := make([]kernels.Mat4, w.n*w.bones)
	var t sched.TaskData
	t.Elements, t.Begin, t.End = n, 0, n
	t.Params[0] = nb
	t.In[0] = smp.Out[0]
	t.In[1] = sched.StreamOf(w.rig.Parents)
	t.In[2] = sched.StreamOf(w.rig.InvBind)
	t.Out[0] = sched.Stream{Bytes: asBytes(model), Stride: nb * 64, Count: n}
	t.Out[1] = sched.Stream{Bytes: asBytes(pal), Stride: nb * 64, Count: n}
	b.ReportAllocs()
	c := startCPU()
	for b.Loop() {
		if err := k.CPU(nil, &t); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b)
}
