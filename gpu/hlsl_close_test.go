package gpu_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

const xaHLSL = `struct PC { uint params[8]; uint begin; uint end; };
[[vk::push_constant]] ConstantBuffer<PC> pc;
[[vk::binding(0, 0)]] StructuredBuffer<uint> x;
[[vk::binding(4, 0)]] RWStructuredBuffer<uint> y;
#ifndef NT
#define NT 64
#endif
[numthreads(NT, 1, 1)]
void ENTRY(uint3 id : SV_DispatchThreadID) {
    uint i = pc.begin + id.x;
    if (i >= pc.end) { return; }
    y[i] = x[i] * pc.params[0] + pc.params[7];
}
`

func hlslTool(t *testing.T, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "k.hlsl"), filepath.Join(dir, "k.spv")
	if err := os.WriteFile(in, []byte(xaHLSL), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, "-o", out, in)
	if msg, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHLSLFrontEndsAndEntryPoints(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	gv := []string{"glslangValidator", "-D", "-V", "-S", "comp", "--target-env", "vulkan1.0"}
	gc := []string{"glslc", "-x", "hlsl", "-fshader-stage=compute", "--target-env=vulkan1.0"}
	cases := []struct {
		name string
		args []string
		b    bind.Binding
	}{
		{"glslc", append(gc[:len(gc):len(gc)], "-DENTRY=main"), bind.Binding{}},
		{"glslc-O", append(gc[:len(gc):len(gc)], "-O", "-DENTRY=main"), bind.Binding{}},
		{"glslc-O0-g", append(gc[:len(gc):len(gc)], "-O0", "-g", "-DENTRY=main"), bind.Binding{}},
		{"glslc-fentry", append(gc[:len(gc):len(gc)], "-fentry-point=CSMain", "-DENTRY=CSMain"), bind.Binding{Entry: "CSMain"}},
		{"glslc-NT32", append(gc[:len(gc):len(gc)], "-DENTRY=main", "-DNT=32"), bind.Binding{LocalSize: 32}},
		{"gv-e-main", append(gv[:len(gv):len(gv)], "-e", "main", "-DENTRY=main"), bind.Binding{}},
		{"gv-e-CSMain", append(gv[:len(gv):len(gv)], "-e", "CSMain", "-DENTRY=CSMain"), bind.Binding{Entry: "CSMain"}},
		{"gv-source-entry", append(gv[:len(gv):len(gv)], "-e", "main", "--source-entrypoint", "CSMain", "-DENTRY=CSMain"), bind.Binding{}},
		{"gv-g-Od", append(gv[:len(gv):len(gv)], "-e", "main", "-g", "-Od", "-DENTRY=main"), bind.Binding{}},
		{"gv-NT7", append(gv[:len(gv):len(gv)], "-e", "main", "-DENTRY=main", "-DNT=7"), bind.Binding{LocalSize: 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spv := hlslTool(t, c.args...)
			if err := xaRun(t, dev, log, spv, c.b); err != nil {
				t.Error(err)
			}
		})
	}
	// Wrong entry name: clear error at Register.
	spv := hlslTool(t, append(gv[:len(gv):len(gv)], "-e", "CSMain", "-DENTRY=CSMain")...)
	err := xaRegister(spv, bind.Binding{})
	t.Logf("wrong entry: %v", err)
	if err == nil {
		t.Error("entry main accepted for a module whose entry point is CSMain")
	}
}

const loopGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    uint acc = x[i];
    for (uint a = 0u; a < pc.params[0]; a++)
      for (uint b = 0u; b < pc.params[1]; b++)
        for (uint c = 0u; c < pc.params[2]; c++)
          acc = acc * 1664525u + 1013904223u;
    y[i] = acc;
}
`

func loopReg(t *testing.T) *sched.Registry {
	spv := glslc.Compile(t, "comp", loopGLSL)
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "loop", Kind: sched.Streaming, Grain: 1 << 20,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }, GPU: &bind.Binding{SPIRV: spv, LocalSize: 1}}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// A shader that outlasts every fence time-out: its task fails with
// ErrTimeout, the device is declared lost after FenceTimeout*(HungAfter+1),
// Scheduler.Close (Executor.Close) returns within the bound its doc states
// instead of waiting for the GPU, and Device.Close then waits for the
// queue and frees everything (the validation layer reports no leak).
func TestCloseBoundedWithHungQueue(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	n0 := log.Len()
	s, err := sched.New(sched.Config{Kernels: loopReg(t), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	const fence, hung = 200 * time.Millisecond, 1
	ex, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{FenceTimeout: fence, HungAfter: hung})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AttachExecutor(sched.ExecGPU, ex); err != nil {
		t.Fatal(err)
	}
	m, _ := s.RegisterThread("main")
	// About 2^14 * 60000 loop iterations: seconds on lavapipe, far
	// beyond the 400 ms after which the queue counts as hung.
	x, y := make([]uint32, 1<<14), make([]uint32, 1<<14)
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = 1 << 14
	tk.Data.Params[0], tk.Data.Params[1], tk.Data.Params[2] = 60000, 1, 1
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
	id, err := m.Add(&tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(id, time.Minute); !errors.Is(err, gpu.ErrTimeout) {
		t.Fatalf("a command buffer past its fence time-out: err = %v, want ErrTimeout", err)
	}
	// Wait until the device counts as lost (a later task fails at once).
	deadline := time.Now().Add(time.Minute)
	for dev.Lost() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if dev.Lost() == nil {
		t.Fatal("the device did not count as lost after a hung queue")
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		el := time.Since(start)
		t.Logf("sched.Close after %v: %v", el, err)
		if limit := 5 * (hung + 1) * fence; el > limit {
			t.Errorf("Scheduler.Close took %v with a hung queue; Executor.Close promises at most FenceTimeout*(HungAfter+1) = %v more", el, (hung+1)*fence)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Scheduler.Close hung for 2 minutes after a shader that outlasts its fence time-outs")
	}
	go func() { done <- dev.Close() }()
	select {
	case err := <-done:
		t.Logf("Device.Close after %v: %v", time.Since(start), err)
	case <-time.After(2 * time.Minute):
		t.Fatal("Device.Close hung for 2 minutes")
	}
	for _, msg := range log.Since(n0) {
		t.Errorf("validation: %s", msg)
	}
}
