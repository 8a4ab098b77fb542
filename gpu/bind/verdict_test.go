package bind_test

// Shaders that a user compiles in different ways (GLSL at -O, -O0 and -g,
// HLSL through glslc and glslangValidator, hand-written SPIR-V assembly)
// must get the same verdict from Check whatever the compiler kept: an
// unused declaration is harmless, an input the shader never reads may lack
// its binding, an output never stored to is refused, and stores are
// followed through OpCopyObject.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// glslLevels are the ways a user compiles GLSL: the optimiser removes what
// the shader never uses and strips names, -O0 keeps both, -g adds debug
// lines whose literals may equal any id.
var glslLevels = []string{"-O", "-O0", "-g"}

// verdict registers b against a kernel with the given streams and returns
// the error ("" when accepted).
func verdict(in, out []sched.StreamSpec, b *bind.Binding) string {
	err := register(sched.Kernel{In: in, Out: out}, b)
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantVerdict checks an error string against want: "" for accepted, else
// every substring in want.
func wantVerdict(t *testing.T, what, got string, want []string) {
	t.Helper()
	if len(want) == 0 {
		if got != "" {
			t.Errorf("%s: refused: %s", what, got)
		}
		return
	}
	if got == "" {
		t.Errorf("%s: accepted, want refused with %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: error does not say %q: %s", what, w, got)
		}
	}
}

// sharedHeader declares every slot of the contract, as a header included
// by several kernels does; each kernel uses some of them.
const sharedHeader = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) readonly buffer In1 { float z[]; };
layout(set = 0, binding = 2) readonly buffer In2 { float in2[]; };
layout(set = 0, binding = 3) readonly buffer In3 { float in3[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { float w[]; };
layout(set = 0, binding = 6) writeonly buffer Out2 { float out2[]; };
layout(set = 0, binding = 7) writeonly buffer Out3 { float out3[]; };
layout(set = 1, binding = 0) uniform sampler2D unusedTexture;
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
`

func TestVerdictSameAtEveryOptimisationLevel(t *testing.T) {
	x, z := sched.StreamSpec{Name: "x", Stride: 4}, sched.StreamSpec{Name: "z", Stride: 4}
	y, w := sched.StreamSpec{Name: "y", Stride: 4}, sched.StreamSpec{Name: "w", Stride: 4}
	cases := []struct {
		name    string
		src     string
		in, out []sched.StreamSpec
		want    []string // nil: accepted
	}{
		{"declared input never read", ioBlocks + "layout(set = 0, binding = 1) readonly buffer In1 { float z[]; };\n" + pcBlock + scaleMain,
			[]sched.StreamSpec{x, z}, []sched.StreamSpec{y}, nil},
		{"input stream without a binding", ioBlocks + pcBlock + scaleMain,
			[]sched.StreamSpec{x, z}, []sched.StreamSpec{y}, nil},
		{"shared header declaring every slot", sharedHeader + scaleMain,
			[]sched.StreamSpec{x}, []sched.StreamSpec{y}, nil},
		{"shared header, two inputs and two outputs", sharedHeader + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = x[i] + z[i];
    w[i] = x[i] - z[i];
}
`, []sched.StreamSpec{x, z}, []sched.StreamSpec{y, w}, nil},
		{"declared output never stored to", sharedHeader + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    w[i] = x[i];
}
`, []sched.StreamSpec{x}, []sched.StreamSpec{y, w}, []string{`binding 4 (output stream 0 "y") is never stored to`}},
		{"output stream without a binding", ioBlocks + pcBlock + scaleMain,
			[]sched.StreamSpec{x}, []sched.StreamSpec{y, w}, []string{`binding 5 (output stream 1 "w") is never stored to`}},
		{"output only read", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) buffer Out0 { float y[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { float w[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    w[i] = x[i] + y[i];
}
`, []sched.StreamSpec{x}, []sched.StreamSpec{y, w}, []string{`binding 4 (output stream 0 "y") is never stored to`}},
		{"input stored to", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    x[i] = 0.0;
    y[i] = 1.0;
}
`, []sched.StreamSpec{x}, []sched.StreamSpec{y}, []string{"shader binding 0 (input stream 0 \"x\") is written by the shader"}},
		{"used binding beyond the kernel's inputs", sharedHeader + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = x[i] + z[i];
}
`, []sched.StreamSpec{x}, []sched.StreamSpec{y}, []string{"shader binding 1 reads input stream 1, but the kernel declares 1 inputs"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			for _, lvl := range glslLevels {
				spv := glslc.CompileFlags(t, "comp", c.src, lvl)
				wantVerdict(t, "glslc "+lvl, verdict(c.in, c.out, &bind.Binding{SPIRV: spv}), c.want)
			}
		})
	}
}

