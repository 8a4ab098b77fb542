package gpu_test

import (
	"errors"
	"fmt"
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

// ukRun registers a one-in one-out kernel with the given SPIR-V and
// strides, runs it on n items of in (bytes) on the GPU, and returns the
// output bytes, the registration error and the run error. Validation
// messages fail the test (gputest.Sched).
func ukRun(t *testing.T, dev *gpu.Device, log *gputest.Log, spv []byte, b bind.Binding, inStride, outStride uint32, n int, in []byte, cpu sched.KernelFunc) (out []byte, regErr, runErr error) {
	t.Helper()
	reg := sched.NewRegistry()
	b.SPIRV = spv
	if err := reg.Register(1, sched.Kernel{Name: "uk", Kind: sched.Streaming, Grain: 1000,
		In: []sched.StreamSpec{{Name: "x", Stride: inStride}}, Out: []sched.StreamSpec{{Name: "y", Stride: outStride}},
		CPU: cpu, GPU: &b}); err != nil {
		return nil, err, nil
	}
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	out = make([]byte, n*int(outStride))
	tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
	tk.Data.Elements = uint32(n)
	tk.Data.In[0] = sched.Stream{Bytes: in, Stride: inStride, Count: uint32(n)}
	tk.Data.Out[0] = sched.Stream{Bytes: out, Stride: outStride, Count: uint32(n)}
	id, err := m.Add(&tk)
	if err != nil {
		return nil, nil, err
	}
	err = m.WaitFor(id, 10*time.Second)
	if errors.Is(err, sched.ErrTimeout) {
		t.Fatalf("task did not finish in 10 s")
	}
	return out, nil, err
}

func noCPU(*sched.Ctx, *sched.TaskData) error { return nil }

// Kernels whose element types need a device feature that Vulkan 1.0
// leaves off unless the device is created with it: each must run exactly,
// or be refused with an error naming the feature, never reach the driver
// as a validation error.
func TestUserKernelFeatureElementTypes(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	cases := []struct {
		name, src string
		inS, outS uint32
		in        func(i int) []byte
		want      func(i int) []byte
	}{
		{"f64", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { double x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { double y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = x[i] * 3.0lf + 0.5lf; }
`, 8, 8, func(i int) []byte { return f64b(float64(i) + 0.25) }, func(i int) []byte { return f64b((float64(i)+0.25)*3 + 0.5) }},
		{"i64", `#version 450
#extension GL_ARB_gpu_shader_int64 : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint64_t x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint64_t y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = x[i] * 3ul + 1ul; }
`, 8, 8, func(i int) []byte { return u64b(uint64(i) << 33) }, func(i int) []byte { return u64b(uint64(i)<<33*3 + 1) }},
		{"u8", `#version 450
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint8_t x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint8_t y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = uint8_t(uint(x[i]) * 3u + 1u); }
`, 1, 1, func(i int) []byte { return []byte{byte(i)} }, func(i int) []byte { return []byte{byte(i)*3 + 1} }},
		{"u16", `#version 450
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint16_t x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint16_t y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = uint16_t(uint(x[i]) * 3u + 1u); }
`, 2, 2, func(i int) []byte { return []byte{byte(i), byte(i >> 8)} }, func(i int) []byte { v := uint16(i)*3 + 1; return []byte{byte(v), byte(v >> 8)} }},
		{"f16", `#version 450
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float16_t x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float16_t y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = float16_t(float(x[i]) * 2.0); }
`, 2, 2, func(i int) []byte { return f16b(i % 1000) }, func(i int) []byte { return f16b(2 * (i % 1000)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spv := glslc.Compile(t, "comp", c.src)
			const n = 777
			var in, want []byte
			for i := 0; i < n; i++ {
				in = append(in, c.in(i)...)
				want = append(want, c.want(i)...)
			}
			n0 := log.Len()
			out, regErr, runErr := ukRun(t, dev, log, spv, bind.Binding{}, c.inS, c.outS, n, in, noCPU)
			t.Logf("register: %v; run: %v; messages: %d", regErr, runErr, log.Len()-n0)
			switch {
			case regErr != nil:
				if !errors.Is(regErr, gpu.ErrBadBinding) {
					t.Errorf("registration error does not wrap ErrBadBinding: %v", regErr)
				}
			case runErr != nil:
				if errors.Is(runErr, gpu.ErrValidation) || log.Len() > n0 {
					t.Errorf("the kernel reached the driver and the validation layer objected: %v", runErr)
				} else if !errors.Is(runErr, gpu.ErrBadBinding) {
					t.Errorf("run error does not wrap ErrBadBinding: %v", runErr)
				}
			default:
				if string(out) != string(want) {
					for i := range out {
						if out[i] != want[i] {
							t.Fatalf("byte %d = %#x, want %#x", i, out[i], want[i])
						}
					}
				}
			}
		})
	}
}

func f64b(v float64) []byte { return u64b(math.Float64bits(v)) }
func u64b(v uint64) []byte {
	b := make([]byte, 8)
	for k := range b {
		b[k] = byte(v >> (8 * k))
	}
	return b
}

// f16b is the half-precision encoding of the small integer v (< 2048).
func f16b(v int) []byte {
	if v == 0 {
		return []byte{0, 0}
	}
	e := 0
	for 1<<(e+1) <= v {
		e++
	}
	mant := (v << 10 >> e) & 0x3ff
	h := uint16((e+15)<<10 | mant)
	return []byte{byte(h), byte(h >> 8)}
}

// twoEntryWGSL is naga's SPIR-V (naga --capabilities immediates
// --spirv-version 1.0) for this WGSL module, whose two entry points share
// the output binding and only one reads the input:
//
//	struct PC { params: array<u32, 8>, begin: u32, end: u32 }
//	var<immediate> pc: PC;
//	@group(0) @binding(0) var<storage, read> x: array<u32>;
//	@group(0) @binding(4) var<storage, read_write> y: array<u32>;
//	@compute @workgroup_size(64)
//	fn scale(@builtin(global_invocation_id) g: vec3<u32>) {
//	    let i = pc.begin + g.x;
//	    if (i >= pc.end) { return; }
//	    y[i] = x[i] * pc.params[0] + pc.params[7];
//	}
//	@compute @workgroup_size(32)
//	fn gen(@builtin(global_invocation_id) g: vec3<u32>) {
//	    let i = pc.begin + g.x;
//	    if (i >= pc.end) { return; }
//	    y[i] = i * pc.params[0] + pc.params[7];
//	}
const twoEntryWGSL = `
; SPIR-V
; Version: 1.0
; Generator: Khronos; 28
; Bound: 79
; Schema: 0
               OpCapability Shader
               OpExtension "SPV_KHR_storage_buffer_storage_class"
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %22 "scale" %gl_GlobalInvocationID
               OpEntryPoint GLCompute %59 "gen" %gl_GlobalInvocationID_0
               OpExecutionMode %22 LocalSize 64 1 1
               OpExecutionMode %59 LocalSize 32 1 1
               OpDecorate %_arr_uint_uint_8 ArrayStride 4
               OpMemberDecorate %_struct_6 0 Offset 0
               OpMemberDecorate %_struct_6 1 Offset 32
               OpMemberDecorate %_struct_6 2 Offset 36
               OpDecorate %_runtimearr_uint ArrayStride 4
               OpDecorate %_struct_10 Block
               OpMemberDecorate %_struct_10 0 Offset 0
               OpDecorate %12 NonWritable
               OpDecorate %12 DescriptorSet 0
               OpDecorate %12 Binding 0
               OpDecorate %_struct_13 Block
               OpMemberDecorate %_struct_13 0 Offset 0
               OpDecorate %15 DescriptorSet 0
               OpDecorate %15 Binding 4
               OpDecorate %_struct_16 Block
               OpMemberDecorate %_struct_16 0 Offset 0
               OpDecorate %gl_GlobalInvocationID BuiltIn GlobalInvocationId
               OpDecorate %gl_GlobalInvocationID_0 BuiltIn GlobalInvocationId
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
     %uint_8 = OpConstant %uint 8
%_arr_uint_uint_8 = OpTypeArray %uint %uint_8
  %_struct_6 = OpTypeStruct %_arr_uint_uint_8 %uint %uint
%_runtimearr_uint = OpTypeRuntimeArray %uint
     %v3uint = OpTypeVector %uint 3
 %_struct_10 = OpTypeStruct %_struct_6
%_ptr_PushConstant__struct_10 = OpTypePointer PushConstant %_struct_10
          %9 = OpVariable %_ptr_PushConstant__struct_10 PushConstant
 %_struct_13 = OpTypeStruct %_runtimearr_uint
%_ptr_StorageBuffer__struct_13 = OpTypePointer StorageBuffer %_struct_13
         %12 = OpVariable %_ptr_StorageBuffer__struct_13 StorageBuffer
 %_struct_16 = OpTypeStruct %_runtimearr_uint
%_ptr_StorageBuffer__struct_16 = OpTypePointer StorageBuffer %_struct_16
         %15 = OpVariable %_ptr_StorageBuffer__struct_16 StorageBuffer
%_ptr_Input_v3uint = OpTypePointer Input %v3uint
%gl_GlobalInvocationID = OpVariable %_ptr_Input_v3uint Input
         %23 = OpTypeFunction %void
%_ptr_PushConstant__struct_6 = OpTypePointer PushConstant %_struct_6
     %uint_0 = OpConstant %uint 0
%_ptr_StorageBuffer__runtimearr_uint = OpTypePointer StorageBuffer %_runtimearr_uint
%_ptr_PushConstant_uint = OpTypePointer PushConstant %uint
     %uint_1 = OpConstant %uint 1
     %uint_2 = OpConstant %uint 2
       %bool = OpTypeBool
%_ptr_StorageBuffer_uint = OpTypePointer StorageBuffer %uint
%_ptr_PushConstant__arr_uint_uint_8 = OpTypePointer PushConstant %_arr_uint_uint_8
     %uint_7 = OpConstant %uint 7
%gl_GlobalInvocationID_0 = OpVariable %_ptr_Input_v3uint Input
         %22 = OpFunction %void None %23
         %18 = OpLabel
         %21 = OpLoad %v3uint %gl_GlobalInvocationID
         %26 = OpAccessChain %_ptr_PushConstant__struct_6 %9 %uint_0
         %28 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %12 %uint_0
         %29 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %15 %uint_0
               OpBranch %30
         %30 = OpLabel
         %33 = OpAccessChain %_ptr_PushConstant_uint %26 %uint_1
         %34 = OpLoad %uint %33
         %35 = OpCompositeExtract %uint %21 0
         %36 = OpIAdd %uint %34 %35
         %38 = OpAccessChain %_ptr_PushConstant_uint %26 %uint_2
         %39 = OpLoad %uint %38
         %41 = OpUGreaterThanEqual %bool %36 %39
               OpSelectionMerge %42 None
               OpBranchConditional %41 %43 %42
         %43 = OpLabel
               OpReturn
         %42 = OpLabel
         %45 = OpAccessChain %_ptr_StorageBuffer_uint %28 %36
         %46 = OpLoad %uint %45
         %48 = OpAccessChain %_ptr_PushConstant_uint %26 %uint_0 %uint_0
         %49 = OpLoad %uint %48
         %50 = OpIMul %uint %46 %49
         %52 = OpAccessChain %_ptr_PushConstant_uint %26 %uint_0 %uint_7
         %53 = OpLoad %uint %52
         %54 = OpIAdd %uint %50 %53
         %55 = OpAccessChain %_ptr_StorageBuffer_uint %29 %36
               OpStore %55 %54
               OpReturn
               OpFunctionEnd
         %59 = OpFunction %void None %23
         %56 = OpLabel
         %58 = OpLoad %v3uint %gl_GlobalInvocationID_0
         %60 = OpAccessChain %_ptr_PushConstant__struct_6 %9 %uint_0
         %61 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %15 %uint_0
               OpBranch %62
         %62 = OpLabel
         %63 = OpAccessChain %_ptr_PushConstant_uint %60 %uint_1
         %64 = OpLoad %uint %63
         %65 = OpCompositeExtract %uint %58 0
         %66 = OpIAdd %uint %64 %65
         %67 = OpAccessChain %_ptr_PushConstant_uint %60 %uint_2
         %68 = OpLoad %uint %67
         %69 = OpUGreaterThanEqual %bool %66 %68
               OpSelectionMerge %70 None
               OpBranchConditional %69 %71 %70
         %71 = OpLabel
               OpReturn
         %70 = OpLabel
         %72 = OpAccessChain %_ptr_PushConstant_uint %60 %uint_0 %uint_0
         %73 = OpLoad %uint %72
         %74 = OpIMul %uint %66 %73
         %75 = OpAccessChain %_ptr_PushConstant_uint %60 %uint_0 %uint_7
         %76 = OpLoad %uint %75
         %77 = OpIAdd %uint %74 %76
         %78 = OpAccessChain %_ptr_StorageBuffer_uint %61 %66
               OpStore %78 %77
               OpReturn
               OpFunctionEnd
`

// A module with several entry points, none named main, registered as one
// kernel per entry point: each kernel is checked against what its own
// entry point uses (the generator reads no input, though the other entry
// point of the module does), and each runs exactly.
func TestUserKernelPerEntryPointOfOneModule(t *testing.T) {
	spv := glslc.Assemble(t, twoEntryWGSL)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	reg := sched.NewRegistry()
	u32 := []sched.StreamSpec{{Name: "y", Stride: 4}}
	if err := reg.Register(1, sched.Kernel{Name: "scale", Kind: sched.Streaming, Grain: 1000,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: u32, CPU: xaCPU,
		GPU: &bind.Binding{SPIRV: spv, Entry: "scale", LocalSize: 64}}); err != nil {
		t.Fatalf("Register scale: %v", err)
	}
	if err := reg.Register(2, sched.Kernel{Name: "gen", Kind: sched.Streaming, Grain: 1000,
		Out: u32, CPU: genCPU, GPU: &bind.Binding{SPIRV: spv, Entry: "gen", LocalSize: 32}}); err != nil {
		t.Fatalf("Register gen (an entry point that reads no input, in a module whose other entry point does): %v", err)
	}
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	for _, n := range []int{1, 33, 5000} {
		x, y, z := make([]uint32, n), make([]uint32, n), make([]uint32, n)
		for i := range x {
			x[i] = uint32(i)
		}
		ts := sched.Task{Kernel: 1, Affinity: sched.GPU}
		ts.Data.Elements = uint32(n)
		ts.Data.Params[0], ts.Data.Params[7] = 5, 9
		ts.Data.In[0], ts.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
		tg := sched.Task{Kernel: 2, Affinity: sched.GPU}
		tg.Data.Elements = uint32(n)
		tg.Data.Params[0], tg.Data.Params[7] = 3, 11
		tg.Data.Out[0] = sched.StreamOf(z)
		if err := runOne(t, m, ts); err != nil {
			t.Fatalf("scale n %d: %v", n, err)
		}
		if err := runOne(t, m, tg); err != nil {
			t.Fatalf("gen n %d: %v", n, err)
		}
		for i := range y {
			if y[i] != uint32(i)*5+9 || z[i] != uint32(i)*3+11 {
				t.Fatalf("n %d: y[%d] = %d (want %d), z[%d] = %d (want %d)", n, i, y[i], i*5+9, i, z[i], i*3+11)
			}
		}
	}
}

// Stream element shapes a user brings, each as its CPU reference computes
// it: vectors, padded structs, arrays of structs, uniform inputs, inputs at
// bindings that are not contiguous, HLSL with an entry point not named
// main. Each runs exactly, on both memory paths.
func TestUserKernelElementShapesRunExactly(t *testing.T) {
	type shape struct {
		name string
		spv  func(t *testing.T) []byte
		b    bind.Binding
		in   []sched.StreamSpec
		out  sched.StreamSpec
		// f computes output word k of item i from the input words.
		f func(in [][]uint32, i, k int) uint32
	}
	word := func(s []uint32, i, stride, k int) uint32 { return s[i*stride/4+k] }
	shapes := []shape{
		{"vec2-to-vec4", func(t *testing.T) []byte {
			return glslc.Compile(t, "comp", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uvec2 x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uvec4 y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = uvec4(x[i], x[i].x + x[i].y, i); }
`)
		}, bind.Binding{LocalSize: 1}, []sched.StreamSpec{{Name: "x", Stride: 8}}, sched.StreamSpec{Name: "y", Stride: 16},
			func(in [][]uint32, i, k int) uint32 {
				a, b := word(in[0], i, 8, 0), word(in[0], i, 8, 1)
				return [4]uint32{a, b, a + b, uint32(i)}[k]
			}},
		{"padded-struct-array", func(t *testing.T) []byte {
			return glslc.Compile(t, "comp", `#version 450
layout(local_size_x_id = 0) in;
struct P { vec3 p; uint w; };
layout(set = 0, binding = 0) readonly buffer In0 { P x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { P y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i].p = x[i].p.zyx; y[i].w = x[i].w + pc.params[0]; }
`)
		}, bind.Binding{LocalSize: 1024}, []sched.StreamSpec{{Name: "x", Stride: 16}}, sched.StreamSpec{Name: "y", Stride: 16},
			func(in [][]uint32, i, k int) uint32 {
				if k == 3 {
					return word(in[0], i, 16, 3) + 5
				}
				return word(in[0], i, 16, 2-k)
			}},
		{"uniform-vec4-input", func(t *testing.T) []byte {
			return glslc.Compile(t, "comp", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) uniform In0 { uvec4 x[64]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uvec4 y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = x[i % 64u] * 2u; }
`)
		}, bind.Binding{UniformIn: [4]bool{true}}, []sched.StreamSpec{{Name: "x", Stride: 16, Rate: sched.Whole}}, sched.StreamSpec{Name: "y", Stride: 16},
			func(in [][]uint32, i, k int) uint32 { return 2 * word(in[0], i%64, 16, k) }},
		{"inputs-0-and-2", func(t *testing.T) []byte {
			return glslc.Compile(t, "comp", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint a[]; };
layout(set = 0, binding = 2) readonly buffer In2 { uint c[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { uint unused[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = a[i] * c[i]; }
`)
		}, bind.Binding{LocalSize: 7}, []sched.StreamSpec{{Name: "a", Stride: 4}, {Name: "b", Stride: 4}, {Name: "c", Stride: 4}}, sched.StreamSpec{Name: "y", Stride: 4},
			func(in [][]uint32, i, k int) uint32 { return in[0][i] * in[2][i] }},
		{"hlsl-entry-cs", func(t *testing.T) []byte {
			return glslc.CompileHLSL(t, glslc.GlslangValidator, `
struct PC { uint params[8]; uint begin; uint end; };
[[vk::push_constant]] ConstantBuffer<PC> pc;
struct E { float3 p; uint w; };
[[vk::binding(0, 0)]] StructuredBuffer<E> x;
[[vk::binding(4, 0)]] RWStructuredBuffer<E> y;
[numthreads(128, 1, 1)]
void cs(uint3 id : SV_DispatchThreadID) {
    uint i = pc.begin + id.x;
    if (i >= pc.end) { return; }
    E e = x[i];
    e.w = e.w + pc.params[0];
    y[i] = e;
}
void main() {}
`, "-e", "cs")
		}, bind.Binding{Entry: "cs", LocalSize: 128}, []sched.StreamSpec{{Name: "x", Stride: 16}}, sched.StreamSpec{Name: "y", Stride: 16},
			func(in [][]uint32, i, k int) uint32 {
				if k == 3 {
					return word(in[0], i, 16, 3) + 5
				}
				return word(in[0], i, 16, k)
			}},
	}
	for _, staging := range []bool{false, true} {
		dev, log := gputest.Open(t, gpu.Options{ForceStaging: staging})
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/staging=%v", s.name, staging), func(t *testing.T) {
				spv := s.spv(t)
				reg := sched.NewRegistry()
				b := s.b
				b.SPIRV = spv
				if err := reg.Register(1, sched.Kernel{Name: s.name, Kind: sched.Streaming, Grain: 100,
					In: s.in, Out: []sched.StreamSpec{s.out}, CPU: noCPU, GPU: &b}); err != nil {
					t.Fatalf("Register: %v", err)
				}
				_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
				for _, n := range []int{0, 1, 64, 1025, 3001} {
					tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
					tk.Data.Elements = uint32(n)
					tk.Data.Params[0] = 5
					ins := make([][]uint32, len(s.in))
					for j, sp := range s.in {
						cnt := n
						if sp.Rate == sched.Whole {
							cnt = 64
						}
						ins[j] = make([]uint32, cnt*int(sp.Stride)/4)
						for w := range ins[j] {
							ins[j][w] = uint32(w*2654435761) >> 7
						}
						tk.Data.In[j] = sched.Stream{Bytes: u32bytes(ins[j]), Stride: sp.Stride, Count: uint32(cnt)}
					}
					out := make([]byte, n*int(s.out.Stride))
					tk.Data.Out[0] = sched.Stream{Bytes: out, Stride: s.out.Stride, Count: uint32(n)}
					if err := runOne(t, m, tk); err != nil {
						t.Fatalf("n %d: %v", n, err)
					}
					ow := int(s.out.Stride) / 4
					for i := 0; i < n; i++ {
						for k := 0; k < ow; k++ {
							o := 4 * (i*ow + k)
							got := uint32(out[o]) | uint32(out[o+1])<<8 | uint32(out[o+2])<<16 | uint32(out[o+3])<<24
							if want := s.f(ins, i, k); got != want {
								t.Fatalf("n %d: item %d word %d = %#x, want %#x", n, i, k, got, want)
							}
						}
					}
				}
			})
		}
		dev.Close()
	}
}

