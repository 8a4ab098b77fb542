#version 450
// saxpy: out[i] = a*x[i] + y[i], a = uintBitsToFloat(params[0]).
// In0 = x, In1 = y, Out0 = out (may alias y on the host side).
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { float x[]; };
layout(set = 0, binding = 1) readonly buffer In1 { float y[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { float z[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    float a = uintBitsToFloat(pc.params[0]);
    precise float r = a * x[i] + y[i];
    z[i] = r;
}
