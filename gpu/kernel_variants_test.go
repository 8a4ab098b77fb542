package gpu

// A user's scale kernel (y = 2x) written and compiled the ways a user
// does: GLSL at -O, -O0 and -g with a shared header that declares every
// slot, HLSL through both of Debian's HLSL front ends with a fixed
// workgroup size, SPIR-V assembly that stores through OpCopyObject, and a
// layout(scalar) vec3 kernel. Each is registered, run on the device with
// the validation layer on through the executor, and its output compared
// item by item with the CPU's.

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// sharedHeaderGLSL declares all eight of the contract's bindings; the
// kernel uses binding 0 and 4 only.
const sharedHeaderGLSL = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) readonly buffer In1 { float in1[]; };
layout(set = 0, binding = 2) readonly buffer In2 { float in2[]; };
layout(set = 0, binding = 3) readonly buffer In3 { float in3[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { float out1[]; };
layout(set = 0, binding = 6) writeonly buffer Out2 { float out2[]; };
layout(set = 0, binding = 7) writeonly buffer Out3 { float out3[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

// scaleHLSL is the same kernel in HLSL, with NUMTHREADS to fill in.
const scaleHLSL = `struct PC { uint params[8]; uint begin; uint end; };
[[vk::push_constant]] ConstantBuffer<PC> pc;
[[vk::binding(0, 0)]] StructuredBuffer<float> x;
[[vk::binding(4, 0)]] RWStructuredBuffer<float> y;
[numthreads(NUMTHREADS, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    uint i = pc.begin + id.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

// scalarVec3GLSL scales packed vec3s (a 12-byte stream) through
// layout(scalar) arrays, which need the scalarBlockLayout feature.
const scalarVec3GLSL = `#version 450
#extension GL_EXT_scalar_block_layout : require
layout(local_size_x_id = 0) in;
layout(scalar, set = 0, binding = 0) readonly buffer In0 { vec3 x[]; };
layout(scalar, set = 0, binding = 4) writeonly buffer Out0 { vec3 y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

// copyObjectSPIRV assembles gpu/bind's OpCopyObject kernel with its output
// stored through a copy of the access chain.
func copyObjectSPIRV(t *testing.T) []byte {
	src, err := os.ReadFile("bind/testdata/copy_object.spvasm")
	if err != nil {
		t.Fatal(err)
	}
	return glslc.Assemble(t, strings.Replace(string(src), "; {{stores}}", `
         %py = OpAccessChain %ptr %y %int_0 %i
        %pyc = OpCopyObject %ptr %py
               OpStore %pyc %v`, 1))
}

// runScale registers a scale kernel (stride-byte elements of floats) with
// b, runs it over n items on the GPU and returns the output and the
// task's error.
func runScale(t *testing.T, dev *Device, b *Binding, stride uint32, n int) (x, y []float32, err error) {
	t.Helper()
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "scale", Kind: sched.Streaming, Grain: 256,
		In:  []sched.StreamSpec{{Name: "x", Stride: stride}},
		Out: []sched.StreamSpec{{Name: "y", Stride: stride}},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return errors.New("the CPU must not run this test's tasks") },
		GPU: b}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	per := int(stride / 4)
	x, y = ramp(n*per, 0.5, 1), make([]float32, n*per)
	for i := range y {
		y[i] = -1
	}
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = uint32(n)
	tk.Data.In[0] = sched.Stream{Bytes: sched.StreamOf(x).Bytes, Stride: stride, Count: uint32(n)}
	tk.Data.Out[0] = sched.Stream{Bytes: sched.StreamOf(y).Bytes, Stride: stride, Count: uint32(n)}
	id := e.add(t, tk)
	return x, y, e.main.Wait(id)
}

func TestUserKernelVariantsRun(t *testing.T) {
	type variant struct {
		name  string
		spv   func(t *testing.T) []byte
		local uint32
	}
	var vs []variant
	for _, lvl := range []string{"-O", "-O0", "-g"} {
		vs = append(vs, variant{"GLSL shared header " + lvl, func(t *testing.T) []byte {
			return glslc.CompileFlags(t, "comp", sharedHeaderGLSL, lvl)
		}, 0})
	}
	for _, fe := range []string{glslc.Glslc, glslc.GlslangValidator} {
		vs = append(vs,
			variant{"HLSL " + fe + " numthreads 64", func(t *testing.T) []byte {
				return glslc.CompileHLSL(t, fe, strings.Replace(scaleHLSL, "NUMTHREADS", "64", 1))
			}, 0},
			variant{"HLSL " + fe + " numthreads 96", func(t *testing.T) []byte {
				return glslc.CompileHLSL(t, fe, strings.Replace(scaleHLSL, "NUMTHREADS", "96", 1))
			}, 96})
	}
	vs = append(vs, variant{"SPIR-V store through OpCopyObject", copyObjectSPIRV, 0})
	dev := device(t, false)
	for _, v := range vs {
		t.Run(strings.ReplaceAll(v.name, " ", "_"), func(t *testing.T) {
			const n = 5000
			x, y, err := runScale(t, dev, &Binding{SPIRV: v.spv(t), LocalSize: v.local}, 4, n)
			if err != nil {
				t.Fatalf("task: %v", err)
			}
			for i := range y {
				if y[i] != 2*x[i] {
					t.Fatalf("y[%d] = %v, want %v", i, y[i], 2*x[i])
				}
			}
		})
	}
}

// TestScalarLayoutKernelRuns: a layout(scalar) vec3 kernel on a packed
// 12-byte stream runs right with the validation layer on (the device was
// created with scalarBlockLayout), where it failed every task with
// ErrValidation before.
func TestScalarLayoutKernelRuns(t *testing.T) {
	dev := device(t, false)
	if !dev.ScalarBlockLayout() {
		t.Skipf("the device %q has no scalarBlockLayout", dev.Name())
	}
	spv := glslc.Compile(t, "comp", scalarVec3GLSL)
	x, y, err := runScale(t, dev, &Binding{SPIRV: spv}, 12, 3001)
	if err != nil {
		t.Fatalf("task: %v", err)
	}
	for i := range y {
		if y[i] != 2*x[i] {
			t.Fatalf("component %d (item %d) = %v, want %v", i, i/3, y[i], 2*x[i])
		}
	}
}

// TestScalarLayoutRefusedWithoutFeature: on a device without
// scalarBlockLayout, a kernel that needs it fails its tasks with
// ErrBadBinding naming the feature, and never reaches the driver.
func TestScalarLayoutRefusedWithoutFeature(t *testing.T) {
	dev := openTestDevice(t, Options{})
	t.Cleanup(func() { // after newEnv's cleanup, which closes the scheduler
		if err := dev.Close(); err != nil {
			t.Errorf("device Close: %v", err)
		}
	})
	dev.scalar = false // as on a device that lacks the feature
	spv := glslc.Compile(t, "comp", scalarVec3GLSL)
	_, _, err := runScale(t, dev, &Binding{SPIRV: spv}, 12, 100)
	if !errors.Is(err, ErrBadBinding) || errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), "scalarBlockLayout") {
		t.Fatalf("task error %v, want ErrBadBinding naming scalarBlockLayout (and no validation error)", err)
	}
}
