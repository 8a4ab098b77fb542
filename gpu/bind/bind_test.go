package bind

import (
	"errors"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"strings"
	"testing"
)

// glsl compiles a compute shader with glslc (as gpu/testdata/gen.sh does).
func glsl(t *testing.T, src string) []byte { return glslc.Compile(t, "comp", src) }

const pc = "layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;\n"

// TestCheck compiles small shaders that each break the contract in one way
// and checks the error Check gives for the kernel "y = f(x)" (one input of
// 4-byte floats, one output of 12-byte vec3s).
func TestCheck(t *testing.T) {
	in := []Stream{{Name: "x", Stride: 4}}
	out := []Stream{{Name: "v", Stride: 12}}
	for _, c := range []struct {
		name, src, want string
	}{
		{"valid", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 4) writeonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[3*i] = x[i]; } }`, ""},
		{"vec3 array", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(std430, binding = 4) writeonly buffer Out0 { vec3 v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[i] = vec3(x[i]); } }`,
			`binding 4 (output stream 0 "v") indexes elements of 16 bytes, but the stream's stride is 12 bytes`},
		{"readonly output", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) buffer In0 { float x[]; };
layout(binding = 4) readonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { x[i] = v[i]; } }`,
			`binding 4 (output "v") is readonly in the shader`},
		{"2-D workgroup", `#version 450
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 4) writeonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[i] = x[i]; } }`,
			"workgroup size is 2 x 1 in Y x Z"},
		{"fixed workgroup", `#version 450
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 4) writeonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[i] = x[i]; } }`,
			"workgroup size X is fixed at 32 in the shader, but the executor dispatches it with Binding.LocalSize = 64"},
		{"push constants", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 4) writeonly buffer Out0 { float v[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; uint more[4]; } pc;
void main() { uint i = pc.begin + gl_GlobalInvocationID.x + pc.more[3]; if (i < pc.end) { v[i] = x[i]; } }`,
			"push-constant block is 56 bytes, the contract's is 40"},
		{"uniform input", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) uniform In0 { vec4 x[4]; };
layout(binding = 4) writeonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[i] = x[i%4].x; } }`,
			`binding 0 (input "x") is a uniform block in the shader, but Binding.UniformIn[0] = false says storage buffer`},
		{"output at an input's binding", `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 1) writeonly buffer Out0 { float v[]; };
` + pc + `void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { v[i] = x[i]; } }`,
			`shader binding 1 reads input stream 1, but the kernel declares 1 inputs ("x"); binding 4 (output stream 0 "v") is never stored to`},
	} {
		b := &Binding{SPIRV: glsl(t, c.src)}
		err := b.Check(in, out)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want ErrBadBinding with %q", c.name, err, c.want)
		}
	}
	var nilb *Binding
	if err := nilb.Check(in, out); !errors.Is(err, ErrBadBinding) {
		t.Errorf("nil binding: %v", err)
	}
}
