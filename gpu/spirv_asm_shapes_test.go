package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

const baseASM = `
               OpCapability Shader
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %4 "main" %21
               OpExecutionMode %4 LocalSize 1 1 1
               OpDecorate %10 ArrayStride 4
               OpMemberDecorate %11 0 Offset 0
               OpMemberDecorate %11 1 Offset 32
               OpMemberDecorate %11 2 Offset 36
               OpDecorate %11 Block
               OpDecorate %21 BuiltIn GlobalInvocationId
               OpDecorate %36 ArrayStride 4
               OpMemberDecorate %37 0 NonReadable
               OpMemberDecorate %37 0 Offset 0
               OpDecorate %37 BufferBlock
               OpDecorate %39 DescriptorSet 0
               OpDecorate %39 Binding 4
               OpDecorate %42 ArrayStride 4
               OpMemberDecorate %43 0 NonWritable
               OpMemberDecorate %43 0 Offset 0
               OpDecorate %43 BufferBlock
               OpDecorate %45 DescriptorSet 0
               OpDecorate %45 Binding 0
               OpDecorate %58 SpecId 0
               OpDecorate %60 BuiltIn WorkgroupSize
          %2 = OpTypeVoid
          %3 = OpTypeFunction %2
          %6 = OpTypeInt 32 0
          %9 = OpConstant %6 8
         %10 = OpTypeArray %6 %9
         %11 = OpTypeStruct %10 %6 %6
         %12 = OpTypePointer PushConstant %11
         %13 = OpVariable %12 PushConstant
         %14 = OpTypeInt 32 1
         %15 = OpConstant %14 1
         %16 = OpTypePointer PushConstant %6
         %19 = OpTypeVector %6 3
         %20 = OpTypePointer Input %19
         %21 = OpVariable %20 Input
         %22 = OpConstant %6 0
         %23 = OpTypePointer Input %6
         %28 = OpConstant %14 2
         %31 = OpTypeBool
         %36 = OpTypeRuntimeArray %6
         %37 = OpTypeStruct %36
         %38 = OpTypePointer Uniform %37
         %39 = OpVariable %38 Uniform
         %40 = OpConstant %14 0
         %42 = OpTypeRuntimeArray %6
         %43 = OpTypeStruct %42
         %44 = OpTypePointer Uniform %43
         %45 = OpVariable %44 Uniform
         %47 = OpTypePointer Uniform %6
         %53 = OpConstant %14 7
         %58 = OpSpecConstant %6 1
         %59 = OpConstant %6 1
         %60 = OpSpecConstantComposite %19 %58 %59 %59
          %4 = OpFunction %2 None %3
          %5 = OpLabel
               OpSelectionMerge %61 None
               OpSwitch %22 %62
         %62 = OpLabel
         %17 = OpAccessChain %16 %13 %15
         %18 = OpLoad %6 %17
         %24 = OpAccessChain %23 %21 %22
         %25 = OpLoad %6 %24
         %26 = OpIAdd %6 %18 %25
         %29 = OpAccessChain %16 %13 %28
         %30 = OpLoad %6 %29
         %32 = OpUGreaterThanEqual %31 %26 %30
               OpSelectionMerge %34 None
               OpBranchConditional %32 %33 %34
         %33 = OpLabel
               OpBranch %61
         %34 = OpLabel
         %48 = OpAccessChain %47 %45 %40 %26
         %49 = OpLoad %6 %48
         %50 = OpAccessChain %16 %13 %40 %40
         %51 = OpLoad %6 %50
         %52 = OpIMul %6 %49 %51
         %54 = OpAccessChain %16 %13 %40 %53
         %55 = OpLoad %6 %54
         %56 = OpIAdd %6 %52 %55
         %57 = OpAccessChain %47 %39 %40 %26
               OpStore %57 %56
               OpBranch %61
         %61 = OpLabel
               OpReturn
               OpFunctionEnd
`

