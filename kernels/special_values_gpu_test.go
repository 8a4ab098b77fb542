package kernels

import (
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// specialBlocks returns items blocks of factor floats, each block one
// pattern of NaN, Inf, -0, denormal or huge values.
func specialBlocks(items, factor int) []float32 {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	x := make([]float32, items*factor)
	for i := range x {
		b, k := i/factor, i%factor
		switch b % 8 {
		case 0:
			x[i] = nan
		case 1:
			x[i] = float32(k%7) - 3
			if k%11 == 0 {
				x[i] = nan
			}
		case 2:
			x[i] = float32(math.Copysign(0, -1))
		case 3:
			x[i] = 1
			if k == 3 {
				x[i] = inf
			}
		case 4:
			x[i] = 1
			if k == 3 {
				x[i] = inf
			}
			if k == 9 {
				x[i] = -inf
			}
		case 5:
			x[i] = 3e38
		case 6:
			x[i] = 1e-20 * float32(k%3-1)
		case 7:
			x[i] = nan
			if k == factor-1 {
				x[i] = -inf
			}
		}
	}
	return x
}

// TestReduceSpecialValuesCPUandGPU: SumF32, Avg32F32 and MinMaxF32 over
// blocks of NaNs, infinities, -0, overflow and tiny values give the same
// answers (NaN for NaN, same infinities, minmax ignoring NaNs) on the GPU,
// the Go loop and the assembly, with the whole range and with Grain 1.
func TestReduceSpecialValuesCPUandGPU(t *testing.T) {
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{})
	defer func(f bool) { streamFast = f }(streamFast)
	const items = 16
	for _, id := range []sched.KernelID{SumF32, Avg32F32, MinMaxF32} {
		f := SumFactor
		if id == Avg32F32 {
			f = Avg32Factor
		}
		for _, valid := range []uint32{0, uint32(items*f - 1)} {
			x := specialBlocks(items, f)
			mk := func() (sched.TaskData, []byte) {
				var d sched.TaskData
				d.Elements = items
				d.Params[0] = valid
				d.In[0] = sched.StreamOf(x)
				var ob []byte
				if id == MinMaxF32 {
					o := make([]MinMax, items)
					d.Out[0] = sched.StreamOf(o)
				} else {
					o := make([]float32, items)
					d.Out[0] = sched.StreamOf(o)
				}
				ob = d.Out[0].Bytes
				return d, ob
			}
			d, gpuOut := mk()
			e.run(t, sched.Task{Kernel: id, Affinity: sched.GPU, Data: d})
			for _, fast := range []bool{false, streamHasAsm} {
				streamFast = fast
				for _, grain := range []uint32{0, 1} {
					d, cpuOut := mk()
					d.Grain = grain
					e.run(t, sched.Task{Kernel: id, Affinity: sched.AnyWorker, Data: d})
					g, w := f32bytes(gpuOut), f32bytes(cpuOut)
					for i := range g {
						same := g[i] == w[i] || (g[i] != g[i] && w[i] != w[i])
						if !same {
							t.Errorf("kernel %d valid %d fast %v grain %d float %d (block pattern %d): gpu %v, cpu %v", id, valid, fast, grain, i, (i/(1+btoi(id == MinMaxF32)))%8, g[i], w[i])
						}
					}
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSaxpyOverlapOnGPU: the GPU executor, given an output that overlaps
// an input at an offset, refuses or computes a*x+y of the inputs as they
// were (the CPU refuses it).
func TestSaxpyOverlapOnGPU(t *testing.T) {
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{})
	const n = 100
	buf := make([]float32, n+8)
	for i := range buf {
		buf[i] = float32(i + 1)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2 * i)
	}
	y := buf[:n]
	out := buf[3 : 3+n]
	want := saxpyRef(2, x, y)
	var d sched.TaskData
	d.Elements = n
	d.Params[0] = math.Float32bits(2)
	d.In[0], d.In[1], d.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(out)
	id, err := e.main.Add(&sched.Task{Kernel: Saxpy, Affinity: sched.GPU, Data: d})
	if err != nil {
		t.Logf("GPU Add refused: %v", err)
		return
	}
	err = e.main.Wait(id)
	bad := 0
	for i := range want {
		if out[i] != want[i] {
			bad++
		}
	}
	if err == nil && bad > 0 {
		t.Errorf("GPU saxpy with out overlapping y by 3: nil error, %d of %d outputs differ from a*x+y", bad, n)
	}
}