// A shader's own specialization constant 0, with a fixed workgroup size:
// the executor sets constant 0 to Binding.LocalSize for shaders whose
// workgroup size X is constant 0; a shader whose constant 0 is something
// else must keep its default (or be refused), never compute with the
// workgroup size in its place.
func TestUserSpecConstantZeroNotWorkgroupSize(t *testing.T) {
	spv := glslc.Compile(t, "comp", `#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint K = 3;
layout(set = 0, binding = 0) readonly buffer In0 { uint x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i >= pc.end) return; y[i] = x[i] * K; }
`)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	const n = 300
	in := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		in[4*i] = byte(i)
	}
	out, regErr, runErr := ukRun(t, dev, log, spv, bind.Binding{LocalSize: 64}, 4, 4, n, in, noCPU)
	if regErr != nil {
		if !strings.Contains(regErr.Error(), "specialization constant 0") {
			t.Errorf("refused without naming specialization constant 0: %v", regErr)
		}
		return
	}
	if runErr != nil {
		t.Fatalf("run: %v", runErr)
	}
	for i := 0; i < n; i++ {
		got := uint32(out[4*i]) | uint32(out[4*i+1])<<8
		if want := uint32(byte(i)) * 3; got != want {
			t.Fatalf("y[%d] = %d, want %d (x * K with K = 3, its default)", i, got, want)
		}
	}
}

