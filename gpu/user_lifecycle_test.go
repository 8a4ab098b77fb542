package gpu_test

// A device's life as users get it wrong: Close twice, every call after
// Close, an Arena left open at Close or closed after it, a fault injected
// into a closed device, GPU tasks sent to an executor whose device was
// closed. Each gives an error that says what was closed (and wraps
// gpu.ErrClosed, and sched.ErrClosed), never a crash, a hang, or a
// validation message about leaked objects.

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// wantClosed checks that err reports a closed object in words of its own.
func wantClosed(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s after Close: no error", what)
	case !errors.Is(err, gpu.ErrClosed) || !errors.Is(err, sched.ErrClosed):
		t.Errorf("%s after Close: %v does not wrap gpu.ErrClosed and sched.ErrClosed", what, err)
	case strings.Contains(err.Error(), "scheduler"):
		t.Errorf("%s after Close: %q blames a scheduler; the device was closed", what, err)
	}
}

func TestUseAfterClose(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	arena, err := dev.NewArena(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	closedArena, err := dev.NewArena(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	closedArena.Close()
	closedArena.Close() // idempotent
	buf, err := dev.NewBuffer(1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The arena left open was freed by Close: the validation layer saw no
	// leaked VkBuffer or VkDeviceMemory when the device was destroyed.
	if msgs, n := dev.Messages(); n > 0 {
		t.Errorf("%d validation errors at Close: %v", n, msgs)
	}
	wantClosed(t, "Buffer.Write", buf.Write(0, []byte{1, 2, 3, 4}))
	wantClosed(t, "Buffer.Read", buf.Read(0, make([]byte, 4)))
	if err := buf.Close(); err != nil {
		t.Errorf("Buffer.Close after Device.Close: %v", err)
	}
	_, err = dev.NewBuffer(64)
	wantClosed(t, "NewBuffer", err)
	_, err = dev.NewArena(64)
	wantClosed(t, "NewArena", err)
	_, err = gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	wantClosed(t, "NewExecutor", err)
	wantClosed(t, "InjectFault(FaultStall)", dev.InjectFault(gpu.FaultStall))
	wantClosed(t, "InjectFault(FaultAllocation)", dev.InjectFault(gpu.FaultAllocation))
	if err := dev.ReleaseStall(); err != nil {
		t.Errorf("ReleaseStall after Close: %v", err)
	}
	_, err = arena.Alloc(16)
	wantClosed(t, "Arena.Alloc", err)
	_, err = closedArena.Alloc(16)
	wantClosed(t, "Arena.Alloc after Arena.Close", err)
	arena.Close() // after the device's Close: nothing left to free, no crash
}

func TestInjectUnknownFault(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	if err := dev.InjectFault(gpu.Fault(99)); err == nil || !strings.Contains(err.Error(), "unknown fault 99") {
		t.Errorf("InjectFault(99) = %v, want an error naming the unknown fault", err)
	}
}

const lifeScaleGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = uintBitsToFloat(pc.params[0]) * x[i];
}
`

// TestGPUTaskAfterDeviceClose: a scheduler whose executor's device was
// closed under it fails GPU tasks with an error; CPU tasks go on.
func TestGPUTaskAfterDeviceClose(t *testing.T) {
	reg := sched.NewRegistry()
	scale := func(_ *sched.Ctx, d *sched.TaskData) error {
		x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
		for i := d.Begin; i < d.End; i++ {
			y[i] = math.Float32frombits(d.Params[0]) * x[i]
		}
		return nil
	}
	if err := reg.Register(1, sched.Kernel{Name: "scale", Kind: sched.Streaming,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: scale, GPU: &bind.Binding{SPIRV: userSPIRV(t, lifeScaleGLSL)}}); err != nil {
		t.Fatal(err)
	}
	dev, _ := gputest.Open(t, gpu.Options{})
	exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AttachExecutor(sched.ExecGPU, exec); err != nil {
		t.Fatal(err)
	}
	m, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}
	run := func(aff sched.Affinity) ([]float32, error) {
		x, y := make([]float32, 1000), make([]float32, 1000)
		for i := range x {
			x[i] = float32(i)
		}
		tk := sched.Task{Kernel: 1, Affinity: aff}
		tk.Data.Params[0] = math.Float32bits(3)
		tk.Data.Elements = 1000
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
		id, err := m.Add(&tk)
		if err != nil {
			return nil, err
		}
		if err := m.WaitFor(id, time.Minute); errors.Is(err, sched.ErrTimeout) {
			t.Fatalf("a task did not finish in a minute")
		} else if err != nil {
			return nil, err
		}
		return y, nil
	}
	if y, err := run(sched.GPU); err != nil || y[999] != 2997 {
		t.Fatalf("GPU task before Close: y[999] = %v, %v", y, err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, n := dev.Messages(); n > 0 {
		t.Errorf("validation errors at Close")
	}
	_, err = run(sched.GPU)
	wantClosed(t, "a GPU task", err)
	if y, err := run(sched.AnyWorker); err != nil || y[999] != 2997 {
		t.Fatalf("CPU task after the device's Close: %v", err)
	}
}

// userSPIRV compiles a user's GLSL compute shader the way the README's GPU
// path expects (glslc, Vulkan 1.0).
func userSPIRV(t *testing.T, src string) []byte { return glslc.Compile(t, "comp", src) }
