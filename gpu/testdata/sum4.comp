#version 450
// sum4: a Reduce kernel with Factor 4: out[i] = in[4i] + in[4i+1] + in[4i+2] + in[4i+3].
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint v[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint o[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    uint b = 4u * i;
    o[i] = v[b] + v[b + 1u] + v[b + 2u] + v[b + 3u];
}
