#version 450
// spin: out[i] = LCG^params[0](in[i]) with s = s*1664525 + 1013904223
// (mod 2^32). A long-running kernel for in-flight and time-out tests; exact
// in integers. Keep params[0] below 65535: llvmpipe (lavapipe) gives an
// invocation (a SIMD vector of them) one budget of loop passes for all its
// loops together (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS), and once it is
// spent loops silently stop early, so run time is scaled by the item count.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In0 { uint v[]; };
layout(set = 0, binding = 4) writeonly buffer Out0 { uint o[]; };
layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;

void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    uint s = v[i];
    for (uint k = 0u; k < pc.params[0]; k++) {
        s = s * 1664525u + 1013904223u;
    }
    o[i] = s;
}
