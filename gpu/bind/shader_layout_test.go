package bind_test

// Shapes of a user's shader whose layout disagrees with the kernel's
// streams in ways a driver does not catch (each would run and give every
// item wrong or zero): a push-constant block without begin and end, or with
// its members in another order, or none at all; an array after a header
// member in a stream's block; a std140 uniform float array bound to a
// packed float stream; a shader that stores into an input (never copied
// back, so the stores are lost). Each is refused at Register, naming what
// is wrong; the README's shape (and the same with params read, the range
// read in a helper function or through a longer array) is accepted.

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

const scaleMain = `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

const ioBlocks = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
`

func TestUserShaderRangeAndLayoutRefused(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		binding bind.Binding
		want    []string // each must appear in the error (case-insensitive)
	}{
		{"push constants without params", ioBlocks +
			"layout(push_constant) uniform PC { uint begin; uint end; } pc;\n" + scaleMain,
			bind.Binding{}, []string{"push-constant block is 8 bytes", "bytes 32-39", "uint params[8]; uint begin; uint end;"}},
		{"push constants in another order", ioBlocks +
			"layout(push_constant) uniform PC { uint begin; uint end; uint params[8]; } pc;\n" + scaleMain,
			bind.Binding{}, []string{"never reads push-constant bytes 32-35 (begin) and 36-39 (end)", "order"}},
		{"push constants, end ignored", ioBlocks + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    y[i] = 2.0 * x[i];
}
`, bind.Binding{}, []string{"36-39 (end)"}},
		{"no push constants", ioBlocks + `
void main() {
    uint i = gl_GlobalInvocationID.x;
    y[i] = 2.0 * x[i];
}
`, bind.Binding{}, []string{"no push-constant block", "[begin, end)"}},
		{"header member before the output array", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint n; float y[]; };
` + pcBlock + scaleMain, bind.Binding{}, []string{`binding 4 (output stream 0 "y")`, "starts at byte 4"}},
		{"std140 float array for a packed float stream", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) uniform In0 { float x[256]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + scaleMain, bind.Binding{UniformIn: [4]bool{true}},
			[]string{`binding 0 (input stream 0 "x")`, "4-byte elements padded to a stride of 16", "std140"}},
		{"input written in place", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    x[i] = 2.0 * x[i];
    y[i] = x[i];
}
`, bind.Binding{}, []string{`binding 0 (input stream 0 "x") is written by the shader`, "lost"}},
		{"output never stored to", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) buffer Out0 { float y[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { float z[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    z[i] = 2.0 * x[i] + y[i];
}
`, bind.Binding{}, []string{`binding 4 (output stream 0 "y") is never stored to`}},
		{"atomic on an input", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer In0 { uint x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = atomicAdd(x[i % 4u], 1u);
}
`, bind.Binding{}, []string{`binding 0 (input stream 0 "x") is written`}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			wantRefused(t, sched.Kernel{}, c.binding, c.src, c.want)
		})
	}
}

func TestUserShaderRangeReadsAccepted(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"params used", ioBlocks + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = uintBitsToFloat(pc.params[0]) * x[i] + float(pc.params[gl_LocalInvocationID.x % 8u]);
}
`},
		{"range read in a helper", ioBlocks + pcBlock + `
bool workItem(out uint item) {
    uint g = gl_GlobalInvocationID.x;
    item = pc.begin + g;
    return g < pc.end - pc.begin;
}
void main() {
    uint i;
    if (!workItem(i)) { return; }
    y[i] = 2.0 * x[i];
}
`},
		{"input not readonly but only read", strings.Replace(ioBlocks, "readonly buffer In0", "buffer In0", 1) + pcBlock + scaleMain},
		{"params as a longer array", ioBlocks + "layout(push_constant) uniform PC { uint w[10]; } pc;\n" + `
void main() {
    uint i = pc.w[8] + gl_GlobalInvocationID.x;
    if (i >= pc.w[9]) { return; }
    y[i] = 2.0 * x[i];
}
`},
		{"std140 vec4 array for a 16-byte stream", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) uniform In0 { vec4 x[256]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i % 256u].x;
}
`},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			b := &bind.Binding{SPIRV: compileGLSL(t, c.src)}
			k := sched.Kernel{}
			if strings.Contains(c.name, "std140") {
				b.UniformIn[0] = true
				k.In = []sched.StreamSpec{{Name: "x", Stride: 16, Rate: sched.Whole}}
			}
			if err := register(k, b); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestUserShaderOtherStage: a vertex shader given as the compute module is
// refused at Register, naming the stage it is.
func TestUserShaderOtherStage(t *testing.T) {
	spv := glslc.Compile(t, "vert", "#version 450\nvoid main() { gl_Position = vec4(0.0); }\n")
	err := register(sched.Kernel{}, &bind.Binding{SPIRV: spv})
	if !errors.Is(err, bind.ErrBadBinding) || !strings.Contains(err.Error(), `entry point "main" is a Vertex shader, want GLCompute`) {
		t.Fatalf("a vertex shader as the kernel's module: %v", err)
	}
}
