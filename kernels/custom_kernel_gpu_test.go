package kernels_test

// A kernel defined outside this package, the README's way: GLSL compiled
// with glslc, registered with a bind.Binding beside its CPU code, run with
// Affinity GPU on a real Vulkan device (lavapipe here, validation layer on) through
// gpu.NewExecutor. Results must equal the CPU kernel's for awkward element
// counts and grains; misuse must give an error, not a hang or zeros.

import (
	"errors"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

const scaleGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = uintBitsToFloat(pc.params[0]) * x[i] + float(i);
}
`

func compileGLSL(t *testing.T, src string) []byte { return glslc.Compile(t, "comp", src) }

func waitWithin(t *testing.T, c *sched.Ctx, id sched.TaskID) error {
	t.Helper()
	err := c.WaitFor(id, 60*time.Second)
	if errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("task %v did not finish in 60 s", id)
	}
	return err
}

func TestCustomGPUKernel(t *testing.T) {
	if os.Getenv("KERNELS_GO") == "1" {
		t.Skip("KERNELS_GO=1 runs the package's CPU kernels' Go paths; this test runs none")
	}
	const kUser, kCPUOnly sched.KernelID = 200, 201
	spv := compileGLSL(t, scaleGLSL)
	reg := sched.NewRegistry()
	cpu := func(c *sched.Ctx, d *sched.TaskData) error {
		x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
		a := float32frombits(d.Params[0])
		for i := d.Begin; i < d.End; i++ {
			y[i] = a*x[i] + float32(i)
		}
		return nil
	}
	if err := reg.Register(kUser, sched.Kernel{
		Name: "user-axpi", Kind: sched.Streaming, Grain: 100,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: cpu,
		GPU: &bind.Binding{SPIRV: spv, LocalSize: 32},
	}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := reg.Register(kCPUOnly, sched.Kernel{
		Name: "cpu-only", Kind: sched.Streaming,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: cpu,
	}); err != nil {
		t.Fatal(err)
	}
	dev, log := gputest.Open(t, gpu.Options{})
	obs := &gpuRuns{}
	_, _, main := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1, Observer: obs}, gpu.ExecutorOptions{})
	defer func() {
		if obs.n.Load() == 0 {
			t.Errorf("no kernel invocation ran on the GPU")
		}
	}()

	for _, n := range []int{0, 1, 31, 32, 33, 99, 101, 4097, 100003} {
		for _, g := range []uint32{0, 1, 7, 1 << 20} {
			if g == 1 && n > 5000 {
				continue
			}
			x := make([]float32, n)
			y := make([]float32, n)
			for i := range x {
				x[i] = float32(i%97) - 40
				y[i] = -12345
			}
			tk := sched.Task{Kernel: kUser, Affinity: sched.GPU}
			tk.Data.Params[0] = float32bits(1.5)
			tk.Data.Elements, tk.Data.Grain = uint32(n), g
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
			id, err := main.Add(&tk)
			if err != nil {
				t.Fatalf("n=%d grain=%d: Add: %v", n, g, err)
			}
			if err := waitWithin(t, main, id); err != nil {
				t.Fatalf("n=%d grain=%d: %v", n, g, err)
			}
			for i := range x {
				if want := 1.5*x[i] + float32(i); y[i] != want {
					t.Fatalf("n=%d grain=%d: y[%d] = %v on the GPU, want %v", n, g, i, y[i], want)
				}
			}
		}
	}

	// A short output stream is refused by Add, naming it.
	x := make([]float32, 64)
	tk := sched.Task{Kernel: kUser, Affinity: sched.GPU}
	tk.Data.Elements = 64
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(make([]float32, 63))
	if _, err := main.Add(&tk); err == nil {
		t.Errorf("a GPU task with a 63-element output for 64 elements was accepted")
	}
	// A kernel without a GPU version sent to the GPU fails with an error
	// (at Add or when it runs), never silently or by hanging.
	y := make([]float32, 64)
	tk = sched.Task{Kernel: kCPUOnly, Affinity: sched.GPU}
	tk.Data.Elements = 64
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
	if id, err := main.Add(&tk); err == nil {
		if err := waitWithin(t, main, id); err == nil {
			t.Errorf("a kernel without a GPU binding ran with Affinity GPU and reported success")
		}
	}
	// Many GPU tasks in flight, each checked.
	var ids []sched.TaskID
	outs := make([][]float32, 40)
	in := make([]float32, 777)
	for i := range in {
		in[i] = float32(i)
	}
	for k := range outs {
		outs[k] = make([]float32, len(in))
		tk := sched.Task{Kernel: kUser, Affinity: sched.GPU}
		tk.Data.Params[0] = float32bits(float32(k))
		tk.Data.Elements = uint32(len(in))
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(outs[k])
		id, err := main.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if err := waitWithin(t, main, id); err != nil {
			t.Fatal(err)
		}
	}
	for k, o := range outs {
		for i := range o {
			if want := float32(k)*in[i] + float32(i); o[i] != want {
				t.Fatalf("task %d: y[%d]=%v want %v", k, i, o[i], want)
			}
		}
	}
}

type gpuRuns struct{ n atomic.Int64 }

func (g *gpuRuns) TaskRan(ev *sched.RunEvent) {
	if ev.Where == sched.GPU {
		g.n.Add(1)
	}
}

func float32bits(f float32) uint32     { return math.Float32bits(f) }
func float32frombits(u uint32) float32 { return math.Float32frombits(u) }
