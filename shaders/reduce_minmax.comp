#version 450
#extension GL_GOOGLE_include_directive : require
// reduce_minmax.comp: kernels.MinMaxF32, Reduce with Factor 256.
// out[i] = (min, max) of x[256i .. 256i+255] below params[0] (0 = all).
// NaNs are ignored; a block with no valid input gives (+Inf, -Inf).
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 4) writeonly buffer MinMax { vec2 minmax[]; };

void main() {
    uint item;
    if (!workItem(item)) {
        return;
    }
    uint n = pc.params[0];
    uint lo = item * 256u;
    uint hi = lo + 256u;
    if (n != 0u) {
        hi = min(hi, n);
    }
    float mn = POS_INF;
    float mx = NEG_INF;
    for (uint i = lo; i < hi; i++) {
        float v = x[i];
        if (v < mn) {
            mn = v;
        }
        if (v > mx) {
            mx = v;
        }
    }
    minmax[item] = vec2(mn, mx);
}
