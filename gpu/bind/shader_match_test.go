package bind_test

// A user's own GLSL, compiled with glslc the way the README's GPU path
// expects, registered with sched.Registry.Register: every way the shader can
// disagree with the kernel's declared streams must be refused at
// registration, with an error naming the binding or the stream, and garbage
// modules must be refused without a panic.

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// compileGLSL compiles a user's compute shader with glslc for Vulkan 1.0.
func compileGLSL(t *testing.T, src string) []byte { return glslc.Compile(t, "comp", src) }

const pcBlock = "layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;\n"

// scaleShader is the README's "scale" kernel as a user writes it in GLSL.
const scaleShader = `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`

func noop(*sched.Ctx, *sched.TaskData) error { return nil }

// register registers a README-shaped scale kernel (one float input x, one
// float output y unless changed) with the given binding.
func register(k sched.Kernel, b *bind.Binding) error {
	if k.Name == "" {
		k.Name = "scale"
	}
	k.Kind = sched.Streaming
	if k.In == nil {
		k.In = []sched.StreamSpec{{Name: "x", Stride: 4}}
	}
	if k.Out == nil {
		k.Out = []sched.StreamSpec{{Name: "y", Stride: 4}}
	}
	k.CPU = noop
	k.GPU = b
	return sched.NewRegistry().Register(1, k)
}

func TestUserShaderAccepted(t *testing.T) {
	spv := compileGLSL(t, scaleShader)
	if err := register(sched.Kernel{}, &bind.Binding{SPIRV: spv}); err != nil {
		t.Fatalf("the README's scale shader was refused: %v", err)
	}
	if err := register(sched.Kernel{}, &bind.Binding{SPIRV: spv, LocalSize: 256, ItemsPerInvocation: 1}); err != nil {
		t.Fatalf("LocalSize 256: %v", err)
	}
}

