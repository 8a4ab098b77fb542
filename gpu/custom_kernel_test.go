package gpu_test

// A custom kernel (a user's own GLSL compiled with glslc, registered in a
// sched.Registry, run by gpu.NewExecutor on lavapipe with the validation
// layer on) through the public API only, every result compared element by
// element with the CPU kernel's: counts beyond maxComputeWorkGroupCount
// with odd workgroup sizes and several items per invocation (the executor
// splits them), zero and one element, thousands of tiny tasks of which
// some fail mid-batch, a CPU -> GPU -> CPU -> GPU chain under a parent,
// one module registered as two kernels, a WaitFor that times out, and an
// output that aliases an input. The same subject through the package's
// internals (compilers, layouts) is kernel_variants_test.go; Close with
// such kernels in flight is close_test.go.

import (
	"errors"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// axpoGLSL computes y = a*x + 1 for ItemsPerInvocation (params[1]) items
// per invocation, as the contract numbers them.
const axpoGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    for (uint k = 0u; k < pc.params[1]; k++) {
        uint i = pc.begin + gl_GlobalInvocationID.x * pc.params[1] + k;
        if (i >= pc.end) { return; }
        y[i] = uintBitsToFloat(pc.params[0]) * x[i] + 1.0;
    }
}
`

func axpoCPU(_ *sched.Ctx, d *sched.TaskData) error {
	x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
	a := math.Float32frombits(d.Params[0])
	for i := d.Begin; i < d.End; i++ {
		y[i] = a*x[i] + 1
	}
	return nil
}

func axpoRegistry(t *testing.T, spv []byte, local, ipi uint32, grain uint32) *sched.Registry {
	t.Helper()
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "axpo", Kind: sched.Streaming, Grain: grain,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: axpoCPU, GPU: &bind.Binding{SPIRV: spv, LocalSize: local, ItemsPerInvocation: ipi}}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func axpoTask(aff sched.Affinity, a float32, ipi uint32, x, y []float32) sched.Task {
	tk := sched.Task{Kernel: 1, Affinity: aff}
	tk.Data.Params[0], tk.Data.Params[1] = math.Float32bits(a), ipi
	tk.Data.Elements = uint32(len(x))
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
	return tk
}

func waitMinute(t *testing.T, c *sched.Ctx, id sched.TaskID) error {
	t.Helper()
	err := c.WaitFor(id, time.Minute) // a hang watchdog, not a timing assertion
	if errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("task %v did not finish in a minute", id)
	}
	return err
}

func checkAxpo(t *testing.T, what string, a float32, x, y []float32) {
	t.Helper()
	for i := range x {
		if want := a*x[i] + 1; y[i] != want {
			t.Fatalf("%s: y[%d] = %v, want %v", what, i, y[i], want)
		}
	}
}

// maxBeyondGroupBytes bounds the host arrays of one case of
// TestCustomKernelBeyondGroupCount.
const maxBeyondGroupBytes = 256 << 20

// TestCustomKernelBeyondGroupCount: more work items than
// maxComputeWorkGroupCount[0] x LocalSize x ItemsPerInvocation in one
// task, with workgroup sizes that are not powers of two, and the small
// edges (0 and 1 element).
func TestCustomKernelBeyondGroupCount(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	maxGroups := uint64(dev.Limits().MaxComputeWorkGroupCount)
	for _, c := range []struct {
		local, ipi uint32
		n          uint64
	}{
		{7, 3, 7*3*maxGroups + 5},
		{1, 1, maxGroups + 3},
		{3, 1, 3*2*maxGroups + 1},
		{64, 1, 0},
		{64, 1, 1},
		{64, 4, 65},
	} {
		// Desktop GPUs report a group count of 2^31-1 (lavapipe 65535): past
		// it is then tens of billions of elements, more than the host's
		// memory. Such cases are skipped; desktop_limits_test.go covers the
		// chunking on every device by lowering the limit.
		if c.n*8 > maxBeyondGroupBytes {
			t.Logf("%+v: %d elements (%d bytes of host arrays) past maxComputeWorkGroupCount %d: skipped", c, c.n, c.n*8, maxGroups)
			continue
		}
		func() {
			_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: axpoRegistry(t, spv, c.local, c.ipi, 1<<31), Workers: 1}, gpu.ExecutorOptions{})
			x, y := make([]float32, c.n), make([]float32, c.n)
			for i := range x {
				x[i], y[i] = float32(i%1000), -7
			}
			tk := axpoTask(sched.GPU, 2, c.ipi, x, y)
			id, err := m.Add(&tk)
			if err != nil {
				t.Fatalf("%+v: Add: %v", c, err)
			}
			if err := waitMinute(t, m, id); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			checkAxpo(t, "beyond the group count", 2, x, y)
		}()
	}
}

// TestCustomKernelManyTinyTasksSomeFailing: 3000 tasks of 1 to 40 elements,
// a third on the CPU, every 97th naming a buffer that does not exist:
// those fail with an error naming the stream and the buffer, the others
// (batched with them) are right.
func TestCustomKernelManyTinyTasksSomeFailing(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: axpoRegistry(t, spv, 16, 1, 1<<31), Workers: 2}, gpu.ExecutorOptions{})
	rng := rand.New(rand.NewSource(1))
	type job struct {
		id   sched.TaskID
		x, y []float32
		a    float32
		bad  bool
	}
	var jobs []job
	for k := range 3000 {
		n := 1 + rng.Intn(40)
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Intn(100))
		}
		aff := sched.GPU
		if k%3 == 1 {
			aff = sched.AnyWorker
		}
		tk := axpoTask(aff, float32(k%7), 1, x, y)
		bad := k%97 == 5
		if bad {
			tk.Affinity = sched.GPU
			tk.Data.In[0] = sched.Stream{Stride: 4, Count: uint32(n), Buffer: 12345}
		}
		id, err := m.Add(&tk)
		if err != nil {
			t.Fatalf("task %d: Add: %v", k, err)
		}
		jobs = append(jobs, job{id, x, y, float32(k % 7), bad})
	}
	for k, j := range jobs {
		err := waitMinute(t, m, j.id)
		if j.bad {
			if !errors.Is(err, gpu.ErrBadStream) {
				t.Errorf("task %d names buffer 12345: err = %v, want ErrBadStream", k, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("task %d: %v", k, err)
		}
		checkAxpo(t, "tiny task", j.a, j.x, j.y)
	}
}

// TestCustomKernelMixedChain: CPU -> GPU -> CPU -> GPU, each stage split
// into ranges of 700 and depending on the one before, all children of a
// held parent.
func TestCustomKernelMixedChain(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: axpoRegistry(t, spv, 16, 1, 700), Workers: 2}, gpu.ExecutorOptions{})
	const n = 5000
	bufs := make([][]float32, 5)
	for i := range bufs {
		bufs[i] = make([]float32, n)
	}
	for i := range bufs[0] {
		bufs[0][i] = float32(i % 100)
	}
	parent, err := m.Create(&sched.Task{})
	if err != nil {
		t.Fatal(err)
	}
	prev := sched.NoTask
	for st := range 4 {
		tk := axpoTask([]sched.Affinity{sched.AnyWorker, sched.GPU}[st%2], 2, 1, bufs[st], bufs[st+1])
		tk.Parent, tk.Dependency = parent, prev
		if prev, err = m.Add(&tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Run(parent); err != nil {
		t.Fatal(err)
	}
	if err := waitMinute(t, m, parent); err != nil {
		t.Fatal(err)
	}
	for i, x := range bufs[0] {
		v := x
		for range 4 {
			v = 2*v + 1
		}
		if bufs[4][i] != v {
			t.Fatalf("chain: [%d] = %v, want %v", i, bufs[4][i], v)
		}
	}
}

// TestCustomKernelOneModuleTwoKernels: one SPIR-V slice registered as two
// kernels with different workgroup sizes and items per invocation (the
// executor caches pipelines by module and binding shape): each kernel gets
// its own pipeline and the right answer; registering an ID twice is
// refused.
func TestCustomKernelOneModuleTwoKernels(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	reg := sched.NewRegistry()
	for id, b := range map[sched.KernelID]*bind.Binding{1: {SPIRV: spv, LocalSize: 8, ItemsPerInvocation: 1}, 2: {SPIRV: spv, LocalSize: 32, ItemsPerInvocation: 5}} {
		if err := reg.Register(id, sched.Kernel{Name: "axpo", Kind: sched.Streaming,
			In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
			Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
			CPU: axpoCPU, GPU: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(1, sched.Kernel{Name: "again", Kind: sched.Streaming, CPU: axpoCPU}); err == nil {
		t.Error("kernel ID 1 registered twice")
	}
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	for round := range 3 {
		for id, ipi := range map[sched.KernelID]uint32{1: 1, 2: 5} {
			x, y := make([]float32, 10007), make([]float32, 10007)
			for i := range x {
				x[i] = float32(i % 77)
			}
			tk := axpoTask(sched.GPU, float32(round+1), ipi, x, y)
			tk.Kernel = id
			id2, err := m.Add(&tk)
			if err != nil {
				t.Fatal(err)
			}
			if err := waitMinute(t, m, id2); err != nil {
				t.Fatal(err)
			}
			checkAxpo(t, "same module, two kernels", float32(round+1), x, y)
		}
	}
}

// TestCustomKernelWaitForTimesOutThenCompletes: a GPU task that provably cannot
// finish yet (its command buffer waits for a host event: FaultStall) makes
// WaitFor with a short time-out return ErrTimeout, not a result; once the
// stall is released, Wait returns the task's right answer. No timing is
// assumed: the stall holds however loaded the machine is.
func TestCustomKernelWaitForTimesOutThenCompletes(t *testing.T) {
	spv := userSPIRV(t, axpoGLSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: axpoRegistry(t, spv, 16, 1, 1<<31), Workers: 1}, gpu.ExecutorOptions{FenceTimeout: time.Hour})
	if err := dev.InjectFault(gpu.FaultStall); err != nil {
		t.Fatal(err)
	}
	x, y := make([]float32, 1000), make([]float32, 1000)
	for i := range x {
		x[i] = float32(i)
	}
	tk := axpoTask(sched.GPU, 4, 1, x, y)
	id, err := m.Add(&tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(id, 50*time.Millisecond); !errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("WaitFor on a stalled GPU task: %v, want sched.ErrTimeout", err)
	}
	if err := dev.ReleaseStall(); err != nil {
		t.Fatal(err)
	}
	if err := waitMinute(t, m, id); err != nil {
		t.Fatal(err)
	}
	checkAxpo(t, "after the stall", 4, x, y)
}

// TestCustomKernelOutputAliasesInput: saxpy in place, y = a*x + y with y passed
// as both input 1 and output 0 (the contract's way to read and write one
// stream), split into ranges, on the GPU and on the CPU: the same answer.
func TestCustomKernelOutputAliasesInput(t *testing.T) {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	const n = 100003
	for _, aff := range []sched.Affinity{sched.GPU, sched.AnyWorker} {
		x, y, want := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(i%100), float32(i%7)
			want[i] = 3*x[i] + y[i]
		}
		tk := sched.Task{Kernel: kernels.Saxpy, Affinity: aff}
		tk.Data.Params[0] = math.Float32bits(3)
		tk.Data.Elements, tk.Data.Grain = n, 9999
		tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(y)
		id, err := m.Add(&tk)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitMinute(t, m, id); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if y[i] != want[i] {
				t.Fatalf("%v: y[%d] = %v, want %v", aff, i, y[i], want[i])
			}
		}
	}
}

// userSPIRV compiles a user's GLSL compute shader the way the README's GPU
// path expects (glslc, Vulkan 1.0).
func userSPIRV(t *testing.T, src string) []byte { return glslc.Compile(t, "comp", src) }