// scaleHLSL is the README's scale kernel in HLSL: the contract's push
// constants as a [[vk::push_constant]] ConstantBuffer, the streams as
// structured buffers, the workgroup size fixed by numthreads.
const scaleHLSL = `struct PC { uint params[8]; uint begin; uint end; };
[[vk::push_constant]] ConstantBuffer<PC> pc;
[[vk::binding(0, 0)]] StructuredBuffer<float> x;
[[vk::binding(4, 0)]] RWStructuredBuffer<float> y;
[numthreads(NUMTHREADS)]
void main(uint3 id : SV_DispatchThreadID) {
    uint i = pc.begin + id.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

// hlslFrontEnds are the HLSL compilers Debian ships, with the flags a user
// would pass (glslc at its default and at -O).
var hlslFrontEnds = []struct {
	name, tool string
	flags      []string
}{
	{"glslc", glslc.Glslc, nil},
	{"glslc -O", glslc.Glslc, []string{"-O"}},
	{"glslangValidator", glslc.GlslangValidator, nil},
}

func TestHLSLKernels(t *testing.T) {
	cases := []struct {
		name       string
		numthreads string
		pc         string // replaces the push-constant struct, if set
		local      uint32
		want       []string
	}{
		{"numthreads 64, LocalSize default", "64, 1, 1", "", 0, nil},
		{"numthreads 128, LocalSize 128", "128, 1, 1", "", 128, nil},
		{"numthreads 128, LocalSize default", "128, 1, 1", "", 0,
			[]string{"workgroup size X is fixed at 128 in the shader, but the executor dispatches it with Binding.LocalSize = 64", "set Binding.LocalSize"}},
		{"numthreads 32, LocalSize 64", "32, 1, 1", "", 64, []string{"fixed at 32", "LocalSize = 64"}},
		{"numthreads 64 x 2", "64, 2, 1", "", 0, []string{"workgroup size is 2 x 1 in Y x Z"}},
		{"push constants end before begin", "64, 1, 1", "struct PC { uint params[8]; uint end; uint begin; };", 0,
			[]string{`push-constant member "end" is at byte 32, but the contract's end is at byte 36`}},
	}
	for _, fe := range hlslFrontEnds {
		for _, c := range cases {
			t.Run(strings.ReplaceAll(fe.name+"/"+c.name, " ", "_"), func(t *testing.T) {
				src := strings.Replace(scaleHLSL, "NUMTHREADS", c.numthreads, 1)
				if c.pc != "" {
					src = strings.Replace(src, "struct PC { uint params[8]; uint begin; uint end; };", c.pc, 1)
				}
				spv := glslc.CompileHLSL(t, fe.tool, src, fe.flags...)
				want := c.want
				if c.pc != "" && strings.Contains(strings.Join(fe.flags, " "), "-O") {
					// -O strips the member names: a block of the right
					// sizes in another order cannot be told apart (the
					// documented limit), so there is no verdict to check.
					return
				}
				wantVerdict(t, fe.name, verdict(nil, nil, &bind.Binding{SPIRV: spv, LocalSize: c.local}), want)
			})
		}
	}
}