func xaCPU(_ *sched.Ctx, d *sched.TaskData) error {
	x, y := sched.View[uint32](d.In[0]), sched.View[uint32](d.Out[0])
	for i := d.Begin; i < d.End; i++ {
		y[i] = x[i]*d.Params[0] + d.Params[7]
	}
	return nil
}

func xaRegister(spv []byte, b bind.Binding) error {
	reg := sched.NewRegistry()
	b.SPIRV = spv
	return reg.Register(1, sched.Kernel{Name: "xa", Kind: sched.Streaming, Grain: 1000,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: xaCPU, GPU: &b})
}

func xaRun(t *testing.T, dev *gpu.Device, log *gputest.Log, spv []byte, b bind.Binding) error {
	t.Helper()
	reg := sched.NewRegistry()
	b.SPIRV = spv
	if err := reg.Register(1, sched.Kernel{Name: "xa", Kind: sched.Streaming, Grain: 1000,
		In: []sched.StreamSpec{{Name: "x", Stride: 4}}, Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: xaCPU, GPU: &b}); err != nil {
		return fmt.Errorf("Register: %w", err)
	}
	_, _, m := gputest.Sched(t, dev, log, sched.Config{Kernels: reg, Workers: 1}, gpu.ExecutorOptions{})
	for _, n := range []int{1, 5000} {
		x, y := make([]uint32, n), make([]uint32, n)
		for i := range x {
			x[i] = uint32(i)
		}
		tk := sched.Task{Kernel: 1, Affinity: sched.GPU}
		tk.Data.Elements = uint32(n)
		tk.Data.Params[0], tk.Data.Params[7] = 5, 9
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
		if err := runOne(t, m, tk); err != nil {
			return err
		}
		for i := range y {
			if y[i] != uint32(i)*5+9 {
				return fmt.Errorf("n %d: y[%d] = %d, want %d", n, i, y[i], uint32(i)*5+9)
			}
		}
	}
	return nil
}