// TestUserShaderMismatches: each shader differs from the declaration in one
// way; the error must wrap ErrBadBinding and name what disagrees.
func TestUserShaderMismatches(t *testing.T) {
	body := `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
}
`
	cases := []struct {
		name    string
		src     string
		kernel  sched.Kernel
		binding bind.Binding
		want    []string // every one must appear in the error (case-insensitive)
	}{
		{"output moved to binding 1", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out0 { float y[]; };
` + pcBlock + body, sched.Kernel{}, bind.Binding{}, []string{"binding 1"}},
		{"no output binding", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer In0 { float x[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    x[i] = 2.0 * x[i];
}
`, sched.Kernel{}, bind.Binding{}, []string{"y"}},
		{"extra binding 5", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(set = 0, binding = 5) writeonly buffer Out1 { float z[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i];
    z[i] = x[i];
}
`, sched.Kernel{}, bind.Binding{}, []string{"binding 5"}},
		{"set 1", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 1, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + body, sched.Kernel{}, bind.Binding{}, []string{"set 1"}},
		{"uniform input, declared storage", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) uniform In0 { vec4 x[64]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i % 64].x;
}
`, sched.Kernel{In: []sched.StreamSpec{{Name: "x", Stride: 16}}}, bind.Binding{}, []string{"binding 0", "uniform"}},
		{"storage input, declared uniform", scaleShader, sched.Kernel{}, bind.Binding{UniformIn: [4]bool{true}}, []string{"binding 0", "uniform"}},
		{"readonly output", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer In0 { float x[]; };
layout(set = 0, binding = 4) readonly buffer Out0 { float y[]; };
` + pcBlock + `
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    x[i] = y[i];
}
`, sched.Kernel{}, bind.Binding{}, []string{"binding 4", "readonly"}},
		{"push constants too large", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; mat4 extra; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) { return; }
    y[i] = 2.0 * x[i] * pc.extra[0][0];
}
`, sched.Kernel{}, bind.Binding{}, []string{"push"}},
		{"vec3 array for a packed 12-byte stream", `#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { vec3 x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { vec3 y[]; };
` + pcBlock + body, sched.Kernel{
			In:  []sched.StreamSpec{{Name: "x", Stride: 12}},
			Out: []sched.StreamSpec{{Name: "y", Stride: 12}},
		}, bind.Binding{}, []string{"x", "16", "12"}},
		{"fixed local_size_x", `#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + body, sched.Kernel{}, bind.Binding{LocalSize: 128}, []string{"fixed at 64", "LocalSize = 128", "local_size_x_id = 0"}},
		{"local_size_y 2", `#version 450
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float y[]; };
` + pcBlock + body, sched.Kernel{}, bind.Binding{}, []string{"Y"}},
		{"wrong entry name", scaleShader, sched.Kernel{}, bind.Binding{Entry: "scale"}, []string{"scale"}},
		{"LocalSize beyond the limit", scaleShader, sched.Kernel{}, bind.Binding{LocalSize: 4096}, []string{"LocalSize"}},
		{"second declared output absent from the shader", scaleShader, sched.Kernel{
			Out: []sched.StreamSpec{{Name: "y", Stride: 4}, {Name: "w", Stride: 4}},
		}, bind.Binding{}, []string{"w"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			wantRefused(t, c.kernel, c.binding, c.src, c.want)
		})
	}
}

// wantRefused compiles src into b and registers it with k: it must be
// refused with an error wrapping bind.ErrBadBinding that says each of want
// (case-insensitive); accepted, the shader would compute wrong values or
// zeros on a device.
func wantRefused(t *testing.T, k sched.Kernel, b bind.Binding, src string, want []string) {
	t.Helper()
	b.SPIRV = compileGLSL(t, src)
	err := register(k, &b)
	if err == nil {
		t.Fatalf("accepted (on a device the outputs come out wrong or zero)")
	}
	if !errors.Is(err, bind.ErrBadBinding) {
		t.Errorf("error does not wrap ErrBadBinding: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
}

// TestUserShaderGarbage: modules that are not SPIR-V, cut short or
// corrupted are refused with ErrBadBinding, never a panic.
func TestUserShaderGarbage(t *testing.T) {
	spv := compileGLSL(t, scaleShader)
	var inputs [][]byte
	inputs = append(inputs, nil, []byte{}, []byte{1, 2, 3}, []byte("#version 450\nvoid main(){}"), spv[:20], spv[:len(spv)-1], spv[:len(spv)-4], spv[:len(spv)/2&^3])
	// Flip every 4th word's high byte: word counts, opcodes and IDs go wild.
	for w := 5; w < len(spv)/4; w += 7 {
		c := append([]byte(nil), spv...)
		c[4*w+3] ^= 0xff
		inputs = append(inputs, c)
		c2 := append([]byte(nil), spv...)
		c2[4*w+2] ^= 0x7f // instruction word count
		inputs = append(inputs, c2)
	}
	// Big-endian magic.
	be := append([]byte(nil), spv...)
	for i := 0; i+4 <= len(be); i += 4 {
		be[i], be[i+1], be[i+2], be[i+3] = be[i+3], be[i+2], be[i+1], be[i]
	}
	inputs = append(inputs, be)
	for i, in := range inputs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("input %d (%d bytes): panic %v", i, len(in), r)
				}
			}()
			err := register(sched.Kernel{}, &bind.Binding{SPIRV: in})
			if i < 8 && err == nil {
				t.Errorf("input %d (%d bytes) accepted", i, len(in))
			}
			if err != nil && !errors.Is(err, bind.ErrBadBinding) {
				t.Errorf("input %d: error does not wrap ErrBadBinding: %v", i, err)
			}
			_ = bind.CheckSPIRV(in, "main")
			_, _ = bind.ParseSPIRV(in)
		}()
	}
	// The nil binding pointer and a binding on a kernel without streams.
	if err := (*bind.Binding)(nil).Check(nil, nil); err == nil {
		t.Errorf("nil binding accepted")
	}
}