// Element counts up to 2^32-1 with a shader that handles many items per
// invocation and counts, in a one-element Whole output, the invocations
// that had work: every chunk of the range is dispatched once, with begin
// and end that do not wrap.
func TestUserKernelNearMaxElementCount(t *testing.T) {
	spv := glslc.Compile(t, "comp", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 4) buffer Out0 { uint count[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint first = pc.begin + gl_GlobalInvocationID.x * pc.params[0];
    if (first >= pc.end || first < pc.begin) return;
    atomicAdd(count[0], 1u);
}
`)
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	const ipi = 1 << 16
	reg := sched.NewRegistry()
	if err := reg.Register(1, sched.Kernel{Name: "count", Kind: sched.Streaming, Grain: 1 << 31,
		Out: []sched.StreamSpec{{Name: "count", Stride: 4, Rate: sched.Whole}}, CPU: noCPU,
		GPU: &bind.Binding{SPIRV: spv, LocalSize: 64, ItemsPerInvocation: ipi}}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	buf, err := dev.NewBuffer(4)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	for _, n := range []uint32{1, ipi, ipi + 1, 1<<32 - ipi, 1<<32 - 1} {
		if err := buf.Write(0, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
		tk.Data.Elements = n
		tk.Data.Params[0] = ipi
		tk.Data.Out[0] = buf.Stream(4, 1, 0)
		err := runOne(t, m, tk)
		if err != nil {
			if !errors.Is(err, gpu.ErrBadBinding) || !strings.Contains(err.Error(), "2^32") {
				t.Fatalf("n %d: %v", n, err)
			}
			t.Logf("n %d refused: %v", n, err)
			continue
		}
		got := make([]byte, 4)
		if err := buf.Read(0, got); err != nil {
			t.Fatal(err)
		}
		c := uint32(got[0]) | uint32(got[1])<<8 | uint32(got[2])<<16 | uint32(got[3])<<24
		if want := uint32((uint64(n) + ipi - 1) / ipi); c != want {
			t.Errorf("n %d: %d invocations had work, want %d", n, c, want)
		}
	}
}