func TestAssembledShaderShapes(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	rep := func(s string, pairs ...string) string {
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("asm lacks %q", pairs[i])
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	cases := []struct {
		name   string
		asm    string
		b      bind.Binding
		wantOK bool
	}{
		{"base", baseASM, bind.Binding{}, true},
		{"decorations", rep(baseASM, "OpDecorate %39 Binding 4\n", "OpDecorate %39 Binding 4\nOpDecorate %39 Restrict\nOpDecorate %45 Aliased\nOpMemberDecorate %37 0 Coherent\nOpMemberDecorate %43 0 Volatile\nOpDecorate %26 NoContraction\n"), bind.Binding{}, true},
		{"specdefault256", rep(baseASM, "%58 = OpSpecConstant %6 1", "%58 = OpSpecConstant %6 256"), bind.Binding{LocalSize: 64}, true},
		{"specLocal7", baseASM, bind.Binding{LocalSize: 7}, true},
		{"specLocal1024", baseASM, bind.Binding{LocalSize: 1024}, true},
		{"specLocal1025", baseASM, bind.Binding{LocalSize: 1025}, false},
		{"specY", rep(baseASM, "OpDecorate %58 SpecId 0\n", "OpDecorate %58 SpecId 0\nOpDecorate %99 SpecId 1\n",
			"%60 = OpSpecConstantComposite %19 %58 %59 %59", "%99 = OpSpecConstant %6 1\n%60 = OpSpecConstantComposite %19 %58 %99 %59"), bind.Binding{}, true},
		{"specX-id3", rep(baseASM, "OpDecorate %58 SpecId 0\n", "OpDecorate %58 SpecId 3\n"), bind.Binding{}, false},
		{"fixed64noBuiltin", rep(baseASM, "OpExecutionMode %4 LocalSize 1 1 1", "OpExecutionMode %4 LocalSize 64 1 1", "OpDecorate %60 BuiltIn WorkgroupSize\n", "", "%60 = OpSpecConstantComposite %19 %58 %59 %59\n", "", "OpDecorate %58 SpecId 0\n", "", "%58 = OpSpecConstant %6 1\n", ""), bind.Binding{}, true},
		{"fixed64wrongLocal", rep(baseASM, "OpExecutionMode %4 LocalSize 1 1 1", "OpExecutionMode %4 LocalSize 64 1 1", "OpDecorate %60 BuiltIn WorkgroupSize\n", "", "%60 = OpSpecConstantComposite %19 %58 %59 %59\n", "", "OpDecorate %58 SpecId 0\n", "", "%58 = OpSpecConstant %6 1\n", ""), bind.Binding{LocalSize: 32}, false},
		{"extraUnusedBindings", rep(baseASM, "OpDecorate %45 Binding 0\n", "OpDecorate %45 Binding 0\nOpDecorate %90 DescriptorSet 0\nOpDecorate %90 Binding 1\nOpDecorate %91 DescriptorSet 0\nOpDecorate %91 Binding 6\nOpDecorate %92 DescriptorSet 1\nOpDecorate %92 Binding 0\n",
			"%47 = OpTypePointer Uniform %6\n", "%47 = OpTypePointer Uniform %6\n%90 = OpVariable %44 Uniform\n%91 = OpVariable %38 Uniform\n%92 = OpVariable %38 Uniform\n"), bind.Binding{}, true},
		{"writesInput", rep(baseASM, "%57 = OpAccessChain %47 %39 %40 %26\n               OpStore %57 %56", "%57 = OpAccessChain %47 %39 %40 %26\n               OpStore %57 %56\n%98 = OpAccessChain %47 %45 %40 %26\nOpStore %98 %56"), bind.Binding{}, false},
		{"pcSmaller", rep(baseASM, "%9 = OpConstant %6 8", "%9 = OpConstant %6 7", "OpMemberDecorate %11 1 Offset 32", "OpMemberDecorate %11 1 Offset 28", "OpMemberDecorate %11 2 Offset 36", "OpMemberDecorate %11 2 Offset 32"), bind.Binding{}, false},
		{"pcLarger", rep(baseASM, "OpMemberDecorate %11 2 Offset 36\n", "OpMemberDecorate %11 2 Offset 36\nOpMemberDecorate %11 3 Offset 40\n", "%11 = OpTypeStruct %10 %6 %6", "%11 = OpTypeStruct %10 %6 %6 %6"), bind.Binding{}, false},
		{"pcLargerUsed", rep(baseASM, "OpMemberDecorate %11 2 Offset 36\n", "OpMemberDecorate %11 2 Offset 36\nOpMemberDecorate %11 3 Offset 40\n", "%11 = OpTypeStruct %10 %6 %6", "%11 = OpTypeStruct %10 %6 %6 %6",
			"%55 = OpLoad %6 %54\n", "%55 = OpLoad %6 %54\n%96 = OpAccessChain %16 %13 %97\n%95 = OpLoad %6 %96\n", "%53 = OpConstant %14 7\n", "%53 = OpConstant %14 7\n%97 = OpConstant %14 3\n"), bind.Binding{}, false},
		{"pcNoEnd", rep(baseASM, "%29 = OpAccessChain %16 %13 %28", "%29 = OpAccessChain %16 %13 %15"), bind.Binding{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spv := glslc.Assemble(t, c.asm)
			regErr := xaRegister(spv, c.b)
			var err error
			if regErr == nil {
				err = xaRun(t, dev, log, spv, c.b)
			} else {
				err = regErr
			}
			t.Logf("register: %v; run: %v", regErr, err)
			if c.wantOK && err != nil {
				t.Errorf("want success, got %v", err)
			}
			if !c.wantOK && err == nil {
				t.Errorf("want an error, got none")
			}
			if err != nil && regErr == nil && !c.wantOK {
				t.Errorf("refused only at run time: %v", err)
			}
		})
	}
}
