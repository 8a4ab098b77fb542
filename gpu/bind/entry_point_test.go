package bind_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/internal/glslc"
)

// threeEntryWGSL is naga's SPIR-V (naga --capabilities immediates
// --spirv-version 1.0) for this WGSL module of three entry points over the
// same declarations:
//
//	struct PC { params: array<u32, 8>, begin: u32, end: u32 }
//	var<immediate> pc: PC;
//	@group(0) @binding(0) var<storage, read> x: array<u32>;
//	@group(0) @binding(4) var<storage, read_write> y: array<u32>;
//	@compute @workgroup_size(64)
//	fn fill(@builtin(global_invocation_id) g: vec3<u32>) {
//	    let i = pc.begin + g.x;
//	    if (i >= pc.end) { return; }
//	    y[i] = x[i] + pc.params[0];
//	}
//	@compute @workgroup_size(64)
//	fn probe(@builtin(global_invocation_id) g: vec3<u32>) {
//	    let i = pc.begin + g.x;
//	    if (i >= pc.end) { return; }
//	    if (x[i] == 7u) { return; }
//	}
//	@compute @workgroup_size(64)
//	fn lazy(@builtin(global_invocation_id) g: vec3<u32>) {
//	    y[g.x] = x[g.x];
//	}
const threeEntryWGSL = `
; SPIR-V
; Version: 1.0
; Generator: Khronos; 28
; Bound: 87
; Schema: 0
               OpCapability Shader
               OpExtension "SPV_KHR_storage_buffer_storage_class"
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %22 "fill" %gl_GlobalInvocationID
               OpEntryPoint GLCompute %55 "probe" %gl_GlobalInvocationID_0
               OpEntryPoint GLCompute %78 "lazy" %gl_GlobalInvocationID_1
               OpExecutionMode %22 LocalSize 64 1 1
               OpExecutionMode %55 LocalSize 64 1 1
               OpExecutionMode %78 LocalSize 64 1 1
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
               OpDecorate %gl_GlobalInvocationID_1 BuiltIn GlobalInvocationId
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
%gl_GlobalInvocationID_0 = OpVariable %_ptr_Input_v3uint Input
     %uint_7 = OpConstant %uint 7
%gl_GlobalInvocationID_1 = OpVariable %_ptr_Input_v3uint Input
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
         %50 = OpIAdd %uint %46 %49
         %51 = OpAccessChain %_ptr_StorageBuffer_uint %29 %36
               OpStore %51 %50
               OpReturn
               OpFunctionEnd
         %55 = OpFunction %void None %23
         %52 = OpLabel
         %54 = OpLoad %v3uint %gl_GlobalInvocationID_0
         %56 = OpAccessChain %_ptr_PushConstant__struct_6 %9 %uint_0
         %57 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %12 %uint_0
               OpBranch %59
         %59 = OpLabel
         %60 = OpAccessChain %_ptr_PushConstant_uint %56 %uint_1
         %61 = OpLoad %uint %60
         %62 = OpCompositeExtract %uint %54 0
         %63 = OpIAdd %uint %61 %62
         %64 = OpAccessChain %_ptr_PushConstant_uint %56 %uint_2
         %65 = OpLoad %uint %64
         %66 = OpUGreaterThanEqual %bool %63 %65
               OpSelectionMerge %67 None
               OpBranchConditional %66 %68 %67
         %68 = OpLabel
               OpReturn
         %67 = OpLabel
         %69 = OpAccessChain %_ptr_StorageBuffer_uint %57 %63
         %70 = OpLoad %uint %69
         %71 = OpIEqual %bool %70 %uint_7
               OpSelectionMerge %72 None
               OpBranchConditional %71 %73 %74
         %73 = OpLabel
               OpReturn
         %74 = OpLabel
               OpReturn
         %72 = OpLabel
               OpReturn
               OpFunctionEnd
         %78 = OpFunction %void None %23
         %75 = OpLabel
         %77 = OpLoad %v3uint %gl_GlobalInvocationID_1
         %79 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %12 %uint_0
         %80 = OpAccessChain %_ptr_StorageBuffer__runtimearr_uint %15 %uint_0
               OpBranch %81
         %81 = OpLabel
         %82 = OpCompositeExtract %uint %77 0
         %83 = OpCompositeExtract %uint %77 0
         %84 = OpAccessChain %_ptr_StorageBuffer_uint %79 %83
         %85 = OpLoad %uint %84
         %86 = OpAccessChain %_ptr_StorageBuffer_uint %80 %82
               OpStore %86 %85
               OpReturn
               OpFunctionEnd
`

// Check judges the entry point the binding names, not the whole module: an
// entry point that never stores its output, or never reads begin and end,
// is refused although another entry point of the module does; and one
// that does not read an input needs no input stream, although another
// entry point reads binding 0.
func TestCheckJudgesTheBindingsEntryPoint(t *testing.T) {
	spv := glslc.Assemble(t, threeEntryWGSL)
	x := bind.Stream{Name: "x", Stride: 4}
	y := bind.Stream{Name: "y", Stride: 4}
	cases := []struct {
		entry   string
		in, out []bind.Stream
		want    string // "" accepts
	}{
		{"fill", []bind.Stream{x}, []bind.Stream{y}, ""},
		{"probe", []bind.Stream{x}, nil, ""},
		{"probe", []bind.Stream{x}, []bind.Stream{y}, "never stored to"},
		{"lazy", []bind.Stream{x}, []bind.Stream{y}, "never reads push-constant"},
	}
	for _, c := range cases {
		b := bind.Binding{SPIRV: spv, Entry: c.entry}
		err := b.Check(c.in, c.out)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("entry %q with %d in, %d out: %v", c.entry, len(c.in), len(c.out), err)
		case c.want != "" && err == nil:
			t.Errorf("entry %q with %d in, %d out: accepted, want an error containing %q", c.entry, len(c.in), len(c.out), c.want)
		case c.want != "" && !errors.Is(err, bind.ErrBadBinding):
			t.Errorf("entry %q: error does not wrap ErrBadBinding: %v", c.entry, err)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("entry %q: error %q does not contain %q", c.entry, err, c.want)
		}
	}
}
