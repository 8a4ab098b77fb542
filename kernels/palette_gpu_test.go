package kernels

// The palette layout decision, measured on the GPU rather than taken from
// the common advice that a uniform block is about 2x faster than a storage
// buffer: each skinning method with its bone palette in a storage buffer
// (SkinLBS, SkinDQS) and in a 64 KiB uniform block (SkinLBSUniform,
// SkinDQSUniform), on the same data.
//
//	go test -run '^$' -bench GPUSkinPalette -count 5 ./kernels/
//
// Reported: Mvert/s of the whole round trip (Add to Wait, one task per
// iteration) and dispatch-Mvert/s from the executor's timestamps (the
// shader alone). The figures are in BENCHMARKS.md, section kernels.

import (
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// The benchmark's shape: 1M vertices of concatenated character meshes
// (Params[0] = 0, every vertex names its palette base), 4096 vertices per
// character, cycling over the 11 characters whose 90-bone palettes fit one
// uniform block (990 of its 1024 matrices; DQS uses 990 of 2048). Both
// variants read the same buffers; only the palette's binding differs.
const (
	palBenchN     = 1 << 20
	palBenchVerts = 4096
	palBenchBones = 90
	palBenchChars = UniformLBSBones / palBenchBones // 11
)

// palBenchData is the benchmark's host data, made once.
type palBenchData struct {
	verts []SkinVertex
	lbs   []Mat4     // UniformLBSBones entries, the first chars*bones used
	dqs   []DualQuat // UniformDQSBones entries, likewise
}

var palBench *palBenchData

func palBenchSetup() *palBenchData {
	if palBench != nil {
		return palBench
	}
	r := rng(99)
	mesh := randSkinVertices(r, palBenchVerts, palBenchBones)
	verts := make([]SkinVertex, palBenchN)
	for i := range verts {
		verts[i] = mesh[i%palBenchVerts]
		verts[i].Palette = uint32(i/palBenchVerts%palBenchChars) * palBenchBones
	}
	d := &palBenchData{verts: verts, lbs: make([]Mat4, UniformLBSBones), dqs: make([]DualQuat, UniformDQSBones)}
	copy(d.lbs, randRigidPalette(r, palBenchChars*palBenchBones))
	copy(d.dqs, randDQPalette(r, palBenchChars*palBenchBones))
	palBench = d
	return d
}

// residentBuffer makes a GPU-resident copy of p's bytes.
func residentBuffer(tb testing.TB, dev *gpu.Device, p []byte) *gpu.Buffer {
	tb.Helper()
	buf, err := dev.NewBuffer(uint64(len(p)))
	if err != nil {
		tb.Fatal(err)
	}
	if err := buf.Write(0, p); err != nil {
		buf.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	return buf
}

// palTask is a skinning task over GPU-resident vertices, palette and
// output; uniform binds the whole 64 KiB block.
func palTask(tb testing.TB, e *gpuEnv, id sched.KernelID) sched.Task {
	d := palBenchSetup()
	verts := residentBuffer(tb, e.dev, sched.StreamOf(d.verts).Bytes)
	out, err := e.dev.NewBuffer(palBenchN * 24)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { out.Close() })
	used := uint32(palBenchChars * palBenchBones)
	task := sched.Task{Kernel: id, Affinity: sched.GPU}
	task.Data.Elements = palBenchN
	task.Data.In[0] = verts.Stream(48, palBenchN, 0)
	task.Data.Out[0] = out.Stream(24, palBenchN, 0)
	switch id {
	case SkinLBS, SkinLBSUniform:
		pal := residentBuffer(tb, e.dev, sched.StreamOf(d.lbs).Bytes)
		task.Data.In[1] = pal.Stream(64, used, 0)
		if id == SkinLBSUniform {
			task.Data.In[1] = pal.Stream(64, UniformLBSBones, 0)
		}
	default:
		pal := residentBuffer(tb, e.dev, sched.StreamOf(d.dqs).Bytes)
		task.Data.In[1] = pal.Stream(32, used, 0)
		if id == SkinDQSUniform {
			task.Data.In[1] = pal.Stream(32, UniformDQSBones, 0)
		}
	}
	return task
}

func BenchmarkGPUSkinPalette(b *testing.B) {
	for _, c := range []struct {
		name string
		id   sched.KernelID
	}{
		{"lbs/storage", SkinLBS}, {"lbs/uniform", SkinLBSUniform},
		{"dqs/storage", SkinDQS}, {"dqs/uniform", SkinDQSUniform},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newGPUEnv(b, false, gpu.ExecutorOptions{}, sched.Config{})
			task := palTask(b, e, c.id)
			e.run(b, task) // warm-up: lavapipe compiles at the first dispatch
			d0 := e.obs.wait(b, 1)
			b.ReportAllocs()
			for b.Loop() {
				e.run(b, task)
			}
			wall := b.Elapsed()
			disp := e.obs.wait(b, 1+b.N) - d0
			verts := float64(palBenchN) * float64(b.N)
			b.ReportMetric(verts/wall.Seconds()/1e6, "Mvert/s")
			b.ReportMetric(verts/disp.Seconds()/1e6, "dispatch-Mvert/s")
		})
	}
}

// TestGPUPaletteVariantsAgree keeps the benchmark honest: on its data,
// the storage and uniform variants of each method match the CPU kernel
// within the skinning tolerance, |gpu-cpu| <= 2e-5*max(1,|cpu|).
func TestGPUPaletteVariantsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: 1M-vertex GPU runs")
	}
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{})
	for _, pair := range [][2]sched.KernelID{{SkinLBS, SkinLBSUniform}, {SkinDQS, SkinDQSUniform}} {
		var want []byte
		for _, id := range pair {
			task := palTask(t, e, id)
			out := make([]SkinnedVertex, palBenchN)
			task.Data.Out[0] = sched.StreamOf(out) // read back to host
			t0 := time.Now()
			e.run(t, task)
			t.Logf("kernel %d: 1M vertices in %v (first run, with read-back)", id, time.Since(t0).Round(time.Millisecond))
			if want == nil {
				d := palBenchSetup()
				cpu := task.Data
				cpu.In[0] = sched.StreamOf(d.verts)
				if id == SkinLBS {
					cpu.In[1] = sched.StreamOf(d.lbs[:task.Data.In[1].Count])
				} else {
					cpu.In[1] = sched.StreamOf(d.dqs[:task.Data.In[1].Count])
				}
				cpu.Out[0] = sched.StreamOf(make([]SkinnedVertex, palBenchN))
				if err := runDirect(t, id, &cpu, 0, palBenchN); err != nil {
					t.Fatal(err)
				}
				want = cpu.Out[0].Bytes
			}
			compareOutput(t, id, 0, sched.StreamOf(out).Bytes, want, -1)
		}
	}
}