// Stores of testdata/copy_object.spvasm.
const (
	// The output is stored through a copy of its access chain.
	storeOutputViaCopy = `
         %py = OpAccessChain %ptr %y %int_0 %i
        %pyc = OpCopyObject %ptr %py
               OpStore %pyc %v`
	// The output is stored directly, and the input through a copy of
	// an access chain into it (a store that is lost).
	storeInputViaCopy = `
         %py = OpAccessChain %ptr %y %int_0 %i
               OpStore %py %v
         %pxw = OpAccessChain %ptr %x %int_0 %i
         %pxc = OpCopyObject %ptr %pxw
               OpStore %pxc %v`
)

// copyObjectSPIRV assembles testdata/copy_object.spvasm with the given
// stores (storeOutputViaCopy or storeInputViaCopy).
func copyObjectSPIRV(t *testing.T, stores string) []byte {
	src, err := os.ReadFile("testdata/copy_object.spvasm")
	if err != nil {
		t.Fatal(err)
	}
	return glslc.Assemble(t, strings.Replace(string(src), "; {{stores}}", stores, 1))
}

func TestStoresFollowedThroughCopyObject(t *testing.T) {
	f := sched.StreamSpec{Name: "x", Stride: 4}
	y := sched.StreamSpec{Name: "y", Stride: 4}
	out := copyObjectSPIRV(t, storeOutputViaCopy)
	if got := verdict([]sched.StreamSpec{f}, []sched.StreamSpec{y}, &bind.Binding{SPIRV: out}); got != "" {
		t.Errorf("output stored through OpCopyObject: refused: %s", got)
	}
	in := copyObjectSPIRV(t, storeInputViaCopy)
	wantVerdict(t, "input stored through OpCopyObject", verdict([]sched.StreamSpec{f}, []sched.StreamSpec{y}, &bind.Binding{SPIRV: in}),
		[]string{`shader binding 0 (input stream 0 "x") is written by the shader`})
}

func TestPushConstantOrder(t *testing.T) {
	dyn := `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i] + float(pc.params[gl_LocalInvocationID.x % 8u]);
}
`
	cases := []struct {
		name, block string
		body        string
		levels      map[string][]string // verdict per glslc level (nil: accepted)
	}{
		{"end before begin", "uint params[8]; uint end; uint begin;", scaleMain, map[string][]string{
			// -O strips the names, and the sizes match the contract's:
			// the documented limit.
			"-O":  nil,
			"-O0": {`push-constant member "end" is at byte 32, but the contract's end is at byte 36`},
			"-g":  {`push-constant member "end" is at byte 32`},
		}},
		{"params last, indexed with a variable", "uint begin; uint end; uint params[8];", dyn, map[string][]string{
			"-O":  {"reads push-constant bytes 32-35 (begin) and 36-39 (end) only through an array indexed with a variable"},
			"-O0": {`push-constant member "begin" is at byte 0, but the contract's begin is at byte 32`},
			"-g":  {`push-constant member "begin" is at byte 0`},
		}},
		{"contract's order, params indexed with a variable", "uint params[8]; uint begin; uint end;", dyn, map[string][]string{
			"-O": nil, "-O0": nil, "-g": nil,
		}},
		{"begin a float", "uint params[8]; float begin; uint end;", `
void main() {
    uint i = uint(pc.begin) + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`, map[string][]string{
			"-O":  {"push-constant member 1 at bytes 32-35, the contract's begin, is not a 32-bit integer"},
			"-O0": {`push-constant member 1 ("begin") at bytes 32-35, the contract's begin, is not a 32-bit integer`},
			"-g":  {"is not a 32-bit integer"},
		}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			src := ioBlocks + fmt.Sprintf("layout(push_constant) uniform PC { %s } pc;\n", c.block) + c.body
			for _, lvl := range glslLevels {
				spv := glslc.CompileFlags(t, "comp", src, lvl)
				wantVerdict(t, "glslc "+lvl, verdict(nil, nil, &bind.Binding{SPIRV: spv}), c.levels[lvl])
			}
		})
	}
}

