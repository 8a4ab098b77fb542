#version 450
// poly: out[i] = c.x + c.y*x[i] with the coefficients in a uniform block
// (In1 is a UniformIn stream), 4 items per invocation.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) uniform In1 { vec4 c; } coef;
layout(set = 0, binding = 4) writeonly buffer Out0 { float z[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

const uint ITEMS = 4u;

void main() {
    uint first = pc.begin + gl_GlobalInvocationID.x * ITEMS;
    for (uint k = 0u; k < ITEMS; k++) {
        uint i = first + k;
        if (i >= pc.end) {
            return;
        }
        precise float r = coef.c.x + coef.c.y * x[i];
        z[i] = r;
    }
}
