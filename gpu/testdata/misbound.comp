#version 450
// misbound: a user's "y = 2x" with its output at binding 1 instead of the
// contract's binding 4 (Out0). Registering it must fail; TestMisbound.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out0 { float y[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    y[i] = 2.0 * x[i];
}