// TestScalarLayoutReported: a layout(scalar) vec3 array (stride 12) is
// bound to a packed 12-byte stream and reported as needing the device's
// scalarBlockLayout feature, which package gpu enables or refuses; the
// same array under std430 (stride 16) is refused for that stream.
func TestScalarLayoutReported(t *testing.T) {
	src := `#version 450
#extension GL_EXT_scalar_block_layout : require
layout(local_size_x_id = 0) in;
layout(scalar, set = 0, binding = 0) readonly buffer In0 { vec3 x[]; };
layout(scalar, set = 0, binding = 4) writeonly buffer Out0 { vec3 y[]; };
` + pcBlock + scaleMain
	v3 := []sched.StreamSpec{{Name: "x", Stride: 12}}
	v3out := []sched.StreamSpec{{Name: "y", Stride: 12}}
	for _, lvl := range glslLevels {
		spv := glslc.CompileFlags(t, "comp", src, lvl)
		m, err := bind.ParseSPIRV(spv)
		if err != nil {
			t.Fatal(err)
		}
		if !m.NeedsScalarBlockLayout {
			t.Errorf("%s: a layout(scalar) vec3 array is not reported as needing scalarBlockLayout", lvl)
		}
		wantVerdict(t, "scalar "+lvl, verdict(v3, v3out, &bind.Binding{SPIRV: spv}), nil)
		std := glslc.CompileFlags(t, "comp", strings.ReplaceAll(src, "scalar, ", "std430, "), lvl)
		if m, err := bind.ParseSPIRV(std); err != nil || m.NeedsScalarBlockLayout {
			t.Errorf("%s: std430 module: NeedsScalarBlockLayout %v, err %v", lvl, m != nil && m.NeedsScalarBlockLayout, err)
		}
		wantVerdict(t, "std430 "+lvl, verdict(v3, v3out, &bind.Binding{SPIRV: std}), []string{"indexes elements of 16 bytes, but the stream's stride is 12 bytes"})
	}
	// The project's own modules and the README's shape need no feature.
	if m, err := bind.ParseSPIRV(compileGLSL(t, scaleShader)); err != nil || m.NeedsScalarBlockLayout {
		t.Errorf("the scale shader: NeedsScalarBlockLayout %v, err %v", m != nil && m.NeedsScalarBlockLayout, err)
	}
}

// TestUnusedDeclarationsReportedUnused: ParseSPIRV reports the bindings of
// a shared header that the shader never uses (buffers, and an image in
// another set) as unused, and Check ignores them.
func TestUnusedDeclarationsReportedUnused(t *testing.T) {
	spv := glslc.CompileFlags(t, "comp", sharedHeader+scaleMain, "-O0")
	m, err := bind.ParseSPIRV(spv)
	if err != nil {
		t.Fatal(err)
	}
	used := map[uint32]bool{}
	for _, r := range m.Resources {
		if r.Set == 0 {
			used[r.Binding] = r.Used
		} else if r.Used {
			t.Errorf("set %d binding %d reported used", r.Set, r.Binding)
		}
	}
	want := map[uint32]bool{0: true, 1: false, 2: false, 3: false, 4: true, 5: false, 6: false, 7: false}
	if fmt.Sprint(used) != fmt.Sprint(want) {
		t.Errorf("used bindings %v, want %v", used, want)
	}
	if err := register(sched.Kernel{}, &bind.Binding{SPIRV: spv}); err != nil {
		t.Errorf("refused: %v", err)
	}
	if !errors.Is(register(sched.Kernel{Out: []sched.StreamSpec{}}, &bind.Binding{SPIRV: spv}), bind.ErrBadBinding) {
		t.Errorf("a kernel without outputs accepted a shader that stores to binding 4")
	}
}
